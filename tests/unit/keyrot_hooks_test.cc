// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// keyrotation/hooks_env.cc: the test hooks test builds read from the environment (the crash
// after a named step, cheap PBKDF2 for new keyslots) and their refusal of malformed values.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "keyrotation/hooks.h"
#include "tests/support/support.h"

namespace mizarmp::keyrotation {
namespace {

// Sets an environment variable for the scope of a test and restores the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(KeyRotHooksEnv, NothingSetChangesNothing) {
  ScopedEnv crash(kCrashAfterEnv, "");
  ScopedEnv pbkdf(kTestPbkdfEnv, "");
  auto hooks = RotationHooksFromEnvironment();
  ASSERT_TRUE(hooks.ok()) << hooks.status().ToString();
  if (*hooks == nullptr) return;  // no hooks at all is just as good
  EXPECT_FALSE((*hooks)->NewKeyslotPbkdf().has_value());
  for (Step step : kAllSteps) (*hooks)->AfterStep(step, "vol");  // returns: no crash
}

TEST(KeyRotHooksEnv, CheapPbkdf2ForNewKeyslots) {
  ScopedEnv pbkdf(kTestPbkdfEnv, "4321");
  auto hooks = RotationHooksFromEnvironment();
  ASSERT_TRUE(hooks.ok()) << hooks.status().ToString();
  ASSERT_NE(*hooks, nullptr);
  const std::optional<PbkdfOptions> got = (*hooks)->NewKeyslotPbkdf();
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->use_defaults);
  EXPECT_EQ(got->pbkdf2_iterations, 4321u);
}

TEST(KeyRotHooksEnv, MalformedValuesAreInvalidArgument) {
  for (const std::string value : {"abc", "12x", "999", "100000001", "-5"}) {
    ScopedEnv pbkdf(kTestPbkdfEnv, value);
    auto hooks = RotationHooksFromEnvironment();
    EXPECT_EQ(hooks.status().code(), Code::kInvalidArgument) << value;
    EXPECT_EQ(hooks.status().message(),
              std::string(kTestPbkdfEnv) + ": want an integer >= 1000, got \"" + value + "\"");
  }
  ScopedEnv crash(kCrashAfterEnv, "bogus-step");
  auto hooks = RotationHooksFromEnvironment();
  EXPECT_EQ(hooks.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(
      hooks.status().message().rfind(std::string(kCrashAfterEnv) + ": unknown rotation step", 0),
      0u)
      << hooks.status().message();
}

// The crash hook SIGKILLs the process right after the named step (by name or by number) and
// only then.
TEST(KeyRotHooksEnvDeathTest, CrashAfterTheNamedStep) {
  for (const std::string& value : {std::string("verified"), std::string("3")}) {
    ScopedEnv crash(kCrashAfterEnv, value);
    auto hooks = RotationHooksFromEnvironment();
    ASSERT_TRUE(hooks.ok()) << hooks.status().ToString();
    ASSERT_NE(*hooks, nullptr);
    (*hooks)->AfterStep(Step::kKeyslotAdded, "vol");  // another step: returns
    (*hooks)->AfterStep(Step::kPromoted, "vol");
    EXPECT_EXIT((*hooks)->AfterStep(Step::kVerified, "vol"), ::testing::KilledBySignal(SIGKILL), "")
        << value;
  }
}

}  // namespace
}  // namespace mizarmp::keyrotation
