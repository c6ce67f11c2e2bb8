// The CSI-Addons Identity service.
//
// GetIdentity: the configured driver name, the project version and a manifest
//   {"mizarmp-url", "commit", "mode"}.
// GetCapabilities: the service type (CONTROLLER_SERVICE or NODE_SERVICE, from the mode) and the
//   union of the capabilities of the services it was built over, so what is advertised is
//   always what is served.
// Probe: FAILED_PRECONDITION naming the dependency when one is unusable (a service's readiness
//   check reporting an error, Mizar-MP unreachable), ready=false while a check is still
//   initialising (e.g. the fence store opening), ready=true otherwise. The services' checks run
//   first, in the order the services were given, then the other components'; then the Mizar-MP
//   check (GET of the configured subnet, short timeout), which is cached for `probe_cache_ttl` and
//   made by one caller at a time, so a storm of Probe calls costs at most one REST call per TTL.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "addons/driver.h"
#include "addons/service.h"
#include "common/status.h"
#include "identity.grpc.pb.h"
#include "mizarmp-client/client.h"

namespace mizarmp::addons {

struct IdentityOptions {
  std::string drivername = kDefaultDriverName;  // validated by the caller (the server's config)
  std::string vendor_version;                   // default: the project version
  std::string commit;                           // default: the build commit
  Mode mode = Mode::kController;
  // Mizar-MP, checked by Probe (GET subnet). An empty base_url disables the check.
  client::ClientConfig mizarmp;
  std::string subnet_id = client::kDefaultSubnetId;
  std::chrono::milliseconds probe_timeout{1000};
  std::chrono::milliseconds probe_cache_ttl{1000};
};

class IdentityService final : public identity::Identity::Service, public AddonsService {
 public:
  // `services` (not owned) are the services served next to Identity, `components` the parts
  // that serve no RPC (Server::Attach); all must outlive it. Probe asks the services' checks,
  // then the components'.
  IdentityService(IdentityOptions options, std::vector<AddonsService*> services,
                  std::vector<AddonsComponent*> components = {});
  ~IdentityService() override;

  // AddonsService. capabilities() is the service-type capability: Identity is what makes the
  // server a controller or a node service.
  grpc::Service* grpc_service() override { return this; }
  std::string health_name() const override;
  std::vector<identity::Capability> capabilities() const override;

  grpc::Status GetIdentity(grpc::ServerContext* context,
                           const identity::GetIdentityRequest* request,
                           identity::GetIdentityResponse* response) override;
  grpc::Status GetCapabilities(grpc::ServerContext* context,
                               const identity::GetCapabilitiesRequest* request,
                               identity::GetCapabilitiesResponse* response) override;
  grpc::Status Probe(grpc::ServerContext* context, const identity::ProbeRequest* request,
                     identity::ProbeResponse* response) override;

  // The Probe decision without gRPC: whether every dependency is ready, or the
  // FAILED_PRECONDITION naming the first unusable one.
  Result<bool> CheckReady();

  // REST calls made by the Mizar-MP check so far.
  uint64_t mizarmp_checks() const;

 private:
  Status CheckMizarMp();
  Status CallMizarMp();

  IdentityOptions options_;
  // Both fixed at construction: the services are given once. advertised_ is what
  // GetCapabilities answers: capabilities() and each service's, without duplicates, in order.
  std::vector<identity::Capability> advertised_;
  std::vector<ReadinessCheck> checks_;

  // The Mizar-MP check: one client, one caller at a time, result cached.
  mutable std::mutex mp_mu_;
  std::unique_ptr<client::Client> mp_client_;
  Status mp_client_error_;
  std::optional<Status> mp_cached_;
  std::chrono::steady_clock::time_point mp_cached_at_;
  uint64_t mp_checks_ = 0;
};

}  // namespace mizarmp::addons
