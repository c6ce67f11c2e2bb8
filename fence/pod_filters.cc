// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/pod_filters.h"

#include <algorithm>
#include <atomic>
#include <thread>

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

Status PodFilters::ApplyIn(const std::string& netns, HostFilter& filter,
                           std::shared_ptr<const FenceSet> set, bool* gone) {
  *gone = false;
  auto ns = netns::Netns::Open(netns);
  if (!ns.ok() && ns.status().IsNotFound()) {
    *gone = true;
    return Status::Ok();
  }
  MZ_RETURN_IF_ERROR(ns.status().WithContext("a pod's fence set"));
  return ns->Run([&] { return filter.Apply(std::move(set)); });
}

Status PodFilters::Apply(const std::set<std::string>& pods,
                         std::shared_ptr<const FenceSet> shared) {
  const FenceSet& set = *shared;
  Status first;
  bool gone = false;
  for (auto it = filters_.begin(); it != filters_.end();) {
    if (pods.contains(it->first)) {
      ++it;
      continue;
    }
    // Left the records: nothing of the fence stays in a namespace that outlives it.
    Status s = ApplyIn(it->first, it->second, std::make_shared<const FenceSet>(), &gone);
    if (!s.ok() && first.ok()) first = s;
    it = s.ok() ? filters_.erase(it) : std::next(it);
  }
  // A pod whose table holds nothing yet gets the whole set, which libnftables parses at tens of
  // MiB while it lasts at 65,536 elements: one such pod at a time. The others change by delta,
  // or lose the table.
  std::vector<Due> whole, changed;
  for (const std::string& netns : pods) {
    HostFilter& filter = filters_.try_emplace(netns, "", std::vector<KeptPeer>{}).first->second;
    if (!filter.digest().empty() && filter.digest() == set.digest) continue;
    const bool builds = filter.enforced().cidrs.empty() && !set.cidrs.empty();
    (builds ? whole : changed).push_back({&netns, &filter});
  }
  ApplyAll(whole, shared, 1);
  ApplyAll(changed, shared, kParallelPods);
  for (const std::vector<Due>* done : {&whole, &changed}) {
    for (const Due& d : *done) {
      if (!d.outcome.ok() && first.ok()) first = d.outcome;
      if (d.gone) filters_.erase(*d.netns);
    }
  }
  return first;
}

void PodFilters::ApplyAll(std::vector<Due>& due, const std::shared_ptr<const FenceSet>& set,
                          size_t threads) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < due.size(); i = next++) {
      due[i].outcome = ApplyIn(*due[i].netns, *due[i].filter, set, &due[i].gone);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < std::min(due.size(), threads); ++i) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace mizarmp::fence
