#include "cni/result.h"

#include "cni/version.h"

namespace mizarmp::cni {

using nlohmann::json;

json ResultToJson(const AddResult& result, std::string_view version) {
  const bool versioned_ips = !AtLeast(version, "1.0.0");
  const bool interface_mtu = AtLeast(version, "1.1.0");
  json out = json::object();
  out["cniVersion"] = std::string(version);
  json interfaces = json::array();
  for (const InterfaceResult& i : result.interfaces) {
    json ji = {{"name", i.name}};
    if (!i.mac.empty()) ji["mac"] = i.mac;
    if (interface_mtu && i.mtu > 0) ji["mtu"] = i.mtu;
    if (!i.sandbox.empty()) ji["sandbox"] = i.sandbox;
    interfaces.push_back(std::move(ji));
  }
  out["interfaces"] = std::move(interfaces);
  json ips = json::array();
  for (const IpResult& ip : result.ips) {
    json jip = json::object();
    if (versioned_ips) jip["version"] = ip.address.address().is_v4() ? "4" : "6";
    jip["address"] = ip.address.ToString();
    if (ip.gateway) jip["gateway"] = ip.gateway->ToString();
    if (ip.interface) jip["interface"] = *ip.interface;
    ips.push_back(std::move(jip));
  }
  out["ips"] = std::move(ips);
  if (!result.routes.empty()) {
    json routes = json::array();
    for (const RouteResult& r : result.routes) {
      json jr = {{"dst", r.dst.ToString()}};
      if (r.gw) jr["gw"] = r.gw->ToString();
      routes.push_back(std::move(jr));
    }
    out["routes"] = std::move(routes);
  }
  const DnsConfig& d = result.dns;
  if (!d.empty()) {
    json dns = json::object();
    if (!d.nameservers.empty()) dns["nameservers"] = d.nameservers;
    if (!d.domain.empty()) dns["domain"] = d.domain;
    if (!d.search.empty()) dns["search"] = d.search;
    if (!d.options.empty()) dns["options"] = d.options;
    out["dns"] = std::move(dns);
  }
  return out;
}

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return InvalidArgumentError("prevResult." + field + " " + why);
}

Result<std::string> OptString(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Bad(where + "." + key, "is not a string");
  return it->get<std::string>();
}

}  // namespace

Result<AddResult> ResultFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgumentError("prevResult is not an object");
  AddResult r;
  if (auto it = j.find("interfaces"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Bad("interfaces", "is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& ji = (*it)[i];
      const std::string where = "interfaces[" + std::to_string(i) + "]";
      if (!ji.is_object()) return Bad(where, "is not an object");
      InterfaceResult ir;
      MZ_ASSIGN_OR_RETURN(ir.name, OptString(ji, "name", where));
      MZ_ASSIGN_OR_RETURN(ir.mac, OptString(ji, "mac", where));
      MZ_ASSIGN_OR_RETURN(ir.sandbox, OptString(ji, "sandbox", where));
      if (auto m = ji.find("mtu"); m != ji.end() && m->is_number_integer()) ir.mtu = m->get<int>();
      r.interfaces.push_back(std::move(ir));
    }
  }
  if (auto it = j.find("ips"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Bad("ips", "is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& jip = (*it)[i];
      const std::string where = "ips[" + std::to_string(i) + "]";
      if (!jip.is_object()) return Bad(where, "is not an object");
      IpResult ip;
      MZ_ASSIGN_OR_RETURN(std::string addr, OptString(jip, "address", where));
      auto cidr = Cidr::Parse(addr);
      if (!cidr.ok()) return Bad(where + ".address", Quoted(addr) + " is not an address/prefix");
      ip.address = *cidr;
      MZ_ASSIGN_OR_RETURN(std::string gw, OptString(jip, "gateway", where));
      if (!gw.empty()) {
        auto g = IpAddress::Parse(gw);
        if (!g.ok()) return Bad(where + ".gateway", Quoted(gw) + " is not an address");
        ip.gateway = *g;
      }
      if (auto f = jip.find("interface"); f != jip.end() && !f->is_null()) {
        if (!f->is_number_integer()) return Bad(where + ".interface", "is not an integer");
        ip.interface = f->get<int>();
      }
      r.ips.push_back(std::move(ip));
    }
  }
  if (auto it = j.find("routes"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Bad("routes", "is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& jr = (*it)[i];
      const std::string where = "routes[" + std::to_string(i) + "]";
      if (!jr.is_object()) return Bad(where, "is not an object");
      RouteResult rr;
      MZ_ASSIGN_OR_RETURN(std::string dst, OptString(jr, "dst", where));
      auto d = Cidr::Parse(dst);
      if (!d.ok()) return Bad(where + ".dst", Quoted(dst) + " is not a prefix");
      rr.dst = *d;
      MZ_ASSIGN_OR_RETURN(std::string gw, OptString(jr, "gw", where));
      if (!gw.empty()) {
        auto g = IpAddress::Parse(gw);
        if (!g.ok()) return Bad(where + ".gw", Quoted(gw) + " is not an address");
        rr.gw = *g;
      }
      r.routes.push_back(std::move(rr));
    }
  }
  return r;
}

}  // namespace mizarmp::cni
