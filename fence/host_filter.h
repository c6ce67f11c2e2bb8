// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A node's own enforcement of the standing fence set (fence/fence_set.h), on every node,
// whatever that node's Mizar-MP agent does: the nftables table `inet mizarmp_fence` in the
// calling thread's network namespace drops every packet from or to a fenced CIDR on the input,
// output and forward hooks. In the node agent's namespace, the node neither talks to a fenced
// address nor routes traffic to or from one; in each pod's (fence/pod_filters.h), the pod does
// neither. So a dead node's pods are cut off by the nodes that survive it.
//
// Each change is one nftables transaction, so it never opens a gap: the elements that changed,
// or the whole table when this agent does not know what the kernel holds (its first set, or a
// table changed behind its back). It lives in
// the kernel and outlasts a restart of the agent; the set is also kept in a 0600 file, so a
// rebooted node puts it back (Restore) before it publishes. An empty set removes the table:
// nothing of it stays once every fence is lifted. The peers in `keep` (the controller's
// publication endpoint) stay reachable whatever the set holds: the unfence travels that way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"
#include "fence/fence_set.h"

namespace mizarmp::fence {

inline constexpr const char* kHostFilterTable = "mizarmp_fence";

// A TCP peer the filter never cuts.
struct KeptPeer {
  IpAddress address;
  uint16_t port = 0;
};

// The nftables script that makes the table hold `set` (and keep `keep` reachable), replacing
// what it held; for an empty set, the script that removes the table.
std::string HostFilterScript(const FenceSet& set, const std::vector<KeptPeer>& keep);
// The script that changes the table from holding `from` to holding `to` (neither empty): the
// elements that go and those that come, nothing else ("" for none). A change of one fence among
// 65,536 is one element, not the whole table again.
std::string HostFilterDelta(const FenceSet& from, const FenceSet& to);

class HostFilter {
 public:
  // `state_file`: where the enforced set is kept (absolute), or empty for none (a pod's table,
  // which the agent builds whole again after a restart).
  HostFilter(std::string state_file, std::vector<KeptPeer> keep)
      : state_file_(std::move(state_file)), keep_(std::move(keep)) {}

  // Enforces `set` in this thread's network namespace and keeps it in the state file.
  // UNAVAILABLE with nftables' own message when the kernel refused it: the old set then stands.
  Status Apply(const FenceSet& set);
  // The same, keeping `set` itself rather than a copy of it.
  Status Apply(std::shared_ptr<const FenceSet> set);

  // Enforces the set the state file holds, if any (a rebooted node's last known set).
  Status Restore();

  // Puts the enforced set back when its table is gone: `nft flush ruleset` (which Debian's
  // nftables.service runs when it starts) removes every table, ours too. Only the table's
  // presence is looked at, a small netlink dump, so it can run at every look of the agent.
  Status Repair();

  // The digest of the set enforced now: empty until Apply or Restore succeeded.
  const std::string& digest() const { return enforced_->digest; }
  // The set enforced now (none until Apply or Restore succeeded).
  const FenceSet& enforced() const { return *enforced_; }
  // The same set, for filters that enforce it too (fence/pod_filters.h) without a copy.
  const std::shared_ptr<const FenceSet>& shared_enforced() const { return enforced_; }

 private:
  // Makes the kernel hold `set`: the whole table when `whole` (the kernel's state unknown), else
  // the delta from the set enforced now (the whole table if that fails).
  Status Change(std::shared_ptr<const FenceSet> wanted, bool whole);

  const std::string state_file_;
  const std::vector<KeptPeer> keep_;
  // Shared with other filters that enforce the same set (fence/pod_filters.h: one copy for
  // every pod, not one each). Its digest is empty until Apply or Restore succeeded.
  std::shared_ptr<const FenceSet> enforced_ = std::make_shared<const FenceSet>();
};

}  // namespace mizarmp::fence
