// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
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

// Every member of `set` containing one of `ips`, sorted and unique (O(log n) per address).
std::vector<Cidr> Covering(const CidrSet& set, const std::vector<IpAddress>& ips) {
  std::vector<Cidr> out;
  for (const auto& ip : ips) {
    for (const Cidr& c : set.Covering(ip)) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Port id -> the CIDRs whose records name it.
using Holders = std::map<std::string, std::vector<Cidr>>;

const std::vector<Cidr>& HoldersOf(const Holders& holders, const std::string& port_id) {
  static const std::vector<Cidr> kNone;
  auto it = holders.find(port_id);
  return it == holders.end() ? kNone : it->second;
}

std::vector<Cidr> Union(std::vector<Cidr> a, const std::vector<Cidr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return CidrSet(std::move(a)).cidrs();
}

// The stored fences and pending unfences as sets and records, for the lookups of each port.
struct Targets {
  CidrSet fenced;
  CidrSet unfencing;
  CidrSet untracked_fences;    // fences without a record
  CidrSet untracked_unfences;  // pending unfences without a record
  Holders fence_holders;       // port id -> the fences whose record names it
  Holders unfence_holders;     // port id -> the pending unfences whose record names it
};

Targets TargetsOf(const StoreSnapshot& snapshot) {
  Targets t;
  std::vector<Cidr> fenced, unfencing, untracked_fences, untracked_unfences;
  for (const auto& e : snapshot.fences) {
    fenced.push_back(e.cidr);
    if (!e.tracked) untracked_fences.push_back(e.cidr);
    for (const auto& id : e.held_ports) t.fence_holders[id].push_back(e.cidr);
  }
  for (const auto& u : snapshot.unfences) {
    unfencing.push_back(u.cidr);
    if (!u.tracked) untracked_unfences.push_back(u.cidr);
    for (const auto& id : u.held_ports) t.unfence_holders[id].push_back(u.cidr);
  }
  t.fenced = CidrSet(std::move(fenced));
  t.unfencing = CidrSet(std::move(unfencing));
  t.untracked_fences = CidrSet(std::move(untracked_fences));
  t.untracked_unfences = CidrSet(std::move(untracked_unfences));
  return t;
}

// What the stores say about one port.
struct PortFacts {
  std::vector<IpAddress> ips;
  std::vector<Cidr> in_fences;              // fences containing one of its IPs
  std::vector<Cidr> in_unfences;            // pending unfences containing one of its IPs
  std::vector<Cidr> fence_holds;            // fences whose record names it
  std::vector<Cidr> unfence_holds;          // pending unfences whose record names it
  bool in_untracked_fence = false;          // a fence without a record contains it
  std::vector<Cidr> in_untracked_unfences;  // pending unfences without a record containing it
};

PortFacts FactsOf(const client::Port& port, const Targets& t) {
  PortFacts f;
  f.ips = PortIps(port);
  f.in_fences = Covering(t.fenced, f.ips);
  f.in_unfences = Covering(t.unfencing, f.ips);
  f.fence_holds = HoldersOf(t.fence_holders, port.id);
  f.unfence_holds = HoldersOf(t.unfence_holders, port.id);
  f.in_untracked_fence = !Covering(t.untracked_fences, f.ips).empty();
  f.in_untracked_unfences = Covering(t.untracked_unfences, f.ips);
  return f;
}

PortChange ChangeOf(const client::Port& port, const PortFacts& f, bool up,
                    std::vector<Cidr> serves) {
  PortChange change;
  change.port_id = port.id;
  change.label = PortLabel(port, f.ips);
  change.host_id = port.host_id;
  change.admin_state_up = up;
  change.serves = std::move(serves);
  return change;
}

// A port inside a fence: disabled and held, or (already down) held when the fence service holds
// it down, left alone when something else does.
std::optional<PortChange> PlanFencedPort(const client::Port& port, const PortFacts& f,
                                         EnforcementPlan& plan) {
  const bool ours = !f.fence_holds.empty() || !f.unfence_holds.empty() || f.in_untracked_fence ||
                    !f.in_untracked_unfences.empty();
  if (!port.admin_state_up && !ours) return std::nullopt;  // down for another reason
  for (const Cidr& c : f.in_fences) {
    if (std::find(f.fence_holds.begin(), f.fence_holds.end(), c) == f.fence_holds.end()) {
      plan.holds.push_back({c, port.id});
    }
  }
  if (!port.admin_state_up) return std::nullopt;
  return ChangeOf(port, f, false, Union(Union(f.in_fences, f.in_unfences), f.unfence_holds));
}

// A port inside no fence: re-enabled when a lifted fence held it down and no fence still does.
std::optional<PortChange> PlanUnfencedPort(const client::Port& port, const PortFacts& f,
                                           EnforcementPlan& plan) {
  const bool held = !f.fence_holds.empty() || !f.unfence_holds.empty();
  if (port.admin_state_up) {
    if (held) plan.released.push_back(port.id);  // up again: no record should keep it
    return std::nullopt;
  }
  if (!f.fence_holds.empty()) return std::nullopt;  // a standing fence holds it (moved address)
  // A lifted fence without a record (an older store) re-enables every down port inside it.
  std::vector<Cidr> lifted = Union(f.unfence_holds, f.in_untracked_unfences);
  if (lifted.empty()) return std::nullopt;  // down for another reason
  return ChangeOf(port, f, true, std::move(lifted));
}

// The change `port` needs, if any; adds its record entries to `plan`.
std::optional<PortChange> PlanPort(const client::Port& port, const Targets& targets,
                                   EnforcementPlan& plan) {
  const PortFacts f = FactsOf(port, targets);
  if (!f.in_fences.empty()) return PlanFencedPort(port, f, plan);
  return PlanUnfencedPort(port, f, plan);
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
  const Targets targets = TargetsOf(snapshot);
  EnforcementPlan plan;
  // Canonical CIDR -> the changes serving it.
  std::map<std::string, std::vector<size_t>> served_by;
  for (const client::Port& port : ports) {
    // The network's own ports (Alcor's router and gateway interfaces) are never a fence's.
    if (port.network_owned()) continue;
    std::optional<PortChange> change = PlanPort(port, targets, plan);
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
  for (const auto& u : snapshot.unfences) plan.unfences.push_back({u.cidr, depends_on(u.cidr)});
  return plan;
}

EnforcementPlan PlanEnforcement(const StoreSnapshot& snapshot, const client::PortList& list) {
  EnforcementPlan plan = PlanEnforcement(snapshot, list.ports);
  plan.unreadable = list.unreadable;
  return plan;
}

Completion CompletedBy(const EnforcementPlan& plan, const std::vector<bool>& failed) {
  // An unreadable entry may be a port inside any fence: nothing is known to be complete.
  if (!plan.unreadable.empty()) return Completion{};
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
