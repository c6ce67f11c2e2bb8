// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The step that applies an enforcement plan (fence/plan.h) at Mizar-MP.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"
#include "fence/connections.h"
#include "fence/plan.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

// What one enforcement pass did.
struct EnforceReport {
  int disabled = 0;            // ports set admin_state_up=false
  int enabled = 0;             // ports set admin_state_up=true
  int failed = 0;              // port updates that failed
  std::vector<Cidr> enforced;  // fences completely enforced by this pass
  std::vector<Cidr> unfenced;  // pending unfences completed by this pass
  int64_t store_revision = 0;  // the fence store's revision the pass planned from
  // The store's counts as a pass that succeeded left it (its snapshot and what it completed).
  std::optional<StoreCounts> store_after;
};

// What applying a plan did, and what it leaves for the store and the caller's error.
struct AppliedPlan {
  EnforceReport report;
  std::vector<Cidr> newly_enforced;  // of report.enforced, the fences stored as pending
  Status first_error;                // the first failed update's error; OK if none failed
  std::vector<std::string> left;     // per failed update: "<port label> to disable|re-enable"
  // Ports to drop from the records: the plan's released ones, those re-enabled, those gone.
  std::vector<std::string> released;
  std::vector<size_t> made;  // indexes into the plan's changes of those Mizar-MP accepted
};

// Makes every change of `plan` at Mizar-MP (one port update each) and logs each change made. The
// caller records plan.holds first. A port deleted meanwhile (NOT_FOUND) needs nothing more; any
// other failure leaves what depends on that change incomplete (CompletedBy).
// Mizar-MP has no bulk update, so the updates go out in parallel over `connections.count`
// kept-alive connections, each taking the next change not yet taken; the result is assembled in
// the plan's order afterwards, so it is the same whatever the count (1: one after another, on the
// calling thread). A connection that cannot be made leaves its share to the others; with none
// at all, every change is left, failed with that error.
// `may_act` (thread-safe) is asked before each update: once it says no (this replica stopped
// leading), the remaining changes are left, failed with UNAVAILABLE, for the next leader's pass.
AppliedPlan ApplyPlan(const PassConnections& connections, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act);

// The same over one connection.
AppliedPlan ApplyPlan(client::Client& mp, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act);

}  // namespace mizarmp::fence
