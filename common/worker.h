// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The one way a component runs a background loop: a thread that takes turns until Stop. Each
// turn returns how long to pause before the next; Wake ends a pause at once (the next turn
// starts right away), Stop ends it and joins the thread. Start and Stop come from one thread,
// the component's owner; Wake may come from any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <thread>

#include "common/mutex.h"

namespace mizarmp {

class Worker {
 public:
  // One turn of the loop; returns the pause before the next.
  using Turn = std::function<std::chrono::milliseconds()>;

  Worker() = default;
  ~Worker() { Stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts the thread: `turn` after `first_pause` (a Wake or Stop ends it early), then after
  // each pause it returns, until Stop. Nothing when the loop runs already.
  void Start(Turn turn, std::chrono::milliseconds first_pause = {}) MZ_EXCLUDES(mu_);
  // Whether Start ran and Stop has not.
  bool running() const MZ_EXCLUDES(mu_);
  // Ends the pause the loop is in, or the next one if a turn is running.
  void Wake() MZ_EXCLUDES(mu_);
  // Ends the loop (a turn running finishes first) and joins its thread. Idempotent.
  void Stop() MZ_EXCLUDES(mu_);
  // For a wait inside a turn (a retry's pause): true at once when Stop is asked, false after
  // `pause`. A Wake does not end it.
  bool StoppedWithin(std::chrono::milliseconds pause) MZ_EXCLUDES(mu_);

 private:
  void Run(const Turn& turn, std::chrono::milliseconds first_pause) MZ_EXCLUDES(mu_);

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ MZ_GUARDED_BY(mu_) = false;
  bool woken_ MZ_GUARDED_BY(mu_) = false;
  bool running_ MZ_GUARDED_BY(mu_) = false;
  std::thread thread_;  // the owner's thread starts and joins it
};

}  // namespace mizarmp
