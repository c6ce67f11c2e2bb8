// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/pod_filters.h"

#include "netns/netns.h"

namespace mizarmp::fence {

std::set<std::string> PodNamespaces(const std::vector<records::RecordCache::Records>& records,
                                    const std::string& node) {
  std::set<std::string> namespaces;
  for (const records::RecordCache::Records& network : records) {
    for (const records::Record& r : *network) {
      if (r.netns.empty() || (!r.host_id.empty() && r.host_id != node)) continue;
      namespaces.insert(r.netns);
    }
  }
  return namespaces;
}

Status PodFilters::ApplyIn(const std::string& netns, HostFilter& filter, const FenceSet& set,
                           bool* gone) {
  *gone = false;
  auto ns = netns::Netns::Open(netns);
  if (!ns.ok() && ns.status().IsNotFound()) {
    *gone = true;
    return Status::Ok();
  }
  MZ_RETURN_IF_ERROR(ns.status().WithContext("a pod's fence set"));
  return ns->Run([&] { return filter.Apply(set); });
}

Status PodFilters::Apply(const std::set<std::string>& pods, const FenceSet& set) {
  Status first;
  bool gone = false;
  for (auto it = filters_.begin(); it != filters_.end();) {
    if (pods.contains(it->first)) {
      ++it;
      continue;
    }
    // Left the records: nothing of the fence stays in a namespace that outlives it.
    Status s = ApplyIn(it->first, it->second, FenceSet{}, &gone);
    if (!s.ok() && first.ok()) first = s;
    it = s.ok() ? filters_.erase(it) : std::next(it);
  }
  for (const std::string& netns : pods) {
    HostFilter& filter = filters_.try_emplace(netns, "", std::vector<KeptPeer>{}).first->second;
    if (!filter.digest().empty() && filter.digest() == set.digest) continue;
    Status s = ApplyIn(netns, filter, set, &gone);
    if (!s.ok() && first.ok()) first = s;
    if (gone) filters_.erase(netns);
  }
  return first;
}

}  // namespace mizarmp::fence
