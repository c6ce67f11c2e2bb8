// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// RotationHooksFromEnvironment() of test builds: the crash and PBKDF hooks from the variables
// named in hooks.h. Each hook in force is logged as a warning, so a log shows it was a test run.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "common/flags.h"
#include "common/log.h"
#include "keyrotation/hooks.h"

namespace mizarmp::keyrotation {

namespace {

// PBKDF2 iteration counts the hook accepts: low enough to be cheap, never absurd.
constexpr int64_t kMinIterations = 1000;
constexpr int64_t kMaxIterations = 100000000;

class EnvironmentHooks final : public RotationHooks {
 public:
  EnvironmentHooks(std::optional<Step> crash_after, std::optional<PbkdfOptions> pbkdf)
      : crash_after_(crash_after), pbkdf_(pbkdf) {}

  void AfterStep(Step step, const std::string& volume_id) override {
    if (crash_after_ != step) return;
    MZ_LOG(kWarn) << "test hook: SIGKILL after step " << StepName(step) << " of volume "
                  << volume_id;
    ::kill(::getpid(), SIGKILL);
    for (;;) ::pause();  // SIGKILL is on its way; never return into the rotation
  }

  std::optional<PbkdfOptions> NewKeyslotPbkdf() const override { return pbkdf_; }

 private:
  std::optional<Step> crash_after_;
  std::optional<PbkdfOptions> pbkdf_;
};

// The variable's value; nullopt when it is unset or empty.
std::optional<std::string> EnvValue(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

Result<std::optional<Step>> CrashAfterFromEnvironment() {
  const std::optional<std::string> value = EnvValue(kCrashAfterEnv);
  if (!value) return std::optional<Step>();
  auto step = ParseStep(*value);
  if (!step.ok()) return step.status().WithContext(kCrashAfterEnv);
  MZ_LOG(kWarn) << "test hook " << kCrashAfterEnv << ": the process kills itself after step "
                << StepName(*step);
  return std::optional<Step>(*step);
}

Result<std::optional<PbkdfOptions>> PbkdfFromEnvironment() {
  const std::optional<std::string> value = EnvValue(kTestPbkdfEnv);
  if (!value) return std::optional<PbkdfOptions>();
  auto iterations = ParseInt(*value, kMinIterations, kMaxIterations);
  if (!iterations.ok()) {
    return InvalidArgumentError(std::string(kTestPbkdfEnv) + ": want an integer >= " +
                                std::to_string(kMinIterations) + ", got " + Quoted(*value));
  }
  MZ_LOG(kWarn) << "test hook " << kTestPbkdfEnv << ": new keyslots use PBKDF2 with " << *iterations
                << " iterations (weak; tests only)";
  return std::optional<PbkdfOptions>(
      PbkdfOptions::CheapForTests(static_cast<uint32_t>(*iterations)));
}

}  // namespace

Result<std::unique_ptr<RotationHooks>> RotationHooksFromEnvironment() {
  MZ_ASSIGN_OR_RETURN(const std::optional<Step> crash_after, CrashAfterFromEnvironment());
  MZ_ASSIGN_OR_RETURN(const std::optional<PbkdfOptions> pbkdf, PbkdfFromEnvironment());
  return std::unique_ptr<RotationHooks>(std::make_unique<EnvironmentHooks>(crash_after, pbkdf));
}

}  // namespace mizarmp::keyrotation
