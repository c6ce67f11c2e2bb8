// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/port_fields.h"

#include <array>
#include <utility>

#include "common/hex.h"

namespace mizarmp::client {

namespace {

// "port.fixed_ips[0].ip_address is not a string (got number)".
Status NotA(const MemberPath& where, const char* key, const char* wanted, JsonType got) {
  return kAnswerFields.WrongType(where.Text() + "." + key, wanted, TypeName(got));
}

// A boolean; "" reads as absent: Alcor's JacksonJsonFilter writes a null Boolean so in GET and
// list answers (web/json/filter/JacksonJsonFilter.java at alcor@21f11b5c).
Status TakeBool(const MemberValue& value, const MemberPath& where, const char* key, bool* out) {
  if (value.absent_or_null()) return Status::Ok();
  if (value.type == JsonType::kString && value.text.empty()) return Status::Ok();
  if (value.type != JsonType::kBoolean) return NotA(where, key, "a boolean", value.type);
  *out = value.boolean;
  return Status::Ok();
}

Status TakeFixedIps(PortFields& fields, std::vector<FixedIp>* out) {
  if (fields.fixed_ips_type == JsonType::kAbsent || fields.fixed_ips_type == JsonType::kNull) {
    return Status::Ok();
  }
  if (fields.fixed_ips_type != JsonType::kArray) {
    return kAnswerFields.WrongType("port.fixed_ips", "an array", TypeName(fields.fixed_ips_type));
  }
  out->reserve(fields.fixed_ips.size());
  for (size_t i = 0; i < fields.fixed_ips.size(); ++i) {
    FixedIpFields& e = fields.fixed_ips[i];
    const MemberPath where("port.fixed_ips", i);
    if (e.type != JsonType::kObject) {
      return kAnswerFields.WrongType(where.Text(), "an object", TypeName(e.type));
    }
    FixedIp ip;
    MZ_RETURN_IF_ERROR(TakeString(e.subnet_id, where, "subnet_id", &ip.subnet_id));
    MZ_RETURN_IF_ERROR(TakeString(e.ip_address, where, "ip_address", &ip.ip_address));
    out->push_back(std::move(ip));
  }
  return Status::Ok();
}

// The string members a port reads after its id, in the order they are checked (and so the one an
// error names first). network_ns comes after veth_namespace: where a port has both, it wins.
struct StringMember {
  std::string_view key;  // a literal: key.data() is NUL-terminated
  MemberValue PortFields::*value;
  std::string Port::*out;
};
constexpr std::array<StringMember, 11> kStringMembers{{
    {"project_id", &PortFields::project_id, &Port::project_id},
    {"name", &PortFields::name, &Port::name},
    {"description", &PortFields::description, &Port::description},
    {"network_id", &PortFields::network_id, &Port::network_id},
    {"status", &PortFields::status, &Port::status},
    {"mac_address", &PortFields::mac_address, &Port::mac_address},
    {"binding:host_id", &PortFields::host_id, &Port::host_id},
    {"veth_name", &PortFields::veth_name, &Port::veth_name},
    {"veth_namespace", &PortFields::veth_namespace, &Port::network_ns},
    {"network_ns", &PortFields::network_ns, &Port::network_ns},
    {"device_owner", &PortFields::device_owner, &Port::device_owner},
}};

// A MAC of six groups of one or two hex digits in the usual form, two lower-case digits a
// group: v0.1 writes each byte with Integer.toHexString, unpadded ("0e:73:ae:c8:0:6",
// web/util/ControllerUtil.java GenereateMacAddress at alcor@5ca01ef0), and runtimes parse the
// CNI result's MAC strictly. Anything else is left as it is, for the caller's checks.
void NormalizeMac(std::string* mac) {
  std::string out;
  int groups = 0;
  size_t start = 0;
  while (start <= mac->size()) {
    size_t end = mac->find(':', start);
    if (end == std::string::npos) end = mac->size();
    const size_t len = end - start;
    if (len < 1 || len > 2 || ++groups > 6) return;
    if (!out.empty()) out += ':';
    if (len == 1) out += '0';
    for (size_t i = start; i < end; ++i) {
      if (!IsHexDigit((*mac)[i])) return;
      out += static_cast<char>((*mac)[i] | 0x20);  // lower case (digits are unchanged)
    }
    start = end + 1;
  }
  if (groups == 6) *mac = std::move(out);
}

}  // namespace

std::string MemberPath::Text() const {
  std::string text(parent);
  if (index) {  // appended piece by piece: "[" + to_string + "]" trips GCC 12's -Wrestrict at -O3
    text += '[';
    text += std::to_string(*index);
    text += ']';
  }
  return text;
}

Status TakeString(MemberValue& value, const MemberPath& where, const char* key, std::string* out) {
  if (value.absent_or_null()) return Status::Ok();
  if (value.type != JsonType::kString) return NotA(where, key, "a string", value.type);
  *out = std::move(value.text);
  return Status::Ok();
}

const char* TypeName(JsonType type) {
  switch (type) {
    case JsonType::kAbsent:
      return "nothing";
    case JsonType::kNull:
      return "null";
    case JsonType::kBoolean:
      return "boolean";
    case JsonType::kNumber:
      return "number";
    case JsonType::kString:
      return "string";
    case JsonType::kArray:
      return "array";
    case JsonType::kObject:
      return "object";
    case JsonType::kBinary:
      return "binary";
  }
  return "?";
}

MemberValue* FixedIpFields::Find(std::string_view key) {
  if (key == "subnet_id") return &subnet_id;
  if (key == "ip_address") return &ip_address;
  return nullptr;
}

MemberValue* PortFields::Find(std::string_view key) {
  if (key == "id") return &id;
  for (const StringMember& m : kStringMembers) {
    if (key == m.key) return &(this->*m.value);
  }
  if (key == "admin_state_up") return &admin_state_up;
  return nullptr;
}

Result<Port> PortFromFields(PortFields& fields) {
  if (fields.id.absent_or_null()) return kAnswerFields.Missing("port.id");
  Port port;
  MZ_RETURN_IF_ERROR(TakeString(fields.id, "port", "id", &port.id));
  if (port.id.empty()) return kAnswerFields.Empty("port.id");
  for (const StringMember& m : kStringMembers) {
    MZ_RETURN_IF_ERROR(TakeString(fields.*m.value, "port", m.key.data(), &(port.*m.out)));
  }
  NormalizeMac(&port.mac_address);
  MZ_RETURN_IF_ERROR(
      TakeBool(fields.admin_state_up, "port", "admin_state_up", &port.admin_state_up));
  MZ_RETURN_IF_ERROR(TakeFixedIps(fields, &port.fixed_ips));
  return port;
}

Result<bool> ReadsEnvelope(const char* name, JsonType doc_type, bool doc_has_id,
                           JsonType envelope_type) {
  const bool envelope =
      doc_type == JsonType::kObject && !doc_has_id && envelope_type != JsonType::kAbsent;
  const JsonType read_type = envelope ? envelope_type : doc_type;
  if (envelope && read_type == JsonType::kNull)
    return kAnswerFields.Invalid(name, "is null");
  if (read_type != JsonType::kObject) {
    return kAnswerFields.WrongType(name, "an object", TypeName(read_type));
  }
  return envelope;
}

}  // namespace mizarmp::client
