// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/random.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace mizarmp {
namespace {

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Seed() {
  uint64_t seed = 0;
  if (::getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == static_cast<ssize_t>(sizeof(seed))) {
    return seed;
  }
  // Early boot without entropy yet: the time and the pid still tell processes apart.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return Mix(static_cast<uint64_t>(now.tv_sec) * 1000000000ULL +
             static_cast<uint64_t>(now.tv_nsec)) ^
         static_cast<uint64_t>(::getpid());
}

}  // namespace

uint64_t UniqueRandom64() {
  static const uint64_t seed = Seed();
  static std::atomic<uint64_t> count{0};
  // Distinct counts give distinct sums (mod 2^64), and Mix is a bijection.
  return Mix(seed + count.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ULL);
}

}  // namespace mizarmp
