// Benchmark helpers: order statistics and durations. Running programs (a CNI plugin exec'd as
// a runtime does, servers, netns) is the tests' own support code (tests/support/process.h),
// named here so the drivers read as before.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "tests/support/process.h"

namespace mizarmp::bench {

using Clock = std::chrono::steady_clock;

using testing::Daemon;
using testing::Exec;
using testing::ExecResult;
using testing::Run;
using testing::Shell;
using testing::UniqueName;
using testing::WaitForFile;
using Netns = testing::ScopedNetns;

struct Stats {
  size_t n = 0;
  double min = 0, median = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles of the samples.
Stats Summarize(std::vector<double> samples);

double Ms(Clock::duration d);

}  // namespace mizarmp::bench
