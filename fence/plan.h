// What an enforcement pass has to change at Mizar-MP, worked out without doing it.
//
// A port with a fixed IP inside a stored fence must be down; a port with a fixed IP inside a
// pending unfence and inside no fence must be up (a port in both stays down: the remaining fence
// wins). Ports already in that state, ports outside every fence and unfence and ports without a
// (parsable) fixed IP need no change.
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
  bool admin_state_up = false;  // the state to set
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
};

// The fixed IPs of `port` that parse (Mizar-MP could in principle return garbage: the others are
// logged and skipped).
std::vector<IpAddress> PortIps(const client::Port& port);

// The changes that bring `ports` (the project's ports at Mizar-MP) in line with `snapshot`.
EnforcementPlan PlanEnforcement(const StoreSnapshot& snapshot,
                                const std::vector<client::Port>& ports);

// What a pass completed.
struct Completion {
  std::vector<Cidr> enforced;        // fences all of whose changes were made, in plan order
  std::vector<Cidr> newly_enforced;  // those of them that were pending (the store's update)
  std::vector<Cidr> unfenced;        // pending unfences all of whose changes were made
};

// What is complete when exactly the changes with failed[i] set failed (a missing entry: made).
Completion CompletedBy(const EnforcementPlan& plan, const std::vector<bool>& failed);

}  // namespace mizarmp::fence
