// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence set inside each pod of this node: the host filter's table (fence/host_filter.h) in
// the pod's own network namespace. The node's table alone misses a pod whose traffic never
// crosses the node's IP hooks: Open vSwitch's userspace datapath takes a packet off the pod
// veth's host end through an AF_PACKET socket, which the kernel serves before any ingress hook
// (`__netif_receive_skb_core` delivers to packet taps first), and XDP data planes such as
// Mizar-MP v0.1's redirect it past them. Every packet a pod sends or receives crosses the pod's
// own stack, whatever the data plane: there it is dropped.
//
// A pod's table is built whole the first time this agent sees the pod (after a restart too: the
// kernel's table may hold a set lifted meanwhile), then changed by delta. A pod that leaves the
// records (DEL) loses the table if its namespace is still there (a container that left this
// network goes on running); a namespace that is gone took the table with it.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "fence/fence_set.h"
#include "fence/host_filter.h"
#include "records/cache.h"

namespace mizarmp::fence {

// The network namespaces of `node`'s pods in `records` (a record without a host id is the
// node's), as the runtime gave them to the plugin.
std::set<std::string> PodNamespaces(const std::vector<records::RecordCache::Records>& records,
                                    const std::string& node);

class PodFilters {
 public:
  // Makes the table in each namespace of `pods` hold `set`, and removes it from namespaces no
  // longer listed. Each pod is done whatever another's outcome; the first error names its
  // namespace, and that pod is tried again at the next Apply. Every pod keeps `set` itself.
  Status Apply(const std::set<std::string>& pods, std::shared_ptr<const FenceSet> set);

 private:
  // Pods' tables are changed on up to this many threads at once: a change that removes elements
  // waits out the kernel's RCU grace period (10 to 15 ms each, bench/RESULTS.md), and those
  // waits overlap across namespaces.
  static constexpr size_t kParallelPods = 4;

  // A pod whose table must change, and how that went.
  struct Due {
    const std::string* netns;
    HostFilter* filter;
    Status outcome;
    bool gone = false;
  };
  // ApplyIn for each of `due`, on up to `threads` threads (each pod's filter on one).
  static void ApplyAll(std::vector<Due>& due, const std::shared_ptr<const FenceSet>& set,
                       size_t threads);

  // Makes the table in the namespace at `netns` hold `set` through `filter`. A namespace that is
  // gone is OK (its table went with it); `gone` says so.
  static Status ApplyIn(const std::string& netns, HostFilter& filter,
                        std::shared_ptr<const FenceSet> set, bool* gone);

  std::map<std::string, HostFilter> filters_;  // by namespace path: what each pod enforces
};

}  // namespace mizarmp::fence
