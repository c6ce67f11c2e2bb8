// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The FenceController's metrics (on the server's registry, addons/metrics.h): the fences stored
// by state and the pending unfences (as of the end of the last pass), enforcement passes by
// result, whether this replica leads, the port index's publications, acknowledgements, lapsed
// nodes and nodes not enforcing the standing set, the RPCs' wait for the nodes, and its
// Mizar-MP requests by call and outcome with their latency. Before Register() every method does
// nothing, so a FenceService without a server (tests) records nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "fence/store.h"
#include "mizarmp-client/client.h"

// Declared only, as in addons/metrics.h: fence_service.h's includers need no prometheus-cpp.
namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace mizarmp::fence {

class FenceMetrics {
 public:
  // Adds the families; once, before the service starts (the pointers are then read-only).
  void Register(std::shared_ptr<prometheus::Registry> registry);
  bool registered() const { return registry_ != nullptr; }

  void ObserveStore(const StoreCounts& counts);
  void ObservePass(bool ok);
  // The reconcile loop looked at the store (a pass may or may not follow).
  void ObserveLook();
  void ObserveLeader(bool leads);
  void ObserveLapsedNodes(size_t count) const;
  void ObserveNodesNotEnforcing(size_t count) const;
  // A fence or unfence RPC's wait for the nodes' acknowledgements (FenceService::AwaitNodes).
  void ObserveNodeWait(std::chrono::steady_clock::duration waited) const;
  void ObserveAcknowledgement() const;
  void ObservePublication(bool ok);
  // The Mizar-MP client's observer (ClientConfig::observer); empty before Register().
  std::function<void(const client::CallObservation&)> MizarMpObserver() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* fences_pending_ = nullptr;
  prometheus::Gauge* fences_enforced_ = nullptr;
  prometheus::Gauge* unfences_pending_ = nullptr;
  prometheus::Gauge* leader_ = nullptr;
  prometheus::Counter* passes_ok_ = nullptr;
  prometheus::Counter* passes_failed_ = nullptr;
  prometheus::Counter* looks_ = nullptr;
  prometheus::Gauge* lapsed_nodes_ = nullptr;
  prometheus::Gauge* nodes_not_enforcing_ = nullptr;
  prometheus::Histogram* node_wait_seconds_ = nullptr;
  prometheus::Counter* acknowledgements_ = nullptr;
  prometheus::Counter* publications_ok_ = nullptr;
  prometheus::Counter* publications_failed_ = nullptr;
  prometheus::Family<prometheus::Counter>* mizarmp_requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* mizarmp_seconds_ = nullptr;
};

}  // namespace mizarmp::fence
