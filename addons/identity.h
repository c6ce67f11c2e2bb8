// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CSI-Addons Identity service.
//
// GetIdentity: the configured driver name, the project version and a manifest
//   {"mizarmp-url", "commit", "mode"}.
// GetCapabilities: the service type (CONTROLLER_SERVICE or NODE_SERVICE, from the mode) and the
//   union of the capabilities of the services it was built over, so what is advertised is
//   always what is served.
// Probe: ready=true when every dependency is usable, ready=false otherwise, never an error:
//   while a check is still initialising (e.g. the fence store opening) and while one is unusable
//   (a readiness check reporting an error: the fence store broken, or Mizar-MP unreachable for
//   a service that calls it, which owns that check). The CSI-Addons sidecar exits on any Probe
//   error but DEADLINE_EXCEEDED and retries every second on ready=false (kubernetes-csi-addons sidecar/internal/client/client.go, Probe/probeOnce), so an
//   outage answered as an error would crash-loop it. Why it is not ready goes instead to the log
//   (once per change of a dependency's state), the metrics (mizarmp_addons_ready and
//   mizarmp_addons_dependency_ready{dependency}), the health service (OnReadinessChange) and
//   the answer itself: a ready=false answer carries the reason as trailing metadata
//   "mizarmp-not-ready" (mizarmpctl probe shows it; the sidecar reads only `ready`).
//   The services' checks run first, in the order the services were given, then the other
//   components'. Each check must be cheap or cache what it found (see ReadinessCheck).
// Between Start() and Stop() the same checks run in the background (every `readiness_interval`,
//   every second while not ready), so the health service and the metrics follow readiness when
//   nobody calls Probe (the sidecar stops probing once it saw ready=true).
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "addons/driver.h"
#include "addons/service.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/worker.h"
#include "identity/identity.grpc.pb.h"

// Declared only, as in addons/metrics.h.
namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace mizarmp::addons {

struct IdentityOptions {
  std::string drivername = kDefaultDriverName;  // Validate() checks it
  std::string vendor_version;                   // default: the project version
  std::string commit;                           // default: the build commit
  Mode mode = Mode::kController;
  std::string mizarmp_url;  // GetIdentity's manifest shows it, userinfo redacted
  // How often readiness is evaluated in the background while ready (every second while not);
  // zero: only when Probe is called.
  std::chrono::milliseconds readiness_interval{10000};

  // The drivername rules (ValidateDriverName): INVALID_ARGUMENT naming "drivername".
  Status Validate() const;
};

// One dependency as the last readiness evaluation found it.
struct DependencyReadiness {
  enum class State { kReady, kInitializing, kFailed };
  std::string name;  // the check's name ("fence store", "relay", "Mizar-MP", ...)
  State state = State::kReady;
  std::string reason;  // not ready: why, naming the dependency ("fence store: ...")
};

// What one evaluation of every dependency found.
struct ReadinessReport {
  bool ready = true;  // every dependency kReady
  std::vector<DependencyReadiness> dependencies;
  // Why it is not ready: the first dependency that is not, failures before initialisations;
  // empty when ready.
  std::string Reason() const;
};

class IdentityService final : public identity::Identity::Service, public AddonsService {
 public:
  // `services` (not owned) are the services served next to Identity, `components` the parts
  // that serve no RPC (Server::Attach); all must outlive it. Probe asks the services' checks,
  // then the components'.
  IdentityService(IdentityOptions options, std::vector<AddonsService*> services,
                  std::vector<AddonsComponent*> components = {});
  ~IdentityService() override;  // Stop()

  // AddonsService. capabilities() is the service-type capability: Identity is what makes the
  // server a controller or a node service.
  grpc::Service* grpc_service() override { return this; }
  std::string health_name() const override;
  std::vector<identity::Capability> capabilities() const override;
  // mizarmp_addons_ready and mizarmp_addons_dependency_ready{dependency}: 1 ready, 0 not (as
  // of the last evaluation; 0 before the first).
  void RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) override;
  // The background evaluation (readiness_interval); Stop() waits for one in progress, which
  // lasts as long as the slowest check (a Mizar-MP check: up to its timeout).
  void Start() override;
  void Stop() override;

  // Called with the overall readiness after the first evaluation and after each one that
  // changed it, one call at a time, in the order of the evaluations (main feeds the health
  // service with it: NOT_SERVING while not ready). Set before Start(); it must not call back
  // into this object.
  void OnReadinessChange(std::function<void(bool ready)> listener);

  grpc::Status GetIdentity(grpc::ServerContext* context,
                           const identity::GetIdentityRequest* request,
                           identity::GetIdentityResponse* response) override;
  grpc::Status GetCapabilities(grpc::ServerContext* context,
                               const identity::GetCapabilitiesRequest* request,
                               identity::GetCapabilitiesResponse* response) override;
  grpc::Status Probe(grpc::ServerContext* context, const identity::ProbeRequest* request,
                     identity::ProbeResponse* response) override;

  // The Probe decision without gRPC: every dependency evaluated now. Each call also updates
  // the log, the metrics and the listener.
  ReadinessReport CheckReady();

 private:
  // Hands an evaluation started as number `seq` to the log, the metrics and the listener,
  // unless a later one was handed over already.
  void Publish(uint64_t seq, const ReadinessReport& report) MZ_EXCLUDES(publish_mu_);
  // The background evaluation's turn: readiness checked; the pause before the next (shorter
  // while not ready).
  std::chrono::milliseconds CheckReadiness();

  IdentityOptions options_;
  // Both fixed at construction: the services are given once. advertised_ is what
  // GetCapabilities answers: capabilities() and each service's, without duplicates, in order.
  std::vector<identity::Capability> advertised_;
  std::vector<ReadinessCheck> checks_;

  // The last evaluation handed over (Publish).
  Mutex publish_mu_;
  uint64_t next_seq_ MZ_GUARDED_BY(publish_mu_) = 0;
  uint64_t published_seq_ MZ_GUARDED_BY(publish_mu_) = 0;
  std::optional<ReadinessReport> published_ MZ_GUARDED_BY(publish_mu_);
  std::function<void(bool)> listener_ MZ_GUARDED_BY(publish_mu_);
  // Set by RegisterMetrics; the registry kept alive as long as they are written.
  std::shared_ptr<prometheus::Registry> registry_ MZ_GUARDED_BY(publish_mu_);
  prometheus::Gauge* ready_gauge_ MZ_GUARDED_BY(publish_mu_) = nullptr;
  std::map<std::string, prometheus::Gauge*> dependency_gauges_ MZ_GUARDED_BY(publish_mu_);

  Worker loop_;  // the background evaluation
};

}  // namespace mizarmp::addons
