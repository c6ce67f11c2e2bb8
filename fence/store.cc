// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/store.h"

namespace mizarmp::fence {

std::string_view FenceStateName(FenceState state) {
  return state == FenceState::kEnforced ? "enforced" : "pending";
}

StoreCounts CountStore(const StoreSnapshot& snapshot) {
  StoreCounts counts;
  for (const FenceEntry& e : snapshot.fences) {
    ++(e.state == FenceState::kPending ? counts.fences_pending : counts.fences_enforced);
  }
  counts.unfences_pending = snapshot.unfences.size();
  return counts;
}

}  // namespace mizarmp::fence
