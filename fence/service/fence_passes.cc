// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// FenceService's enforcement passes: a plan from the store and the ports found, carried out at
// Mizar-MP by the leader and recorded (fence/service/fence_service.h).
#include "fence/service/fence_service.h"

#include <future>
#include <utility>

#include "common/log.h"
#include "common/strings.h"
#include "fence/plan.h"
#include "fence/port_finder.h"

namespace mizarmp::fence {
namespace {

// The store's counts once a pass over `snap` recorded `applied`: the fences it newly enforced
// were pending in `snap`, and the unfences it completed were pending there (both are planned
// from `snap`, fence/plan.h).
StoreCounts CountsAfter(const StoreSnapshot& snap, const AppliedPlan& applied) {
  StoreCounts counts = CountStore(snap);
  counts.fences_pending -= applied.newly_enforced.size();
  counts.fences_enforced += applied.newly_enforced.size();
  counts.unfences_pending -= applied.report.unfenced.size();
  return counts;
}

// What a failed pass leaves behind, for its error message.
std::string WhatLeft(const StoreSnapshot& snap) {
  return std::to_string(snap.fences.size()) + " fence(s) and " +
         std::to_string(snap.unfences.size()) +
         " pending unfence(s) are stored and will be completed by a retry or the reconcile";
}

}  // namespace

Result<EnforceReport> FenceService::Reconcile() {
  MutexLock lock(enforce_mu_);
  return EnforceLocked(Leases::kReadNow);
}

Result<EnforceReport> FenceService::ReconcileChange(int64_t changed_at) {
  MutexLock lock(enforce_mu_);
  // The change may be this replica's own, or an RPC's pass may have run while the loop waited
  // for the lock: a pass whose snapshot or own writes reached that revision accounted for it.
  if (changed_at <= passed_revision_) return EnforceReport{};
  return EnforceLocked(Leases::kRecent);
}

FenceService::Clock::duration FenceService::UpdateBudget() const {
  return options_.mizarmp.connect_timeout + options_.mizarmp.request_timeout;
}

Result<EnforceReport> FenceService::EnforceLocked(Leases leases, PendingListing listing) {
  auto report = EnforcePass(leases, std::move(listing));
  metrics_.ObservePass(report.ok());
  auto opened = Store();
  if (!opened.ok()) return report;
  // A pass that succeeded accounted for the store as of its snapshot and for what it wrote since:
  // the leader's tick passes again only for somebody else's change.
  if (report.ok()) {
    passed_revision_ = opened->store->RevisionAfterOwnChanges(report->store_revision);
  }
  if (metrics_.registered()) ObserveStoreAfter(report, *opened->store);
  return report;
}

Result<EnforceReport> FenceService::EnforcePass(Leases leases, PendingListing listing) {
  ++passes_;
  lead_lapsed_in_pass_ = false;
  MZ_ASSIGN_OR_RETURN(const Opened opened, Store());
  FenceStore* store = opened.store;
  Leadership& leadership = *opened.leadership;
  const bool leads = leadership.LeadsFor(UpdateBudget());
  metrics_.ObserveLeader(leads);
  if (!leads) {
    lead_lapsed_in_pass_ = true;
    const std::string leader = leadership.leader();
    return UnavailableError(
        "this replica (" + options_.replica_id + ") does not lead; " +
        (leader.empty() ? std::string("no leader is known yet") : "the leader is " + leader));
  }
  MZ_ASSIGN_OR_RETURN(const StoreSnapshot snap, ReadStore(*store));
  if (snap.fences.empty() && snap.unfences.empty()) {
    return EnforceReport{.store_revision = snap.revision, .store_after = StoreCounts{}};
  }

  MZ_ASSIGN_OR_RETURN(const PortListing listed,
                      FindPorts(snap, opened.port_index, leases, std::move(listing)));
  const Result<client::PortList>& ports = listed.ports;
  if (!ports.ok()) {
    return DependencyError(ports.status(), MizarMpName() + ": listing ports failed (" +
                                               ports.status().ToString() + "); " + WhatLeft(snap));
  }
  // A list with holes is still used for the readable ports; ListWithHoles() reports it.
  const EnforcementPlan plan = PlanEnforcement(snap, *ports);
  // Recorded before any port is disabled: a crash in between must not forget who holds it.
  if (Status s = store->RecordHeldPorts(plan.holds); !s.ok()) {
    NoteStoreError(s);
    return s.WithContext("recording the fenced ports");
  }
  // Mizar-MP has no bulk update: the updates go out over several connections at once.
  const PassConnections connections{.first = listed.client.get(),
                                    .more = [this] { return NewClient(); },
                                    .count = options_.update_connections};
  // Asked on the update connections' threads at once.
  std::atomic<bool> lapsed{false};
  AppliedPlan applied = ApplyPlan(connections, plan, [&] {
    if (leadership.LeadsFor(UpdateBudget())) return true;
    lapsed = true;
    return false;
  });
  lead_lapsed_in_pass_ = lapsed;
  if (opened.audit != nullptr) AuditPass(*opened.audit, plan, applied);
  // What an update found out (a pass through the index lists nothing): later clients ask no more.
  if (listed.client != nullptr) generation_.store(listed.client->generation_found());
  MZ_RETURN_IF_ERROR(RecordCompletion(*store, applied));
  if (applied.report.failed > 0) {
    return DependencyError(applied.first_error,
                           MizarMpName() + ": " + std::to_string(applied.report.failed) + " of " +
                               std::to_string(plan.changes.size()) +
                               " port update(s) failed (first: " + applied.first_error.ToString() +
                               "); left: " + JoinedAtMost(applied.left) + "; " + WhatLeft(snap));
  }
  if (!plan.unreadable.empty()) return ListWithHoles(plan, applied.report, snap);
  applied.report.store_revision = snap.revision;
  applied.report.store_after = CountsAfter(snap, applied);
  return std::move(applied.report);
}

Result<FenceService::PortListing> FenceService::ListPorts() const {
  MZ_ASSIGN_OR_RETURN(auto mp, NewClient());
  auto ports = mp->ListPorts({}, kFencePortFields);
  generation_.store(mp->generation_found());  // the pass's other clients ask no more
  return PortListing{std::move(mp), std::move(ports)};
}

Result<FenceService::PortListing> FenceService::FindPorts(const StoreSnapshot& snap,
                                                          PortIndex* index, Leases leases,
                                                          PendingListing listing) const {
  if (index == nullptr) return listing.valid() ? listing.get() : ListPorts();
  MZ_ASSIGN_OR_RETURN(auto mp, NewClient());
  const PassConnections connections{.first = mp.get(),
                                    .more = [this] { return NewClient(); },
                                    .count = options_.update_connections};
  MZ_ASSIGN_OR_RETURN(const RegisteredNodes::Nodes registered, registered_nodes_.Current(*mp));
  MZ_ASSIGN_OR_RETURN(const std::vector<std::string> unleased,
                      listed_nodes_.Find(*index, registered, leases));
  metrics_.ObserveLapsedNodes(unleased.size());
  // The set offered before every pass (Tick, ChangeFences) is the one the nodes must hold.
  if (const auto offered = fence_sets_.Get(); offered.value != nullptr) {
    metrics_.ObserveNodesNotEnforcing(listed_nodes_.NotEnforcing(offered.value->digest).size());
  }
  auto ports = FindFencedPorts(snap, *index, unleased, connections);
  return PortListing{std::move(mp), std::move(ports)};
}

FenceService::PendingListing FenceService::StartListing(const Admitted& call) const {
  // Through the index, the ports depend on the change being stored: nothing to start early.
  if (options_.port_index || !call.leadership->LeadsFor(UpdateBudget())) return {};
  try {
    return std::async(std::launch::async, [this, context = log::ThreadContext()] {
      log::SetThreadContext(context);
      return ListPorts();
    });
  } catch (const std::system_error& e) {
    MZ_LOG(kWarn) << "fence: the port list waits for the store (no thread for it: " << e.what()
                  << ")";
    return {};
  }
}

Status FenceService::CheckStoreLimit(FenceStore& store, const CidrSet& cidrs) {
  MZ_ASSIGN_OR_RETURN(const StoreSnapshot snap, ReadStore(store));
  std::vector<Cidr> stored;
  stored.reserve(snap.fences.size());
  for (const auto& e : snap.fences) stored.push_back(e.cidr);
  const CidrSet have(std::move(stored));
  size_t added = 0;
  for (const Cidr& c : cidrs.cidrs()) added += have.Has(c) ? 0 : 1;
  if (have.size() + added <= kMaxStoredFences) return Status::Ok();
  return Status(Code::kResourceExhausted,
                "the fence store holds " + std::to_string(have.size()) + " fence(s); " +
                    std::to_string(added) + " new one(s) would exceed the limit of " +
                    std::to_string(kMaxStoredFences) +
                    " fences (so ListClusterFence fits a 4 MiB answer); nothing was stored");
}

// A pass over a list with holes made its changes but cannot know the fences complete: an
// unreadable entry may be a port inside one. UNKNOWN, naming the entries, so the caller retries.
Status FenceService::ListWithHoles(const EnforcementPlan& plan, const EnforceReport& report,
                                   const StoreSnapshot& snap) const {
  return DependencyError(
      InternalError("unreadable port list entries"),
      MizarMpName() + ": " + std::to_string(plan.unreadable.size()) +
          " entr(y/ies) of the port list could not be read (" + JoinedAtMost(plan.unreadable) +
          "); the readable ports were handled (" + std::to_string(report.disabled) + " disabled, " +
          std::to_string(report.enabled) +
          " re-enabled), but no fence is known enforced and no unfence complete until Mizar-MP "
          "lists every port readably; " +
          WhatLeft(snap));
}

// A pass's store gauges come from what it read and wrote: reading the store again would put a
// round trip to etcd's quorum on every fence RPC's time. A pass that failed reads it (a fence it
// left pending must show); another replica's change meanwhile shows after the pass it triggers.
void FenceService::ObserveStoreAfter(const Result<EnforceReport>& report, const FenceStore& store) {
  if (report.ok() && report->store_after) {
    metrics_.ObserveStore(*report->store_after);
    return;
  }
  auto snap = store.Snapshot();
  if (snap.ok()) metrics_.ObserveStore(CountStore(*snap));
}

// The store's snapshot; its success clears an earlier store error, so Probe recovers with it.
Result<StoreSnapshot> FenceService::ReadStore(FenceStore& store) {
  auto snap = store.Snapshot();
  NoteStoreError(snap.status());
  return snap;
}

Status FenceService::RecordCompletion(FenceStore& store, const AppliedPlan& applied) {
  Status s =
      store.RecordCompleted({applied.newly_enforced, applied.released, applied.report.unfenced});
  if (!s.ok()) NoteStoreError(s);
  return s;
}

}  // namespace mizarmp::fence
