// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/step.h"

#include <string>
#include <vector>

namespace mizarmp::keyrotation {

std::string_view StepName(Step step) {
  switch (step) {
    case Step::kPendingRecorded:
      return "pending-recorded";
    case Step::kKeyslotAdded:
      return "keyslot-added";
    case Step::kVerified:
      return "verified";
    case Step::kPromoted:
      return "promoted";
    case Step::kOldKeyslotDestroyed:
      return "old-keyslot-destroyed";
    case Step::kOldKeyDropped:
      return "old-key-dropped";
  }
  return "unknown";
}

Result<Step> ParseStep(std::string_view text) {
  std::vector<std::string_view> names;
  for (Step s : kAllSteps) {
    if (text == StepName(s) || text == std::to_string(static_cast<int>(s))) return s;
    names.push_back(StepName(s));
  }
  return InvalidArgumentError("unknown rotation step " + Quoted(text) + " (want " +
                              Joined(names, ", ") + " or 1..6)");
}

}  // namespace mizarmp::keyrotation
