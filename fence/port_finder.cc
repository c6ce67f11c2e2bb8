#include "fence/port_finder.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace

Result<client::PortList> FindFencedPorts(const StoreSnapshot& snapshot, const PortIndex& index,
                                         const PassConnections& connections) {
  MZ_ASSIGN_OR_RETURN(const std::vector<IndexedPort> inside,
                      index.Inside(PlannedCidrs(snapshot)));
  const std::vector<std::string> ids = CandidateIds(snapshot, inside);
  std::vector<std::optional<Result<client::Port>>> read(ids.size());
  const Status none =
      ForEachOverConnections(connections, ids.size(), [&](client::Client& mp, size_t i) {
        read[i] = mp.GetPort(ids[i]);
      });
  client::PortList found;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Status& error = !read[i] ? none : read[i]->status();
    if (read[i] && read[i]->ok()) {
      found.ports.push_back(std::move(**read[i]));
    } else if (!error.IsNotFound()) {
      found.unreadable.push_back("port " + ids[i] + ": " + error.ToString());
    }
  }
  return found;
}

}  // namespace mizarmp::fence
