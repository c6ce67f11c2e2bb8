// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/fence_service.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "addons/caller.h"
#include "addons/grpc_status.h"
#include "addons/secrets.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/version.h"
#include "fence/etcd/backends.h"
#include "fence/plan.h"

namespace mizarmp::fence {
namespace {

using addons::ToGrpcStatus;

constexpr std::chrono::seconds kFollowerSlack{10};

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
  // plugins advertise it, each for its own node (fence/service/node_clients.h).
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
    if (loop_.running()) return true;
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
  if (loop_.running()) return;
  // Without the initial pass, StartAndWait() already opened the store and made the first pass.
  if (initial_pass) next_reconcile_ = Clock::now();
  loop_.Start([this] {
    Turn();
    return kStorePollInterval;
  });
}

void FenceService::Stop() { loop_.Stop(); }

void FenceService::Turn() {
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
  const std::string names = JoinedAtMost(call->cidrs.Strings());
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
  const std::string names = JoinedAtMost(call.cidrs.Strings());
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
                                     : JoinedAtMost(CidrTexts(*removed)));
  return Status::Ok();
}

Status FenceService::StoreFailed(const FenceChange& change, const Status& why) {
  NoteStoreError(why);
  MZ_LOG(kError) << change.rpc << ": " << why.ToString();
  return why.WithContext(change.fence ? "storing the fence" : "removing the fence");
}

}  // namespace mizarmp::fence
