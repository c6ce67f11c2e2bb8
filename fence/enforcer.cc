// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/enforcer.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/log.h"

namespace mizarmp::fence {
namespace {

// What became of one change.
enum class Outcome : uint8_t { kNotTried, kMade, kGone, kFailed };

struct ChangeResult {
  Outcome outcome = Outcome::kNotTried;
  Status error;  // kFailed: why
};

// Makes one change and logs it; touches nothing shared but the log.
ChangeResult ApplyChange(client::Client& mp, const PortChange& change) {
  const bool up = change.admin_state_up;
  auto updated = mp.UpdatePort(change.port_id, nlohmann::json{{"admin_state_up", up}});
  if (updated.ok()) {
    MZ_LOG(kInfo) << (up ? "re-enabled " : "disabled ") << change.label << " on host "
                  << (change.host_id.empty() ? "?" : change.host_id);
    return {Outcome::kMade, Status::Ok()};
  }
  if (updated.status().IsNotFound()) return {Outcome::kGone, Status::Ok()};  // deleted meanwhile
  return {Outcome::kFailed, updated.status()};
}

// Makes every change over the pass's connections. Each result is written only by the call that
// made its change; a change no connection took fails with why none was made.
std::vector<ChangeResult> MakeChanges(const PassConnections& connections,
                                      const EnforcementPlan& plan,
                                      const std::function<bool()>& may_act) {
  std::vector<ChangeResult> results(plan.changes.size());
  const Status none =
      ForEachOverConnections(connections, results.size(), [&](client::Client& mp, size_t i) {
        results[i] =
            may_act()
                ? ApplyChange(mp, plan.changes[i])
                : ChangeResult{Outcome::kFailed,
                               UnavailableError("this replica stopped leading before the update")};
      });
  for (ChangeResult& r : results) {
    if (r.outcome == Outcome::kNotTried) r = {Outcome::kFailed, none};
  }
  return results;
}

// Counts a change that was not made.
void Leave(const PortChange& change, const Status& why, AppliedPlan& out) {
  ++out.report.failed;
  if (out.first_error.ok()) out.first_error = why;
  out.left.push_back(change.label + (change.admin_state_up ? " to re-enable" : " to disable"));
}

// The pass's outcome from every change's result, in the plan's order.
AppliedPlan Assemble(const EnforcementPlan& plan, const std::vector<ChangeResult>& results) {
  AppliedPlan out;
  out.released = plan.released;
  std::vector<bool> failed(plan.changes.size(), false);
  for (size_t i = 0; i < plan.changes.size(); ++i) {
    const PortChange& change = plan.changes[i];
    switch (results[i].outcome) {
      case Outcome::kMade:
        out.made.push_back(i);
        (change.admin_state_up ? out.report.enabled : out.report.disabled)++;
        if (change.admin_state_up) out.released.push_back(change.port_id);
        break;
      case Outcome::kGone:
        out.released.push_back(change.port_id);  // no record should name it
        break;
      case Outcome::kNotTried:
      case Outcome::kFailed:
        Leave(change, results[i].error, out);
        failed[i] = true;
        break;
    }
  }
  Completion done = CompletedBy(plan, failed);
  out.report.enforced = std::move(done.enforced);
  out.report.unfenced = std::move(done.unfenced);
  out.newly_enforced = std::move(done.newly_enforced);
  return out;
}

}  // namespace

AppliedPlan ApplyPlan(const PassConnections& connections, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act) {
  return Assemble(plan, MakeChanges(connections, plan, may_act));
}

AppliedPlan ApplyPlan(client::Client& mp, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act) {
  return ApplyPlan(PassConnections{.first = &mp, .more = nullptr, .count = 1}, plan, may_act);
}

}  // namespace mizarmp::fence
