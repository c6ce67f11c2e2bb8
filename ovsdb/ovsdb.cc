// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The operations on the Open_vSwitch schema (vswitch.ovsschema): Bridge.ports refers to Port
// rows, Port.interfaces to Interface rows; Port and Interface are not root tables, so a port
// whose uuid leaves its bridge's "ports" is garbage-collected with its interface in the same
// commit. Values use RFC 7047's encoding: ["uuid",U], ["set",[...]] (a one-element set may be
// the bare element), ["map",[[k,v],...]].
#include "ovsdb/ovsdb.h"

#include <algorithm>

namespace mizarmp::ovsdb {

using nlohmann::json;

namespace {

json NameIs(const std::string& name) { return json::array({json::array({"name", "==", name})}); }

// The elements of a set value: ["set",[e...]] or a bare single element.
std::vector<json> SetElements(const json& value) {
  if (value.is_array() && value.size() == 2 && value[0] == "set" && value[1].is_array()) {
    return value[1].get<std::vector<json>>();
  }
  return {value};
}

// The uuid string of ["uuid","..."]; empty when `value` is not one.
std::string UuidOf(const json& value) {
  if (value.is_array() && value.size() == 2 && value[0] == "uuid" && value[1].is_string()) {
    return value[1].get<std::string>();
  }
  return {};
}

std::map<std::string, std::string> MapOf(const json& value) {
  std::map<std::string, std::string> out;
  if (!value.is_array() || value.size() != 2 || value[0] != "map" || !value[1].is_array()) {
    return out;
  }
  for (const json& pair : value[1]) {
    if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
      out[pair[0].get<std::string>()] = pair[1].get<std::string>();
    }
  }
  return out;
}

// The "count" of an update's or mutate's result; -1 when there is none.
int CountOf(const json& result) {
  if (!result.is_object()) return -1;
  auto it = result.find("count");
  return it != result.end() && it->is_number_integer() ? it->get<int>() : -1;
}

// The rows of a select's result.
const json& RowsOf(const json& result) {
  static const json kNone = json::array();
  if (!result.is_object()) return kNone;
  auto it = result.find("rows");
  return it != result.end() && it->is_array() ? *it : kNone;
}

// The "error" of one operation's result in TransactRaw's answer, empty when it succeeded.
std::string ErrorOf(const json& results, size_t i) {
  if (!results.is_array() || i >= results.size() || !results[i].is_object()) return {};
  auto it = results[i].find("error");
  if (it == results[i].end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The rows of the three tables a port is assembled from: every port named or on a bridge
// becomes a PortRow.
struct Snapshot {
  std::map<std::string, std::string> bridge_of_port;                    // port uuid -> bridge
  std::map<std::string, std::map<std::string, std::string>> iface_ids;  // iface uuid -> ids
};

Result<PortRow> RowFromPort(const json& port, const Snapshot& s) {
  PortRow row;
  if (!port.is_object() || !port.contains("name") || !port["name"].is_string()) {
    return InternalError("a Port row without a name");
  }
  row.name = port["name"].get<std::string>();
  const std::string uuid = UuidOf(port.value("_uuid", json()));
  if (auto b = s.bridge_of_port.find(uuid); b != s.bridge_of_port.end()) row.bridge = b->second;
  // tag is an optional integer: the empty set when unset, the bare integer when set.
  for (const json& t : SetElements(port.value("tag", json::array({"set", json::array()})))) {
    if (t.is_number_integer()) row.tag = t.get<int>();
  }
  for (const json& i : SetElements(port.value("interfaces", json()))) {
    if (auto ids = s.iface_ids.find(UuidOf(i)); ids != s.iface_ids.end()) {
      row.external_ids = ids->second;
      break;  // a port of the plugin or nova has exactly one interface
    }
  }
  return row;
}

Snapshot SnapshotOf(const json& bridges, const json& interfaces) {
  Snapshot s;
  for (const json& b : bridges) {
    const std::string name = b.value("name", std::string());
    for (const json& p : SetElements(b.value("ports", json()))) {
      if (std::string u = UuidOf(p); !u.empty()) s.bridge_of_port[u] = name;
    }
  }
  for (const json& i : interfaces) {
    s.iface_ids[UuidOf(i.value("_uuid", json()))] = MapOf(i.value("external_ids", json()));
  }
  return s;
}

// A mutation of Bridge.ports: ["ports", insert|delete, ["set", [ref]]]. (A braced list of one
// element is that element to nlohmann, so every array of one is spelled json::array.)
json Mutation(const char* mutator, json ref) {
  return json::array({"ports", mutator, json::array({"set", json::array({std::move(ref)})})});
}

json Select(const char* table, json where, std::vector<std::string> columns) {
  return json{{"op", "select"},
              {"table", table},
              {"where", std::move(where)},
              {"columns", std::move(columns)}};
}

// FindPort's and ListPorts's one read; nlohmann's exceptions (a row of the wrong shape) become
// INTERNAL here, as the library never throws.
Result<std::vector<PortRow>> ReadPorts(Connection& db, const json& port_where,
                                       const json& bridge_where, bool bridge_required,
                                       const std::string& what) {
  const json ops = json::array({Select("Port", port_where, {"_uuid", "name", "tag", "interfaces"}),
                                Select("Bridge", bridge_where, {"name", "ports"}),
                                Select("Interface", json::array(), {"_uuid", "external_ids"})});
  auto results = db.Transact(ops);
  if (!results.ok()) return results.status().WithContext(what);
  try {
    const json& bridges = RowsOf((*results)[1]);
    if (bridge_required && bridges.empty()) {
      return NotFoundError(what + ": no such bridge in " + db.socket_path());
    }
    const Snapshot s = SnapshotOf(bridges, RowsOf((*results)[2]));
    std::vector<PortRow> rows;
    for (const json& port : RowsOf((*results)[0])) {
      if (bridge_required && s.bridge_of_port.count(UuidOf(port.value("_uuid", json()))) == 0) {
        continue;  // on another bridge
      }
      MZ_ASSIGN_OR_RETURN(PortRow row, RowFromPort(port, s));
      // The bridge's local port: the bridge itself, no one's pod.
      if (bridge_required && row.name == row.bridge) continue;
      rows.push_back(std::move(row));
    }
    std::sort(rows.begin(), rows.end(),
              [](const PortRow& a, const PortRow& b) { return a.name < b.name; });
    return rows;
  } catch (const json::exception& e) {
    return InternalError(what + ": ovsdb-server at " + db.socket_path() +
                         " answered rows of an unexpected shape: " + e.what());
  }
}

// Whether the port named `name` is on `bridge` already: OK when it is, FAILED_PRECONDITION when
// it is on another one, NOT_FOUND when there is no such port.
Status ExistingPort(Connection& db, const std::string& bridge, const std::string& name,
                    const std::string& what) {
  MZ_ASSIGN_OR_RETURN(std::optional<PortRow> found, FindPort(db, name));
  if (!found) return NotFoundError(what + ": no port " + name);
  if (found->bridge == bridge) return Status::Ok();
  return FailedPreconditionError(what + ": port " + name + " is on bridge " +
                                 (found->bridge.empty() ? "(none)" : found->bridge) + ", not " +
                                 bridge);
}

}  // namespace

Result<std::optional<PortRow>> FindPort(Connection& db, const std::string& name) {
  MZ_ASSIGN_OR_RETURN(std::vector<PortRow> rows,
                      ReadPorts(db, NameIs(name), json::array(), false, "finding port " + name));
  if (rows.empty()) return std::optional<PortRow>();
  return std::optional<PortRow>(std::move(rows.front()));
}

Result<std::vector<PortRow>> ListPorts(Connection& db, const std::string& bridge) {
  return ReadPorts(db, json::array(), NameIs(bridge), true,
                   "listing the ports of bridge " + bridge);
}

Status AddPort(Connection& db, const std::string& bridge, const std::string& name,
               const std::map<std::string, std::string>& external_ids) {
  const std::string what = "adding port " + name + " to bridge " + bridge;
  // Already there (the plugin's ADD retried): nothing to do, and nothing for the index to refuse.
  if (Status st = ExistingPort(db, bridge, name, what); !st.IsNotFound()) return st;
  json ids = json::array();
  for (const auto& [k, v] : external_ids) ids.push_back(json::array({k, v}));
  // The "wait" with timeout 0 fails the whole transaction at once when the bridge is missing,
  // so nothing is inserted; without it a mutate counting 0 rows would still commit the inserts
  // (which ovsdb-server then collects as unreferenced).
  const json ops = json::array({
      json{{"op", "wait"},
           {"timeout", 0},
           {"table", "Bridge"},
           {"where", NameIs(bridge)},
           {"columns", json::array({"name"})},
           {"until", "=="},
           {"rows", json::array({json{{"name", bridge}}})}},
      json{{"op", "insert"},
           {"table", "Interface"},
           {"uuid-name", "iface"},
           {"row", {{"name", name}, {"external_ids", json::array({"map", ids})}}}},
      json{{"op", "insert"},
           {"table", "Port"},
           {"uuid-name", "port"},
           {"row", {{"name", name}, {"interfaces", json::array({"named-uuid", "iface"})}}}},
      json{{"op", "mutate"},
           {"table", "Bridge"},
           {"where", NameIs(bridge)},
           {"mutations", json::array({Mutation("insert", json::array({"named-uuid", "port"}))})}},
  });
  auto results = db.TransactRaw(ops);
  if (!results.ok()) return results.status().WithContext(what);
  if (!ErrorOf(*results, 0).empty()) {
    return NotFoundError(what + ": no bridge " + bridge + " in " + db.socket_path());
  }
  for (size_t i = 1; i < results->size(); ++i) {
    const std::string error = ErrorOf(*results, i);
    if (error.empty()) continue;
    // Port and Interface names are indexed: another client added the same name between the
    // read above and this commit. Who won decides the answer.
    if (error == "constraint violation") {
      Status again = ExistingPort(db, bridge, name, what);
      if (!again.IsNotFound()) return again;
    }
    return FailedPreconditionError(what + ": ovsdb-server at " + db.socket_path() +
                                   " refused it: " + (*results)[i].dump());
  }
  if (results->size() < 4 || CountOf((*results)[3]) != 1) {
    return NotFoundError(what + ": no bridge " + bridge + " in " + db.socket_path());
  }
  return Status::Ok();
}

Status DeletePort(Connection& db, const std::string& name) {
  const std::string what = "deleting port " + name;
  auto found = db.Transact(json::array({Select("Port", NameIs(name), {"_uuid"})}));
  if (!found.ok()) return found.status().WithContext(what);
  const json& rows = RowsOf((*found)[0]);
  if (rows.empty()) return Status::Ok();
  const std::string uuid = rows[0].is_object() ? UuidOf(rows[0].value("_uuid", json())) : "";
  if (uuid.empty()) return InternalError(what + ": its row has no _uuid");
  // Out of every bridge's ports: the Port and its Interface go with the last reference.
  auto done = db.Transact(json::array(
      {json{{"op", "mutate"},
            {"table", "Bridge"},
            {"where", json::array()},
            {"mutations", json::array({Mutation("delete", json::array({"uuid", uuid}))})}}}));
  if (!done.ok()) return done.status().WithContext(what);
  return Status::Ok();
}

Status SetTag(Connection& db, const std::string& name, int tag) {
  const std::string what = "setting the tag of port " + name;
  if (tag < 1 || tag > 4094) {
    return InvalidArgumentError(what + ": " + std::to_string(tag) + " is outside 1..4094");
  }
  auto results = db.Transact(json::array({json{
      {"op", "update"}, {"table", "Port"}, {"where", NameIs(name)}, {"row", {{"tag", tag}}}}}));
  if (!results.ok()) return results.status().WithContext(what);
  if (results->empty() || CountOf((*results)[0]) <= 0) {
    return NotFoundError(what + ": no port " + name + " in " + db.socket_path());
  }
  return Status::Ok();
}

Result<bool> WaitForPort(Connection& db, const std::string& name,
                         std::chrono::milliseconds timeout) {
  const std::string what = "waiting for port " + name;
  const json op{{"op", "wait"},
                {"timeout", timeout.count()},
                {"table", "Port"},
                {"where", NameIs(name)},
                {"columns", json::array({"name"})},
                {"until", "=="},
                {"rows", json::array({json{{"name", name}}})}};
  // The server answers by the wait's own timeout; the socket's deadline leaves it time to.
  auto results = db.TransactRaw(json::array({op}), timeout + std::chrono::seconds(5));
  if (!results.ok()) return results.status().WithContext(what);
  const std::string error = ErrorOf(*results, 0);
  if (error.empty()) return true;
  if (error == "timed out") return false;
  return FailedPreconditionError(what + ": ovsdb-server at " + db.socket_path() +
                                 " refused it: " + (*results)[0].dump());
}

Result<bool> BridgeExists(Connection& db, const std::string& bridge) {
  auto results = db.Transact(json::array({json{{"op", "select"},
                                               {"table", "Bridge"},
                                               {"where", NameIs(bridge)},
                                               {"columns", json::array({"name"})}}}));
  if (!results.ok()) return results.status().WithContext("looking up bridge " + bridge);
  const json* rows = results->empty() ? nullptr : &(*results)[0];
  if (rows == nullptr || !rows->contains("rows") || !(*rows)["rows"].is_array()) {
    return InternalError("looking up bridge " + bridge + ": ovsdb-server at " + db.socket_path() +
                         " answered without rows");
  }
  return !(*rows)["rows"].empty();
}

}  // namespace mizarmp::ovsdb
