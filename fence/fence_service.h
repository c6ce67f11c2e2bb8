// The CSI-Addons FenceController of mizarmp-addons (controller mode).
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
// Every RPC first checks `secrets` against the configured secrets file (UNAUTHENTICATED).
// Mizar-MP failures while enforcing give UNAVAILABLE (Mizar-MP unreachable or failing) or
// UNKNOWN (anything else), naming the ports left; the store keeps the intent, and the periodic
// reconcile (every reconcileIntervalMs) re-runs the enforcement: it finishes interrupted
// fences and unfences and disables ports created inside a fence later. Fence, unfence and
// reconcile passes are serialised.
//
// Readiness (for Identity's Probe): ready=false while the store is opening (Start() opens it on
// a background thread), an error naming the store when it cannot be opened or stops working.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "fence.grpc.pb.h"
#include "fence/cidrset.h"
#include "fence/config.h"
#include "fence/identity.h"
#include "fence/record_cache.h"
#include "fence/store.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

// The GetFenceClients parameter that narrows the answer to one node.
inline constexpr const char* kHostIdParameter = "hostId";

struct FenceOptions {
  client::ClientConfig mizarmp;  // base_url, project, dialect, TLS, token file
  std::string state_dir = kDefaultStateDir;
  std::string fence_store = kDefaultFenceStore;
  std::map<std::string, std::vector<std::string>> node_addresses;
  std::string host_id;
  bool use_port_list = false;
  std::map<std::string, std::string> expected_secrets;  // never logged
  std::chrono::milliseconds reconcile_interval{10000};

  static FenceOptions FromConfig(const ServerConfig& config);
};

// One node's addresses as GetFenceClients answers them.
struct FenceClient {
  std::string id;
  std::vector<Cidr> addresses;  // merged
};

// What one enforcement pass did.
struct EnforceReport {
  int disabled = 0;            // ports set admin_state_up=false
  int enabled = 0;             // ports set admin_state_up=true
  int failed = 0;              // port updates that failed
  std::vector<Cidr> enforced;  // fences completely enforced by this pass
  std::vector<Cidr> unfenced;  // pending unfences completed by this pass
};

class FenceService final : public ::fence::FenceController::Service {
 public:
  explicit FenceService(FenceOptions options);
  ~FenceService() override;  // Stop()

  // Opens the store on a background thread, then runs the reconcile loop. Returns at once.
  void Start();
  // Opens the store and reconciles once, synchronously (tests). Returns the open error.
  Status StartAndWait();
  void Stop();

  // For Identity: ready=false while opening; an error naming the store when unusable.
  Readiness StoreReadiness() const;
  // Registers the readiness check and the capabilities with Identity.
  void RegisterWith(IdentityService& identity);

  // One enforcement pass over the whole store (the reconcile). Errors name what is left.
  Result<EnforceReport> Reconcile();
  uint64_t reconcile_passes() const { return passes_.load(); }

  // The RPCs' logic without gRPC.
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
  Status OpenStore();
  void Run(bool initial_pass);
  Result<FenceStore*> Store() const;
  // What every fence RPC checks first, in order: the secrets, the request's CIDRs (when
  // `cidrs` is given), the store. Logs a refusal by the secrets check under `rpc`'s name.
  struct Admitted {
    CidrSet cidrs;
    FenceStore* store = nullptr;
  };
  Result<Admitted> Admit(const char* rpc,
                         const google::protobuf::Map<std::string, std::string>& secrets,
                         const google::protobuf::RepeatedPtrField<::fence::CIDR>* cidrs);
  Result<std::unique_ptr<client::Client>> NewClient() const;
  // Call with enforce_mu_ held.
  Result<EnforceReport> EnforceLocked();
  void NoteStoreError(const Status& s);

  FenceOptions options_;
  RecordCache records_{options_.state_dir};  // GetFenceClients' view of the plugin's records

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
