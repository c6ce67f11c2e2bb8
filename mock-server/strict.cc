// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/strict.h"

#include <algorithm>
#include <cctype>
#include <ctime>

#include "common/log.h"
#include "common/uuid.h"

namespace mizarmp::mock {

using nlohmann::json;

namespace {

// The members of a v0.1 port record (model/CustomerResource.java and model/PortState.java at
// 5ca01ef0), in the order Jackson writes them; Spring's mapper writes null ones as null, and
// the two primitive booleans default to false.
const std::vector<std::string>& V01Members() {
  // A table, a few members a line.
  // clang-format off
  static const std::vector<std::string> kMembers = {
      "project_id", "id", "name", "description", "network_id", "tenant_id", "admin_state_up",
      "mac_address", "veth_name", "fast_path", "device_id", "device_owner", "status", "fixed_ips",
      "allowed_address_pairs", "extra_dhcp_opts", "security_groups", "binding:host_id",
      "binding:profile", "binding:vnic_type", "network_ns", "dns_name", "dns_assignment"};
  // clang-format on
  return kMembers;
}

// Alcor's PortEntity members that are lists and objects (web/entity/port/PortEntity.java at
// 21f11b5c): JacksonJsonFilter writes a null one as [] or {}, every other null as "".
bool IsAlcorList(const std::string& key) {
  return key == "fixed_ips" || key == "allowed_address_pairs" || key == "extra_dhcp_opts" ||
         key == "security_groups" || key == "tags";
}
bool IsAlcorObject(const std::string& key) {
  return key == "binding:profile" || key == "binding:vif_details" || key == "dns_assignment" ||
         key == "resource_request";
}
// Every top-level member of Alcor's PortEntity (and CustomerResource), in its order.
const std::vector<std::string>& AlcorMembers() {
  // A table, a few members a line.
  // clang-format off
  static const std::vector<std::string> kMembers = {
      "id", "project_id", "tenant_id", "name", "description", "network_id", "admin_state_up",
      "mac_address", "veth_name", "fast_path", "device_id", "device_owner", "status", "fixed_ips",
      "allowed_address_pairs", "extra_dhcp_opts", "security_groups", "binding:host_id",
      "binding:profile", "binding:vif_details", "binding:vif_type", "binding:vnic_type",
      "network_ns", "dns_name", "dns_domain", "dns_assignment", "create_at", "update_at",
      "ip_allocation", "port_security_enabled", "qos_network_policy_id", "qos_policy_id",
      "revision_number", "resource_request", "tags", "uplink_status_propagation",
      "mac_learning_enabled"};
  // clang-format on
  return kMembers;
}

bool IsNull(const json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null();
}

// A v0.1 record as Redis keeps it and Jackson writes it: every member, unknown ones dropped
// (Boot's mapper ignores them), absent ones null or false.
json V01Record(const json& port) {
  json out = json::object();
  for (const std::string& key : V01Members()) {
    auto it = port.find(key);
    if (it != port.end()) {
      out[key] = *it;
    } else {
      out[key] = (key == "admin_state_up" || key == "fast_path") ? json(false) : json(nullptr);
    }
  }
  return out;
}

// ControllerUtil.GenereateMacAddress writes each byte with Integer.toHexString: no zero
// padding ("0e:73:ae:c8:0:6"). The mock's own MAC, written the same way.
std::string UnpaddedMac(const std::string& mac) {
  std::string out;
  size_t start = 0;
  while (start <= mac.size()) {
    size_t end = mac.find(':', start);
    if (end == std::string::npos) end = mac.size();
    std::string group = mac.substr(start, end - start);
    while (group.size() > 1 && group[0] == '0') group.erase(0, 1);
    if (!out.empty()) out += ':';
    out += group;
    start = end + 1;
  }
  return out;
}

// A document as Alcor's POST and PUT answers write it: Spring's mapper with NON_ABSENT, so null
// members are left out.
json WithoutNulls(const json& document) {
  json out = json::object();
  for (const auto& [key, value] : document.items()) {
    if (!value.is_null()) out[key] = value;
  }
  return out;
}

// The placeholders of JacksonJsonFilter (GET and list answers): a selected member that is null
// is written "" (String, Boolean, Integer), [] (a list) or {} (an object).
json WithPlaceholders(const json& document, const std::vector<std::string>& fields) {
  json out = json::object();
  for (const std::string& key : AlcorMembers()) {
    if (!fields.empty() && std::find(fields.begin(), fields.end(), key) == fields.end()) continue;
    auto it = document.find(key);
    if (it != document.end() && !it->is_null()) {
      out[key] = *it;
    } else if (IsAlcorList(key)) {
      out[key] = json::array();
    } else if (IsAlcorObject(key)) {
      out[key] = json::object();
    } else {
      out[key] = "";
    }
  }
  return out;
}

// A query value against a stored scalar, as Alcor's MapPredicate compares after casting the
// value to the field's type: exact equality.
bool ValueMatches(const json& stored, const std::string& want) {
  if (stored.is_string()) return stored.get<std::string>() == want;
  if (stored.is_boolean())
    return (want == "true") == stored.get<bool>() && (want == "true" || want == "false");
  if (stored.is_number_integer()) return std::to_string(stored.get<int64_t>()) == want;
  return false;
}

std::string Timestamp() {
  char buf[40];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S.000+0000", &tm);
  return buf;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 412:
      return "Precondition Failed";
    default:
      return "Internal Server Error";
  }
}

// Whether `document` has, for each filtered member, one of its values.
bool MatchesFilters(const json& document, const std::multimap<std::string, std::string>& filters) {
  for (auto it = filters.begin(); it != filters.end();) {
    const auto range = filters.equal_range(it->first);
    const auto stored = document.find(it->first);
    if (stored == document.end()) return false;
    const bool any = std::any_of(range.first, range.second,
                                 [&](const auto& v) { return ValueMatches(*stored, v.second); });
    if (!any) return false;
    it = range.second;
  }
  return true;
}

}  // namespace

StrictReply SpringError(int status, const std::string& message, const std::string& path) {
  return StrictReply{status, json{{"timestamp", Timestamp()},
                                  {"status", status},
                                  {"error", ReasonPhrase(status)},
                                  {"message", message},
                                  {"path", path}}};
}

// RestPreconditions at 5ca01ef0: a create or an update names the port, its id and its
// network_id, or it is an exception (500). Status 0 when they are there.
StrictReply V01Preconditions(const json& body, const std::string& path) {
  auto it = body.find("port");
  if (it == body.end() || !it->is_object() || IsNull(*it, "id")) {
    return SpringError(
        500, "com.futurewei.alcor.controller.exception.ResourceNullException: Empty resource id",
        path);
  }
  if (IsNull(*it, "network_id")) {
    return SpringError(
        500,
        "com.futurewei.alcor.controller.exception.ResourceNotFoundException: Resource not found",
        path);
  }
  return StrictReply{0, json()};
}

StrictController::StrictController(const Options& options, Model& model)
    : options_(options), model_(model) {}

Result<json> StrictController::Allocate(const json& port, const Faults& faults) {
  json item = json::object();
  item["id"] = port["id"];
  item["network_id"] = options_.subnet_id;
  for (const char* key : {"veth_name", "network_ns", "binding:host_id", "name", "description"}) {
    auto it = port.find(key);
    if (it != port.end() && it->is_string()) item[key] = *it;
  }
  // Alcor's IP manager gives a requested address (v0.1 takes the next one whatever is asked).
  if (auto ips = port.find("fixed_ips"); alcor() && ips != port.end() && ips->is_array()) {
    item["fixed_ips"] = *ips;
  }
  auto made = model_.CreatePorts(json::array({item}), false, faults);
  if (!made.ok()) return made.status();
  return made->front();
}

void StrictController::Forget(const std::string& id, bool leak) {
  (void)model_.DeletePort(id);
  if (leak) ++leaked_;
  documents_.erase(id);
  order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
}

StrictReply StrictController::Create(const std::string& project, const json& body, bool bulk,
                                     const Faults& faults, const std::string& path) {
  if (!alcor()) return CreateV01(project, body, faults, path);
  // PortController.createPort / createPortBulk: a body without "port" (or "ports") is a
  // NullPointerException, 500.
  const json* items = nullptr;
  json single;
  if (bulk) {
    auto it = body.find("ports");
    if (it != body.end() && it->is_array()) items = &*it;
  } else if (auto it = body.find("port"); it != body.end() && it->is_object()) {
    single = json::array({*it});
    items = &single;
  }
  if (items == nullptr) return SpringError(500, "java.lang.NullPointerException", path);
  json out = json::array();
  for (const json& item : *items) {
    json stored;
    StrictReply refused = CreateAlcor(project, item, faults, path, &stored);
    if (refused.status != 0) return refused;
    out.push_back(WithoutNulls(stored));
  }
  if (bulk) return StrictReply{201, json{{"ports", std::move(out)}}};
  return StrictReply{201, json{{"port", std::move(out[0])}}};
}

// services/port_manager: PortController.createPort checks network_id (NetworkIdRequired, 412);
// VpcProcessor fetches the VPC (an unknown one: GetVpcEntityException, 500); FixedIpsProcessor
// the subnets (GetSubnetEntityException, 500); PortProcessor keeps a client-chosen id and
// PortRepositoryV2 puts the entity over any port with that id, with new addresses: the old ones
// are not given back (counted in leaked_addresses). The answer carries no status: the port
// manager sets ACTIVE only once the data-plane manager has answered.
StrictReply StrictController::CreateAlcor(const std::string& project, const json& item,
                                          const Faults& faults, const std::string& path,
                                          json* stored) {
  if (!item.is_object()) return SpringError(500, "java.lang.NullPointerException", path);
  json port = item;
  if (IsNull(port, "network_id")) return SpringError(412, "Network id is required", path);
  if (port["network_id"] != options_.vpc_id) {
    return SpringError(500, "Get VpcEntity exception", path);
  }
  if (auto ips = port.find("fixed_ips"); ips != port.end() && ips->is_array()) {
    for (const json& ip : *ips) {
      if (!ip.is_object() || !ip.contains("subnet_id") || ip["subnet_id"] != options_.subnet_id) {
        return SpringError(500, "Get SubnetEntity exception", path);
      }
    }
  }
  if (IsNull(port, "id")) port["id"] = UuidV4();
  if (!port["id"].is_string()) return SpringError(500, "java.lang.ClassCastException", path);
  const std::string id = port["id"].get<std::string>();
  port["project_id"] = project;
  port["tenant_id"] = project;
  if (IsNull(port, "admin_state_up")) port["admin_state_up"] = true;
  if (!port.contains("port_security_enabled")) port["port_security_enabled"] = true;
  if (IsNull(port, "binding:vif_type")) port["binding:vif_type"] = "ovs";
  port.erase("status");
  MutexLock lk(mu_);
  if (documents_.count(id) != 0) Forget(id, /*leak=*/true);
  auto made = Allocate(port, faults);
  if (!made.ok()) return SpringError(500, made.status().message(), path);
  port["mac_address"] = (*made)["mac_address"];
  json ips = json::array();
  for (const json& ip : (*made)["fixed_ips"]) {
    if (ip["subnet_id"] == options_.subnet_id) ips.push_back(ip);
  }
  port["fixed_ips"] = std::move(ips);
  if (const auto host = port.find("binding:host_id"); host != port.end() && host->is_string()) {
    if (!host->get<std::string>().empty()) nodes_.insert(host->get<std::string>());
  }
  documents_[id] = port;
  order_.push_back(id);
  *stored = std::move(port);
  return StrictReply{0, json()};
}

// web/PortController.createPortState at 5ca01ef0: RestPreconditions wants the port, its id and
// its network_id (ResourceNullException / ResourceNotFoundException, both 500); a known id is
// written over (Redis HSET) with a new address and MAC; ControllerUtil.CreatePort sets the
// fixed IP on the subnet named by network_id and status UP, pushing the goal state to the host
// before it answers (the model's agent plugs the NIC before this returns).
StrictReply StrictController::CreateV01(const std::string& project, const json& body,
                                        const Faults& faults, const std::string& path) {
  auto it = body.find("port");
  if (StrictReply refused = V01Preconditions(body, path); refused.status != 0) return refused;
  json port = V01Record(*it);
  if (!port["id"].is_string() || !port["network_id"].is_string()) {
    return SpringError(400, "JSON parse error: id and network_id must be strings", path);
  }
  if (port["project_id"].is_null()) port["project_id"] = project;
  if (port["description"].is_null()) port["description"] = "";
  const std::string id = port["id"].get<std::string>();
  MutexLock lk(mu_);
  if (documents_.count(id) != 0) Forget(id, /*leak=*/false);
  auto made = Allocate(port, faults);
  if (!made.ok()) return SpringError(500, made.status().message(), path);
  // The agent's work, done before the answer as v0.1 sends the goal state first.
  auto placed = model_.GetPort(id);
  if (placed.ok() && json::parse(**placed).value("status", "") == "ERROR") {
    (void)model_.DeletePort(id);
    return SpringError(500, "goal state could not be programmed on the host", path);
  }
  port["mac_address"] = UnpaddedMac((*made)["mac_address"].get<std::string>());
  std::string ip;
  for (const json& fixed : (*made)["fixed_ips"]) {
    if (fixed["subnet_id"] == options_.subnet_id) ip = fixed["ip_address"].get<std::string>();
  }
  port["fixed_ips"] = json::array({json{{"subnet_id", port["network_id"]}, {"ip_address", ip}}});
  port["status"] = "UP";
  documents_[id] = port;
  order_.push_back(id);
  return StrictReply{201, json{{"port", port}}};
}

// v0.1: `with IS_K8S set (app/onebox/OneBoxConfig.java), OneBoxUtil.CreatePortGroup reads a
// host list that only the non-K8S set-up fills: a NullPointerException, 500. The real one has
// written the ports to Redis first, as given (no address, no MAC); the mock keeps none, as no
// client can use such a port.
StrictReply StrictController::CreateGroup(const std::string& path) {
  return SpringError(500, "java.lang.NullPointerException", path);
}

json StrictController::Current(const std::string& id, json document) {
  if (!alcor()) return document;
  auto text = model_.GetPort(id);
  std::string status;
  if (text.ok()) status = json::parse(**text).value("status", "");
  // PortServiceImpl.updatePortStatus writes ACTIVE, or "failed" for a host the data-plane
  // manager could not program; before that the status is null.
  if (status == "ACTIVE" || status == "failed") {
    document["status"] = status;
  } else {
    document.erase("status");
  }
  return document;
}

// v0.1: 200 {"port":null} for an unknown id. Alcor: 404 "Port not found"
// (PortEntityNotFound), fields as in a list.
StrictReply StrictController::Get(const std::string& id,
                                  const std::multimap<std::string, std::string>& query,
                                  const std::string& path) {
  json document;
  {
    MutexLock lk(mu_);
    auto it = documents_.find(id);
    if (it == documents_.end()) {
      if (alcor()) return SpringError(404, "Port not found", path);
      return StrictReply{200, json{{"port", nullptr}}};
    }
    document = it->second;
  }
  if (!alcor()) return StrictReply{200, json{{"port", document}}};
  std::vector<std::string> fields;
  for (auto [k, v] = query.equal_range("fields"); k != v; ++k) fields.push_back(k->second);
  return StrictReply{200, json{{"port", WithPlaceholders(Current(id, document), fields)}}};
}

// PortServiceImpl.listPort: the project of the URL is not used (only an RBAC token's project
// would be); each parameter but `fields` naming a top-level member filters by equality (its
// values OR-ed), a list or object member is QueryParamTypeNotSupportException (500), unknown
// names are ignored; IgniteClientDbCache.getAll refuses RESULT_THRESHOLD_SIZE rows or more.
StrictReply StrictController::List(const std::multimap<std::string, std::string>& query,
                                   const std::string& path) {
  std::vector<std::string> fields;
  std::multimap<std::string, std::string> filters;
  for (const auto& [key, value] : query) {
    if (key == "fields") {
      fields.push_back(value);
    } else if (std::find(AlcorMembers().begin(), AlcorMembers().end(), key) !=
               AlcorMembers().end()) {
      if (IsAlcorList(key) || IsAlcorObject(key)) {
        return SpringError(500, "QueryParamTypeNotSupportException", path);
      }
      filters.emplace(key, value);
    }
  }
  // Alcor reads every matching row before it counts them; the mock stops at the limit and
  // copies nothing until it knows the answer is a list, so a refusal of a million-port list
  // comes back as fast as one of the limit's size.
  std::vector<std::pair<std::string, json>> rows;
  {
    MutexLock lk(mu_);
    std::vector<const std::string*> matching;
    for (const std::string& id : order_) {
      if (!MatchesFilters(documents_.at(id), filters)) continue;
      matching.push_back(&id);
      if (matching.size() >= static_cast<size_t>(options_.row_limit)) {
        return SpringError(500, "too many rows found!", path);
      }
    }
    rows.reserve(matching.size());
    for (const std::string* id : matching) rows.emplace_back(*id, documents_.at(*id));
  }
  json ports = json::array();
  for (auto& [id, document] : rows)
    ports.push_back(WithPlaceholders(Current(id, document), fields));
  return StrictReply{200, json{{"ports", std::move(ports)}}};
}

// v0.1's only port list (PortController.getPortStatesBySubnet): the ports whose project_id and
// network_id are the URL's, compared ignoring case, as one object keyed by port id.
StrictReply StrictController::ListOfSubnet(const std::string& project, const std::string& subnet) {
  const auto same = [](const json& v, const std::string& want) {
    if (!v.is_string()) return false;
    const std::string s = v.get<std::string>();
    return s.size() == want.size() &&
           std::equal(s.begin(), s.end(), want.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  };
  json out = json::object();
  MutexLock lk(mu_);
  for (const std::string& id : order_) {
    const json& document = documents_.at(id);
    if (same(document["project_id"], project) && same(document["network_id"], subnet)) {
      out[id] = document;
    }
  }
  return StrictReply{200, std::move(out)};
}

StrictReply StrictController::Update(const std::string& project, const std::string& id,
                                     const json& body, const std::string& path) {
  if (!alcor()) return UpdateV01(project, id, body, path);
  return UpdateAlcor(id, body, path);
}

// v0.1 PortController.updatePortState: the body's port must have an id and a network_id (500
// otherwise), the stored port must exist ("Port not found", 500) and be the URL project's
// (500); then the body is written as the whole record, nothing merged, and nothing is sent
// to the host. The real one writes under the body's id; the mock refuses a body whose id is
// not the URL's instead (no client means to move a port).
StrictReply StrictController::UpdateV01(const std::string& project, const std::string& id,
                                        const json& body, const std::string& path) {
  auto it = body.find("port");
  if (StrictReply refused = V01Preconditions(body, path); refused.status != 0) return refused;
  MutexLock lk(mu_);
  auto stored = documents_.find(id);
  if (stored == documents_.end()) {
    return SpringError(500, "java.lang.Exception: Port not found", path);
  }
  if (stored->second["project_id"] != project) {
    return SpringError(500, "java.lang.Exception: project id mismatch", path);
  }
  if ((*it)["id"] != id) {
    return SpringError(500, "mock: the body's port id is not the URL's", path);
  }
  stored->second = V01Record(*it);
  return StrictReply{200, json{{"port", stored->second}}};
}

// Alcor PortProcessor.updateProcess: every member the body leaves null is taken from the stored
// port; port_security_enabled has the initializer true in PortEntity, so a body without it turns
// it on, and only an explicit null keeps the stored value. A changed admin_state_up reaches the
// host (the model's agent).
StrictReply StrictController::UpdateAlcor(const std::string& id, const json& body,
                                          const std::string& path) {
  auto it = body.find("port");
  if (it == body.end() || !it->is_object()) {
    return SpringError(500, "java.lang.NullPointerException", path);
  }
  json merged;
  bool admin_changed = false;
  {
    MutexLock lk(mu_);
    auto stored = documents_.find(id);
    if (stored == documents_.end()) return SpringError(404, "Port not found", path);
    json patch = *it;
    if (!patch.contains("port_security_enabled")) patch["port_security_enabled"] = true;
    merged = stored->second;
    for (const auto& [key, value] : patch.items()) {
      if (key == "id" || value.is_null()) continue;
      merged[key] = value;
    }
    admin_changed = merged["admin_state_up"] != stored->second["admin_state_up"];
    stored->second = merged;
  }
  if (admin_changed) {
    auto synced = model_.UpdatePort(id, json{{"admin_state_up", merged["admin_state_up"]}});
    if (!synced.ok()) return SpringError(500, synced.status().message(), path);
  }
  return StrictReply{200, json{{"port", WithoutNulls(Current(id, merged))}}};
}

// v0.1: 200 {"id": ID}, {"id": null} for an unknown port, 500 for another project's. Alcor:
// 200 without a body, 404 "Port not found".
StrictReply StrictController::Delete(const std::string& project, const std::string& id,
                                     const std::string& path) {
  MutexLock lk(mu_);
  auto stored = documents_.find(id);
  if (stored == documents_.end()) {
    if (alcor()) return SpringError(404, "Port not found", path);
    return StrictReply{200, json{{"id", nullptr}}};
  }
  if (!alcor() && stored->second["project_id"] != project) {
    return SpringError(500, "java.lang.Exception: project id mismatch", path);
  }
  Forget(id, /*leak=*/false);
  if (alcor()) return StrictReply{200, json(), true};
  return StrictReply{200, json{{"id", id}}};
}

// v0.1 SubnetController / Alcor subnet_manager SubnetController: {"subnet":{...}}, and
// {"subnet":null} for an unknown id in both. v0.1 names the VPC vpc_id, Alcor network_id.
StrictReply StrictController::GetSubnet(const std::string& id) const {
  auto subnet = model_.Subnet(id);
  if (!subnet.ok()) return StrictReply{200, json{{"subnet", nullptr}}};
  json document = {{"id", subnet->id},     {"project_id", subnet->project_id},
                   {"cidr", subnet->cidr}, {"gateway_ip", subnet->gateway_ip},
                   {"name", "subnet"},     {"description", ""}};
  document[alcor() ? "network_id" : "vpc_id"] = subnet->network_id;
  if (alcor()) document["ip_version"] = subnet->ip_version;
  return StrictReply{200, json{{"subnet", std::move(document)}}};
}

size_t StrictController::leaked_addresses() const {
  MutexLock lk(mu_);
  return leaked_;
}

// NodeController.getAllNodes (services/node_manager): NodesWebJson, {"nodeInfos":[NodeInfo]}.
// The mock's node manager knows each node a port was bound to, under its name as both id and
// name, as the port manager admits a port only on a registered node (NodeProcessor).
StrictReply StrictController::Nodes() const {
  json nodes = json::array();
  MutexLock lk(mu_);
  for (const std::string& name : nodes_) {
    nodes.push_back(json{{"node_id", name},
                         {"node_name", name},
                         {"local_ip", ""},
                         {"mac_address", ""},
                         {"veth", ""},
                         {"server_port", 0}});
  }
  return StrictReply{200, json{{"nodeInfos", std::move(nodes)}}};
}

void StrictController::Clear() {
  MutexLock lk(mu_);
  nodes_.clear();
  documents_.clear();
  order_.clear();
  leaked_ = 0;
}

}  // namespace mizarmp::mock
