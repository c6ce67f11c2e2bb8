// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <exception>

namespace mizarmp::addons {

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
}

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      rpcs_(&prometheus::BuildCounter()
                 .Name("mizarmp_addons_rpcs_total")
                 .Help("gRPC calls answered, by full method name and status code")
                 .Register(*registry_)),
      rpc_seconds_(&prometheus::BuildHistogram()
                        .Name("mizarmp_addons_rpc_duration_seconds")
                        .Help("Time from a gRPC call's arrival to its status, by method")
                        .Register(*registry_)) {}

Metrics::~Metrics() = default;

void Metrics::ObserveRpc(const std::string& method, const std::string& code, double seconds) {
  rpcs_->Add({{"method", method}, {"code", code}}).Increment();
  rpc_seconds_->Add({{"method", method}}, LatencyBuckets()).Observe(seconds);
}

Status Metrics::Serve(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {  // civetweb's failure to bind
    return UnavailableError("metricsAddress \"" + address +
                            "\": cannot serve metrics there: " + e.what());
  }
  exposer_->RegisterCollectable(registry_);
  const auto ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  return Status::Ok();
}

}  // namespace mizarmp::addons
