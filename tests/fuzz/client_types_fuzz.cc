// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Mizar-MP documents of both dialects: PortFromJson and SubnetFromJson on the input (and on what
// it carries under "port"/"subnet"/"ports"). A port or subnet that parses must print and read
// back.
#include <cstdint>

#include "mizarmp-client/types.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using mizarmp::fuzz::Require;
namespace client = mizarmp::client;

void Port(const nlohmann::json& j) {
  auto port = client::PortFromJson(j);
  if (!port.ok()) return;
  (void)port->state();
  nlohmann::json printed = client::PortToJson(*port);
  (void)printed.dump();
  auto again = client::PortFromJson(printed);
  Require(again.ok(), "a printed port does not read back");
  Require(again->id == port->id && again->status == port->status &&
              again->mac_address == port->mac_address &&
              again->fixed_ips.size() == port->fixed_ips.size() &&
              again->admin_state_up == port->admin_state_up,
          "a port changed through print + read");
}

void Subnet(const nlohmann::json& j) {
  auto subnet = client::SubnetFromJson(j);
  if (!subnet.ok()) return;
  nlohmann::json printed = client::SubnetToJson(*subnet);
  (void)printed.dump();
  auto again = client::SubnetFromJson(printed);
  Require(again.ok(), "a printed subnet does not read back");
  Require(again->cidr == subnet->cidr && again->gateway_ip == subnet->gateway_ip &&
              again->ip_version == subnet->ip_version,
          "a subnet changed through print + read");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json doc = mizarmp::fuzz::ParseJson(mizarmp::fuzz::AsText(data, size));
  if (doc.is_discarded()) return 0;
  Port(doc);
  Subnet(doc);
  if (!doc.is_object()) return 0;
  for (const char* key : {"port", "subnet"}) {
    auto it = doc.find(key);
    if (it != doc.end()) {
      Port(*it);
      Subnet(*it);
    }
  }
  for (const char* key : {"ports", "subnets"}) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_array()) continue;
    for (const auto& entry : *it) {
      Port(entry);
      Subnet(entry);
    }
  }
  return 0;
}
