// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The standard gRPC health service (grpc.health.v1.Health, proto/health.proto), served
// synchronously by mizarmp-addons' own server threads.
//
// gRPC's default health service (grpc::EnableDefaultHealthCheckService) is written on the
// callback API: switching it on makes a synchronous server start the callback completion
// queue's "nexting" threads, which poll with a timeout and took a large share of the server's CPU
// under load (bench/RESULTS.md, Probe). This one is an ordinary sync service and starts no
// threads of its own.
//
// Known names: "" (the server overall), every name added with AddServiceName() and every
// liveness name (AddLivenessName()).
// Check: SERVING or NOT_SERVING for a known name, NOT_FOUND for any other.
// Watch: the current status at once (SERVICE_UNKNOWN for an unknown name, the call staying
//   open as the protocol asks), then one message per change, until the client cancels or
//   Shutdown(). A sync handler gets no cancellation notice, so an idle Watch looks at its call
//   every `cancel_poll`; Shutdown() wakes every Watch at once (after sending NOT_SERVING) so it
//   never holds up the server's shutdown. At most `max_watches` are open at a time (each holds
//   a server thread); one more is refused with RESOURCE_EXHAUSTED.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/mutex.h"
#include "health.grpc.pb.h"

namespace mizarmp::addons {

struct HealthOptions {
  std::chrono::milliseconds cancel_poll{1000};
  int max_watches = 100;
};

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  // The full name gRPC gives a Watch call (a server interceptor sees calls by this name).
  static constexpr const char* kWatchMethod = "/grpc.health.v1.Health/Watch";

  explicit HealthService(HealthOptions options = {});
  ~HealthService() override;  // Shutdown()
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  // Makes `name` known, NOT_SERVING until the next SetServingStatus(). "" is always known.
  void AddServiceName(const std::string& name);

  // Makes `name` known as a liveness name: SERVING until Shutdown(), whatever
  // SetServingStatus() says (a Kubernetes livenessProbe asks it, so a dependency's outage,
  // which makes the server not ready, does not get the container restarted).
  void AddLivenessName(const std::string& name);

  // Every known name (and "") but the liveness names SERVING or NOT_SERVING. Ignored after
  // Shutdown().
  void SetServingStatus(bool serving);

  // NOT_SERVING for every known name from now on (later updates are ignored); every open Watch
  // sends that and ends. Idempotent.
  void Shutdown();

  // Open Watch calls (tests).
  int watches() const;

  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  ServingStatus StatusLocked(const std::string& name) const MZ_REQUIRES(mu_);

  const HealthOptions options_;
  mutable Mutex mu_;
  std::condition_variable changed_;  // a status changed, or Shutdown()
  std::map<std::string, ServingStatus> statuses_ MZ_GUARDED_BY(mu_);
  std::set<std::string> liveness_ MZ_GUARDED_BY(mu_);  // names SetServingStatus() leaves SERVING
  bool shut_down_ MZ_GUARDED_BY(mu_) = false;
  int watches_ MZ_GUARDED_BY(mu_) = 0;
};

}  // namespace mizarmp::addons
