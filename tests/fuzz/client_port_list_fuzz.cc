// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A port list answer: ParsePortList, which reads it from a parser's events without a tree (on
// simdjson, or nlohmann's SAX parser in client_port_list_nlohmann), against the tree it stands for
// (nlohmann::json::parse, then PortFromJson on each entry of the "ports" member or of the bare
// array). Both must agree on whether it is JSON, on its shape and on every port and every message.
#include <cstdint>
#include <string_view>

#include "common/strings.h"
#include "mizarmp-client/client.h"
#include "mizarmp-client/port_list_reader.h"
#include "mizarmp-client/types.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using mizarmp::fuzz::Require;
namespace client = mizarmp::client;

// What the tree says: its type, its "ports" member's (if it has one), and the list's entries read
// one by one. Types by name, as messages give them.
struct TreeAnswer {
  std::string type;
  std::string ports_type;  // empty: no "ports" member
  client::PortList list;
};

TreeAnswer FromTree(const nlohmann::json& doc) {
  TreeAnswer want;
  want.type = doc.type_name();
  const nlohmann::json* list = &doc;
  if (doc.is_object()) {
    auto ports = doc.find("ports");
    if (ports == doc.end()) return want;
    want.ports_type = ports->type_name();
    list = &*ports;
  }
  if (!list->is_array()) return want;
  for (size_t i = 0; i < list->size(); ++i) {
    auto port = client::PortFromJson((*list)[i]);
    if (port.ok()) {
      want.list.ports.push_back(*port);
    } else {
      want.list.unreadable.push_back("ports[" + std::to_string(i) +
                                     "]: " + port.status().message());
    }
  }
  return want;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = mizarmp::fuzz::AsText(data, size);
  // The client refuses a body nested deeper than this before it parses (port_list_reader.h).
  if (mizarmp::JsonNestingDepth(text, client::kMaxResponseDepth) > client::kMaxResponseDepth) {
    return 0;
  }
  const nlohmann::json tree = mizarmp::fuzz::ParseJson(text);
  const auto read = client::ParsePortList(text);
  Require(read.has_value() == !tree.is_discarded(), "the reader and the tree disagree on JSON");
  if (!read) return 0;
  const TreeAnswer want = FromTree(tree);
  Require(client::TypeName(read->type) == want.type, "the document's type differs from the tree's");
  const bool has_ports = read->ports_type != client::JsonType::kAbsent;
  Require(
      has_ports ? client::TypeName(read->ports_type) == want.ports_type : want.ports_type.empty(),
      "the ports member's type differs from the tree's");
  Require(read->list == want.list, "the ports or messages differ from PortFromJson's");
  return 0;
}
