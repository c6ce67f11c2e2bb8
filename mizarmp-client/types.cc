#include "mizarmp-client/types.h"

#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace mizarmp::client {

using nlohmann::json;

namespace {

const char* TypeName(const json& v) { return v.type_name(); }

// Reads an optional string member. Absent and null both leave `out` untouched.
Status ReadString(const json& obj, const char* key, const std::string& where, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) {
    return InternalError(where + "." + key + " is not a string (got " + TypeName(*it) + ")");
  }
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadBool(const json& obj, const char* key, const std::string& where, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) {
    return InternalError(where + "." + key + " is not a boolean (got " + TypeName(*it) + ")");
  }
  *out = it->get<bool>();
  return Status::Ok();
}

// Accepts either the resource itself or its {"<name>": {...}} envelope. Returns the object to
// read, or an error naming what is wrong with the document.
Result<const json*> Unwrap(const json& j, const char* name) {
  const json* obj = &j;
  if (j.is_object() && !j.contains("id")) {
    auto it = j.find(name);
    if (it != j.end()) {
      if (it->is_null()) return InternalError(std::string(name) + " is null");
      obj = &*it;
    }
  }
  if (!obj->is_object()) {
    return InternalError(std::string(name) + " is not an object (got " + TypeName(*obj) + ")");
  }
  return obj;
}

}  // namespace

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
  const json& o = *obj;
  const std::string w = "port";
  Port p;
  auto id = o.find("id");
  if (id == o.end() || id->is_null()) return InternalError("port.id is missing");
  MZ_RETURN_IF_ERROR(ReadString(o, "id", w, &p.id));
  if (p.id.empty()) return InternalError("port.id is empty");
  MZ_RETURN_IF_ERROR(ReadString(o, "project_id", w, &p.project_id));
  MZ_RETURN_IF_ERROR(ReadString(o, "name", w, &p.name));
  MZ_RETURN_IF_ERROR(ReadString(o, "description", w, &p.description));
  MZ_RETURN_IF_ERROR(ReadString(o, "network_id", w, &p.network_id));
  MZ_RETURN_IF_ERROR(ReadString(o, "status", w, &p.status));
  MZ_RETURN_IF_ERROR(ReadString(o, "mac_address", w, &p.mac_address));
  MZ_RETURN_IF_ERROR(ReadString(o, "binding:host_id", w, &p.host_id));
  MZ_RETURN_IF_ERROR(ReadString(o, "veth_name", w, &p.veth_name));
  // v0.1 single create spells it network_ns, bulk (and Alcor) veth_namespace.
  MZ_RETURN_IF_ERROR(ReadString(o, "veth_namespace", w, &p.network_ns));
  MZ_RETURN_IF_ERROR(ReadString(o, "network_ns", w, &p.network_ns));
  MZ_RETURN_IF_ERROR(ReadBool(o, "admin_state_up", w, &p.admin_state_up));

  auto ips = o.find("fixed_ips");
  if (ips != o.end() && !ips->is_null()) {
    if (!ips->is_array()) {
      return InternalError("port.fixed_ips is not an array (got " + std::string(TypeName(*ips)) +
                           ")");
    }
    for (size_t i = 0; i < ips->size(); ++i) {
      const json& e = (*ips)[i];
      const std::string where = "port.fixed_ips[" + std::to_string(i) + "]";
      if (!e.is_object()) {
        return InternalError(where + " is not an object (got " + TypeName(e) + ")");
      }
      FixedIp ip;
      MZ_RETURN_IF_ERROR(ReadString(e, "subnet_id", where, &ip.subnet_id));
      MZ_RETURN_IF_ERROR(ReadString(e, "ip_address", where, &ip.ip_address));
      p.fixed_ips.push_back(std::move(ip));
    }
  }
  return p;
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
  const json& o = *obj;
  const std::string w = "subnet";
  Subnet s;
  auto id = o.find("id");
  if (id == o.end() || id->is_null()) return InternalError("subnet.id is missing");
  MZ_RETURN_IF_ERROR(ReadString(o, "id", w, &s.id));
  if (s.id.empty()) return InternalError("subnet.id is empty");
  MZ_RETURN_IF_ERROR(ReadString(o, "project_id", w, &s.project_id));
  MZ_RETURN_IF_ERROR(ReadString(o, "network_id", w, &s.network_id));
  MZ_RETURN_IF_ERROR(ReadString(o, "cidr", w, &s.cidr));
  if (s.cidr.empty()) return InternalError("subnet.cidr is missing");
  MZ_RETURN_IF_ERROR(ReadString(o, "gateway_ip", w, &s.gateway_ip));
  auto v = o.find("ip_version");
  if (v != o.end() && !v->is_null()) {
    if (!v->is_number_integer()) {
      return InternalError("subnet.ip_version is not an integer (got " + std::string(TypeName(*v)) +
                           ")");
    }
    const auto version = v->get<int64_t>();
    if (version != 4 && version != 6) {
      return InternalError("subnet.ip_version is " + std::to_string(version) + ", not 4 or 6");
    }
    s.ip_version = static_cast<int>(version);
  } else if (s.cidr.find(':') != std::string::npos) {
    s.ip_version = 6;
  }
  return s;
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
