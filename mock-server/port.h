// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// One port of the mock controller (private to mock-server/): its record, the document it reads
// back as, and the rules for what a create or an update request may say about it. Nothing here
// allocates or locks; the model (model.h) does both.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "mizarmp-client/types.h"
#include "mock-server/mock.h"
#include "mock-server/pool.h"

namespace mizarmp::mock {

// Where a port is in its life. kActivating reads as pending: the agent is plugging it.
enum class Phase { kPending, kActivating, kReady, kFailed };

// The port status the dialect shows for `phase` (v0.1 PENDING/UP/ERROR, Alcor
// created/ACTIVE/failed).
std::string StatusWord(Dialect dialect, Phase phase);

// A port's document as serialised JSON (PortRecord::text), shared and never changed.
using PortText = std::shared_ptr<const std::string>;

// Where one top-level member ("key":value) of a port's serialised document lies in it.
struct MemberSpan {
  std::string key;
  size_t begin = 0;
  size_t size = 0;
};

struct PortRecord {
  uint64_t seq = 0;  // creation order; also tells a re-created port from the one it replaced
  client::Port port;
  nlohmann::json extra = nlohmann::json::object();  // the request's own fields, echoed back
  std::chrono::steady_clock::time_point created;
  int gets = 0;  // GET port/{id} answered so far
  Phase phase = Phase::kPending;
  bool never_ready = false;
  bool fail_ready = false;
  Lease lease;            // its addresses and MAC
  std::string host_name;  // reserved host-end name (activating or plugged)
  bool plugged = false;   // the agent's veth exists (OVS agent: the port is tagged)
  int vlan = 0;           // the OVS agent's tag on the port, 0 until set
  std::string error;      // why the port failed
  // PortDocument() serialised, shared with the answers being written: a list of 10,000 ports is
  // then copied, not built and dumped again. Whatever changes `port` or `extra` renews it
  // (RenewText: ApplyUpdate, Model::SetPhase).
  PortText text;
  // Each member of `text`, so a list asking for some `fields` is cut from it rather than built.
  std::vector<MemberSpan> members;
};

// The port document: the request's own fields with the controller's on top.
nlohmann::json PortDocument(const PortRecord& record);
// Serialises the record's document into record.text (and its members) again, after a change.
void RenewText(PortRecord& record);
// The record's document with only the members named in `fields` (Neutron's and Alcor's
// `?fields=` of a list; names no port has are ignored), in the document's order.
PortText Projection(const PortRecord& record, const std::vector<std::string>& fields);

// Whether a port document matches every key of a list query (?binding:host_id=node-a); a key
// given several times matches any of its values.
bool MatchesQuery(const nlohmann::json& document,
                  const std::multimap<std::string, std::string>& query);

// The networks of the controller, which a create request is checked against.
struct Networks {
  std::string project_id;
  std::string vpc_id;
  std::string subnet_id;
  std::string subnet6_id;  // empty: no IPv6 subnet
  bool agent = false;      // the agent needs each port's network namespace
};

// A create request item (`where` names it in errors: "port", "ports[2]") as an object whose id
// is set: the caller's, or a fresh UUID. INVALID_ARGUMENT for a wrong shape.
Result<nlohmann::json> PortObjectWithId(const nlohmann::json& item, const std::string& where);

// The port a create request object (from PortObjectWithId) asks for, completed with the
// controller's defaults (project, network, veth name); what the controller decides (status,
// MAC) is dropped, and the requested fixed_ips are in port.fixed_ips, not in extra.
// INVALID_ARGUMENT for a wrong shape or value, NOT_FOUND for a network of another controller.
struct NewPort {
  client::Port port;
  nlohmann::json extra;
};
Result<NewPort> CompleteNewPort(nlohmann::json object, const std::string& where,
                                const Networks& networks);

// Applies the fields of a PUT (`patch`, the object under "port") to `record`; `placed`: the
// agent has plugged (or is plugging) the interface, so where it lives can no longer change.
// Returns whether admin_state_up changed. INVALID_ARGUMENT naming the field that cannot change
// or has the wrong type; nothing is changed then.
Result<bool> ApplyUpdate(PortRecord& record, const nlohmann::json& patch, bool placed);

// A candidate name (at most 15 characters, "mz" + 11 hex digits) for the host end of the port's
// veth: from the port id's hex digits on attempt 0 when it has enough, else from a hash of the id
// and the attempt, so a clash is resolved by trying the next attempt.
std::string HostEndName(const std::string& port_id, int attempt);

}  // namespace mizarmp::mock
