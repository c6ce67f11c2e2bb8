// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// How the options tests check a refusal: what Validate() answers must be INVALID_ARGUMENT and
// name what the user set (the configuration key, and the value when it has one).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace mizarmp::testing {

template <typename Options>
void ExpectRefused(const Options& options, const std::string& needle) {
  const Status s = options.Validate();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "error \"" << s.message() << "\" does not name \"" << needle << "\"";
}

}  // namespace mizarmp::testing
