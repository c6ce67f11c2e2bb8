// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What an enforcement pass has to change at Mizar-MP, worked out without doing it.
//
// A port with a fixed IP inside a stored fence must be down, and is then held down on behalf of
// every fence containing it (the store's record, fence/store.h): when the pass disables it, or
// when it is already down on the fence service's behalf (another fence's or unfence's record
// names it, or a fence or unfence without a record contains it). A port that is down for another
// reason (an operator's quarantine) is not the fence's to hold.
//
// A port inside no fence, that no fence's record names, is re-enabled when it is down and a
// pending unfence's record names it, or a pending unfence without a record (an older store)
// contains it. Everything else is left as it is: an unfence never re-enables a port it did not
// disable. A port that is up again outside every fence is released from the records.
//
// Ports without a (parsable) fixed IP are only looked at when a record names them.
//
// A fence is enforced, and a pending unfence complete, once every change it depends on was made:
// a fence depends on disabling each port it covers, an unfence on each change of a port it
// covers (also the disabling of a port that a fence keeps down). Which changes failed is only
// known after applying them (fence/enforcer.h); CompletedBy() then says what is complete.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "fence/store.h"
#include "mizarmp-client/types.h"

namespace mizarmp::fence {

// One port update.
struct PortChange {
  std::string port_id;
  std::string label;            // "port <id> (<fixed IPs>)": how logs and errors name the port
  std::string host_id;          // its binding:host_id, possibly empty
  bool admin_state_up = false;  // the state to set (true: released from the records once made)
  std::vector<Cidr> serves;     // the fences and pending unfences incomplete if it fails, sorted
};

// A stored fence and the changes it depends on.
struct PlannedFence {
  Cidr cidr;
  FenceState state = FenceState::kPending;
  std::vector<size_t> depends_on;  // indexes into EnforcementPlan::changes
};

// A pending unfence and the changes it depends on.
struct PlannedUnfence {
  Cidr cidr;
  std::vector<size_t> depends_on;  // indexes into EnforcementPlan::changes
};

struct EnforcementPlan {
  std::vector<PortChange> changes;       // in the order of the port list
  std::vector<PlannedFence> fences;      // one per stored fence, in the snapshot's order
  std::vector<PlannedUnfence> unfences;  // one per pending unfence, in the snapshot's order
  // The record entries to add before any change is made (a crash after a disable must not lose
  // who holds the port): each fence a port is disabled for, or found held down for.
  std::vector<PortHold> holds;
  // Ports up outside every fence that a record still names: to drop from the records.
  std::vector<std::string> released;
  // The entries of the port list that could not be read. Such an entry may be a port inside any
  // fence or unfence, so a plan with any completes nothing: pending fences stay pending (already
  // enforced ones stay enforced) and pending unfences stay pending until a complete list. Its
  // changes of the readable ports are made all the same.
  std::vector<std::string> unreadable;
};

// The members of a port the fence service reads (the plan, and the addresses GetFenceClients
// answers with): all it asks a port list for (client::Client::ListPorts' `fields`), about a third
// of each port's document, so a list of 10,000 ports is that much less to read.
inline const std::vector<std::string> kFencePortFields = {
    "id", "fixed_ips", "binding:host_id", "admin_state_up", "device_owner"};

// The fixed IPs of `port` that parse (Mizar-MP could in principle return garbage: the others are
// logged and skipped).
std::vector<IpAddress> PortIps(const client::Port& port);

// The changes that bring `ports` (the project's ports at Mizar-MP) in line with `snapshot`; a
// port the network owns (Port::network_owned) is left alone.
EnforcementPlan PlanEnforcement(const StoreSnapshot& snapshot,
                                const std::vector<client::Port>& ports);
// The same for a list as read from Mizar-MP, holes (PortList::unreadable) included.
EnforcementPlan PlanEnforcement(const StoreSnapshot& snapshot, const client::PortList& list);

// What a pass completed.
struct Completion {
  std::vector<Cidr> enforced;        // fences all of whose changes were made, in plan order
  std::vector<Cidr> newly_enforced;  // those of them that were pending (the store's update)
  std::vector<Cidr> unfenced;        // pending unfences all of whose changes were made
};

// What is complete when exactly the changes with failed[i] set failed (a missing entry: made);
// nothing when the plan's list had unreadable entries.
Completion CompletedBy(const EnforcementPlan& plan, const std::vector<bool>& failed);

}  // namespace mizarmp::fence
