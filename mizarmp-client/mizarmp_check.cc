// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/mizarmp_check.h"

#include <algorithm>
#include <utility>

#include "common/strings.h"

namespace mizarmp::client {
namespace {

// One attempt with short timeouts: a Probe must answer quickly.
ClientConfig CheckClientConfig(const MizarMpCheckOptions& options) {
  ClientConfig config = options.mizarmp;
  config.request_timeout = options.timeout;
  config.connect_timeout = std::min(config.connect_timeout, options.timeout);
  config.max_attempts = 1;
  return config;
}

}  // namespace

MizarMpCheck::MizarMpCheck(MizarMpCheckOptions options) : options_(std::move(options)) {
  if (!enabled()) return;
  auto created = Client::Create(CheckClientConfig(options_));
  MutexLock lock(mu_);
  if (created.ok()) {
    client_ = std::move(created).value();
  } else {
    client_error_ = FailedPreconditionError("Mizar-MP client for " +
                                            RedactUrl(options_.mizarmp.base_url) + ": " +
                                            created.status().message());
  }
}

std::string MizarMpCheck::Where() const {
  return std::string(kMizarMpDependency) + " at " + RedactUrl(options_.mizarmp.base_url);
}

Status MizarMpCheck::Call() {
  ++calls_;
  auto subnet = client_->GetSubnet(options_.subnet_id);
  if (subnet.ok()) return Status::Ok();
  if (subnet.status().IsNotFound()) {
    return FailedPreconditionError(Where() + ": subnet " + options_.subnet_id +
                                   " not found: " + subnet.status().message());
  }
  return FailedPreconditionError(Where() +
                                 " is unreachable or failing: " + subnet.status().ToString());
}

Status MizarMpCheck::Check() {
  if (!enabled()) return Status::Ok();
  MutexLock lock(mu_);
  if (!client_error_.ok()) return client_error_;
  const auto now = std::chrono::steady_clock::now();
  if (cached_ && now - cached_at_ < options_.cache_ttl) return *cached_;
  cached_ = Call();
  // Timed from the end of the call, so a slow answer is not stale at once.
  cached_at_ = std::chrono::steady_clock::now();
  return *cached_;
}

uint64_t MizarMpCheck::calls() const {
  MutexLock lock(mu_);
  return calls_;
}

}  // namespace mizarmp::client
