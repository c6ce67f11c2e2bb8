// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// FenceService and its nodes: their publications and acknowledgements, the standing fence set
// offered to them, and a fence's wait until every live node enforces it (fence/service/fence_service.h).
#include "fence/service/fence_service.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "common/log.h"
#include "common/strings.h"
#include "fence/listed_nodes.h"

namespace mizarmp::fence {
namespace {

// How soon a wait for the nodes sees acknowledgements another replica recorded (its own wake it).
constexpr std::chrono::milliseconds kAcknowledgementPoll{100};



// What a publication of `ports` meets in `snap`.
struct FencesMet {
  std::vector<std::string> held;  // the ids among `ports` that a fence holds down, sorted
  // Whether a port with an address inside a fence is not held yet: only a pass can cut it off.
  // A renewal of ports already held is not, so it asks for no pass (leases renew every third).
  bool unheld_inside = false;
};

FencesMet MetBy(const StoreSnapshot& snap, const std::vector<AddressedPort>& ports) {
  FencesMet met;
  if (snap.fences.empty()) return met;
  std::set<std::string> held;
  std::vector<Cidr> fenced;
  fenced.reserve(snap.fences.size());
  for (const FenceEntry& f : snap.fences) {
    held.insert(f.held_ports.begin(), f.held_ports.end());
    fenced.push_back(f.cidr);
  }
  const CidrSet fences(std::move(fenced));
  std::set<std::string> found;
  for (const AddressedPort& p : ports) {
    if (held.contains(p.port_id)) {
      found.insert(p.port_id);
    } else if (!fences.Covering(p.ip).empty()) {
      met.unheld_inside = true;
    }
  }
  met.held.assign(found.begin(), found.end());
  return met;
}

}  // namespace

Result<FenceService::PublicationAnswer> FenceService::Publish(
    const std::string& node, const std::vector<AddressedPort>& ports, const std::string& enforced) {
  MZ_ASSIGN_OR_RETURN(const Opened opened, Store());
  if (opened.port_index == nullptr) {
    return FailedPreconditionError(
        "this controller keeps no port index (portIndex is off): nothing to publish to");
  }
  const Status published =
      opened.port_index->Publish(node, ports, std::chrono::system_clock::now(), enforced);
  metrics_.ObservePublication(published.ok());
  MZ_RETURN_IF_ERROR(published);
  MZ_ASSIGN_OR_RETURN(const StoreSnapshot snap, ReadStore(*opened.store));
  FencesMet met = MetBy(snap, ports);
  if (met.unheld_inside) RequestPassSoon(*opened.store);
  MZ_ASSIGN_OR_RETURN(FenceSet standing, StandingSet(snap, opened.port_index));
  // A covered node's new pod changes the set: the loop's next turn pushes it to every node.
  const auto offered = fence_sets_.Get();
  if (offered.value != nullptr && offered.value->digest != standing.digest) offer_again_ = true;
  return PublicationAnswer{options_.publication_lease, std::move(met.held), std::move(standing)};
}

Status FenceService::Acknowledge(const std::string& node, const std::string& enforced) {
  MZ_ASSIGN_OR_RETURN(const Opened opened, Store());
  if (opened.port_index == nullptr) {
    return FailedPreconditionError(
        "this controller keeps no port index (portIndex is off): nothing to acknowledge");
  }
  MZ_RETURN_IF_ERROR(opened.port_index->Acknowledge(node, enforced));
  metrics_.ObserveAcknowledgement();
  acknowledgements_.Set(node);
  return Status::Ok();
}

void FenceService::OfferStandingSet(FenceStore& store, const PortIndex* index) {
  MutexLock lock(offer_mu_);
  auto snap = ReadStore(store);
  Result<FenceSet> standing = snap.ok() ? StandingSet(*snap, index) : snap.status();
  if (!standing.ok()) {
    offer_again_ = true;  // the loop's next turn tries again
    return;
  }
  const auto offered = fence_sets_.Get();
  if (offered.value == nullptr || offered.value->digest != standing->digest) {
    fence_sets_.Set(std::move(*standing));
  }
}

// The loop's next turn (within kStorePollInterval) makes the pass on this replica if it leads;
// the store's request reaches the loop of whichever replica does. Should the request fail, the
// leader's reconcile interval still bounds the wait, so the publication stands.
void FenceService::RequestPassSoon(FenceStore& store) {
  published_inside_fence_ = true;
  const Status requested = store.RequestPass();
  if (!requested.ok()) {
    MZ_LOG(kWarn) << "fence: " << requested.message();
  }
}
Status FenceService::AwaitNodes(const Admitted& call, bool fence, Clock::time_point deadline) {
  for (;;) {
    const Clock::time_point checked = Clock::now();
    const uint64_t seen = acknowledgements_.Get().number;
    Result<std::shared_ptr<const FenceSet>> awaited = SetToAwait(call, fence);
    if (!awaited.ok() && !awaited.status().IsTransient()) return awaited.status();
    std::vector<std::string> behind;
    if (awaited.ok()) {
      if (*awaited == nullptr) return Status::Ok();  // superseded
      MZ_ASSIGN_OR_RETURN(const std::vector<Publication> publications,
                          call.port_index->Publications());
      behind = NodesNotEnforcing(publications, (*awaited)->digest, options_.publication_lease,
                                 std::chrono::system_clock::now());
      if (behind.empty()) return Status::Ok();
    }
    const Clock::duration look = Clock::now() - checked;
    if (Clock::now() + kAcknowledgementPoll > deadline) {
      if (!awaited.ok()) return awaited.status();
      return UnavailableError("in place at " + MizarMpName() + ", but " +
                              std::to_string(behind.size()) + " live node(s) do not enforce it yet: " +
                              JoinedAtMost(behind, 10) + "; a node that cannot enforce it lapses once its " +
                              std::to_string(options_.publication_lease.count()) +
                              " s publication lease runs out");
    }
    acknowledgements_.WaitPast(seen, kAcknowledgementPoll);
    // A look reads every node's lease, and the nodes acknowledge in a burst, one call each:
    // looks take at most half of the wait, each covering the acknowledgements that came meanwhile.
    std::this_thread::sleep_until(checked + 2 * look);
  }
}

Result<std::shared_ptr<const FenceSet>> FenceService::SetToAwait(const Admitted& call,
                                                                 bool fence) {
  Watched<FenceSet>::Version offered = fence_sets_.Get();
  if (offered.value != nullptr && HoldsChange(*offered.value, call.cidrs, fence)) {
    return std::move(offered.value);
  }
  // The offered set may be older than the change (its offer could not read the store): the store
  // says whether a later change superseded it.
  MZ_ASSIGN_OR_RETURN(const StoreSnapshot snap, ReadStore(*call.store));
  MZ_ASSIGN_OR_RETURN(FenceSet read, StandingSet(snap, call.port_index));
  auto standing = std::make_shared<const FenceSet>(std::move(read));
  if (!HoldsChange(*standing, call.cidrs, fence)) return std::shared_ptr<const FenceSet>();
  return standing;
}

FenceService::Clock::time_point FenceService::NodesDeadline(
    const grpc::ServerContext& context) const {
  // Ended a little before the caller's deadline, so that the caller reads which nodes it waited
  // for rather than DEADLINE_EXCEEDED.
  constexpr auto kAnswerMargin = std::chrono::milliseconds(500);
  // Its last look comes after every node live now has lapsed, one that published just before
  // the call and died included.
  Clock::time_point deadline =
      Clock::now() + options_.publication_lease + 2 * kAcknowledgementPoll;
  const auto caller = context.deadline();
  if (caller != std::chrono::system_clock::time_point::max()) {
    deadline = std::min(deadline, Clock::now() + (caller - std::chrono::system_clock::now()) -
                                      kAnswerMargin);
  }
  return deadline;
}

bool FenceService::HoldsChange(const FenceSet& set, const CidrSet& cidrs, bool fence) {
  for (const Cidr& c : cidrs.cidrs()) {
    const bool held = std::find(set.cidrs.begin(), set.cidrs.end(), c) != set.cidrs.end();
    if (held != fence) return false;
  }
  return true;
}

Result<FenceSet> FenceService::StandingSet(const StoreSnapshot& snap,
                                           const PortIndex* index) const {
  std::vector<Cidr> standing;
  standing.reserve(snap.fences.size());
  for (const FenceEntry& f : snap.fences) standing.push_back(f.cidr);
  if (index == nullptr) return MakeFenceSet(std::move(standing));
  size_t covered_addresses = 0;
  for (const std::string& node : CoveredNodes(CidrSet(standing), options_.node_addresses)) {
    MZ_ASSIGN_OR_RETURN(const std::vector<IpAddress> addresses, index->AddressesOn(node));
    if (covered_addresses + addresses.size() > kMaxCoveredAddresses) {
      MZ_LOG(kWarn) << "fence: the pods of node " << LogEscaped(node)
                    << " are left out of the fence set: the covered nodes' pods exceed "
                    << kMaxCoveredAddresses << " addresses; fence their addresses instead";
      continue;
    }
    covered_addresses += addresses.size();
    for (const IpAddress& ip : addresses) standing.emplace_back(ip, ip.bits());
  }
  return MakeFenceSet(std::move(standing));
}

Result<FenceService::NodesEnforcing> FenceService::ListNodes(const Secrets& secrets) {
  MZ_ASSIGN_OR_RETURN(const Admitted call, Admit("ListNodes", secrets, nullptr));
  if (call.port_index == nullptr) {
    return FailedPreconditionError(
        "this controller keeps no port index (portIndex is off): no node publishes to it");
  }
  MZ_ASSIGN_OR_RETURN(const std::vector<Publication> publications,
                      call.port_index->Publications());
  NodesEnforcing answer;
  if (const auto offered = fence_sets_.Get(); offered.value != nullptr) {
    answer.standing = offered.value->digest;
  }
  const auto now = std::chrono::system_clock::now();
  for (const Publication& p : publications) {
    answer.nodes.push_back({p, Live(p, options_.publication_lease, now),
                            !answer.standing.empty() && p.enforced == answer.standing});
  }
  return answer;
}

}  // namespace mizarmp::fence
