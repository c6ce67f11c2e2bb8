// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Test hooks of the key rotation: a seam through which a test build watches or interrupts a
// rotation and makes new keyslots cheap. Production has none (a null RotationHooks*), and the
// production binary cannot get any: RotationHooksFromEnvironment() has two definitions in two
// libraries, and only test builds link the one that reads the environment.
//
//   mizarmp_keyrotation_hooks_none  (hooks_none.cc)  returns null whatever the environment holds;
//                                                    mizarmp-addons links it.
//   mizarmp_keyrotation_hooks_env   (hooks_env.cc)   reads the variables below; only
//                                                    mizarmp-addons-testhooks and tests link it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "keyrotation/luks.h"
#include "keyrotation/step.h"

namespace mizarmp::keyrotation {

// MIZARMP_KEYROT_CRASH_AFTER=<step name or 1..6>: SIGKILL the process right after that step.
inline constexpr const char* kCrashAfterEnv = "MIZARMP_KEYROT_CRASH_AFTER";
// MIZARMP_KEYROT_TEST_PBKDF2_ITERATIONS=<n>: new keyslots use PBKDF2-SHA256 with n iterations.
inline constexpr const char* kTestPbkdfEnv = "MIZARMP_KEYROT_TEST_PBKDF2_ITERATIONS";

class RotationHooks {
 public:
  virtual ~RotationHooks() = default;

  // Called right after each durable step of a rotation or a recovery of `volume_id` (the step
  // is on disk); may block (to hold a rotation open) or end the process (to simulate a crash).
  virtual void AfterStep(Step, const std::string& /*volume_id*/) {}

  // The PBKDF new keyslots use instead of the rotator's own; nullopt keeps the rotator's.
  virtual std::optional<PbkdfOptions> NewKeyslotPbkdf() const { return std::nullopt; }
};

// The hooks the environment asks for (see the top of this file for which definition a binary
// has). INVALID_ARGUMENT naming the variable when a value is malformed.
Result<std::unique_ptr<RotationHooks>> RotationHooksFromEnvironment();

}  // namespace mizarmp::keyrotation
