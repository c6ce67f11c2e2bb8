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
// Every RPC first checks `secrets` against the configured secrets (UNAUTHENTICATED). Mizar-MP
// failures while enforcing give UNAVAILABLE (Mizar-MP unreachable or failing) or UNKNOWN
// (anything else), naming the ports left; the store keeps the intent, and the periodic
// reconcile (every reconcileIntervalMs) re-runs the enforcement (fence/plan.h, fence/enforcer.h):
// it finishes interrupted fences and unfences and disables ports created inside a fence later.
// Fence, unfence and reconcile passes are serialised.
//
// Advertised capabilities: NETWORK_FENCE and GET_CLIENTS_TO_FENCE. Readiness ("fence store"):
// ready=false while the store is opening (Start() opens it on a background thread), an error
// naming the store when it cannot be opened or stops working.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "addons/service.h"
#include "common/status.h"
#include "fence.grpc.pb.h"
#include "fence/cidrset.h"
#include "fence/enforcer.h"
#include "fence/options.h"
#include "fence/store.h"
#include "mizarmp-client/client.h"
#include "records/cache.h"

namespace mizarmp::fence {

// The GetFenceClients parameter that narrows the answer to one node.
inline constexpr const char* kHostIdParameter = "hostId";

// One node's addresses as GetFenceClients answers them.
struct FenceClient {
  std::string id;
  std::vector<Cidr> addresses;  // merged
};

class FenceService final : public ::fence::FenceController::Service, public addons::AddonsService {
 public:
  explicit FenceService(FenceOptions options);
  ~FenceService() override;  // Stop()

  // This object itself.
  grpc::Service* grpc_service() override { return this; }
  // "fence.FenceController".
  std::string health_name() const override;
  // NETWORK_FENCE and GET_CLIENTS_TO_FENCE.
  std::vector<identity::Capability> capabilities() const override;
  // One check, "fence store": StoreReadiness().
  std::vector<addons::ReadinessCheck> readiness_checks() override;
  // Opens the store on a background thread, then runs the reconcile loop there. Returns at once.
  void Start() override;
  // Ends the reconcile loop and waits for it.
  void Stop() override;

  // Opens the store and reconciles once, synchronously, then starts the loop (tests). Returns
  // the open error.
  Status StartAndWait();

  // ready=false while the store is opening; an error naming the store when it is unusable.
  addons::Readiness StoreReadiness() const;

  // One enforcement pass over the whole store (the reconcile). Errors name what is left.
  Result<EnforceReport> Reconcile();
  // How many enforcement passes ran (reconciles, fences and unfences).
  uint64_t reconcile_passes() const { return passes_.load(); }

  // GetFenceClients without gRPC (parameters as the request carries them).
  Result<std::vector<FenceClient>> FenceClients(const std::map<std::string, std::string>& params);

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
  using Secrets = google::protobuf::Map<std::string, std::string>;
  using NodeAddresses = std::map<std::string, std::vector<Cidr>>;  // host id -> addresses

  // The store's life: opening, the loop, the store as the RPCs and passes get it.
  Status OpenStore();
  void StartLoop(bool initial_pass);
  void Run(bool initial_pass);
  void ReconcileAndLog();
  Result<FenceStore*> Store() const;
  void NoteStoreError(const Status& s);

  // What every fence RPC checks first, in order: the secrets, the request's CIDRs (when
  // `cidrs` is given), the store.
  struct Admitted {
    CidrSet cidrs;
    FenceStore* store = nullptr;
  };
  Result<Admitted> Admit(const char* rpc, const Secrets& secrets,
                         const google::protobuf::RepeatedPtrField<::fence::CIDR>* cidrs);
  // The secrets check; logs a refusal under `rpc`'s name.
  Status Authenticate(const char* rpc, const Secrets& secrets) const;

  // One enforcement pass; call with enforce_mu_ held.
  Result<EnforceReport> EnforceLocked();
  Result<StoreSnapshot> ReadStore(FenceStore& store);
  Status RecordCompletion(FenceStore& store, const AppliedPlan& applied);

  // GetFenceClients' sources; `only` (if not empty) is the one node asked for.
  Status AddRecordedAddresses(const std::string& only, NodeAddresses& by_node);
  void AddConfiguredAddresses(const std::string& only, NodeAddresses& by_node) const;
  Status AddPortListAddresses(const std::string& only, NodeAddresses& by_node) const;

  Result<std::unique_ptr<client::Client>> NewClient() const;
  // "Mizar-MP at <url without credentials>", how errors name Mizar-MP.
  std::string MizarMpName() const;

  FenceOptions options_;
  records::RecordCache records_{options_.state_dir};  // the plugin's records, for GetFenceClients

  mutable std::mutex store_mu_;
  std::unique_ptr<FenceStore> store_;
  Status store_error_;  // open failure, or the last failed store operation
  bool store_opening_ = true;

  std::mutex enforce_mu_;  // serialises fence, unfence and reconcile passes

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ = false;
  std::thread thread_;
  std::atomic<uint64_t> passes_{0};
};

}  // namespace mizarmp::fence
