// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// fence/plan: which port changes an enforcement pass makes and what each fence and pending
// unfence waits for, from a store snapshot and a port list alone (no servers).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "fence/cidrset.h"
#include "fence/plan.h"

namespace mizarmp::fence {
namespace {

Cidr C(const std::string& text) {
  auto c = ParseFenceCidr(text);
  EXPECT_TRUE(c.ok()) << text;
  return c.ok() ? *c : Cidr();
}

std::vector<std::string> Texts(const std::vector<Cidr>& cidrs) {
  std::vector<std::string> out;
  for (const auto& c : cidrs) out.push_back(CanonicalCidr(c));
  return out;
}

client::Port P(const std::string& id, bool up, const std::vector<std::string>& ips,
               const std::string& host = "node-a") {
  client::Port p;
  p.id = id;
  p.admin_state_up = up;
  p.host_id = host;
  for (const auto& ip : ips) p.fixed_ips.push_back({"subnet", ip});
  return p;
}

// A pending unfence whose record names `held`.
UnfenceEntry U(const std::string& cidr, const std::vector<std::string>& held = {}) {
  return {C(cidr), /*tracked=*/true, held};
}

// A pending unfence of an older store: no record.
UnfenceEntry Untracked(const std::string& cidr) { return {C(cidr), /*tracked=*/false, {}}; }

StoreSnapshot Snap(const std::vector<std::pair<std::string, FenceState>>& fences,
                   const std::vector<UnfenceEntry>& unfences = {}) {
  StoreSnapshot s;
  for (const auto& [cidr, state] : fences) {
    FenceEntry e;
    e.cidr = C(cidr);
    e.state = state;
    s.fences.push_back(e);
  }
  s.unfences = unfences;
  return s;
}

// "<fence>=<port id>", one per record entry to add, in order.
std::vector<std::string> Holds(const EnforcementPlan& plan) {
  std::vector<std::string> out;
  for (const auto& h : plan.holds) out.push_back(CanonicalCidr(h.fence) + "=" + h.port_id);
  return out;
}

constexpr FenceState kPending = FenceState::kPending;
constexpr FenceState kEnforced = FenceState::kEnforced;

// "<port id>:up|down", one per change, in order.
std::vector<std::string> Changes(const EnforcementPlan& plan) {
  std::vector<std::string> out;
  for (const auto& c : plan.changes)
    out.push_back(c.port_id + (c.admin_state_up ? ":up" : ":down"));
  return out;
}

TEST(FencePlanTest, FencedPortIsDisabled) {
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.1.0/24", kPending}}),
      {P("a", true, {"10.0.1.5"}), P("b", true, {"10.0.2.5"}, "node-b"), P("c", true, {}, "")});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"a:down"}));
  const PortChange& change = plan.changes[0];
  EXPECT_EQ(change.label, "port a (10.0.1.5)");
  EXPECT_EQ(change.host_id, "node-a");
  EXPECT_EQ(Texts(change.serves), (std::vector<std::string>{"10.0.1.0/24"}));
  ASSERT_EQ(plan.fences.size(), 1u);
  EXPECT_EQ(CanonicalCidr(plan.fences[0].cidr), "10.0.1.0/24");
  EXPECT_EQ(plan.fences[0].state, kPending);
  EXPECT_EQ(plan.fences[0].depends_on, (std::vector<size_t>{0}));
  EXPECT_TRUE(plan.unfences.empty());
}

TEST(FencePlanTest, PortInPendingUnfenceAndNoFenceIsEnabled) {
  const EnforcementPlan plan =
      PlanEnforcement(Snap({}, {U("10.0.1.0/24", {"a"})}),
                      {P("a", false, {"10.0.1.5"}), P("b", false, {"10.0.2.5"}, "node-b")});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"a:up"}));
  EXPECT_EQ(Texts(plan.changes[0].serves), (std::vector<std::string>{"10.0.1.0/24"}));
  ASSERT_EQ(plan.unfences.size(), 1u);
  EXPECT_EQ(CanonicalCidr(plan.unfences[0].cidr), "10.0.1.0/24");
  EXPECT_EQ(plan.unfences[0].depends_on, (std::vector<size_t>{0}));
}

TEST(FencePlanTest, PortsAlreadyInTheirStateNeedNoChange) {
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.1.0/24", kPending}, {"fd00:1::/64", kEnforced}}, {U("10.0.2.0/24", {"b"})}),
      {P("a", false, {"10.0.1.5"}), P("b", true, {"10.0.2.5"}), P("c", false, {"10.0.3.5"}),
       P("d", true, {"10.0.4.5"}), P("e", false, {"10.0.9.9", "fd00:1::9"})});
  EXPECT_TRUE(plan.changes.empty());
  // b is up again: the unfence's record lets it go. a and e were down before any fence.
  EXPECT_EQ(plan.released, (std::vector<std::string>{"b"}));
  EXPECT_TRUE(plan.holds.empty());
  ASSERT_EQ(plan.fences.size(), 2u);
  EXPECT_TRUE(plan.fences[0].depends_on.empty());
  EXPECT_TRUE(plan.fences[1].depends_on.empty());
  ASSERT_EQ(plan.unfences.size(), 1u);
  EXPECT_TRUE(plan.unfences[0].depends_on.empty());
  // Nothing to do: everything is complete; only the pending fence changes state.
  const Completion done = CompletedBy(plan, {});
  EXPECT_EQ(Texts(done.enforced), (std::vector<std::string>{"10.0.1.0/24", "fd00:1::/64"}));
  EXPECT_EQ(Texts(done.newly_enforced), (std::vector<std::string>{"10.0.1.0/24"}));
  EXPECT_EQ(Texts(done.unfenced), (std::vector<std::string>{"10.0.2.0/24"}));
}

TEST(FencePlanTest, PortInAFenceAndAnUnfenceStaysDisabled) {
  // The /24 was lifted while the /25 inside it stays.
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.1.128/25", kEnforced}}, {U("10.0.1.0/24", {"b", "c"})}),
      {P("a", true, {"10.0.1.200"}), P("b", false, {"10.0.1.201"}), P("c", false, {"10.0.1.10"})});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"a:down", "c:up"}));
  // The remaining fence holds a (disabled now) and b (kept down on the service's behalf).
  EXPECT_EQ(Holds(plan), (std::vector<std::string>{"10.0.1.128/25=a", "10.0.1.128/25=b"}));
  // Disabling a serves the fence and the unfence, which waits for it as well.
  EXPECT_EQ(Texts(plan.changes[0].serves),
            (std::vector<std::string>{"10.0.1.0/24", "10.0.1.128/25"}));
  EXPECT_EQ(Texts(plan.changes[1].serves), (std::vector<std::string>{"10.0.1.0/24"}));
  EXPECT_EQ(plan.fences[0].depends_on, (std::vector<size_t>{0}));
  EXPECT_EQ(plan.unfences[0].depends_on, (std::vector<size_t>{0, 1}));
}

TEST(FencePlanTest, PortsWithoutFixedIpsAreIgnored) {
  const EnforcementPlan plan =
      PlanEnforcement(Snap({{"0.0.0.0/0", kPending}, {"::/0", kPending}}),
                      {P("none", true, {}), P("garbage", true, {"not-an-address"}),
                       P("mixed", true, {"bogus", "10.0.1.5", "fd00::5"})});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"mixed:down"}));
  // Only the addresses that parse name the port.
  EXPECT_EQ(plan.changes[0].label, "port mixed (10.0.1.5 fd00::5)");
  EXPECT_EQ(Texts(plan.changes[0].serves), (std::vector<std::string>{"0.0.0.0/0", "::/0"}));
}

TEST(FencePlanTest, CompleteIsWhatNoFailedChangeServes) {
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.1.0/24", kPending}, {"10.0.2.0/24", kEnforced}, {"10.0.3.0/24", kPending}},
           {U("10.0.4.0/24", {"c"}), U("10.0.5.0/24", {"d"})}),
      {P("a", true, {"10.0.1.5"}), P("b", true, {"10.0.2.5"}), P("c", false, {"10.0.4.5"}),
       P("d", false, {"10.0.5.5"}), P("e", true, {"10.0.3.5"})});
  ASSERT_EQ(Changes(plan),
            (std::vector<std::string>{"a:down", "b:down", "c:up", "d:up", "e:down"}));

  Completion done = CompletedBy(plan, {false, false, false, false, false});
  EXPECT_EQ(Texts(done.enforced),
            (std::vector<std::string>{"10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"}));
  EXPECT_EQ(Texts(done.newly_enforced), (std::vector<std::string>{"10.0.1.0/24", "10.0.3.0/24"}));
  EXPECT_EQ(Texts(done.unfenced), (std::vector<std::string>{"10.0.4.0/24", "10.0.5.0/24"}));

  // Disabling a failed: its fence stays pending, nothing else is affected.
  done = CompletedBy(plan, {true, false, false, false, false});
  EXPECT_EQ(Texts(done.enforced), (std::vector<std::string>{"10.0.2.0/24", "10.0.3.0/24"}));
  EXPECT_EQ(Texts(done.newly_enforced), (std::vector<std::string>{"10.0.3.0/24"}));
  EXPECT_EQ(Texts(done.unfenced), (std::vector<std::string>{"10.0.4.0/24", "10.0.5.0/24"}));

  // Disabling b failed: its (already enforced) fence is not reported enforced by this pass.
  done = CompletedBy(plan, {false, true, false, false, false});
  EXPECT_EQ(Texts(done.enforced), (std::vector<std::string>{"10.0.1.0/24", "10.0.3.0/24"}));
  EXPECT_EQ(Texts(done.newly_enforced), (std::vector<std::string>{"10.0.1.0/24", "10.0.3.0/24"}));

  // Re-enabling c failed: its unfence stays pending.
  done = CompletedBy(plan, {false, false, true, false, false});
  EXPECT_EQ(done.enforced.size(), 3u);
  EXPECT_EQ(Texts(done.unfenced), (std::vector<std::string>{"10.0.5.0/24"}));
}

TEST(FencePlanTest, AFailedChangeLeavesEveryCidrItServesIncomplete) {
  // Nested fences, and a fence inside a lifted one.
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.0.0/16", kPending}, {"10.0.1.0/24", kPending}, {"10.1.1.128/25", kPending}},
           {U("10.1.1.0/24")}),
      {P("a", true, {"10.0.1.5"}), P("b", true, {"10.0.2.5"}), P("c", true, {"10.1.1.200"})});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"a:down", "b:down", "c:down"}));

  Completion done = CompletedBy(plan, {true, false, false});
  EXPECT_EQ(Texts(done.enforced), (std::vector<std::string>{"10.1.1.128/25"}));
  EXPECT_EQ(Texts(done.unfenced), (std::vector<std::string>{"10.1.1.0/24"}));

  done = CompletedBy(plan, {false, true, false});
  EXPECT_EQ(Texts(done.enforced), (std::vector<std::string>{"10.0.1.0/24", "10.1.1.128/25"}));

  // c is inside the remaining /25 and the lifted /24: both wait for it.
  done = CompletedBy(plan, {false, false, true});
  EXPECT_EQ(Texts(done.enforced), (std::vector<std::string>{"10.0.0.0/16", "10.0.1.0/24"}));
  EXPECT_TRUE(done.unfenced.empty());
}

TEST(FencePlanTest, OperatorQuarantinedPortIsNeitherHeldNorReEnabled) {
  // Fencing: q was down before the fence (an operator's quarantine); only a is the fence's.
  EnforcementPlan plan = PlanEnforcement(Snap({{"10.0.1.0/24", kPending}}),
                                         {P("q", false, {"10.0.1.9"}), P("a", true, {"10.0.1.5"})});
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"a:down"}));
  EXPECT_EQ(Holds(plan), (std::vector<std::string>{"10.0.1.0/24=a"}));

  // Unfencing with that record: a comes back, q stays down.
  plan = PlanEnforcement(Snap({}, {U("10.0.1.0/24", {"a"})}),
                         {P("q", false, {"10.0.1.9"}), P("a", false, {"10.0.1.5"})});
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"a:up"}));
  EXPECT_EQ(plan.unfences[0].depends_on, (std::vector<size_t>{0}));
  EXPECT_TRUE(plan.holds.empty());
}

TEST(FencePlanTest, AFenceAdoptsPortsAnotherFenceHoldsDown) {
  // p was disabled for the /24; the /25 is new and finds it down: it holds it too, so lifting
  // the /24 first and the /25 later still brings p back.
  StoreSnapshot snap = Snap({{"10.0.1.0/24", kEnforced}, {"10.0.1.0/25", kPending}});
  snap.fences[0].held_ports = {"p"};
  EnforcementPlan plan = PlanEnforcement(snap, {P("p", false, {"10.0.1.5"})});
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(Holds(plan), (std::vector<std::string>{"10.0.1.0/25=p"}));

  // The /24 lifted, the /25 standing: p stays down, the unfence is complete without a change.
  snap = Snap({{"10.0.1.0/25", kEnforced}}, {U("10.0.1.0/24", {"p"})});
  snap.fences[0].held_ports = {"p"};
  plan = PlanEnforcement(snap, {P("p", false, {"10.0.1.5"})});
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(Texts(CompletedBy(plan, {}).unfenced), (std::vector<std::string>{"10.0.1.0/24"}));

  // Then the /25 lifted: p comes back.
  plan = PlanEnforcement(Snap({}, {U("10.0.1.0/25", {"p"})}), {P("p", false, {"10.0.1.5"})});
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"p:up"}));
}

TEST(FencePlanTest, AStandingFenceThatHoldsAPortKeepsItDownAfterItsAddressMoved) {
  StoreSnapshot snap = Snap({{"10.0.1.0/24", kEnforced}}, {U("10.0.9.0/24", {"p"})});
  snap.fences[0].held_ports = {"p"};
  const EnforcementPlan plan = PlanEnforcement(snap, {P("p", false, {"10.0.9.5"})});
  EXPECT_TRUE(plan.changes.empty());
}

TEST(FencePlanTest, AnUnfenceReEnablesTheHeldPortWhateverItsAddressNow) {
  const EnforcementPlan plan =
      PlanEnforcement(Snap({}, {U("10.0.1.0/24", {"p"})}), {P("p", false, {"10.0.7.5"})});
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"p:up"}));
  EXPECT_EQ(Texts(plan.changes[0].serves), (std::vector<std::string>{"10.0.1.0/24"}));
}

TEST(FencePlanTest, FencesOfAnOlderStoreWithoutRecordsBehaveAsBefore) {
  // A pending unfence without a record re-enables every down port inside it.
  EnforcementPlan plan = PlanEnforcement(
      Snap({}, {Untracked("10.0.1.0/24")}),
      {P("a", false, {"10.0.1.5"}), P("b", false, {"10.0.1.6"}), P("c", false, {"10.0.2.5"})});
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"a:up", "b:up"}));

  // A down port inside a fence without a record may be that fence's: every fence containing it
  // holds it, so lifting them later re-enables it.
  StoreSnapshot snap = Snap({{"10.0.0.0/16", kEnforced}, {"10.0.1.0/24", kPending}});
  snap.fences[0].tracked = false;
  plan = PlanEnforcement(snap, {P("a", false, {"10.0.1.5"}), P("b", false, {"10.1.9.5"})});
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(Holds(plan), (std::vector<std::string>{"10.0.0.0/16=a", "10.0.1.0/24=a"}));
}

TEST(FencePlanTest, PortsUpAgainAreReleasedFromTheRecords) {
  StoreSnapshot snap = Snap({{"10.0.1.0/24", kEnforced}}, {U("10.0.2.0/24", {"b"})});
  snap.fences[0].held_ports = {"a", "c"};
  // a moved out of the fence and was re-enabled by someone; b is up again; c still inside.
  const EnforcementPlan plan = PlanEnforcement(
      snap, {P("a", true, {"10.0.9.5"}), P("b", true, {"10.0.2.5"}), P("c", true, {"10.0.1.7"})});
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"c:down"}));
  EXPECT_EQ(plan.released, (std::vector<std::string>{"a", "b"}));
}

TEST(FencePlanTest, AListWithUnreadableEntriesChangesTheReadablePortsButCompletesNothing) {
  client::PortList list;
  list.ports = {P("a", true, {"10.0.1.5"}), P("c", false, {"10.0.4.5"})};
  list.unreadable = {"ports[2]: port.admin_state_up is not a boolean (got string)"};
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.1.0/24", kPending}, {"10.0.2.0/24", kEnforced}}, {U("10.0.4.0/24", {"c"})}),
      list);
  EXPECT_EQ(Changes(plan), (std::vector<std::string>{"a:down", "c:up"}));
  EXPECT_EQ(Holds(plan), (std::vector<std::string>{"10.0.1.0/24=a"}));
  EXPECT_EQ(plan.unreadable, list.unreadable);
  const Completion done = CompletedBy(plan, {false, false});
  EXPECT_TRUE(done.enforced.empty());
  EXPECT_TRUE(done.newly_enforced.empty());
  EXPECT_TRUE(done.unfenced.empty());
  // The same list without the hole completes everything.
  list.unreadable.clear();
  const Completion whole = CompletedBy(
      PlanEnforcement(
          Snap({{"10.0.1.0/24", kPending}, {"10.0.2.0/24", kEnforced}}, {U("10.0.4.0/24", {"c"})}),
          list),
      {false, false});
  EXPECT_EQ(Texts(whole.newly_enforced), (std::vector<std::string>{"10.0.1.0/24"}));
  EXPECT_EQ(Texts(whole.unfenced), (std::vector<std::string>{"10.0.4.0/24"}));
}

}  // namespace
}  // namespace mizarmp::fence
