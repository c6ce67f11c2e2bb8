// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "relay/relay_component.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <iterator>

#include "addons/metrics.h"

namespace mizarmp::relay {

// Series::requests is indexed by the outcome's value.
static_assert([] {
  for (size_t i = 0; i < std::size(kRelayOutcomes); ++i) {
    if (static_cast<size_t>(kRelayOutcomes[i]) != i) return false;
  }
  return true;
}());

struct RelayComponent::Series {
  std::shared_ptr<prometheus::Registry> registry;  // keeps the series below alive
  std::array<prometheus::Counter*, std::size(kRelayOutcomes)> requests{};
  prometheus::Histogram* upstream_seconds = nullptr;
};

RelayComponent::RelayComponent(client::MizarMpCheckOptions mizarmp_check)
    : mizarmp_check_(std::move(mizarmp_check)) {}

Result<std::unique_ptr<RelayComponent>> RelayComponent::Start(
    RelayOptions options, client::MizarMpCheckOptions mizarmp_check) {
  std::unique_ptr<RelayComponent> component(new RelayComponent(std::move(mizarmp_check)));
  options.observer = [seen_by = component.get()](const RelayObservation& seen) {
    seen_by->Observe(seen);
  };
  MZ_ASSIGN_OR_RETURN(component->relay_, Relay::Start(std::move(options)));
  return component;
}

// The relay's threads are joined before the series they record into go.
RelayComponent::~RelayComponent() { Stop(); }

std::vector<addons::ReadinessCheck> RelayComponent::readiness_checks() {
  std::vector<addons::ReadinessCheck> checks{
      {"relay", [relay = relay_.get()] { return addons::Readiness::Of(relay->Check()); }}};
  if (mizarmp_check_.enabled()) {
    checks.push_back({client::kMizarMpDependency,
                      [this] { return addons::Readiness::Of(mizarmp_check_.Check()); },
                      /*message_names_dependency=*/true});
  }
  return checks;
}

void RelayComponent::RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) {
  auto series = std::make_unique<Series>();
  series->registry = registry;
  auto& requests = prometheus::BuildCounter()
                       .Name("mizarmp_addons_relay_requests_total")
                       .Help(
                           "Requests the node's relay answered, by outcome (relayed: the "
                           "controller answered; else why the relay answered itself)")
                       .Register(*registry);
  // Every outcome from the start, so a rate of refusals is 0 rather than absent.
  for (size_t i = 0; i < std::size(kRelayOutcomes); ++i) {
    series->requests[i] = &requests.Add({{"outcome", OutcomeName(kRelayOutcomes[i])}});
  }
  series->upstream_seconds =
      &prometheus::BuildHistogram()
           .Name("mizarmp_addons_relay_upstream_duration_seconds")
           .Help("Time from relaying a request to the controller's whole answer")
           .Register(*registry)
           .Add({}, addons::LatencyBuckets());
  series_ = std::move(series);
  published_.store(series_.get(), std::memory_order_release);
}

void RelayComponent::Stop() {
  if (relay_ != nullptr) relay_->Stop();
}

void RelayComponent::Observe(const RelayObservation& seen) const {
  const Series* series = published_.load(std::memory_order_acquire);
  if (series == nullptr) return;
  series->requests[static_cast<size_t>(seen.outcome)]->Increment();
  if (seen.outcome == RelayOutcome::kRelayed) {
    series->upstream_seconds->Observe(std::chrono::duration<double>(seen.upstream_time).count());
  }
}

}  // namespace mizarmp::relay
