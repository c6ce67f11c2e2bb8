#include "fence/enforcer.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>

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

// The changes of one pass, shared by the connections making them: each takes the next change not
// yet taken and writes only that change's result, so nothing is shared while they run but the
// index.
class SharedChanges {
 public:
  SharedChanges(const EnforcementPlan& plan, const std::function<bool()>& may_act)
      : plan_(plan), may_act_(may_act), results_(plan.changes.size()) {}

  // Makes changes over `mp` until none is left to take.
  void Drain(client::Client& mp) {
    for (size_t i = next_.fetch_add(1); i < results_.size(); i = next_.fetch_add(1)) {
      if (!may_act_()) {
        results_[i] = {Outcome::kFailed,
                       UnavailableError("this replica stopped leading before the update")};
        continue;
      }
      results_[i] = ApplyChange(mp, plan_.changes[i]);
    }
  }

  // After every connection is done: what nobody could try (no connection was made) fails with
  // `why`.
  std::vector<ChangeResult> TakeResults(const Status& why) {
    for (ChangeResult& r : results_) {
      if (r.outcome == Outcome::kNotTried) r = {Outcome::kFailed, why};
    }
    return std::move(results_);
  }

 private:
  const EnforcementPlan& plan_;
  const std::function<bool()>& may_act_;
  std::atomic<size_t> next_{0};
  std::vector<ChangeResult> results_;
};

// One more connection on a thread of its own, logging under the caller's request id. A client
// that cannot be made leaves its share to the other connections; `error` says why.
void DrainOnNewConnection(SharedChanges& changes, const ClientFactory& make,
                          const std::string& log_context, Status& error) {
  log::SetThreadContext(log_context);
  auto mp = make();
  if (!mp.ok()) {
    error = mp.status();
    MZ_LOG(kWarn) << "fence: one Mizar-MP connection fewer for the port updates: "
                  << error.ToString();
    return;
  }
  changes.Drain(**mp);
}

// Runs the connections: `first` on this thread, the others on threads of their own.
std::vector<ChangeResult> MakeChanges(const UpdateConnections& connections,
                                      const EnforcementPlan& plan,
                                      const std::function<bool()>& may_act) {
  SharedChanges changes(plan, may_act);
  const size_t wanted =
      std::min(static_cast<size_t>(std::max(connections.count, 1)), plan.changes.size());
  const size_t on_threads = connections.first != nullptr && wanted > 0 ? wanted - 1 : wanted;
  std::vector<Status> errors(on_threads);
  std::vector<std::thread> threads;
  threads.reserve(on_threads);
  const std::string log_context = log::ThreadContext();
  for (size_t t = 0; t < on_threads && connections.more; ++t) {
    try {
      threads.emplace_back(DrainOnNewConnection, std::ref(changes), std::cref(connections.more),
                           std::cref(log_context), std::ref(errors[t]));
    } catch (const std::system_error& e) {  // out of threads: the connections made do it all
      errors[t] =
          Status(Code::kResourceExhausted, std::string("no thread for a connection: ") + e.what());
      MZ_LOG(kWarn) << "fence: " << errors[t].message();
      break;
    }
  }
  if (connections.first != nullptr) changes.Drain(*connections.first);
  for (std::thread& t : threads) t.join();
  Status none = FailedPreconditionError("no connection to Mizar-MP could be made");
  for (const Status& e : errors) {
    if (!e.ok()) none = e.WithContext("no connection to Mizar-MP could be made");
  }
  return changes.TakeResults(none);
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

AppliedPlan ApplyPlan(const UpdateConnections& connections, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act) {
  return Assemble(plan, MakeChanges(connections, plan, may_act));
}

AppliedPlan ApplyPlan(client::Client& mp, const EnforcementPlan& plan,
                      const std::function<bool()>& may_act) {
  return ApplyPlan(UpdateConnections{.first = &mp, .more = nullptr, .count = 1}, plan, may_act);
}

}  // namespace mizarmp::fence
