// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/result.h"

#include <limits>

#include "cni/version.h"
#include "common/json_fields.h"

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

std::string PrevResultField(std::string_view path) { return "prevResult." + std::string(path); }

// A prevResult's fields: errors name them as "prevResult.ips[0].address".
constexpr FieldErrors kPrevResultFields{Code::kInvalidArgument, PrevResultField};

// The string member `key` as a prefix; `what` says what it must be ("an address/prefix").
Result<Cidr> ReadPrefix(const JsonFields& obj, const char* key, const char* what) {
  std::string text;
  MZ_RETURN_IF_ERROR(obj.String(key, &text));
  auto prefix = Cidr::Parse(text);
  if (!prefix.ok()) return obj.Invalid(key, Quoted(text) + " is not " + what);
  return *prefix;
}

// The string member `key` as an address; none when it is not given or "".
Result<std::optional<IpAddress>> ReadOptionalAddress(const JsonFields& obj, const char* key) {
  std::string text;
  MZ_RETURN_IF_ERROR(obj.String(key, &text));
  if (text.empty()) return std::optional<IpAddress>();
  auto address = IpAddress::Parse(text);
  if (!address.ok()) return obj.Invalid(key, Quoted(text) + " is not an address");
  return std::optional<IpAddress>(*address);
}

Result<InterfaceResult> ReadInterface(const JsonFields& ji) {
  InterfaceResult ir;
  MZ_RETURN_IF_ERROR(ji.String("name", &ir.name));
  MZ_RETURN_IF_ERROR(ji.String("mac", &ir.mac));
  MZ_RETURN_IF_ERROR(ji.String("sandbox", &ir.sandbox));
  // An mtu that is not an integer is passed over, as if the result reported none.
  if (const auto mtu = ji.Find("mtu"); mtu && mtu->value().is_number_integer()) {
    ir.mtu = mtu->value().get<int>();
  }
  return ir;
}

Result<IpResult> ReadIp(const JsonFields& jip) {
  IpResult ip;
  MZ_ASSIGN_OR_RETURN(ip.address, ReadPrefix(jip, "address", "an address/prefix"));
  MZ_ASSIGN_OR_RETURN(ip.gateway, ReadOptionalAddress(jip, "gateway"));
  if (const auto index = jip.Find("interface")) {
    MZ_ASSIGN_OR_RETURN(const int64_t i, index->Int(std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::max()));
    ip.interface = static_cast<int>(i);
  }
  return ip;
}

Result<RouteResult> ReadRoute(const JsonFields& jr) {
  RouteResult rr;
  MZ_ASSIGN_OR_RETURN(rr.dst, ReadPrefix(jr, "dst", "a prefix"));
  MZ_ASSIGN_OR_RETURN(rr.gw, ReadOptionalAddress(jr, "gw"));
  return rr;
}

}  // namespace

Result<AddResult> ResultFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgumentError("prevResult is not an object");
  const JsonFields result(j, kPrevResultFields);
  AddResult r;
  MZ_ASSIGN_OR_RETURN(const std::vector<JsonFields> interfaces, result.Objects("interfaces"));
  for (const JsonFields& ji : interfaces) {
    MZ_ASSIGN_OR_RETURN(InterfaceResult ir, ReadInterface(ji));
    r.interfaces.push_back(std::move(ir));
  }
  MZ_ASSIGN_OR_RETURN(const std::vector<JsonFields> ips, result.Objects("ips"));
  for (const JsonFields& jip : ips) {
    MZ_ASSIGN_OR_RETURN(IpResult ip, ReadIp(jip));
    r.ips.push_back(std::move(ip));
  }
  MZ_ASSIGN_OR_RETURN(const std::vector<JsonFields> routes, result.Objects("routes"));
  for (const JsonFields& jr : routes) {
    MZ_ASSIGN_OR_RETURN(RouteResult rr, ReadRoute(jr));
    r.routes.push_back(std::move(rr));
  }
  return r;
}

}  // namespace mizarmp::cni
