// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// keyrotation/hooks_none.cc, what the production mizarmp-addons links: no test hook whatever
// the environment holds, even a malformed value.
#include <gtest/gtest.h>

#include <cstdlib>

#include "keyrotation/hooks.h"
#include "tests/support/support.h"

namespace mizarmp::keyrotation {
namespace {

TEST(KeyRotHooksNone, TheEnvironmentIsIgnored) {
  for (const char* crash : {"verified", "1", "bogus"}) {
    for (const char* pbkdf : {"1000", "x"}) {
      ASSERT_EQ(::setenv(kCrashAfterEnv, crash, 1), 0);
      ASSERT_EQ(::setenv(kTestPbkdfEnv, pbkdf, 1), 0);
      auto hooks = RotationHooksFromEnvironment();
      ASSERT_TRUE(hooks.ok()) << hooks.status().ToString();
      EXPECT_EQ(*hooks, nullptr) << crash << " " << pbkdf;
    }
  }
  ::unsetenv(kCrashAfterEnv);
  ::unsetenv(kTestPbkdfEnv);
}

}  // namespace
}  // namespace mizarmp::keyrotation
