// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The six durable steps of a key rotation (keyrotation/rotator.h), by number and by name. The
// names are what logs print and what the test hook MIZARMP_KEYROT_CRASH_AFTER takes.
#pragma once

#include <string_view>

#include "common/status.h"

namespace mizarmp::keyrotation {

enum class Step {
  kPendingRecorded = 1,
  kKeyslotAdded = 2,
  kVerified = 3,
  kPromoted = 4,
  kOldKeyslotDestroyed = 5,
  kOldKeyDropped = 6,
};
inline constexpr Step kAllSteps[] = {
    Step::kPendingRecorded, Step::kKeyslotAdded,        Step::kVerified,
    Step::kPromoted,        Step::kOldKeyslotDestroyed, Step::kOldKeyDropped};

// "pending-recorded", "keyslot-added", ... (see rotator.h).
std::string_view StepName(Step step);

// Accepts the names above or the step numbers "1".."6". INVALID_ARGUMENT otherwise.
Result<Step> ParseStep(std::string_view text);

}  // namespace mizarmp::keyrotation
