#include "fence/enforcer.h"

#include <nlohmann/json.hpp>

#include "common/log.h"

namespace mizarmp::fence {
namespace {

// Counts a change that was not made.
void Leave(const PortChange& change, const Status& why, AppliedPlan& out) {
  ++out.report.failed;
  if (out.first_error.ok()) out.first_error = why;
  out.left.push_back(change.label + (change.admin_state_up ? " to re-enable" : " to disable"));
}

// Makes one change; false when it failed (a port deleted meanwhile does not count).
bool ApplyChange(client::Client& mp, const PortChange& change, AppliedPlan& out) {
  const bool up = change.admin_state_up;
  auto updated = mp.UpdatePort(change.port_id, nlohmann::json{{"admin_state_up", up}});
  if (updated.ok()) {
    (up ? out.report.enabled : out.report.disabled)++;
    if (up) out.released.push_back(change.port_id);
    MZ_LOG(kInfo) << (up ? "re-enabled " : "disabled ") << change.label << " on host "
                  << (change.host_id.empty() ? "?" : change.host_id);
    return true;
  }
  if (updated.status().IsNotFound()) {
    out.released.push_back(change.port_id);  // gone: no record should name it
    return true;
  }
  Leave(change, updated.status(), out);
  return false;
}

}  // namespace

AppliedPlan ApplyPlan(client::Client& mp, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act) {
  AppliedPlan out;
  out.released = plan.released;
  std::vector<bool> failed(plan.changes.size(), false);
  for (size_t i = 0; i < plan.changes.size(); ++i) {
    if (!may_act()) {
      Leave(plan.changes[i], UnavailableError("this replica stopped leading before the update"),
            out);
      failed[i] = true;
      continue;
    }
    failed[i] = !ApplyChange(mp, plan.changes[i], out);
  }
  Completion done = CompletedBy(plan, failed);
  out.report.enforced = std::move(done.enforced);
  out.report.unfenced = std::move(done.unfenced);
  out.newly_enforced = std::move(done.newly_enforced);
  return out;
}

}  // namespace mizarmp::fence
