// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>

#include "addons/metrics.h"

namespace mizarmp::fence {

void FenceMetrics::Register(std::shared_ptr<prometheus::Registry> registry) {
  registry_ = std::move(registry);
  auto& fences = prometheus::BuildGauge()
                     .Name("mizarmp_addons_fences")
                     .Help(
                         "Fences in the fence store by state (pending: not yet enforced on "
                         "every port), as of the end of the last enforcement pass")
                     .Register(*registry_);
  fences_pending_ = &fences.Add({{"state", "pending"}});
  fences_enforced_ = &fences.Add({{"state", "enforced"}});
  unfences_pending_ = &prometheus::BuildGauge()
                           .Name("mizarmp_addons_unfences_pending")
                           .Help("Lifted fences whose ports are not all re-enabled yet")
                           .Register(*registry_)
                           .Add({});
  auto& passes = prometheus::BuildCounter()
                     .Name("mizarmp_addons_enforcement_passes_total")
                     .Help("Enforcement passes (reconciles, fences, unfences) by result")
                     .Register(*registry_);
  passes_ok_ = &passes.Add({{"result", "ok"}});
  passes_failed_ = &passes.Add({{"result", "failed"}});
  looks_ = &prometheus::BuildCounter()
                .Name("mizarmp_addons_fence_looks_total")
                .Help(
                    "The fence loop's looks at the store, every replica's whether or not it "
                    "leads or passes: a counter that stops rising is a loop that has stopped")
                .Register(*registry_)
                .Add({});
  leader_ = &prometheus::BuildGauge()
                 .Name("mizarmp_addons_leader")
                 .Help("1 while this replica leads (changes ports at Mizar-MP), else 0")
                 .Register(*registry_)
                 .Add({});
  lapsed_nodes_ = &prometheus::BuildGauge()
                       .Name("mizarmp_addons_lapsed_nodes")
                       .Help(
                           "Host ids whose publication lease had lapsed, or that Mizar-MP "
                           "knows but that never published, at the last pass through the port "
                           "index: the controller lists their ports itself")
                       .Register(*registry_)
                       .Add({});
  nodes_not_enforcing_ = &prometheus::BuildGauge()
                              .Name("mizarmp_addons_nodes_not_enforcing")
                              .Help(
                                  "Live nodes whose last acknowledgement, at the last pass "
                                  "through the port index, names another fence set than the "
                                  "standing one: a fence change waits for them")
                              .Register(*registry_)
                              .Add({});
  node_wait_seconds_ = &prometheus::BuildHistogram()
                            .Name("mizarmp_addons_fence_node_wait_seconds")
                            .Help(
                                "How long a fence or unfence waited, after its pass, until every "
                                "live node acknowledged a fence set holding it")
                            .Register(*registry_)
                            .Add({}, addons::LatencyBuckets());
  acknowledgements_ = &prometheus::BuildCounter()
                           .Name("mizarmp_addons_fence_acknowledgements_total")
                           .Help("Node agents' acknowledgements of a fence set this replica took")
                           .Register(*registry_)
                           .Add({});
  auto& publications = prometheus::BuildCounter()
                           .Name("mizarmp_addons_publications_total")
                           .Help("Node agents' publications into the port index by result")
                           .Register(*registry_);
  publications_ok_ = &publications.Add({{"result", "ok"}});
  publications_failed_ = &publications.Add({{"result", "failed"}});
  mizarmp_requests_ = &prometheus::BuildCounter()
                           .Name("mizarmp_addons_mizarmp_requests_total")
                           .Help("Mizar-MP REST calls (after retries) by call and outcome")
                           .Register(*registry_);
  mizarmp_seconds_ = &prometheus::BuildHistogram()
                          .Name("mizarmp_addons_mizarmp_request_duration_seconds")
                          .Help("Mizar-MP REST call time, retries included, by call")
                          .Register(*registry_);
}

void FenceMetrics::ObserveStore(const StoreCounts& counts) {
  if (!registered()) return;
  fences_pending_->Set(static_cast<double>(counts.fences_pending));
  fences_enforced_->Set(static_cast<double>(counts.fences_enforced));
  unfences_pending_->Set(static_cast<double>(counts.unfences_pending));
}

void FenceMetrics::ObservePass(bool ok) {
  if (!registered()) return;
  (ok ? passes_ok_ : passes_failed_)->Increment();
}

void FenceMetrics::ObserveLook() {
  if (registered()) looks_->Increment();
}

void FenceMetrics::ObserveLeader(bool leads) {
  if (registered()) leader_->Set(leads ? 1 : 0);
}

void FenceMetrics::ObserveLapsedNodes(size_t count) const {
  if (registered()) lapsed_nodes_->Set(static_cast<double>(count));
}

void FenceMetrics::ObserveNodesNotEnforcing(size_t count) const {
  if (registered()) nodes_not_enforcing_->Set(static_cast<double>(count));
}

void FenceMetrics::ObserveNodeWait(std::chrono::steady_clock::duration waited) const {
  if (registered()) node_wait_seconds_->Observe(std::chrono::duration<double>(waited).count());
}

void FenceMetrics::ObserveAcknowledgement() const {
  if (registered()) acknowledgements_->Increment();
}

void FenceMetrics::ObservePublication(bool ok) {
  if (!registered()) return;
  (ok ? publications_ok_ : publications_failed_)->Increment();
}

std::function<void(const client::CallObservation&)> FenceMetrics::MizarMpObserver() const {
  if (!registered()) return {};
  return [requests = mizarmp_requests_, seconds = mizarmp_seconds_,
          keep = registry_](const client::CallObservation& seen) {
    requests->Add({{"call", seen.call}, {"outcome", seen.outcome}}).Increment();
    seconds->Add({{"call", seen.call}}, addons::LatencyBuckets())
        .Observe(std::chrono::duration<double>(seen.elapsed).count());
  };
}

}  // namespace mizarmp::fence
