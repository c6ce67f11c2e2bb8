// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The contract between the mizarmp-addons server framework (addons/) and the CSI-Addons
// services it serves (fence/, keyrotation/) or the components it runs beside them (relay/).
// The framework knows no service: main() builds the services the mode asks for and registers
// each; Identity advertises the union of their capabilities and Probe asks each of their
// readiness checks, so what is advertised is always what is served. Adding a service is writing
// one class that implements this interface and registering it in main().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "identity/identity.pb.h"

namespace grpc {
class Service;
}  // namespace grpc
namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mizarmp::addons {

// What a readiness check reports to Probe. Either way a dependency that is not ready makes
// Probe answer ready=false, never an error (addons/identity.h says why); the error's message is
// the reason the log and mizarmpctl show.
struct Readiness {
  bool ready = true;  // false: healthy but still initialising
  Status error;       // not OK: the dependency is unusable

  static Readiness Ready() { return {}; }
  static Readiness Initializing() { return {false, Status::Ok()}; }
  static Readiness Failed(Status s) { return {true, std::move(s)}; }
  // Ready when `s` is OK, else unusable for that reason: a check that only fails or succeeds.
  static Readiness Of(Status s) { return s.ok() ? Ready() : Failed(std::move(s)); }
};

// A dependency Probe checks. `check` runs on every Probe and on Identity's background
// evaluation, so it must be cheap (read an atomic, or do I/O at most once per cache period, as
// the Mizar-MP check does); an error's message is prefixed with `name` (e.g. "fence store"),
// which also labels the dependency's metric.
struct ReadinessCheck {
  std::string name;
  std::function<Readiness()> check;
  // The error's message names the dependency itself ("Mizar-MP at URL is unreachable ..."), so
  // it is the reason as it is, without the prefix.
  bool message_names_dependency = false;
};

// A part of mizarmp-addons that Probe checks, /metrics shows and the server starts and stops,
// whether or not it serves RPCs (the node's relay serves none: Server::Attach).
class AddonsComponent {
 public:
  virtual ~AddonsComponent() = default;

  // The dependencies Probe checks for this component (none by default).
  virtual std::vector<ReadinessCheck> readiness_checks() { return {}; }
  // Adds the component's own metric families to the server's registry (addons/metrics.h),
  // once, when it is registered; keeping the pointer keeps the registry alive as long as the
  // component records into it. None by default.
  virtual void RegisterMetrics(const std::shared_ptr<prometheus::Registry>&) {}

  // Called once the server accepts calls (background work such as a reconcile loop starts
  // here), and once after the server stopped serving. Both default to nothing.
  virtual void Start() {}
  virtual void Stop() {}
};

// A CSI-Addons gRPC service: a component the server also serves and Identity advertises.
class AddonsService : public AddonsComponent {
 public:
  // The gRPC service to serve; owned by this object and alive as long as it is.
  virtual grpc::Service* grpc_service() = 0;

  // The name grpc.health.v1.Health reports it under: the generated service_full_name(), e.g.
  // "fence.FenceController".
  virtual std::string health_name() const = 0;

  // The capabilities Identity's GetCapabilities advertises while this service is served.
  virtual std::vector<identity::Capability> capabilities() const = 0;

  // Called when the server starts draining: ends the service's long-lived streams, which
  // would otherwise hold the drain for its whole grace period. None by default.
  virtual void EndStreams() {}
};

}  // namespace mizarmp::addons
