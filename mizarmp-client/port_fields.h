// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A port's members as read from JSON, before they are checked. Two readers fill them: a tree's
// port (PortFromJson) and a port list streamed from the parser's events (ParsePortList, no tree).
// PortFromFields makes the checks for both, so both say the same about the same document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/field_errors.h"
#include "common/status.h"
#include "mizarmp-client/types.h"

namespace mizarmp::client {

// A controller answer's fields: INTERNAL (the controller, not the user, got it wrong), named by
// their path ("port.fixed_ips[0].ip_address", "subnet.cidr").
inline constexpr FieldErrors kAnswerFields{Code::kInternal, nullptr};

// A JSON value's type, or kAbsent for a member that is not there.
enum class JsonType : uint8_t {
  kAbsent,
  kNull,
  kBoolean,
  kNumber,
  kString,
  kArray,
  kObject,
  kBinary
};

// The name messages give a type, nlohmann's: "null", "boolean", "number", "string", ...
const char* TypeName(JsonType type);

// One member's value as far as the checks need it. A later member of the same name replaces an
// earlier one, as in a tree.
struct MemberValue {
  JsonType type = JsonType::kAbsent;
  std::string text;      // a string's value
  bool boolean = false;  // a boolean's value

  bool absent_or_null() const { return type == JsonType::kAbsent || type == JsonType::kNull; }
};

struct FixedIpFields {
  JsonType type = JsonType::kAbsent;  // the element's (kObject, or what it is instead)
  MemberValue subnet_id;
  MemberValue ip_address;

  // The slot for member `key`; nullptr for a member the plugin does not read.
  MemberValue* Find(std::string_view key);
};

struct PortFields {
  MemberValue id, project_id, name, description, network_id, status, mac_address, host_id,
      veth_name, veth_namespace, network_ns, device_owner, admin_state_up;
  JsonType fixed_ips_type = JsonType::kAbsent;
  std::vector<FixedIpFields> fixed_ips;  // when fixed_ips is an array

  // The slot for member `key` ("binding:host_id" -> host_id); nullptr for fixed_ips (an array
  // the reader fills itself) and for members the plugin does not read.
  MemberValue* Find(std::string_view key);
};

// The port the fields make (their strings moved out), or INTERNAL naming the first member that
// is wrong ("port.fixed_ips[0].ip_address is not a string (got number)"), checked in one fixed
// order.
Result<Port> PortFromFields(PortFields& fields);

// Where a member is, for messages: "port", or "port.fixed_ips[3]". The text is only built for a
// message, not for every fixed IP read.
struct MemberPath {
  MemberPath(const char* path) : parent(path) {}  // NOLINT: a plain path converts
  MemberPath(const char* array, size_t at) : parent(array), index(at) {}
  std::string Text() const;

  const char* parent;
  std::optional<size_t> index;
};

// Moves an optional string member into *out ("port", "id"); absent and null both leave `out`
// untouched. INTERNAL for any other type ("port.id is not a string (got number)").
Status TakeString(MemberValue& value, const MemberPath& where, const char* key, std::string* out);

// Whether a resource that may come in its {"<name>": {...}} envelope is read from the envelope:
// a document that is an object without "id" but with `name` (`envelope_type` kAbsent: without).
// INTERNAL when the one to read is not an object ("port is null", "port is not an object (got
// array)").
Result<bool> ReadsEnvelope(const char* name, JsonType doc_type, bool doc_has_id,
                           JsonType envelope_type);

}  // namespace mizarmp::client
