#include "fence/plan.h"

#include <algorithm>
#include <map>
#include <optional>

#include "common/log.h"
#include "fence/cidrset.h"

namespace mizarmp::fence {
namespace {

// How logs and errors name a port: "port <id> (<fixed IPs>)".
std::string PortLabel(const client::Port& port, const std::vector<IpAddress>& ips) {
  std::string label = "port " + port.id;
  if (!ips.empty()) {
    std::vector<std::string> texts;
    for (const auto& ip : ips) texts.push_back(ip.ToString());
    label += " (" + Joined(texts, " ") + ")";
  }
  return label;
}

// The addresses among `ips` that a member of `set` contains.
std::vector<IpAddress> Inside(const CidrSet& set, const std::vector<IpAddress>& ips) {
  std::vector<IpAddress> out;
  for (const auto& ip : ips) {
    if (set.Contains(ip)) out.push_back(ip);
  }
  return out;
}

// Adds to `out` every member of `set` that contains one of `ips`.
void AddCovering(const CidrSet& set, const std::vector<IpAddress>& ips, CidrSet& out) {
  for (const Cidr& c : set.cidrs()) {
    if (std::any_of(ips.begin(), ips.end(), [&](const IpAddress& ip) { return c.Contains(ip); })) {
      out.Add(c);
    }
  }
}

// The stored fences and pending unfences as sets, for the containment tests.
struct Targets {
  CidrSet fenced;
  CidrSet unfencing;
};

// The change `port` needs, if any.
std::optional<PortChange> PlanPort(const client::Port& port, const Targets& targets) {
  const std::vector<IpAddress> ips = PortIps(port);
  if (ips.empty()) return std::nullopt;
  const std::vector<IpAddress> in_fence = Inside(targets.fenced, ips);
  const std::vector<IpAddress> in_unfence = Inside(targets.unfencing, ips);
  if (in_fence.empty() && in_unfence.empty()) return std::nullopt;
  const bool want_up = in_fence.empty();  // a remaining fence wins over an unfence
  if (port.admin_state_up == want_up) return std::nullopt;

  CidrSet serves;
  AddCovering(targets.fenced, want_up ? in_unfence : in_fence, serves);
  AddCovering(targets.unfencing, in_unfence, serves);
  PortChange change;
  change.port_id = port.id;
  change.label = PortLabel(port, ips);
  change.host_id = port.host_id;
  change.admin_state_up = want_up;
  change.serves = serves.cidrs();
  return change;
}

}  // namespace

std::vector<IpAddress> PortIps(const client::Port& port) {
  std::vector<IpAddress> out;
  for (const auto& f : port.fixed_ips) {
    auto ip = IpAddress::Parse(f.ip_address);
    if (ip.ok()) {
      out.push_back(*ip);
    } else {
      MZ_LOG(kDebug) << "port " << port.id << ": ignoring fixed IP \"" << f.ip_address << "\"";
    }
  }
  return out;
}

EnforcementPlan PlanEnforcement(const StoreSnapshot& snapshot,
                                const std::vector<client::Port>& ports) {
  Targets targets;
  for (const auto& e : snapshot.fences) targets.fenced.Add(e.cidr);
  for (const auto& c : snapshot.unfences) targets.unfencing.Add(c);

  EnforcementPlan plan;
  // Canonical CIDR -> the changes serving it.
  std::map<std::string, std::vector<size_t>> served_by;
  for (const client::Port& port : ports) {
    std::optional<PortChange> change = PlanPort(port, targets);
    if (!change) continue;
    for (const Cidr& c : change->serves) served_by[CanonicalCidr(c)].push_back(plan.changes.size());
    plan.changes.push_back(std::move(*change));
  }
  auto depends_on = [&](const Cidr& c) {
    auto it = served_by.find(CanonicalCidr(c));
    return it == served_by.end() ? std::vector<size_t>() : it->second;
  };
  for (const auto& e : snapshot.fences)
    plan.fences.push_back({e.cidr, e.state, depends_on(e.cidr)});
  for (const auto& c : snapshot.unfences) plan.unfences.push_back({c, depends_on(c)});
  return plan;
}

Completion CompletedBy(const EnforcementPlan& plan, const std::vector<bool>& failed) {
  auto complete = [&](const std::vector<size_t>& depends_on) {
    return std::none_of(depends_on.begin(), depends_on.end(),
                        [&](size_t i) { return i < failed.size() && failed[i]; });
  };
  Completion out;
  for (const PlannedFence& f : plan.fences) {
    if (!complete(f.depends_on)) continue;
    out.enforced.push_back(f.cidr);
    // Only pending fences change state; the enforced ones stay enforced.
    if (f.state == FenceState::kPending) out.newly_enforced.push_back(f.cidr);
  }
  for (const PlannedUnfence& u : plan.unfences) {
    if (complete(u.depends_on)) out.unfenced.push_back(u.cidr);
  }
  return out;
}

}  // namespace mizarmp::fence
