// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/fence_service.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <set>
#include <span>
#include <system_error>
#include <thread>
#include <utility>

#include "addons/caller.h"
#include "addons/grpc_status.h"
#include "addons/secrets.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/version.h"
#include "fence/backends.h"
#include "fence/plan.h"
#include "fence/port_finder.h"
#include "records/records.h"

namespace mizarmp::fence {
namespace {

using addons::ToGrpcStatus;

constexpr std::chrono::seconds kFollowerSlack{10};
// How soon a wait for the nodes sees acknowledgements another replica recorded (its own wake it).
constexpr std::chrono::milliseconds kAcknowledgementPoll{100};

// At most `limit` items, then how many more there are.
std::string Join(const std::vector<std::string>& items, size_t limit = 20) {
  if (items.size() <= limit) return Joined(items, ", ");
  std::string out = Joined(std::span(items).first(limit), ", ");
  out += ", ... (" + std::to_string(items.size() - limit) + " more)";
  return out;
}

std::vector<std::string> CidrTexts(const std::vector<Cidr>& cidrs) {
  std::vector<std::string> out;
  for (const auto& c : cidrs) out.push_back(CanonicalCidr(c));
  return out;
}

// The request's CIDRs, validated; errors name the offending entry.
template <typename Repeated>
Result<CidrSet> RequestCidrs(const Repeated& cidrs) {
  if (cidrs.empty()) {
    return InvalidArgumentError("cidrs: missing or empty; at least one CIDR block is required");
  }
  if (static_cast<size_t>(cidrs.size()) > kMaxCidrsPerRequest) {
    return InvalidArgumentError(
        "cidrs: " + std::to_string(cidrs.size()) + " CIDR blocks, more than the limit of " +
        std::to_string(kMaxCidrsPerRequest) + " per request; split the request");
  }
  std::vector<Cidr> parsed;
  parsed.reserve(cidrs.size());
  for (int i = 0; i < cidrs.size(); ++i) {
    auto c = ParseFenceCidr(cidrs.Get(i).cidr());
    if (!c.ok()) {
      return InvalidArgumentError("cidrs[" + std::to_string(i) + "]: " + c.status().message());
    }
    parsed.push_back(*c);
  }
  return CidrSet(std::move(parsed));  // sorted once: O(n log n)
}

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

FenceService::FenceService(FenceOptions options, client::MizarMpCheckOptions mizarmp_check)
    : options_(std::move(options)), mizarmp_check_(std::move(mizarmp_check)) {}

FenceService::~FenceService() { Stop(); }

std::string FenceService::health_name() const {
  return ::fence::FenceController::service_full_name();
}

std::vector<identity::Capability> FenceService::capabilities() const {
  // Not GET_CLIENTS_TO_FENCE, though GetFenceClients is served (mizarmpctl asks it): the
  // CSI-Addons controller calls GetFenceClients through each CSIAddonsNode's own sidecar and
  // stores the answer under that CSIAddonsNode, the node the sidecar runs on
  // (kubernetes-csi-addons internal/controller/csiaddons/csiaddonsnode_controller.go), so a
  // replica advertising it would report every node's clients as its own node's. The node
  // plugins advertise it, each for its own node (fence/node_clients.h).
  identity::Capability c;
  c.mutable_network_fence()->set_type(identity::Capability::NetworkFence::NETWORK_FENCE);
  return {c};
}

void FenceService::RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) {
  metrics_.Register(registry);
}

std::vector<addons::ReadinessCheck> FenceService::readiness_checks() {
  std::vector<addons::ReadinessCheck> checks{{"fence store", [this] { return StoreReadiness(); }}};
  if (mizarmp_check_.enabled()) {
    checks.push_back({client::kMizarMpDependency,
                      [this] { return addons::Readiness::Of(mizarmp_check_.Check()); },
                      /*message_names_dependency=*/true});
  }
  return checks;
}

// ---------------------------------------------------------------------- the store and the loop

Status FenceService::OpenStore() {
  // The configuration asked the same; a caller that built the options itself did not.
  const Status valid = options_.Validate();
  auto opened = valid.ok() ? OpenFenceStore(options_.fence_store, options_.etcd)
                           : Result<std::unique_ptr<FenceStore>>(valid);
  Result<std::unique_ptr<PortIndex>> index = std::unique_ptr<PortIndex>();
  if (opened.ok() && options_.port_index)
    index = OpenPortIndex(options_.fence_store, options_.etcd);
  if (!index.ok()) opened = index.status();
  Result<std::unique_ptr<AuditLog>> audit = std::unique_ptr<AuditLog>();
  if (opened.ok()) audit = OpenAuditLog(options_.fence_store, options_.etcd);
  if (!audit.ok()) opened = audit.status();
  std::unique_ptr<Leadership> leadership;
  if (opened.ok()) leadership = (*opened)->JoinElection(options_.replica_id);
  MutexLock lock(store_mu_);
  store_opening_ = false;
  if (!opened.ok()) {
    store_error_ = opened.status();
    MZ_LOG(kError) << "fence store: " << opened.status().ToString();
    return opened.status();
  }
  store_ = std::move(*opened);
  port_index_ = std::move(*index);
  audit_ = std::move(*audit);
  leadership_ = std::move(leadership);
  store_error_ = Status::Ok();
  return Status::Ok();
}

void FenceService::Start() { StartLoop(/*initial_pass=*/true); }

Status FenceService::StartAndWait() {
  // A second opening would replace store_ while a pass holds pointers into the first one.
  const bool started = [this] {
    {
      MutexLock lock(run_mu_);
      if (thread_.joinable()) return true;
    }
    MutexLock lock(store_mu_);
    return store_ != nullptr;
  }();
  if (started) return FailedPreconditionError("fence service: already started");
  MZ_RETURN_IF_ERROR(OpenStore());
  auto first = Reconcile();
  if (!first.ok()) {
    MZ_LOG(kWarn) << "fence reconcile: " << first.status().message();
  }
  {
    MutexLock lock(store_mu_);
    seen_terms_ = leadership_->terms();
  }
  next_reconcile_ = Clock::now() + options_.reconcile_interval;
  StartLoop(/*initial_pass=*/false);
  return Status::Ok();
}

void FenceService::StartLoop(bool initial_pass) {
  MutexLock lock(run_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this, initial_pass] { Run(initial_pass); });
}

void FenceService::Stop() {
  {
    MutexLock lock(run_mu_);
    stopping_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FenceService::Run(bool initial_pass) {
  auto stopped_within = [this](Clock::duration d) {
    MutexLock lock(run_mu_);
    return lock.WaitFor(run_cv_, d, [this]() MZ_REQUIRES(run_mu_) { return stopping_; });
  };
  // Without the initial pass, StartAndWait() already opened the store and made the first pass.
  if (initial_pass) next_reconcile_ = Clock::now();
  do {
    bool open;
    {
      MutexLock lock(store_mu_);
      open = store_ != nullptr;
    }
    // A store that could not be opened is retried every interval (a full disk, a permission
    // fixed by the operator); Probe reports it meanwhile. Once open, the first pass of the
    // first term runs at once: it finishes what a previous leader left interrupted.
    if (open) {
      Tick();
    } else if (Clock::now() >= next_reconcile_ && !OpenStore().ok()) {
      next_reconcile_ = Clock::now() + options_.reconcile_interval;
    }
  } while (!stopped_within(kStorePollInterval));
}

void FenceService::Tick() {
  metrics_.ObserveLook();
  auto opened = Store();
  if (!opened.ok()) return;
  const bool shared = !opened->leadership->sole();
  int64_t revision = -1;
  if (shared) {
    auto read = opened->store->Revision();
    NoteStoreError(read.status());
    if (!read.ok()) {
      // A replica that cannot reach the store cannot act as leader: its gauge says so, or
      // a quorum loss would leave the last leader's 1 standing.
      metrics_.ObserveLeader(false);
      return;
    }
    revision = *read;
  }
  if (revision != offered_revision_ || offer_again_.exchange(false)) {
    OfferStandingSet(*opened->store, opened->port_index);
    offered_revision_ = revision;
  }
  const bool leads = opened->leadership->LeadsFor(UpdateBudget());
  metrics_.ObserveLeader(leads);
  if (!leads) return;
  const uint64_t terms = opened->leadership->terms();
  const bool new_term = terms != seen_terms_;
  // A publication of a port inside a fence that none holds yet (Publish) asks for a pass at once.
  const bool due =
      new_term || Clock::now() >= next_reconcile_ || published_inside_fence_.exchange(false);
  if (!due && revision == seen_revision_) return;
  if (new_term && shared) {
    MZ_LOG(kInfo) << "fence: " << options_.replica_id << " leads; first pass of its term";
  }
  // Read before the pass: a change stored during it is seen by the next turn.
  seen_terms_ = terms;
  seen_revision_ = revision;
  next_reconcile_ = Clock::now() + options_.reconcile_interval;
  ReconcileAndLog(due ? std::nullopt : std::optional<int64_t>(revision));
}

void FenceService::ReconcileAndLog(std::optional<int64_t> changed_at) {
  auto report = changed_at ? ReconcileChange(*changed_at) : Reconcile();
  if (!report.ok()) {
    MZ_LOG(kWarn) << "fence reconcile: " << report.status().message();
  } else if (report->disabled + report->enabled > 0) {
    MZ_LOG(kInfo) << "fence reconcile: disabled " << report->disabled << " port(s), re-enabled "
                  << report->enabled;
  }
}

// ------------------------------------------------------------------------------ publications

namespace {

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

addons::Readiness FenceService::StoreReadiness() const {
  MutexLock lock(store_mu_);
  if (store_ == nullptr) {
    if (store_opening_) return addons::Readiness::Initializing();
    return addons::Readiness::Failed(store_error_);
  }
  if (!store_error_.ok()) return addons::Readiness::Failed(store_error_);
  return addons::Readiness::Ready();
}

void FenceService::NoteStoreError(const Status& s) {
  MutexLock lock(store_mu_);
  store_error_ = s;
}

Result<FenceService::Opened> FenceService::Store() const {
  MutexLock lock(store_mu_);
  if (store_ != nullptr) {
    return Opened{store_.get(), leadership_.get(), port_index_.get(), audit_.get()};
  }
  if (store_opening_) {
    return UnavailableError("fence store \"" + options_.fence_store +
                            "\" is still opening; retry shortly");
  }
  return FailedPreconditionError("fence store unusable: " + store_error_.message());
}

Result<std::unique_ptr<client::Client>> FenceService::NewClient() const {
  client::ClientConfig config = options_.mizarmp;
  config.known_generation = generation_.load();
  config.observer = metrics_.MizarMpObserver();
  if (!options_.replica_id.empty()) {
    config.user_agent =
        "mizarmp-addons/" + std::string(Version()) + " (" + options_.replica_id + ")";
  }
  {
    MutexLock lock(store_mu_);
    if (leadership_ != nullptr && !leadership_->sole()) config.max_attempts = 1;
  }
  auto c = client::Client::Create(config);
  if (!c.ok()) {
    return FailedPreconditionError("Mizar-MP client for " + RedactUrl(options_.mizarmp.base_url) +
                                   ": " + c.status().message());
  }
  return std::move(*c);
}

std::string FenceService::MizarMpName() const {
  return "Mizar-MP at " + RedactUrl(options_.mizarmp.base_url);
}

// ------------------------------------------------------------------------- enforcement passes

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
                               "); left: " + Join(applied.left) + "; " + WhatLeft(snap));
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
          " entr(y/ies) of the port list could not be read (" + Join(plan.unreadable) +
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

// ------------------------------------------------------------------------- GetFenceClients

Result<std::vector<FenceClient>> FenceService::FenceClients(const std::string& only) {
  NodeAddresses by_node;
  MZ_RETURN_IF_ERROR(client_sources_.AddRecorded(only, by_node));
  client_sources_.AddConfigured(only, by_node);
  if (options_.use_port_list) MZ_RETURN_IF_ERROR(AddPortListAddresses(only, by_node));
  return MergedClients(by_node);
}

// The Mizar-MP port list (the whole cluster).
Status FenceService::AddPortListAddresses(const std::string& only, NodeAddresses& by_node) const {
  MZ_ASSIGN_OR_RETURN(auto mp, NewClient());
  std::map<std::string, std::string> filters;
  if (!only.empty()) filters["binding:host_id"] = only;
  auto ports = mp->ListPorts(filters, kFencePortFields);
  if (!ports.ok()) {
    return DependencyError(ports.status(),
                           MizarMpName() + ": listing ports failed: " + ports.status().ToString());
  }
  if (!ports->unreadable.empty()) {
    MZ_LOG(kWarn) << "GetFenceClients: " << MizarMpName() << ": " << ports->unreadable.size()
                  << " entr(y/ies) of the port list could not be read; their addresses are "
                     "missing from the answer: "
                  << Join(ports->unreadable);
  }
  for (const auto& port : ports->ports) {
    // A port the network owns (a router's) is no node's client, and no fence's to cut.
    if (port.host_id.empty() || port.network_owned() || !Wanted(only, port.host_id)) continue;
    for (const auto& ip : PortIps(port)) by_node[port.host_id].push_back(HostCidr(ip));
  }
  return Status::Ok();
}

// ------------------------------------------------------------------------------------ the RPCs

Status FenceService::Authenticate(const char* rpc, const Secrets& secrets) const {
  Status s = addons::CheckSecrets(secrets, options_.expected_secrets);
  if (!s.ok()) {
    MZ_LOG(kWarn) << rpc << " refused: " << s.message();
  }
  return s;
}

Result<FenceService::Admitted> FenceService::Admit(
    const char* rpc, const Secrets& secrets,
    const google::protobuf::RepeatedPtrField<::fence::CIDR>* cidrs) {
  MZ_RETURN_IF_ERROR(Authenticate(rpc, secrets));
  Admitted out;
  if (cidrs != nullptr) {
    MZ_ASSIGN_OR_RETURN(out.cidrs, RequestCidrs(*cidrs));
  }
  MZ_ASSIGN_OR_RETURN(const Opened opened, Store());
  out.store = opened.store;
  out.leadership = opened.leadership;
  out.port_index = opened.port_index;
  out.audit = opened.audit;
  return out;
}

Status FenceService::AuditRequest(const Admitted& call, const char* action,
                                  const grpc::ServerContext& context) const {
  AuditEntry entry;
  entry.action = action;
  entry.replica = options_.replica_id;
  entry.request_id = addons::CurrentRequestId();
  entry.caller = addons::CallerOf(context);
  entry.cidrs = call.cidrs.Strings();
  const Status s = call.audit->Append(std::move(entry));
  if (s.ok()) return s;
  MZ_LOG(kError) << "fence audit: " << s.ToString();
  return s.WithContext("recording the request in the fence audit (nothing was stored)");
}

void FenceService::AuditPass(AuditLog& audit, const EnforcementPlan& plan,
                             const AppliedPlan& applied) const {
  if (applied.made.empty()) return;
  AuditEntry entry;
  entry.action = "pass";
  entry.replica = options_.replica_id;
  std::set<std::string> served;
  for (const size_t i : applied.made) {
    const PortChange& change = plan.changes[i];
    (change.admin_state_up ? entry.enabled : entry.disabled).push_back(change.port_id);
    for (const Cidr& cidr : change.serves) served.insert(CanonicalCidr(cidr));
  }
  entry.cidrs.assign(served.begin(), served.end());
  // The changes are made: an entry that cannot be written is a warning, not a failed pass.
  if (const Status s = audit.Append(std::move(entry)); !s.ok()) {
    MZ_LOG(kWarn) << "fence audit: a pass's changes are not recorded: " << s.ToString();
  }
}

Result<EnforceReport> FenceService::FollowLeader(const Admitted& call, bool fence,
                                                 const grpc::ServerContext& context) {
  // A leader lost just now is replaced within 4/3 of the lease and makes its pass; twice the
  // lease and 10 s leave room for a slow pass on a loaded machine.
  Clock::time_point deadline = Clock::now() + 2 * options_.etcd.lease_ttl + kFollowerSlack;
  const auto caller = context.deadline();
  if (caller != std::chrono::system_clock::time_point::max()) {
    deadline = std::min(deadline, Clock::now() + (caller - std::chrono::system_clock::now()));
  }
  MZ_RETURN_IF_ERROR(AwaitLeader(call, fence, deadline));
  return EnforceReport{};
}

Status FenceService::AwaitLeader(const Admitted& call, bool fence, Clock::time_point deadline) {
  constexpr auto kPoll = std::chrono::milliseconds(50);
  for (;;) {
    // The store stalling for a moment (an election, a slow disk) stalls the leader's pass too:
    // the wait rides it out and reports it only if it lasts to the deadline.
    Result<StoreSnapshot> snap = ReadStore(*call.store);
    if (!snap.ok() && !snap.status().IsTransient()) return snap.status();
    if (snap.ok() && Completed(*snap, call.cidrs, fence)) return Status::Ok();
    if (Clock::now() + kPoll > deadline) {
      if (!snap.ok()) return snap.status();
      const std::string leader = call.leadership->leader();
      return UnavailableError(
          "this replica (" + options_.replica_id + ") does not lead and " +
          (leader.empty() ? std::string("no leader") : "the leader " + leader) +
          " has not completed it in time; it completes when a leader's pass does");
    }
    std::this_thread::sleep_for(kPoll);
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
                              Join(behind, 10) + "; a node that cannot enforce it lapses once its " +
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

bool FenceService::Completed(const StoreSnapshot& snap, const CidrSet& cidrs, bool fence) {
  if (fence) {
    return std::none_of(snap.fences.begin(), snap.fences.end(), [&](const FenceEntry& e) {
      return e.state == FenceState::kPending && cidrs.Has(e.cidr);
    });
  }
  return std::none_of(snap.unfences.begin(), snap.unfences.end(),
                      [&](const UnfenceEntry& e) { return cidrs.Has(e.cidr); });
}

grpc::Status FenceService::FenceClusterNetwork(grpc::ServerContext* context,
                                               const ::fence::FenceClusterNetworkRequest* request,
                                               ::fence::FenceClusterNetworkResponse*) {
  return ChangeFences(kFenceChange, request->secrets(), request->cidrs(), *context);
}

grpc::Status FenceService::UnfenceClusterNetwork(
    grpc::ServerContext* context, const ::fence::UnfenceClusterNetworkRequest* request,
    ::fence::UnfenceClusterNetworkResponse*) {
  return ChangeFences(kUnfenceChange, request->secrets(), request->cidrs(), *context);
}

grpc::Status FenceService::ChangeFences(
    const FenceChange& change, const Secrets& secrets,
    const google::protobuf::RepeatedPtrField<::fence::CIDR>& cidrs,
    const grpc::ServerContext& context) {
  auto call = Admit(change.rpc, secrets, &cidrs);
  if (!call.ok()) return ToGrpcStatus(call.status());
  const std::string names = Join(call->cidrs.Strings());
  std::optional<Result<EnforceReport>> report;
  {
    MutexLock lock(enforce_mu_);
    if (Status s = AuditRequest(*call, change.action, context); !s.ok()) return ToGrpcStatus(s);
    PendingListing listing = StartListing(*call);
    // Durable first: once this returns, a crash cannot lose the change.
    if (Status s = StoreChange(change, *call); !s.ok()) return ToGrpcStatus(s);
    // Pushed to the nodes now, so they enforce it while the pass below runs at Mizar-MP.
    OfferStandingSet(*call->store, call->port_index);
    if (call->leadership->LeadsFor(UpdateBudget())) {
      report = EnforceLocked(Leases::kRecent, std::move(listing));
      // A lease that ran short during the pass (a slow renewal on a loaded etcd) is not the
      // change's failure: it is stored, and the leader's next pass completes it, this replica's
      // own once its lease is renewed. Any other failure is the caller's to see now.
      if (!report->ok() && lead_lapsed_in_pass_) {
        MZ_LOG(kInfo) << "this replica's lead lapsed during the pass for " << names << " ("
                      << report->status().message() << "); waiting for the leader's pass";
        report.reset();
      }
    }
  }  // the wait for the leader must not hold up this replica's other RPCs
  if (!report) report = FollowLeader(*call, change.fence, context);
  if (report->ok() && call->port_index != nullptr) {
    const Clock::time_point waited_from = Clock::now();
    Status enforced = AwaitNodes(*call, change.fence, NodesDeadline(context));
    metrics_.ObserveNodeWait(Clock::now() - waited_from);
    if (!enforced.ok()) report = enforced;
  }
  if (!report->ok()) {
    MZ_LOG(kWarn) << change.action << " of " << names << " not yet complete: "
                  << report->status().message();
    return ToGrpcStatus(
        report->status().WithContext(std::string(change.action) + " of " + names + " is stored"));
  }
  MZ_LOG(kInfo) << change.action << " complete: " << names << " ("
                << (change.fence ? (*report)->disabled : (*report)->enabled) << " port(s) "
                << (change.fence ? "disabled" : "re-enabled") << ")";
  return grpc::Status::OK;
}

Status FenceService::StoreChange(const FenceChange& change, const Admitted& call) {
  FenceStore& store = *call.store;
  const std::string names = Join(call.cidrs.Strings());
  if (change.fence) {
    if (Status s = CheckStoreLimit(store, call.cidrs); !s.ok()) {
      MZ_LOG(kWarn) << change.rpc << " refused: " << s.message();
      return s;
    }
    if (Status s = store.AddFences(call.cidrs.cidrs()); !s.ok()) return StoreFailed(change, s);
    MZ_LOG(kInfo) << "fence stored: " << names;
    return Status::Ok();
  }
  auto removed = store.RemoveFences(call.cidrs.cidrs());
  if (!removed.ok()) return StoreFailed(change, removed.status());
  MZ_LOG(kInfo) << "unfence of " << names << ": lifted "
                << (removed->empty() ? std::string("nothing (not fenced)")
                                     : Join(CidrTexts(*removed)));
  return Status::Ok();
}

Status FenceService::StoreFailed(const FenceChange& change, const Status& why) {
  NoteStoreError(why);
  MZ_LOG(kError) << change.rpc << ": " << why.ToString();
  return why.WithContext(change.fence ? "storing the fence" : "removing the fence");
}

// ------------------------------------------------------------------------ preview and audit

Result<std::vector<FenceService::PreviewedPort>> FenceService::PreviewFence(
    const Secrets& secrets, const google::protobuf::RepeatedPtrField<::fence::CIDR>& cidrs) {
  MZ_ASSIGN_OR_RETURN(const Admitted call, Admit("PreviewFence", secrets, &cidrs));
  // The CIDRs as the only fences: the ports a pass would plan on for them.
  StoreSnapshot as_fenced;
  for (const Cidr& cidr : call.cidrs.cidrs()) as_fenced.fences.push_back(FenceEntry{.cidr = cidr});
  MZ_ASSIGN_OR_RETURN(const PortListing listed,
                      FindPorts(as_fenced, call.port_index, Leases::kRecent, {}));
  if (!listed.ports.ok()) {
    return DependencyError(listed.ports.status(), MizarMpName() + ": finding the ports failed (" +
                                                      listed.ports.status().ToString() +
                                                      "); nothing was changed");
  }
  // The pods, as the nodes' agents published them: the index's entries inside the CIDRs.
  std::map<std::string, std::string> pods;
  if (call.port_index != nullptr) {
    MZ_ASSIGN_OR_RETURN(const std::vector<IndexedPort> indexed,
                        call.port_index->Inside(call.cidrs.cidrs()));
    for (const IndexedPort& entry : indexed) {
      if (!entry.pod.empty()) pods[entry.port_id] = entry.pod;
    }
  }
  std::vector<PreviewedPort> found;
  for (const client::Port& port : listed.ports->ports) {
    if (port.network_owned()) continue;  // a fence never touches these (fence/plan.h)
    PreviewedPort p{.port_id = port.id, .node = port.host_id, .down = !port.admin_state_up};
    for (const client::FixedIp& ip : port.fixed_ips) {
      auto address = IpAddress::Parse(ip.ip_address);
      if (address.ok() && call.cidrs.Contains(*address)) p.ips.push_back(ip.ip_address);
    }
    if (p.ips.empty()) continue;
    if (const auto pod = pods.find(port.id); pod != pods.end()) {
      const size_t slash = pod->second.find('/');
      p.pod_namespace = pod->second.substr(0, slash);
      p.pod_name = pod->second.substr(slash + 1);
    }
    found.push_back(std::move(p));
  }
  std::sort(found.begin(), found.end(),
            [](const PreviewedPort& a, const PreviewedPort& b) { return a.port_id < b.port_id; });
  return found;
}

Result<std::vector<AuditEntry>> FenceService::ListAudit(const Secrets& secrets, size_t limit) {
  MZ_ASSIGN_OR_RETURN(const Admitted call, Admit("ListAudit", secrets, nullptr));
  return call.audit->Recent(limit);
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

grpc::Status FenceService::ListClusterFence(grpc::ServerContext*,
                                            const ::fence::ListClusterFenceRequest* request,
                                            ::fence::ListClusterFenceResponse* response) {
  auto call = Admit("ListClusterFence", request->secrets(), nullptr);
  if (!call.ok()) return ToGrpcStatus(call.status());
  auto fences = call->store->ListFences();
  if (!fences.ok()) {
    NoteStoreError(fences.status());
    return ToGrpcStatus(fences.status());
  }
  for (const auto& e : *fences) response->add_cidrs()->set_cidr(CanonicalCidr(e.cidr));
  const size_t bytes = response->ByteSizeLong();
  if (bytes > kMaxListResponseBytes) {
    response->Clear();
    const Status s(Code::kResourceExhausted,
                   std::to_string(fences->size()) + " fences take " + std::to_string(bytes) +
                       " bytes, more than a default gRPC client's receive limit of " +
                       std::to_string(kMaxListResponseBytes) + " bytes (the store holds more " +
                       "than the limit of " + std::to_string(kMaxStoredFences) + " fences)");
    MZ_LOG(kWarn) << "ListClusterFence: " << s.message();
    return ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

grpc::Status FenceService::GetFenceClients(grpc::ServerContext*,
                                           const ::fence::GetFenceClientsRequest* request,
                                           ::fence::GetFenceClientsResponse* response) {
  if (Status s = Authenticate("GetFenceClients", request->secrets()); !s.ok()) {
    return ToGrpcStatus(s);
  }
  auto only = AskedNode(request->parameters());
  if (!only.ok()) return ToGrpcStatus(only.status());
  auto clients = FenceClients(*only);
  if (!clients.ok()) {
    MZ_LOG(kWarn) << "GetFenceClients: " << clients.status().ToString();
    return ToGrpcStatus(clients.status());
  }
  FillResponse(*clients, response);
  return grpc::Status::OK;
}

}  // namespace mizarmp::fence
