// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Reads a port list answer ({"ports":[...]} or a bare [...]) from a JSON parser's events: each
// entry's members go into PortFields and become a Port (or a line in `unreadable`) as the entry
// ends, so no JSON tree is built, not even of one entry. A 10,000-port list is every fence
// pass's first step.
//
// Two parsers drive the one reader, and an executable links exactly one ParsePortList
// (mizarmp-client/CMakeLists.txt): simdjson's (parse_port_list_simdjson.cc), some ten times
// faster than nlohmann's on such a list, which Debian ships only as a shared library; and
// nlohmann's SAX parser (parse_port_list_nlohmann.cc) for the static plugin, whose lists (one
// node's ports, in GC) are short. simdjson refuses some JSON that nlohmann reads (integers beyond
// 64 bits; text after a NUL byte, which nlohmann's lexer takes for the end), so a body it refuses
// goes to nlohmann's parser, whose answer counts: both accept exactly what nlohmann::json::parse
// does.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "mizarmp-client/port_fields.h"
#include "mizarmp-client/types.h"

namespace mizarmp::client {

// What a port list answer held. The caller judges its shape (client.cc: an object must have
// "ports"; a null list is an empty one).
struct PortListDocument {
  JsonType type = JsonType::kAbsent;        // the document's
  JsonType ports_type = JsonType::kAbsent;  // an object's last "ports" member's, if it has one
  PortList list;                            // the entries of that member, or of the bare array
};

// nullopt when `body` is not one JSON document. The caller has refused a body nested deeper than
// kMaxResponseDepth first (client.h; the parsers' own limits differ: simdjson's is 1,024 levels).
// Entries read as a tree's would through PortFromJson, with the same messages, prefixed
// "ports[<index>]: ". Members repeated in one object: the last counts, as in a tree.
std::optional<PortListDocument> ParsePortList(std::string_view body);

// ParsePortList on nlohmann's SAX parser (either ParsePortList, for what simdjson refuses).
std::optional<PortListDocument> ParsePortListWithNlohmann(std::string_view body);

// The reader: a handler of nlohmann's SAX interface, which the simdjson parser's walk calls the
// same way. It keeps a stack of the containers open and what each is to the list; a member it
// does not read, and everything inside one, only passes through.
class PortListReader final : public nlohmann::json::json_sax_t {
 public:
  PortListDocument Take() { return std::move(doc_); }

  bool null() override { return Scalar(JsonType::kNull); }
  bool boolean(bool value) override { return Scalar(JsonType::kBoolean, nullptr, value); }
  bool number_integer(number_integer_t) override { return Scalar(JsonType::kNumber); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(JsonType::kNumber); }
  bool number_float(number_float_t, const string_t&) override { return Scalar(JsonType::kNumber); }
  bool string(string_t& value) override { return Scalar(JsonType::kString, &value); }
  bool binary(binary_t&) override { return Scalar(JsonType::kBinary); }
  // `elements`: how many the parser knows there are (simdjson), or size_t(-1) (nlohmann).
  bool start_object(std::size_t) override { return Open(JsonType::kObject, kUnknownSize); }
  bool start_array(std::size_t elements) override { return Open(JsonType::kArray, elements); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& name) override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  // What an open container is to the list.
  enum class Kind {
    kPassed,    // nothing read inside
    kTop,       // the document, an object: its "ports" member is the list
    kEntries,   // the list
    kEntry,     // one entry: a port, or {"port": {...}}
    kEnvelope,  // an entry's "port" object
    kFixedIps,  // a port's fixed_ips
    kFixedIp,   // one of them
  };
  struct Frame {
    Kind kind;
    PortFields* fields;  // the port being read in it (kEntry and inside); else nullptr
  };
  // Where the member whose name key() just saw goes.
  enum class Member { kPassed, kPorts, kEnvelope, kFixedIps, kSlot };

  static constexpr std::size_t kUnknownSize = static_cast<std::size_t>(-1);
  static constexpr std::size_t kMaxReservedPorts = 16384;

  bool Scalar(JsonType type, std::string* text = nullptr, bool boolean = false);
  bool Open(JsonType type, std::size_t elements);
  bool Close();
  // A value of `type` starts: records its type where it goes and returns what it is to the list
  // (what is read inside it, for an object or an array).
  Kind Begin(JsonType type);
  void FinishEntry();
  void Add(Result<Port> port);

  PortListDocument doc_;
  std::vector<Frame> frames_;
  Member member_ = Member::kPassed;
  MemberValue* slot_ = nullptr;  // for Member::kSlot
  PortFields own_;               // the entry's own members
  PortFields envelope_;          // its "port" object's
  JsonType envelope_type_ = JsonType::kAbsent;
};

}  // namespace mizarmp::client
