// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/port.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "common/hex.h"
#include "common/uuid.h"
#include "mock-server/dump.h"

namespace mizarmp::mock {

using nlohmann::json;

namespace {

// Whether a field of a request is absent in effect: missing, null or "".
bool Unset(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

// One query value against one field: strings as they are, booleans as true/True/false/False,
// null as "" or "null", anything else as its JSON text.
bool FieldMatches(const json& v, const std::string& want) {
  if (v.is_string()) return v.get<std::string>() == want;
  if (v.is_boolean()) {
    if (want == "true" || want == "True") return v.get<bool>();
    if (want == "false" || want == "False") return !v.get<bool>();
    return false;
  }
  if (v.is_null()) return want.empty() || want == "null";
  return Dump(v) == want;
}

bool IsKnownNetwork(const Networks& n, const std::string& id) {
  return id == n.subnet_id || id == n.vpc_id || (!n.subnet6_id.empty() && id == n.subnet6_id);
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Fields only the controller sets; a PUT may repeat them but not change them.
const std::set<std::string>& ReadOnlyFields() {
  static const std::set<std::string> kFields = {"status", "mac_address", "fixed_ips", "network_id"};
  return kFields;
}

// Fields that say where the agent puts the interface.
const std::set<std::string>& PlacementFields() {
  static const std::set<std::string> kFields = {"network_ns", "veth_namespace", "veth_name"};
  return kFields;
}

// `r` with member `key` of its kept text holding `value` (serialised) instead; every later member
// moves by the difference. RenewText when the text has no such member.
void ReplaceMember(PortRecord& r, const std::string& key, const std::string& value) {
  auto member = std::find_if(r.members.begin(), r.members.end(),
                             [&](const MemberSpan& m) { return m.key == key; });
  if (member == r.members.end()) return RenewText(r);
  const size_t value_begin = member->begin + Dump(json(key)).size() + 1;  // after "key":
  const size_t value_size = member->begin + member->size - value_begin;
  std::string text = *r.text;
  text.replace(value_begin, value_size, value);
  const auto shift =
      static_cast<std::ptrdiff_t>(value.size()) - static_cast<std::ptrdiff_t>(value_size);
  member->size += shift;
  for (auto later = member + 1; later != r.members.end(); ++later) later->begin += shift;
  r.text = std::make_shared<const std::string>(std::move(text));
}

// A PUT of admin_state_up alone: how every fence and unfence updates a port. The document the
// general path would build, check and serialise again differs from the kept one in that member
// only, so only that member of the text changes: the mock's CPU under its lock shares the cores
// with the RPCs the benchmark times.
bool SetAdminState(PortRecord& r, bool up) {
  const bool changed = up != r.port.admin_state_up;
  r.port.admin_state_up = up;
  r.extra["admin_state_up"] = up;
  ReplaceMember(r, "admin_state_up", up ? "true" : "false");
  return changed;
}

// Why `key` of a PUT cannot take `value` (merged: the port document so far), or "" when it can.
std::string UpdateRefusal(const std::string& key, const json& value, json& merged, bool placed) {
  if (key == "id" || key == "project_id") {
    return value != merged[key] ? "port." + key + " cannot be changed" : "";
  }
  if (ReadOnlyFields().count(key) != 0 && value != merged[key]) {
    return "port." + key + " is decided by the controller and cannot be changed";
  }
  if (PlacementFields().count(key) != 0 && value != merged[key] && placed) {
    return "port." + key + " cannot be changed once the agent has placed the interface";
  }
  return "";
}

}  // namespace

std::string StatusWord(Dialect dialect, Phase phase) {
  const bool alcor = dialect == Dialect::kAlcor;
  switch (phase) {
    case Phase::kPending:
    case Phase::kActivating:
      return alcor ? "created" : "PENDING";
    case Phase::kReady:
      return alcor ? "ACTIVE" : "UP";
    case Phase::kFailed:
      return alcor ? "failed" : "ERROR";
  }
  return "";
}

json PortDocument(const PortRecord& r) {
  json o = r.extra.is_object() ? r.extra : json::object();
  const json base = client::PortToJson(r.port);
  for (auto it = base.begin(); it != base.end(); ++it) o[it.key()] = it.value();
  return o;
}

void RenewText(PortRecord& r) {
  // Serialised member by member, which is how Dump writes an object: the same text, and where
  // each member lies in it.
  std::string text = "{";
  r.members.clear();
  const json document = PortDocument(r);
  for (const auto& [key, value] : document.items()) {
    if (text.size() > 1) text += ',';
    const size_t begin = text.size();
    text += Dump(json(key));
    text += ':';
    text += Dump(value);
    r.members.push_back({key, begin, text.size() - begin});
  }
  text += '}';
  r.text = std::make_shared<const std::string>(std::move(text));
}

PortText Projection(const PortRecord& r, const std::vector<std::string>& fields) {
  std::string text = "{";
  for (const MemberSpan& m : r.members) {
    if (std::find(fields.begin(), fields.end(), m.key) == fields.end()) continue;
    if (text.size() > 1) text += ',';
    text.append(*r.text, m.begin, m.size);
  }
  text += '}';
  return std::make_shared<const std::string>(std::move(text));
}

bool MatchesQuery(const json& document, const std::multimap<std::string, std::string>& query) {
  for (auto it = query.begin(); it != query.end();) {
    const auto range = query.equal_range(it->first);
    const auto field = document.find(it->first);
    bool any = false;
    for (auto v = range.first; v != range.second; ++v) {
      if (field != document.end() && FieldMatches(*field, v->second)) any = true;
    }
    if (!any) return false;
    it = range.second;
  }
  return true;
}

Result<json> PortObjectWithId(const json& item, const std::string& where) {
  if (!item.is_object()) {
    return InvalidArgumentError(where + " is not an object (got " + item.type_name() + ")");
  }
  json object = item;
  if (Unset(object, "id")) {
    object["id"] = UuidV4();
  } else if (!object["id"].is_string()) {
    return InvalidArgumentError(where + ".id is not a string (got " + object["id"].type_name() +
                                ")");
  }
  return object;
}

Result<NewPort> CompleteNewPort(json obj, const std::string& where, const Networks& networks) {
  if (Unset(obj, "project_id")) {
    obj["project_id"] = networks.project_id;
  } else if (!obj["project_id"].is_string() || obj["project_id"] != networks.project_id) {
    return InvalidArgumentError(where + ".project_id " + Dump(obj["project_id"]) +
                                " does not match the project in the URL (" + networks.project_id +
                                ")");
  }
  if (Unset(obj, "network_id")) obj["network_id"] = networks.subnet_id;
  if (Unset(obj, "veth_name")) obj["veth_name"] = "eth0";
  // What the controller decides is not the caller's to say.
  obj.erase("status");
  obj.erase("mac_address");

  auto parsed = client::PortFromJson(obj);
  if (!parsed.ok()) {
    // The client names the document "port"; name this request item instead.
    std::string msg = parsed.status().message();
    if (msg.rfind("port", 0) == 0) msg = where + msg.substr(4);
    return InvalidArgumentError(msg);
  }
  NewPort p{std::move(parsed).value(), std::move(obj)};
  p.extra.erase("fixed_ips");
  if (!IsKnownNetwork(networks, p.port.network_id)) {
    return NotFoundError(where + ".network_id " + p.port.network_id +
                         " is not a network of this controller (subnet " + networks.subnet_id +
                         ")");
  }
  const std::string& veth = p.port.veth_name;
  if (veth.size() > 15 || veth.find('/') != std::string::npos) {
    return InvalidArgumentError(where + ".veth_name \"" + veth +
                                "\" is not a valid interface name (at most 15 characters, no "
                                "'/')");
  }
  if (networks.agent && p.port.network_ns.empty()) {
    return InvalidArgumentError(where +
                                ".network_ns (or veth_namespace) is missing: the agent needs the "
                                "namespace to place " +
                                veth + " in");
  }
  return p;
}

Result<bool> ApplyUpdate(PortRecord& r, const json& given, bool placed) {
  // A null member keeps the stored value, as Alcor's update merges it (PortProcessor).
  json patch = json::object();
  for (const auto& [key, value] : given.items()) {
    if (!value.is_null()) patch[key] = value;
  }
  if (patch.size() == 1 && patch.contains("admin_state_up") && patch.begin()->is_boolean()) {
    return SetAdminState(r, patch.begin()->get<bool>());
  }
  json merged = PortDocument(r);
  for (const auto& [key, value] : patch.items()) {
    const std::string refusal = UpdateRefusal(key, value, merged, placed);
    if (!refusal.empty()) return InvalidArgumentError(refusal);
    if (key != "id" && key != "project_id") merged[key] = value;
  }
  // A PUT that spells the namespace the bulk way moves network_ns along with it.
  const bool bulk_spelling = patch.contains("veth_namespace") && !patch.contains("network_ns");
  if (bulk_spelling) merged["network_ns"] = patch["veth_namespace"];
  auto parsed = client::PortFromJson(merged);
  if (!parsed.ok()) return InvalidArgumentError(parsed.status().message());

  const client::Port& p = *parsed;
  const bool admin_changed = p.admin_state_up != r.port.admin_state_up;
  r.port.name = p.name;
  r.port.description = p.description;
  r.port.host_id = p.host_id;
  r.port.admin_state_up = p.admin_state_up;
  r.port.veth_name = p.veth_name;
  r.port.network_ns = p.network_ns;
  for (const auto& [key, value] : patch.items()) {
    if (ReadOnlyFields().count(key) == 0) r.extra[key] = value;
  }
  if (bulk_spelling) r.extra["network_ns"] = patch["veth_namespace"];
  RenewText(r);
  return admin_changed;
}

std::string HostEndName(const std::string& port_id, int attempt) {
  std::string hex;
  for (char c : port_id) {
    if (IsHexDigit(c)) {
      hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  if (attempt == 0 && hex.size() >= 11) return "mz" + hex.substr(0, 11);
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(Fnv1a(port_id + "#" + std::to_string(attempt))));
  return "mz" + std::string(buf).substr(0, 11);
}

}  // namespace mizarmp::mock
