// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/listed_nodes.h"

#include <set>
#include <utility>

namespace mizarmp::fence {

std::vector<std::string> LapsedNodes(const std::vector<Publication>& publications,
                                     std::chrono::seconds lease,
                                     std::chrono::system_clock::time_point now) {
  std::vector<std::string> lapsed;
  for (const Publication& p : publications) {
    if (!Live(p, lease, now)) lapsed.push_back(p.node);
  }
  return lapsed;
}

std::vector<std::string> NodesNotEnforcing(const std::vector<Publication>& publications,
                                           const std::string& digest, std::chrono::seconds lease,
                                           std::chrono::system_clock::time_point now) {
  std::vector<std::string> behind;
  for (const Publication& p : publications) {
    if (Live(p, lease, now) && p.enforced != digest) behind.push_back(p.node);
  }
  return behind;
}

std::vector<std::string> UnpublishedNodes(const std::vector<client::Node>& registered,
                                          const std::vector<Publication>& publications) {
  std::set<std::string> published;
  for (const Publication& p : publications) published.insert(p.node);
  std::set<std::string> hosts;
  for (const client::Node& n : registered) {
    if (published.contains(n.id) || published.contains(n.name)) continue;
    for (const std::string* host : {&n.id, &n.name}) {
      if (!host->empty()) hosts.insert(*host);
    }
  }
  return {hosts.begin(), hosts.end()};
}

ListedNodes::ListedNodes(std::chrono::seconds lease, Now now)
    : lease_(lease), now_(std::move(now)) {}

bool ListedNodes::ReadIsRecent(std::chrono::system_clock::time_point now) const {
  // A clock set back makes the read's age negative: read again rather than trust it.
  return read_at_ && *read_at_ <= now && now - *read_at_ < lease_ / 3;
}

Result<std::vector<std::string>> ListedNodes::Find(
    const PortIndex& index, const std::shared_ptr<const std::vector<client::Node>>& registered,
    Leases leases) {
  MutexLock lock(mu_);
  // The time is taken before the read, so a node's lapse is judged against leases at least as
  // new as that instant.
  const auto now = now_();
  const bool read = leases == Leases::kReadNow || !ReadIsRecent(now);
  if (read) {
    MZ_ASSIGN_OR_RETURN(publications_, index.Publications());
    read_at_ = now;
  }
  if (read || registered != unpublished_of_) {
    unpublished_ =
        registered ? UnpublishedNodes(*registered, publications_) : std::vector<std::string>();
    unpublished_of_ = registered;
  }
  std::vector<std::string> nodes = LapsedNodes(publications_, lease_, now);
  nodes.insert(nodes.end(), unpublished_.begin(), unpublished_.end());
  return nodes;
}

std::vector<std::string> ListedNodes::NotEnforcing(const std::string& digest) const {
  MutexLock lock(mu_);
  return NodesNotEnforcing(publications_, digest, lease_, now_());
}

}  // namespace mizarmp::fence
