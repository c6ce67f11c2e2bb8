// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/port_finder.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fence/plan.h"

namespace mizarmp::fence {
namespace {

// The CIDRs whose ports a pass plans for: every fence and every pending unfence.
std::vector<Cidr> PlannedCidrs(const StoreSnapshot& snapshot) {
  std::vector<Cidr> cidrs;
  cidrs.reserve(snapshot.fences.size() + snapshot.unfences.size());
  for (const FenceEntry& f : snapshot.fences) cidrs.push_back(f.cidr);
  for (const UnfenceEntry& u : snapshot.unfences) cidrs.push_back(u.cidr);
  return cidrs;
}

// The ids to read back: the indexed ports inside the CIDRs and the records' ports, each once.
std::vector<std::string> CandidateIds(const StoreSnapshot& snapshot,
                                      const std::vector<IndexedPort>& inside) {
  std::vector<std::string> ids;
  for (const IndexedPort& p : inside) ids.push_back(p.port_id);
  for (const FenceEntry& f : snapshot.fences) {
    ids.insert(ids.end(), f.held_ports.begin(), f.held_ports.end());
  }
  for (const UnfenceEntry& u : snapshot.unfences) {
    ids.insert(ids.end(), u.held_ports.begin(), u.held_ports.end());
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Reads each of `ids` back by key into `found`; a port gone is left out, a failed read is an
// unreadable entry.
void ReadBack(const std::vector<std::string>& ids, const PassConnections& connections,
              client::PortList& found) {
  std::vector<std::optional<Result<client::Port>>> read(ids.size());
  const Status none = ForEachOverConnections(
      connections, ids.size(), [&](client::Client& mp, size_t i) { read[i] = mp.GetPort(ids[i]); });
  for (size_t i = 0; i < ids.size(); ++i) {
    const Status& error = !read[i] ? none : read[i]->status();
    if (read[i] && read[i]->ok()) {
      found.ports.push_back(std::move(**read[i]));
    } else if (!error.IsNotFound()) {
      found.unreadable.push_back("port " + ids[i] + ": " + error.ToString());
    }
  }
}

// Adds the ports of each lapsed node, listed by `binding:host_id`, that `found` lacks.
void ListLapsed(const std::vector<std::string>& lapsed, const PassConnections& connections,
                client::PortList& found) {
  std::vector<std::optional<Result<client::PortList>>> listed(lapsed.size());
  const Status none =
      ForEachOverConnections(connections, lapsed.size(), [&](client::Client& mp, size_t i) {
        listed[i] = mp.ListPorts({{"binding:host_id", lapsed[i]}}, kFencePortFields);
      });
  std::set<std::string> have;
  for (const client::Port& p : found.ports) have.insert(p.id);
  for (size_t i = 0; i < lapsed.size(); ++i) {
    if (!listed[i] || !listed[i]->ok()) {
      const Status& error = !listed[i] ? none : listed[i]->status();
      found.unreadable.push_back("the ports of node " + lapsed[i] + ": " + error.ToString());
      continue;
    }
    for (client::Port& p : (*listed[i])->ports) {
      if (have.insert(p.id).second) found.ports.push_back(std::move(p));
    }
    for (std::string& hole : (*listed[i])->unreadable) found.unreadable.push_back(std::move(hole));
  }
}

}  // namespace

Result<client::PortList> FindFencedPorts(const StoreSnapshot& snapshot, const PortIndex& index,
                                         const std::vector<std::string>& lapsed,
                                         const PassConnections& connections) {
  MZ_ASSIGN_OR_RETURN(const std::vector<IndexedPort> inside, index.Inside(PlannedCidrs(snapshot)));
  client::PortList found;
  ReadBack(CandidateIds(snapshot, inside), connections, found);
  ListLapsed(lapsed, connections, found);
  std::sort(found.ports.begin(), found.ports.end(),
            [](const client::Port& a, const client::Port& b) { return a.id < b.id; });
  return found;
}

}  // namespace mizarmp::fence
