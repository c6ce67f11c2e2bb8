// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Whether Mizar-MP answers and holds the configured subnet: the readiness check that each part
// of mizarmp-addons calling Mizar-MP (the FenceController, the node's relay) owns and reports to
// Identity's Probe under the dependency name kMizarMpDependency. The framework itself (addons/)
// knows no Mizar-MP.
//
// A Probe must answer quickly and may come in storms, so Check() makes one attempt with short
// timeouts, lets one caller at a time make it, and keeps the result for `cache_ttl`: at most one
// REST call per TTL, however many ask.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "mizarmp-client/client.h"

namespace mizarmp::client {

// How Probe, the log and the metric label mizarmp_addons_dependency_ready{dependency} name it.
inline constexpr const char* kMizarMpDependency = "Mizar-MP";

struct MizarMpCheckOptions {
  ClientConfig mizarmp;  // an empty base_url: nothing to check (enabled() is false)
  std::string subnet_id = kDefaultSubnetId;
  std::chrono::milliseconds timeout{1000};  // of the one attempt, connecting included
  std::chrono::milliseconds cache_ttl{1000};
};

class MizarMpCheck {
 public:
  explicit MizarMpCheck(MizarMpCheckOptions options);

  // Whether there is a Mizar-MP to check: its owner reports the check only then.
  bool enabled() const { return !options_.mizarmp.base_url.empty(); }

  // OK when GET of the subnet succeeds; otherwise FAILED_PRECONDITION whose message names
  // Mizar-MP and its URL (userinfo redacted) first, "Mizar-MP at URL ...", and says whether it
  // is unreachable, failing or lacks the subnet. Blocks at most `timeout` (plus the wait for another caller's attempt).
  Status Check() MZ_EXCLUDES(mu_);

  // For tests: REST calls made so far, which shows whether the cache works.
  uint64_t calls() const MZ_EXCLUDES(mu_);

 private:
  Status Call() MZ_REQUIRES(mu_);
  std::string Where() const;

  const MizarMpCheckOptions options_;
  mutable Mutex mu_;
  std::unique_ptr<Client> client_ MZ_GUARDED_BY(mu_);
  Status client_error_ MZ_GUARDED_BY(mu_);  // why client_ could not be made
  std::optional<Status> cached_ MZ_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point cached_at_ MZ_GUARDED_BY(mu_);
  uint64_t calls_ MZ_GUARDED_BY(mu_) = 0;
};

}  // namespace mizarmp::client
