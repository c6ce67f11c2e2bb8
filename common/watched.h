// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A value that threads wait on for its next change: each Set() makes a new version and wakes
// every waiter at once. Waiters hold the value through a shared pointer, so one value serves
// any number of them without a copy each (the fence set a controller pushes to every node
// agent's stream, fence/service/publication_service.h). Close() wakes every waiter for good.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <utility>

#include "common/mutex.h"

namespace mizarmp {

template <typename T>
class Watched {
 public:
  struct Version {
    uint64_t number = 0;            // 0: nothing was set yet
    std::shared_ptr<const T> value;  // null while number is 0
  };

  void Set(T value) MZ_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      latest_ = Version{latest_.number + 1, std::make_shared<const T>(std::move(value))};
    }
    changed_.notify_all();
  }

  Version Get() const MZ_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return latest_;
  }

  // The latest version once its number passes `seen`, or at `timeout`, or once closed,
  // whichever comes first.
  template <class Rep, class Period>
  Version WaitPast(uint64_t seen, const std::chrono::duration<Rep, Period>& timeout) const
      MZ_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    lock.WaitFor(changed_, timeout,
                 [&]() MZ_REQUIRES(mu_) { return closed_ || latest_.number > seen; });
    return latest_;
  }

  void Close() MZ_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      closed_ = true;
    }
    changed_.notify_all();
  }

  bool closed() const MZ_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return closed_;
  }

 private:
  mutable Mutex mu_;
  mutable std::condition_variable changed_;
  Version latest_ MZ_GUARDED_BY(mu_);
  bool closed_ MZ_GUARDED_BY(mu_) = false;
};

}  // namespace mizarmp
