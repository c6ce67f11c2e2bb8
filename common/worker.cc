// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/worker.h"

namespace mizarmp {

void Worker::Start(Turn turn, std::chrono::milliseconds first_pause) {
  MutexLock lock(mu_);
  if (running_) return;
  stopping_ = false;
  woken_ = false;
  running_ = true;
  thread_ = std::thread([this, turn = std::move(turn), first_pause] { Run(turn, first_pause); });
}

bool Worker::running() const {
  MutexLock lock(mu_);
  return running_;
}

void Worker::Wake() {
  {
    MutexLock lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Worker::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(mu_);
  running_ = false;
}

bool Worker::StoppedWithin(std::chrono::milliseconds pause) {
  MutexLock lock(mu_);
  return lock.WaitFor(cv_, pause, [this]() MZ_REQUIRES(mu_) { return stopping_; });
}

void Worker::Run(const Turn& turn, std::chrono::milliseconds pause) {
  for (;;) {
    {
      MutexLock lock(mu_);
      lock.WaitFor(cv_, pause, [this]() MZ_REQUIRES(mu_) { return stopping_ || woken_; });
      if (stopping_) return;
      woken_ = false;
    }
    pause = turn();
  }
}

}  // namespace mizarmp
