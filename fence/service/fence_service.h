// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CSI-Addons FenceController of mizarmp-addons (controller mode), one addons::AddonsService.
//
// FenceClusterNetwork: the CIDRs are validated (INVALID_ARGUMENT naming the value; a missing or
//   empty list is INVALID_ARGUMENT too), written durably to the fence store (fence/store.h) and
//   only then enforced: every Mizar-MP port of the project with a fixed IP inside a fenced CIDR
//   gets admin_state_up=false (ports already down are left alone, so a repeat is harmless).
// UnfenceClusterNetwork: the listed fences (exact match; a wider CIDR does not lift narrower
//   fences, so a retried unfence never lifts a newer fence) leave the store as pending unfences;
//   each port inside one of them that no remaining fence covers gets admin_state_up=true. Unfencing
//   what is not fenced is harmless.
// ListClusterFence: the stored fences (pending or enforced), canonical, sorted.
// GetFenceClients: one ClientDetails per node (id = the Mizar-MP host id), its addresses merged
//   into the fewest CIDRs covering exactly them. Sources: the plugin's attachment records under
//   stateDir (records without a host id count for the configured hostId), the configured
//   nodeAddresses (a CIDR without host bits stands for the whole block, an address with host
//   bits such as "10.0.0.5/24" for the address alone), and, with usePortList, every Mizar-MP
//   port of the project grouped by binding:host_id. Parameter "hostId" narrows the answer to
//   that node (an unknown node gives an empty list); other parameters are ignored.
//
// What a fence changes: each fence records the ports held down on its behalf (fence/store.h), and
// an unfence re-enables only those, so a port that was down before the fence for another reason
// (an operator's quarantine) stays down (fence/plan.h).
//
// A port list with unreadable entries (Mizar-MP answering an entry that does not parse): the
// entries are skipped and named in a warning, every readable port is still fenced or re-enabled,
// but the pass completes nothing: an unreadable entry may be a port inside any fence, so no
// pending fence is marked enforced and no pending unfence completed until a complete list, and
// the RPC answers UNKNOWN naming the entries (the fence or unfence is stored; a retry or the
// reconcile finishes it).
//
// Limits, so every request is answered within seconds and every answer fits a default gRPC client
// (4 MiB receive limit):
//   - a Fence or Unfence request carries at most kMaxCidrsPerRequest CIDRs (more:
//     INVALID_ARGUMENT naming the count and the limit, before anything is stored);
//   - the store holds at most kMaxStoredFences fences (a fence that would add more:
//     RESOURCE_EXHAUSTED naming the counts and the limit; nothing of it is stored). At the limit,
//     ListClusterFence's answer is at most ~3 MiB (65,536 IPv6 CIDRs of the longest text);
//   - ListClusterFence refuses an answer above kMaxListResponseBytes (a store filled past the limit
//     by other means) with RESOURCE_EXHAUSTED naming the count, instead of an answer the client
//     would drop.
// Costs: a request's CIDRs are parsed and deduplicated in O(n log n); a pass looks each port's
// addresses up in O(log n) per address (fence/cidrset.h), so it grows with ports + fences, not
// their product.
//
// Replicas (an etcd fence store, fence/etcd/store.h): every replica answers every RPC from the
// shared store, but only the leader (fence/leadership.h) changes ports. A Fence or Unfence on the
// leader is stored and enforced by its own pass, as above. On any other replica it is stored and
// the RPC then waits for the leader to enforce it: the leader checks the store's revision every
// kStorePollInterval and makes a pass when it changed, so a change is enforced within that
// interval plus one pass while a leader lives, and within the lease TTL and a third (a new
// election) plus that when the leader was lost. The RPC answers OK once its fences are enforced
// (its unfences complete) and, with the port index, once every live node enforces the fence set
// that holds the change (AwaitNodes); UNAVAILABLE, saying it is stored, when that took longer
// than twice the lease TTL and 10 s (the nodes: the publication lease), or the caller's deadline. A leader starts a port update only while its lease
// covers the update's whole time (Mizar-MP's connect + request timeouts, one attempt), so an old
// leader has stopped before a new one starts. The first pass of a new term runs at once.
//
// Every RPC first checks `secrets` against the configured secrets (UNAUTHENTICATED). Mizar-MP
// failures while enforcing give UNAVAILABLE (Mizar-MP unreachable or failing) or UNKNOWN
// (anything else), naming the ports left; the store keeps the intent, and the periodic
// reconcile (every reconcileIntervalMs) re-runs the enforcement (fence/plan.h, fence/enforcer.h):
// it finishes interrupted fences and unfences and disables ports created inside a fence later.
// Fence, unfence and reconcile passes are serialised.
//
// Advertised capabilities: NETWORK_FENCE only. GetFenceClients answers for every node (or the
// one its "hostId" parameter names) when asked, as mizarmpctl does, but GET_CLIENTS_TO_FENCE is
// the node plugins' (fence/service/node_clients.h): the CSI-Addons controller files each answer under the
// CSIAddonsNode of the sidecar it asked. Readiness ("fence store"):
// ready=false while the store is opening (Start() opens it on a background thread), an error
// naming the store when it cannot be opened or stops working.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "addons/service.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/watched.h"
#include "common/worker.h"
#include "fence/audit.h"
#include "fence/cidrset.h"
#include "fence/enforcer.h"
#include "fence/fence.grpc.pb.h"
#include "fence/fence_set.h"
#include "fence/leadership.h"
#include "fence/listed_nodes.h"
#include "fence/plan.h"
#include "fence/port_index.h"
#include "fence/registered_nodes.h"
#include "fence/service/clients.h"
#include "fence/service/metrics.h"
#include "fence/service/options.h"
#include "fence/store.h"
#include "mizarmp-client/client.h"
#include "mizarmp-client/mizarmp_check.h"

namespace mizarmp::fence {

// The most CIDRs one FenceClusterNetwork or UnfenceClusterNetwork request may carry.
inline constexpr size_t kMaxCidrsPerRequest = 65536;
// The most fences the store may hold.
inline constexpr size_t kMaxStoredFences = 65536;
// The largest ListClusterFence answer: a default gRPC client's receive limit.
inline constexpr size_t kMaxListResponseBytes = 4 * 1024 * 1024;

// How often every replica of a shared store reads the store's revision (Probe's view of the store
// is that fresh), and how soon the leader notices a change another replica stored.
inline constexpr std::chrono::milliseconds kStorePollInterval{200};

class FenceService final : public ::fence::FenceController::Service, public addons::AddonsService {
 public:
  // `mizarmp_check`: the Mizar-MP check Probe reports for this service (none without a URL).
  explicit FenceService(FenceOptions options, client::MizarMpCheckOptions mizarmp_check = {});
  ~FenceService() override;  // Stop()

  // This object itself.
  grpc::Service* grpc_service() override { return this; }
  // "fence.FenceController".
  std::string health_name() const override;
  // NETWORK_FENCE (not GET_CLIENTS_TO_FENCE; see above).
  std::vector<identity::Capability> capabilities() const override;
  // "fence store" (StoreReadiness()), then "Mizar-MP" when mizarmp_check names a URL.
  std::vector<addons::ReadinessCheck> readiness_checks() override;
  // Opens the store on a background thread, then runs the reconcile loop there. Returns at once.
  void Start() override;
  // Ends the reconcile loop and waits for it.
  void Stop() override;

  // For tests: opens the store and reconciles once, synchronously, then starts the loop;
  // returns the open error. Start() does the same on the loop's thread, and a test that drives
  // Reconcile() itself needs the first pass over before its own, which only the service's
  // private opening and term bookkeeping can give. FAILED_PRECONDITION once started (by either).
  Status StartAndWait() MZ_EXCLUDES(store_mu_, enforce_mu_);

  // The fence families (fence/service/metrics.h) on the server's registry.
  void RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) override;

  // A node agent's publication of its node's attachments (fence/service/publication_service.h) into the
  // port index; answers the lease the node holds from now. A publication with an address inside
  // a fence makes the leading replica pass at once, so a new port there is cut off without
  // waiting for the reconcile interval. The answer also names the published ports a fence holds
  // down, for the node to cut where Mizar-MP's agent does not. FAILED_PRECONDITION when the
  // index is off.
  // The answer also carries the standing fence set, whose CIDRs the adapter sends only to a
  // node that named another set's digest (fence/host_filter.h enforces it there).
  struct PublicationAnswer {
    std::chrono::seconds lease;
    std::vector<std::string> fenced_port_ids;  // of the published ports, those a fence holds
    FenceSet fence_set;                        // every standing fence
  };
  // `enforced` is the digest of the fence set the node enforces now, its acknowledgement.
  Result<PublicationAnswer> Publish(const std::string& node,
                                    const std::vector<AddressedPort>& ports,
                                    const std::string& enforced) MZ_EXCLUDES(store_mu_);
  // A node's acknowledgement that it enforces the set `enforced` names (between publications:
  // it keeps the rest of the node's last one). NOT_FOUND for a node that never published,
  // FAILED_PRECONDITION when the index is off.
  Status Acknowledge(const std::string& node, const std::string& enforced) MZ_EXCLUDES(store_mu_);
  // The standing fence set as this replica last read it from the store, for the node agents'
  // streams (fence/service/publication_service.h): offered when the store opens, at once after a fence
  // or unfence this replica stores, and within kStorePollInterval of one another replica stored.
  // Closed by EndFenceSetStreams().
  const Watched<FenceSet>& fence_sets() const { return fence_sets_; }
  void EndFenceSetStreams() { fence_sets_.Close(); }

  using Secrets = google::protobuf::Map<std::string, std::string>;

  // mizarmp.v1.FenceAdmin's (fence/service/admin_service.h), checked as the FenceController's RPCs are
  // (secrets, CIDRs, store). PreviewFence: the ports a fence of `cidrs` would find inside them,
  // found as a pass finds them (through the index, or the whole list), with a fixed IP inside
  // one of them, sorted by id; nothing is stored or changed.
  struct PreviewedPort {
    std::string port_id;
    std::vector<std::string> ips;  // those inside the CIDRs
    std::string node;              // binding:host_id
    std::string pod_namespace;     // as the node's agent published them; empty if unknown
    std::string pod_name;
    bool down = false;  // admin_state_up=false already
  };
  Result<std::vector<PreviewedPort>> PreviewFence(
      const Secrets& secrets, const google::protobuf::RepeatedPtrField<::fence::CIDR>& cidrs)
      MZ_EXCLUDES(store_mu_);
  // The audit's newest `limit` entries, oldest first.
  Result<std::vector<AuditEntry>> ListAudit(const Secrets& secrets, size_t limit)
      MZ_EXCLUDES(store_mu_);
  // Every node that publishes to the port index, and the standing set it is measured against.
  struct NodeEnforcement {
    Publication publication;
    bool live = false;     // its lease runs
    bool current = false;  // it enforces `standing`
  };
  struct NodesEnforcing {
    std::string standing;  // the digest of the set offered to the nodes
    std::vector<NodeEnforcement> nodes;  // sorted by node
  };
  // FAILED_PRECONDITION when this controller keeps no port index.
  Result<NodesEnforcing> ListNodes(const Secrets& secrets) MZ_EXCLUDES(store_mu_);

  // ready=false while the store is opening; an error naming the store when it is unusable.
  addons::Readiness StoreReadiness() const MZ_EXCLUDES(store_mu_);

  // One enforcement pass over the whole store (the reconcile). Errors name what is left.
  Result<EnforceReport> Reconcile() MZ_EXCLUDES(enforce_mu_);
  // For tests: how many enforcement passes ran (reconciles, fences and unfences); the count
  // is what shows that the periodic reconcile runs at all.
  uint64_t reconcile_passes() const { return passes_.load(); }

  grpc::Status FenceClusterNetwork(grpc::ServerContext* context,
                                   const ::fence::FenceClusterNetworkRequest* request,
                                   ::fence::FenceClusterNetworkResponse* response) override;
  grpc::Status UnfenceClusterNetwork(grpc::ServerContext* context,
                                     const ::fence::UnfenceClusterNetworkRequest* request,
                                     ::fence::UnfenceClusterNetworkResponse* response) override;
  grpc::Status ListClusterFence(grpc::ServerContext* context,
                                const ::fence::ListClusterFenceRequest* request,
                                ::fence::ListClusterFenceResponse* response) override;
  grpc::Status GetFenceClients(grpc::ServerContext* context,
                               const ::fence::GetFenceClientsRequest* request,
                               ::fence::GetFenceClientsResponse* response) override;

 private:
  using Clock = std::chrono::steady_clock;

  // The store's life: opening, the loop, the store as the RPCs and passes get it.
  Status OpenStore() MZ_EXCLUDES(store_mu_);
  void StartLoop(bool initial_pass);
  // One turn of the loop: opens the store if it is not, else Tick().
  void Turn() MZ_EXCLUDES(store_mu_, enforce_mu_);
  // One turn of the loop once the store is open: polls a shared store's revision, and makes a
  // pass when this replica leads and a new term began, the store changed or the interval passed.
  void Tick() MZ_EXCLUDES(store_mu_, enforce_mu_);
  // A pass (Reconcile), or with `changed_at` one for the store's change at that revision, logged.
  void ReconcileAndLog(std::optional<int64_t> changed_at);
  // A pass unless one already accounted for the change at revision `changed_at`.
  Result<EnforceReport> ReconcileChange(int64_t changed_at) MZ_EXCLUDES(enforce_mu_);
  struct Opened {
    FenceStore* store = nullptr;
    Leadership* leadership = nullptr;
    PortIndex* port_index = nullptr;  // none: passes list every port
    AuditLog* audit = nullptr;
  };
  Result<Opened> Store() const MZ_EXCLUDES(store_mu_);
  void NoteStoreError(const Status& s) MZ_EXCLUDES(store_mu_);
  // Asks for a pass at once: a publication named a port inside a fence that none holds yet.
  void RequestPassSoon(FenceStore& store);
  // Reads the standing set from `store` (and `index`, for the nodes a fence covers) and offers
  // it to fence_sets() when it is another.
  void OfferStandingSet(FenceStore& store, const PortIndex* index) MZ_EXCLUDES(offer_mu_);

  // What every fence RPC checks first, in order: the secrets, the request's CIDRs (when
  // `cidrs` is given), the store.
  struct Admitted {
    CidrSet cidrs;
    FenceStore* store = nullptr;
    Leadership* leadership = nullptr;
    PortIndex* port_index = nullptr;
    AuditLog* audit = nullptr;
  };
  // Appends the request's entry to the fence audit before it is stored: a request the audit
  // cannot record is refused, so every stored change has its entry.
  Status AuditRequest(const Admitted& call, const char* action,
                      const grpc::ServerContext& context) const;
  // Appends a pass's entry naming every change Mizar-MP accepted, when there is one.
  void AuditPass(AuditLog& audit, const EnforcementPlan& plan, const AppliedPlan& applied) const;
  // The port list a pass plans on, and the client that read it (the pass's first connection).
  struct PortListing {
    std::unique_ptr<client::Client> client;
    Result<client::PortList> ports;
  };
  // A listing read on a thread of its own (StartListing); invalid when there is none.
  using PendingListing = std::future<Result<PortListing>>;
  // A new client's error, or the client and what its list returned.
  Result<PortListing> ListPorts() const;
  // The ports a pass plans `snap` on: through `index` when there is one (fence/port_finder.h),
  // else `listing` when it is valid, else a list of every port.
  // The periodic reconcile reads the leases now; passes for a change reuse a recent read.
  using Leases = ListedNodes::Leases;
  Result<PortListing> FindPorts(const StoreSnapshot& snap, PortIndex* index, Leases leases,
                                PendingListing listing) const;
  // When this replica leads, the port list of the pass that follows a fence or unfence RPC's
  // change, started now so that Mizar-MP lists the ports while the store commits the change: the
  // two are independent, and the pass is serialised with every other (enforce_mu_ is held), so
  // the list is as current as one read after the commit. The store's commit (a quorum's fsync on
  // etcd) is then off the RPC's time. Invalid when this replica does not lead, or no thread is
  // left (the pass then lists the ports itself).
  PendingListing StartListing(const Admitted& call) const MZ_REQUIRES(enforce_mu_);
  // A fence or an unfence, as the one path both RPCs take.
  struct FenceChange {
    bool fence;
    const char* rpc;     // its RPC's name, for refusals
    const char* action;  // "fence" or "unfence", for the audit and the log
  };
  static constexpr FenceChange kFenceChange{true, "FenceClusterNetwork", "fence"};
  static constexpr FenceChange kUnfenceChange{false, "UnfenceClusterNetwork", "unfence"};
  // Admits, audits and stores the change, then completes it: by this replica's own pass
  // (EnforceLocked, planning on a listing started before the store's commit) when it leads;
  // otherwise, or when its lead lapsed during that pass, by waiting for the leader's pass
  // (FollowLeader) without enforce_mu_, so the wait does not hold up this replica's other RPCs.
  grpc::Status ChangeFences(const FenceChange& change, const Secrets& secrets,
                            const google::protobuf::RepeatedPtrField<::fence::CIDR>& cidrs,
                            const grpc::ServerContext& context) MZ_EXCLUDES(enforce_mu_);
  // Stores the change (a fence within the store's limit); logs what it stored or why not.
  Status StoreChange(const FenceChange& change, const Admitted& call) MZ_REQUIRES(enforce_mu_);
  Status StoreFailed(const FenceChange& change, const Status& why);
  // Waits for the leader's pass (AwaitLeader), until twice the lease and kFollowerSlack or the
  // caller's deadline.
  Result<EnforceReport> FollowLeader(const Admitted& call, bool fence,
                                     const grpc::ServerContext& context) MZ_EXCLUDES(enforce_mu_);
  // Waits until the leader enforced `cidrs` (fence) or completed their unfence.
  Status AwaitLeader(const Admitted& call, bool fence, Clock::time_point deadline);
  // Whether `snap` shows no fence of `cidrs` pending (fence) or no unfence of them left.
  static bool Completed(const StoreSnapshot& snap, const CidrSet& cidrs, bool fence);
  // With the port index, once the change is in place at Mizar-MP: waits until every live node
  // (its publication lease not lapsed) acknowledged the standing fence set, unless the set no
  // longer holds the change (a later one superseded it). Nodes get the set pushed when it is
  // stored (fence_sets()), and each acknowledgement this replica records wakes the wait (the
  // reads of the leases taking at most half of it); those recorded by another replica are seen
  // within 100 ms. The bound is the
  // publication lease: a node that does not acknowledge lapses unless it publishes, and a
  // publication acknowledges too. UNAVAILABLE naming the nodes still behind at `deadline`.
  Status AwaitNodes(const Admitted& call, bool fence, Clock::time_point deadline);
  // The set the nodes must acknowledge for the change: the one offered to them when it holds
  // the change, else the store's; null when the store's no longer holds it (superseded).
  Result<std::shared_ptr<const FenceSet>> SetToAwait(const Admitted& call, bool fence);
  // The nodes' wait ends within the publication lease, or the caller's deadline.
  Clock::time_point NodesDeadline(const grpc::ServerContext& context) const;
  // Whether `set` holds every one of `cidrs` (fence) or none (unfence).
  static bool HoldsChange(const FenceSet& set, const CidrSet& cidrs, bool fence);
  // The fence set the nodes enforce: every standing fence, pending or enforced, and the address
  // of each port `index` holds for a node those fences cover (CoveredNodes): reads the index
  // only while a fence covers a node.
  Result<FenceSet> StandingSet(const StoreSnapshot& snap, const PortIndex* index) const;
  // How long one port update may take (what a leader's lease must still cover to start it).
  Clock::duration UpdateBudget() const;
  Result<Admitted> Admit(const char* rpc, const Secrets& secrets,
                         const google::protobuf::RepeatedPtrField<::fence::CIDR>* cidrs);
  // The secrets check; logs a refusal under `rpc`'s name.
  Status Authenticate(const char* rpc, const Secrets& secrets) const;

  // One enforcement pass, counted in the metrics with the store it leaves. It plans on `listing`
  // when that is valid, else lists the ports itself.
  Result<EnforceReport> EnforceLocked(Leases leases, PendingListing listing = {})
      MZ_REQUIRES(enforce_mu_);
  Result<EnforceReport> EnforcePass(Leases leases, PendingListing listing) MZ_REQUIRES(enforce_mu_);
  Result<StoreSnapshot> ReadStore(FenceStore& store);
  // Sets the store's gauges as a pass left it: from its report when it succeeded, else read.
  void ObserveStoreAfter(const Result<EnforceReport>& report, const FenceStore& store);
  Status RecordCompletion(FenceStore& store, const AppliedPlan& applied);
  // RESOURCE_EXHAUSTED when adding `cidrs` would take the store past kMaxStoredFences.
  Status CheckStoreLimit(FenceStore& store, const CidrSet& cidrs);
  Status ListWithHoles(const EnforcementPlan& plan, const EnforceReport& report,
                       const StoreSnapshot& snap) const;

  // GetFenceClients' answer for `only` (empty: every node): the records, the configured
  // addresses and, with use_port_list, the port list.
  Result<std::vector<FenceClient>> FenceClients(const std::string& only);
  Status AddPortListAddresses(const std::string& only, NodeAddresses& by_node) const;

  // A Mizar-MP client; for a replica that shares its store, updates are tried once (a failed
  // one is the next pass's), so UpdateBudget() bounds each.
  Result<std::unique_ptr<client::Client>> NewClient() const MZ_EXCLUDES(store_mu_);
  // "Mizar-MP at <url without credentials>", how errors name Mizar-MP.
  std::string MizarMpName() const;

  FenceOptions options_;
  // The controller's generation as the last port list found it (kAuto: not yet), given to the
  // clients made after it (ClientConfig::known_generation).
  mutable std::atomic<client::Dialect> generation_{client::Dialect::kAuto};
  FenceMetrics metrics_;
  client::MizarMpCheck mizarmp_check_;
  FenceClientSources client_sources_{options_.state_dir, options_.host_id, options_.node_addresses};
  // With the port index: the nodes a pass covers although they never published.
  mutable RegisteredNodes registered_nodes_{options_.publication_lease};
  // With the port index: the nodes a pass lists by host id, and the lease read it reuses.
  mutable ListedNodes listed_nodes_{options_.publication_lease};

  // Taken inside enforce_mu_ (a pass reads the store), never around it.
  mutable Mutex store_mu_;
  std::unique_ptr<FenceStore> store_ MZ_GUARDED_BY(store_mu_);
  // After store_, so it ends first.
  std::unique_ptr<Leadership> leadership_ MZ_GUARDED_BY(store_mu_);
  std::unique_ptr<PortIndex> port_index_ MZ_GUARDED_BY(store_mu_);  // with options_.port_index
  std::unique_ptr<AuditLog> audit_ MZ_GUARDED_BY(store_mu_);
  // Open failure, or the last failed store operation.
  Status store_error_ MZ_GUARDED_BY(store_mu_);
  bool store_opening_ MZ_GUARDED_BY(store_mu_) = true;

  // Serialises fence, unfence and reconcile passes.
  Mutex enforce_mu_ MZ_ACQUIRED_BEFORE(store_mu_);
  // The store's revision after the last pass that succeeded and its own writes. Up to it, the
  // store holds nothing a pass has not accounted for.
  int64_t passed_revision_ MZ_GUARDED_BY(enforce_mu_) = -1;
  // Whether the last pass found this replica's lead lapsed (it then changed nothing more).
  bool lead_lapsed_in_pass_ MZ_GUARDED_BY(enforce_mu_) = false;

  // Serialises offers, each of a set read under it, so a later offer is never of an older set.
  Mutex offer_mu_ MZ_ACQUIRED_AFTER(enforce_mu_);
  Watched<FenceSet> fence_sets_;
  std::atomic<bool> offer_again_{false};  // an offer could not read the store
  // The last node whose acknowledgement this replica recorded: AwaitNodes wakes on each.
  Watched<std::string> acknowledgements_;

  Worker loop_;
  std::atomic<uint64_t> passes_{0};
  // Set by Publish, taken by the loop's next turn (Tick).
  std::atomic<bool> published_inside_fence_{false};
  // The loop's view (its thread only): the term and store revision of its last pass, and when
  // the interval's next pass is due.
  uint64_t seen_terms_ = 0;
  int64_t seen_revision_ = -1;
  // The store revision whose standing set the loop last offered (a sole store's is always -1,
  // so -2 makes the first turn offer).
  int64_t offered_revision_ = -2;
  Clock::time_point next_reconcile_;
};

}  // namespace mizarmp::fence
