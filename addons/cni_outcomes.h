// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's CNI plugin outcomes on /metrics: node-mode mizarmp-addons follows the outcome log
// the plugin appends to in its state dir (common/cni_outcome_log.h) and counts each command:
//   mizarmp_cni_commands_total{command,result}        result: success | error
//   mizarmp_cni_command_errors_total{command,code}    the CNI error code of each failure
//   mizarmp_cni_command_duration_seconds{command}     histogram, the plugin's own timing
//   mizarmp_cni_outcome_log_bad_lines_total           lines of the log that did not parse
// Only outcomes appended after the server started are counted.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "addons/service.h"
#include "common/cni_outcome_log.h"
#include "common/mutex.h"
#include "common/worker.h"

namespace mizarmp::addons {

class CniOutcomesComponent final : public AddonsComponent {
 public:
  // Follows the log at `log_path`, reading what is new every `interval`.
  explicit CniOutcomesComponent(std::string log_path,
                                std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~CniOutcomesComponent() override;

  void RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) override;
  void Start() override;
  void Stop() override;

  // Reads and counts what the log got since the last read (the background loop's step).
  void ReadNow() MZ_EXCLUDES(read_mu_);

 private:
  struct Series;

  std::chrono::milliseconds interval_;
  Mutex read_mu_;  // one reader at a time: ReadNow may run beside the loop
  CniOutcomeLogReader reader_ MZ_GUARDED_BY(read_mu_);
  std::unique_ptr<Series> series_;  // set once by RegisterMetrics, before Start
  Worker loop_;
};

}  // namespace mizarmp::addons
