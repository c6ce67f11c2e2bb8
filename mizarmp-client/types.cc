// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/types.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_fields.h"
#include "common/strings.h"
#include "mizarmp-client/port_fields.h"

namespace mizarmp::client {

using nlohmann::json;

namespace {

JsonType TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return JsonType::kNull;
    case json::value_t::boolean:
      return JsonType::kBoolean;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return JsonType::kNumber;
    case json::value_t::string:
      return JsonType::kString;
    case json::value_t::array:
      return JsonType::kArray;
    case json::value_t::object:
      return JsonType::kObject;
    case json::value_t::binary:
      return JsonType::kBinary;
    case json::value_t::discarded:
      break;
  }
  return JsonType::kAbsent;  // a discarded value: what a failed parse leaves, never a member
}

// Accepts either the resource itself or its {"<name>": {...}} envelope. Returns the object to
// read, or an error naming what is wrong with the document.
Result<const json*> Unwrap(const json& j, const char* name) {
  auto envelope = j.is_object() ? j.find(name) : j.end();
  const bool has_envelope = j.is_object() && envelope != j.end();
  MZ_ASSIGN_OR_RETURN(const bool in_envelope,
                      ReadsEnvelope(name, TypeOf(j), j.is_object() && j.contains("id"),
                                    has_envelope ? TypeOf(*envelope) : JsonType::kAbsent));
  return in_envelope ? &*envelope : &j;
}

void Fill(const json& v, MemberValue* out) {
  out->type = TypeOf(v);
  if (v.is_string()) out->text = v.get_ref<const std::string&>();
  if (v.is_boolean()) out->boolean = v.get<bool>();
}

// A tree's port object as the fields PortFromFields checks.
PortFields FieldsOf(const json& port) {
  PortFields fields;
  for (const auto& [key, value] : port.items()) {
    if (MemberValue* slot = fields.Find(key)) {
      Fill(value, slot);
    } else if (key == "fixed_ips") {
      fields.fixed_ips_type = TypeOf(value);
      if (!value.is_array()) continue;
      for (const json& e : value) {
        FixedIpFields& ip = fields.fixed_ips.emplace_back();
        ip.type = TypeOf(e);
        if (!e.is_object()) continue;
        for (const auto& [ip_key, ip_value] : e.items()) {
          if (MemberValue* ip_slot = ip.Find(ip_key)) Fill(ip_value, ip_slot);
        }
      }
    }
  }
  return fields;
}

}  // namespace

const char* DialectName(Dialect dialect) {
  switch (dialect) {
    case Dialect::kAuto:
      return "auto";
    case Dialect::kV01:
      return "v0.1";
    case Dialect::kAlcor:
      return "alcor";
  }
  return "?";
}

Result<Dialect> ParseDialect(std::string_view name) {
  if (name == "auto") return Dialect::kAuto;
  if (name == "v0.1" || name == "v01") return Dialect::kV01;
  if (name == "alcor") return Dialect::kAlcor;
  return InvalidArgumentError("must be auto, v0.1 or alcor, got " + Quoted(std::string(name)));
}

PortState Port::state() const {
  const std::string s = AsciiLower(status);
  if (s == "up" || s == "active") return PortState::kReady;
  if (s == "failed" || s == "error") return PortState::kFailed;
  return PortState::kPending;
}

json PortSpecToJson(const PortSpec& spec) {
  json port = json::object();
  port["project_id"] = spec.project_id;
  port["id"] = spec.id;
  port["name"] = spec.name;
  port["admin_state_up"] = spec.admin_state_up;
  port["description"] = spec.description;
  port["network_id"] = spec.network_id;
  port["veth_name"] = spec.veth_name;
  // The seed's single create says network_ns, its bulk create veth_namespace: send both.
  port["network_ns"] = spec.network_ns;
  port["veth_namespace"] = spec.network_ns;
  port["port_security_enabled"] = false;
  port["allowed_address_pairs"] = json::array();
  port["binding:host_id"] = spec.host_id;
  port["binding:profile"] = nullptr;
  port["binding:vnic_type"] = spec.vnic_type;
  port["fast_path"] = spec.fast_path;
  if (!spec.fixed_ips.empty()) {
    json ips = json::array();
    for (const FixedIp& ip : spec.fixed_ips) {
      json e = json::object();
      if (!ip.subnet_id.empty()) e["subnet_id"] = ip.subnet_id;
      if (!ip.ip_address.empty()) e["ip_address"] = ip.ip_address;
      ips.push_back(std::move(e));
    }
    port["fixed_ips"] = std::move(ips);
  }
  return port;
}

Result<Port> PortFromJson(const json& j) {
  MZ_ASSIGN_OR_RETURN(const json* obj, Unwrap(j, "port"));
  PortFields fields = FieldsOf(*obj);
  return PortFromFields(fields);
}

json PortToJson(const Port& port) {
  json o = json::object();
  o["id"] = port.id;
  o["project_id"] = port.project_id;
  o["name"] = port.name;
  o["description"] = port.description;
  o["network_id"] = port.network_id;
  o["status"] = port.status;
  o["mac_address"] = port.mac_address;
  o["binding:host_id"] = port.host_id;
  o["veth_name"] = port.veth_name;
  o["network_ns"] = port.network_ns;
  o["veth_namespace"] = port.network_ns;
  o["admin_state_up"] = port.admin_state_up;
  json ips = json::array();
  for (const FixedIp& ip : port.fixed_ips) {
    ips.push_back(json{{"subnet_id", ip.subnet_id}, {"ip_address", ip.ip_address}});
  }
  o["fixed_ips"] = std::move(ips);
  return o;
}

Result<Subnet> SubnetFromJson(const json& j) {
  MZ_ASSIGN_OR_RETURN(const json* obj, Unwrap(j, "subnet"));
  const JsonFields subnet(*obj, kAnswerFields, "subnet");
  Subnet s;
  MZ_RETURN_IF_ERROR(subnet.RequiredString("id", &s.id));
  MZ_RETURN_IF_ERROR(subnet.String("project_id", &s.project_id));
  MZ_RETURN_IF_ERROR(subnet.String("network_id", &s.network_id));
  MZ_RETURN_IF_ERROR(subnet.RequiredString("cidr", &s.cidr));
  MZ_RETURN_IF_ERROR(subnet.String("gateway_ip", &s.gateway_ip));
  // Without ip_version, the CIDR tells.
  int64_t version = s.cidr.find(':') != std::string::npos ? 6 : 4;
  MZ_RETURN_IF_ERROR(subnet.Int("ip_version", std::numeric_limits<int64_t>::min(),
                                std::numeric_limits<int64_t>::max(), &version));
  if (version != 4 && version != 6) {
    return subnet.Invalid("ip_version", "is " + std::to_string(version) + ", not 4 or 6");
  }
  s.ip_version = static_cast<int>(version);
  return s;
}

Result<std::vector<Node>> NodesFromJson(const json& j) {
  std::vector<Node> out;
  // NodesWebJson() answers a null list.
  if (const auto list = j.find("nodeInfos"); list == j.end() || list->is_null()) return out;
  const JsonFields answer(j, kAnswerFields);
  MZ_ASSIGN_OR_RETURN(const std::vector<JsonFields> nodes, answer.Objects("nodeInfos"));
  for (const JsonFields& node : nodes) {
    Node n;
    MZ_RETURN_IF_ERROR(node.String("node_id", &n.id));
    MZ_RETURN_IF_ERROR(node.String("node_name", &n.name));
    if (!n.id.empty() || !n.name.empty()) out.push_back(std::move(n));
  }
  return out;
}

json SubnetToJson(const Subnet& subnet) {
  json o = json::object();
  o["id"] = subnet.id;
  o["project_id"] = subnet.project_id;
  o["network_id"] = subnet.network_id;
  o["cidr"] = subnet.cidr;
  o["gateway_ip"] = subnet.gateway_ip;
  o["ip_version"] = subnet.ip_version;
  return o;
}

}  // namespace mizarmp::client
