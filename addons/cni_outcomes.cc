// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/cni_outcomes.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <utility>

#include "addons/metrics.h"

namespace mizarmp::addons {

namespace {

constexpr std::array<const char*, 5> kCommands = {"ADD", "DEL", "CHECK", "GC", "STATUS"};

}  // namespace

struct CniOutcomesComponent::Series {
  std::shared_ptr<prometheus::Registry> registry;  // keeps the families below alive
  prometheus::Family<prometheus::Counter>* commands = nullptr;
  prometheus::Family<prometheus::Counter>* errors = nullptr;
  prometheus::Family<prometheus::Histogram>* seconds = nullptr;
  prometheus::Counter* bad_lines = nullptr;
};

CniOutcomesComponent::CniOutcomesComponent(std::string log_path,
                                           std::chrono::milliseconds interval)
    : interval_(interval), reader_(std::move(log_path)) {
  // At construction rather than in Start(): a command that ends while the server starts is
  // then counted, not skipped as history.
  MutexLock lock(read_mu_);
  reader_.SkipExisting();
}

CniOutcomesComponent::~CniOutcomesComponent() { Stop(); }

void CniOutcomesComponent::RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) {
  auto series = std::make_unique<Series>();
  series->registry = registry;
  series->commands = &prometheus::BuildCounter()
                          .Name("mizarmp_cni_commands_total")
                          .Help("CNI commands the node's plugin ran, by command and result "
                                "(success or error)")
                          .Register(*registry);
  series->errors = &prometheus::BuildCounter()
                        .Name("mizarmp_cni_command_errors_total")
                        .Help("CNI commands the node's plugin failed, by command and CNI error "
                              "code")
                        .Register(*registry);
  series->seconds = &prometheus::BuildHistogram()
                         .Name("mizarmp_cni_command_duration_seconds")
                         .Help("Time the node's plugin took for a command, as it measured it")
                         .Register(*registry);
  series->bad_lines = &prometheus::BuildCounter()
                           .Name("mizarmp_cni_outcome_log_bad_lines_total")
                           .Help("Lines of the plugin's outcome log that did not parse (skipped)")
                           .Register(*registry)
                           .Add({});
  // Every command and result from the start, so an error rate is 0 rather than absent.
  for (const char* command : kCommands) {
    series->commands->Add({{"command", command}, {"result", "success"}});
    series->commands->Add({{"command", command}, {"result", "error"}});
    series->seconds->Add({{"command", command}}, LatencyBuckets());
  }
  series_ = std::move(series);
}

void CniOutcomesComponent::Start() {
  loop_.Start(
      [this] {
        ReadNow();
        return interval_;
      },
      interval_);
}

void CniOutcomesComponent::Stop() { loop_.Stop(); }

void CniOutcomesComponent::ReadNow() {
  if (series_ == nullptr) return;
  const Series& s = *series_;
  MutexLock lock(read_mu_);
  const CniOutcomeLogReader::Counts counts = reader_.ReadNew([&s](const CniOutcome& outcome) {
    const bool ok = outcome.code == 0;
    s.commands->Add({{"command", outcome.command}, {"result", ok ? "success" : "error"}})
        .Increment();
    if (!ok) {
      s.errors->Add({{"command", outcome.command}, {"code", std::to_string(outcome.code)}})
          .Increment();
    }
    s.seconds->Add({{"command", outcome.command}}, LatencyBuckets())
        .Observe(static_cast<double>(outcome.micros) / 1e6);
  });
  if (counts.bad_lines > 0) s.bad_lines->Increment(static_cast<double>(counts.bad_lines));
}

}  // namespace mizarmp::addons
