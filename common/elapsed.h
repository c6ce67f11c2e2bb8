// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// How long ago a steady-clock time point was, in whole milliseconds: what logs and error messages
// report of a call or a wait.
#pragma once

#include <chrono>
#include <cstdint>

namespace mizarmp {

inline int64_t ElapsedMs(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

}  // namespace mizarmp
