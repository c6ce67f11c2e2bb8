// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A mutex that clang's thread-safety analysis (-Wthread-safety) can follow, its scoped lock, and
// the annotations that say which data a mutex guards.
//
// Why not absl::Mutex: abseil comes with gRPC, but the CNI plugin is a static binary that links
// neither, and tests/layering keeps absl/ to the addons server's main(). This header has only the
// standard library, so every folder can use it. Under g++ the annotations expand to nothing.
//
// Cost: Mutex is a std::mutex and MutexLock a std::unique_lock<std::mutex>; every call is inline
// and forwards to them, and the waits take a plain std::condition_variable (not
// std::condition_variable_any, which locks a mutex of its own per wait).
//
// A predicate given to a wait runs with the mutex held, but the analysis checks a lambda on its
// own: say so on the lambda, e.g. `lock.Wait(cv_, [this]() MZ_REQUIRES(mu_) { return done_; })`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#if defined(__clang__)
#define MZ_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define MZ_THREAD_ANNOTATION_(x)
#endif

// On a type: it is a capability (a lock) the analysis tracks.
#define MZ_CAPABILITY(name) MZ_THREAD_ANNOTATION_(capability(name))
// On a type: an RAII object that holds a capability for its lifetime.
#define MZ_SCOPED_CAPABILITY MZ_THREAD_ANNOTATION_(scoped_lockable)
// On a member or global: read or written only with the mutex held.
#define MZ_GUARDED_BY(mu) MZ_THREAD_ANNOTATION_(guarded_by(mu))
// On a function: its callers hold the mutexes.
#define MZ_REQUIRES(...) MZ_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
// On a function: its callers must not hold the mutexes (it takes them itself).
#define MZ_EXCLUDES(...) MZ_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// On a function: it returns holding the mutexes, which it did not hold on entry.
#define MZ_ACQUIRE(...) MZ_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
// On a function: it returns with the mutexes, held on entry, released.
#define MZ_RELEASE(...) MZ_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
// On a mutex: it is taken before (or after) the named ones whenever both are held.
#define MZ_ACQUIRED_BEFORE(...) MZ_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define MZ_ACQUIRED_AFTER(...) MZ_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))

namespace mizarmp {

// Held only through a MutexLock, so every hold has a scope the analysis can see.
class MZ_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction, except between an Unlock() and the next
// Lock(). The waits release the mutex while they sleep and hold it again when they return.
class MZ_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) MZ_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() MZ_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() MZ_RELEASE() { lock_.unlock(); }
  void Lock() MZ_ACQUIRE() { lock_.lock(); }

  // Returns once `ready` holds.
  template <class Predicate>
  void Wait(std::condition_variable& cv, Predicate ready) {
    cv.wait(lock_, std::move(ready));
  }
  // One wait of at most `timeout`, woken by a notify or spuriously: the caller re-checks.
  template <class Rep, class Period>
  std::cv_status WaitFor(std::condition_variable& cv,
                         const std::chrono::duration<Rep, Period>& timeout) {
    return cv.wait_for(lock_, timeout);
  }
  // Whether `ready` held on return (false: the time ran out first).
  template <class Rep, class Period, class Predicate>
  bool WaitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout,
               Predicate ready) {
    return cv.wait_for(lock_, timeout, std::move(ready));
  }
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline, Predicate ready) {
    return cv.wait_until(lock_, deadline, std::move(ready));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace mizarmp
