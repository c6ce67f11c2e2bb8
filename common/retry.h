// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// One rule for trying a call again: only when it failed transiently (Status::IsTransient():
// UNAVAILABLE or DEADLINE_EXCEEDED), only for a call the caller knows is safe to repeat, after a
// fixed pause, and only while another try fits before the caller's deadline. The etcd fence
// store, port index and audit ride out an election or a lost member this way.
#pragma once

#include <chrono>
#include <thread>

#include "common/status.h"

namespace mizarmp {

inline constexpr std::chrono::milliseconds kTransientRetryPause{100};

// The Status of a call's outcome, whichever of the two it returns.
inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

class TransientRetry {
 public:
  explicit TransientRetry(std::chrono::steady_clock::time_point deadline) : deadline_(deadline) {}

  // Whether to try again after `failed`: true, once the pause has passed, when it is transient
  // and the pause leaves time before the deadline; false otherwise, at once.
  bool Again(const Status& failed) const {
    if (!failed.IsTransient() ||
        std::chrono::steady_clock::now() + kTransientRetryPause >= deadline_) {
      return false;
    }
    std::this_thread::sleep_for(kTransientRetryPause);
    return true;
  }

 private:
  const std::chrono::steady_clock::time_point deadline_;
};

// Runs `call` (returning a Status or a Result) again while TransientRetry says so; only for
// calls that are safe to repeat.
template <typename Call>
auto RetryWhileTransient(std::chrono::steady_clock::time_point deadline, Call&& call)
    -> decltype(call()) {
  const TransientRetry retry(deadline);
  for (;;) {
    auto outcome = call();
    if (outcome.ok() || !retry.Again(StatusOf(outcome))) return outcome;
  }
}

}  // namespace mizarmp
