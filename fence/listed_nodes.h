// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The nodes a pass through the port index lists by `binding:host_id` (fence/port_finder.h):
// those whose agent's lease lapsed, whose index entries may be stale, and the registered ones
// whose agent never published. Finding them reads every node's lease (PortIndex::Publications),
// O(nodes): 4,000 leases at a million ports, half a megabyte from etcd. A fence RPC's pass
// reuses a read younger than a third of the lease instead, so that its cost follows what it
// fences (docs/decisions/2026-11-28-lease-reads-reused.md).
//
// Why a reused read is safe: a publication's time only moves forward, so a node lapsed by the
// leases as they are now is lapsed by any earlier read of them. An old read can name a node that
// renewed since (one list more), never leave out one that lapsed. A node that published first
// after the read is missing from it and so counts as never published, and is listed too.
// Why a third of the lease: a live node renews every third of it (fence/service/publisher.h), so a read
// that old names no live node lapsed; older reads would list live nodes in every fence.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "fence/port_index.h"
#include "mizarmp-client/types.h"

namespace mizarmp::fence {

// The host ids to list, as for lapsed nodes, of the `registered` nodes that never published:
// those whose id and name are both missing from `publications`, by each of the two (a port
// names its node by one of them). Sorted, each once.
std::vector<std::string> UnpublishedNodes(const std::vector<client::Node>& registered,
                                          const std::vector<Publication>& publications);

// Whether `p`'s lease still runs at `now`: a node is live until its last publication is older
// than `lease`.
inline bool Live(const Publication& p, std::chrono::seconds lease,
                 std::chrono::system_clock::time_point now) {
  return p.at + lease >= now;
}

// The nodes whose last publication is older than `lease` at `now`.
std::vector<std::string> LapsedNodes(const std::vector<Publication>& publications,
                                     std::chrono::seconds lease,
                                     std::chrono::system_clock::time_point now);

// The live nodes (not lapsed by `lease` at `now`) whose last publication did not say they enforce
// the fence set of digest `digest`: those a fence change still waits for. Sorted by node name, as
// Publications() is.
std::vector<std::string> NodesNotEnforcing(const std::vector<Publication>& publications,
                                           const std::string& digest, std::chrono::seconds lease,
                                           std::chrono::system_clock::time_point now);

class ListedNodes {
 public:
  using Now = std::function<std::chrono::system_clock::time_point()>;
  // `lease`: the publication lease the controller grants. `now`: the clock (tests give theirs).
  explicit ListedNodes(std::chrono::seconds lease, Now now = std::chrono::system_clock::now);

  // Whether a pass reads the leases now or may reuse a recent read. The reconcile (the
  // interval's pass, a new term's, a publication's inside a fence) reads them now: it covers a
  // dead node within the lease and one interval. A pass for a stored change reuses a read; while
  // changes come faster than the interval, a dead node waits at most a third of a lease more.
  enum class Leases { kReadNow, kRecent };

  // The lapsed nodes, then the unpublished `registered` ones not among them, each once; the
  // index's error when the leases must be read and cannot be. `registered` is the same object
  // while the registered nodes are unchanged (fence/registered_nodes.h), so the unpublished ones
  // are worked out again only when it or the leases changed.
  Result<std::vector<std::string>> Find(
      const PortIndex& index, const std::shared_ptr<const std::vector<client::Node>>& registered,
      Leases leases) MZ_EXCLUDES(mu_);

  // NodesNotEnforcing of the leases Find() last read.
  std::vector<std::string> NotEnforcing(const std::string& digest) const MZ_EXCLUDES(mu_);

 private:
  bool ReadIsRecent(std::chrono::system_clock::time_point now) const MZ_REQUIRES(mu_);

  const std::chrono::seconds lease_;
  const Now now_;
  mutable Mutex mu_;
  std::vector<Publication> publications_ MZ_GUARDED_BY(mu_);
  std::optional<std::chrono::system_clock::time_point> read_at_ MZ_GUARDED_BY(mu_);
  // The unpublished nodes as of publications_ and unpublished_of_ (the registered list).
  std::vector<std::string> unpublished_ MZ_GUARDED_BY(mu_);
  std::shared_ptr<const std::vector<client::Node>> unpublished_of_ MZ_GUARDED_BY(mu_);
};

}  // namespace mizarmp::fence
