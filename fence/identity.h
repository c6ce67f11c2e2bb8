// The CSI-Addons Identity service.
//
// GetIdentity: the configured driver name, the project version and a manifest
//   {"mizarmp-url", "commit", "mode"}.
// GetCapabilities: data-driven. The service type (CONTROLLER_SERVICE or NODE_SERVICE, from the
//   mode) is there from the start; each operation service adds its own capabilities when it is
//   wired in (the FenceController: AddNetworkFenceCapabilities(); the key rotation service: an
//   EncryptionKeyRotation capability), so what is advertised is always what is served.
// Probe: FAILED_PRECONDITION naming the dependency when one is unusable (Mizar-MP unreachable,
//   a readiness check reporting an error), ready=false while a check is still initialising
//   (e.g. the fence store opening), ready=true otherwise. The Mizar-MP check (GET of the
//   configured subnet, short timeout) is cached for `probe_cache_ttl` and made by one caller at
//   a time, so a storm of Probe calls costs at most one REST call per TTL.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "fence/config.h"
#include "identity.grpc.pb.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

// mizarmp::Status codes equal gRPC codes, so the conversion is a cast.
grpc::Status ToGrpcStatus(const Status& status);

// What a readiness check reports.
struct Readiness {
  bool ready = true;  // false: healthy but still initialising
  Status error;       // not OK: the dependency is unusable (Probe answers FAILED_PRECONDITION)

  static Readiness Ready() { return {}; }
  static Readiness Initializing() { return {false, Status::Ok()}; }
  static Readiness Failed(Status s) { return {true, std::move(s)}; }
};

struct IdentityOptions {
  std::string drivername = kDefaultDriverName;  // validated by the caller (ValidateConfig)
  std::string vendor_version;                   // default: the project version
  std::string commit;                           // default: the build commit
  Mode mode = Mode::kController;
  // Mizar-MP, checked by Probe (GET subnet). An empty base_url disables the check.
  client::ClientConfig mizarmp;
  std::string subnet_id = client::kDefaultSubnetId;
  std::chrono::milliseconds probe_timeout{1000};
  std::chrono::milliseconds probe_cache_ttl{1000};

  static IdentityOptions FromConfig(const ServerConfig& config);
};

class IdentityService final : public identity::Identity::Service {
 public:
  explicit IdentityService(IdentityOptions options);
  ~IdentityService() override;

  // Adds a capability to GetCapabilities (duplicates are ignored). Thread-safe.
  void AddCapability(const identity::Capability& capability);
  // NETWORK_FENCE and GET_CLIENTS_TO_FENCE: called by whoever wires the FenceController in.
  void AddNetworkFenceCapabilities();
  // ENCRYPTIONKEYROTATION: called by whoever wires the EncryptionKeyRotationController in.
  void AddEncryptionKeyRotationCapability();
  std::vector<identity::Capability> Capabilities() const;

  // Registers a readiness check under a dependency name (e.g. "fence store"). Checks run on
  // every Probe, so they must be cheap (read an atomic, not do I/O). An error's message is
  // prefixed with the name. Thread-safe.
  void AddReadinessCheck(std::string name, std::function<Readiness()> check);

  grpc::Status GetIdentity(grpc::ServerContext* context,
                           const identity::GetIdentityRequest* request,
                           identity::GetIdentityResponse* response) override;
  grpc::Status GetCapabilities(grpc::ServerContext* context,
                               const identity::GetCapabilitiesRequest* request,
                               identity::GetCapabilitiesResponse* response) override;
  grpc::Status Probe(grpc::ServerContext* context, const identity::ProbeRequest* request,
                     identity::ProbeResponse* response) override;

  // The Probe decision without gRPC, for tests and the health reporting.
  Result<bool> CheckReady();

  // REST calls made by the Mizar-MP check so far.
  uint64_t mizarmp_checks() const;

 private:
  Status CheckMizarMp();

  IdentityOptions options_;
  mutable std::mutex caps_mu_;
  std::vector<identity::Capability> capabilities_;
  std::vector<std::pair<std::string, std::function<Readiness()>>> checks_;

  // The Mizar-MP check: one client, one caller at a time, result cached.
  mutable std::mutex mp_mu_;
  std::unique_ptr<client::Client> mp_client_;
  Status mp_client_error_;
  std::optional<Status> mp_cached_;
  std::chrono::steady_clock::time_point mp_cached_at_;
  uint64_t mp_checks_ = 0;
};

}  // namespace mizarmp::fence
