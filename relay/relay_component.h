// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's relay as a part of mizarmp-addons (addons::AddonsComponent, Server::Attach):
// Probe fails naming "relay" once its socket is gone, and naming "Mizar-MP" while the controller
// it relays to is unreachable (mizarmp-client/mizarmp_check.h); /metrics counts its requests by
// outcome and times the controller's answers it relays:
//   mizarmp_addons_relay_requests_total{outcome}   (OutcomeName: relayed, other_controller, ...)
//   mizarmp_addons_relay_upstream_duration_seconds (relayed requests: the controller's round trip)
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "addons/service.h"
#include "common/status.h"
#include "mizarmp-client/mizarmp_check.h"
#include "relay/relay.h"

namespace prometheus {
class Counter;
class Histogram;
}  // namespace prometheus

namespace mizarmp::relay {

class RelayComponent final : public addons::AddonsComponent {
 public:
  // Starts the relay (Relay::Start's errors as they are). `options.observer` is replaced by the
  // component's own; requests before RegisterMetrics() are not counted. `mizarmp_check`: the
  // check of the controller Probe reports with the relay's (none without a URL).
  static Result<std::unique_ptr<RelayComponent>> Start(
      RelayOptions options, client::MizarMpCheckOptions mizarmp_check = {});
  ~RelayComponent() override;

  std::vector<addons::ReadinessCheck> readiness_checks() override;
  void RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) override;
  void Stop() override;  // Relay::Stop()

  const Relay& relay() const { return *relay_; }

 private:
  // The series one request updates; made once by RegisterMetrics, then read-only.
  struct Series;
  explicit RelayComponent(client::MizarMpCheckOptions mizarmp_check);
  void Observe(const RelayObservation& seen) const;

  std::unique_ptr<Series> series_;
  std::atomic<const Series*> published_{nullptr};  // series_ once registered
  client::MizarMpCheck mizarmp_check_;
  std::unique_ptr<Relay> relay_;
};

}  // namespace mizarmp::relay
