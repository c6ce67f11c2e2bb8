// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-addons' Prometheus metrics (Debian's prometheus-cpp): one registry for the process,
// served as Prometheus text at http://<metricsAddress>/metrics when the address is set. The
// framework records every RPC here (by full method name and gRPC code, and its latency); each
// service adds its own families through AddonsService::RegisterMetrics.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

// Declared only: prometheus-cpp's headers stay in the .cc files of addons/ and fence/, so what
// includes the server's header (main, tests) does not depend on them.
namespace prometheus {
class Counter;
class Exposer;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace mizarmp::addons {

// Latency buckets (seconds) for RPCs and the calls they make: a Probe takes tens of microseconds,
// a fence of thousands of ports seconds.
std::vector<double> LatencyBuckets();

class Metrics {
 public:
  Metrics();
  ~Metrics();

  // Shared so a service's families outlive the server that served them (a service may still
  // record while it stops).
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // One finished RPC.
  void ObserveRpc(const std::string& method, const std::string& code, double seconds);

  // Starts serving /metrics on "HOST:PORT" (port 0: one is picked, see port()). UNAVAILABLE
  // naming the address when it cannot be bound.
  Status Serve(const std::string& address);
  int port() const { return port_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* rpcs_;
  prometheus::Family<prometheus::Histogram>* rpc_seconds_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace mizarmp::addons
