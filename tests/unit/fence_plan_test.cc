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

StoreSnapshot Snap(const std::vector<std::pair<std::string, FenceState>>& fences,
                   const std::vector<std::string>& unfences = {}) {
  StoreSnapshot s;
  for (const auto& [cidr, state] : fences) {
    FenceEntry e;
    e.cidr = C(cidr);
    e.state = state;
    s.fences.push_back(e);
  }
  for (const auto& u : unfences) s.unfences.push_back(C(u));
  return s;
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
      PlanEnforcement(Snap({}, {"10.0.1.0/24"}),
                      {P("a", false, {"10.0.1.5"}), P("b", false, {"10.0.2.5"}, "node-b")});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"a:up"}));
  EXPECT_EQ(Texts(plan.changes[0].serves), (std::vector<std::string>{"10.0.1.0/24"}));
  ASSERT_EQ(plan.unfences.size(), 1u);
  EXPECT_EQ(CanonicalCidr(plan.unfences[0].cidr), "10.0.1.0/24");
  EXPECT_EQ(plan.unfences[0].depends_on, (std::vector<size_t>{0}));
}

TEST(FencePlanTest, PortsAlreadyInTheirStateNeedNoChange) {
  const EnforcementPlan plan = PlanEnforcement(
      Snap({{"10.0.1.0/24", kPending}, {"fd00:1::/64", kEnforced}}, {"10.0.2.0/24"}),
      {P("a", false, {"10.0.1.5"}), P("b", true, {"10.0.2.5"}), P("c", false, {"10.0.3.5"}),
       P("d", true, {"10.0.4.5"}), P("e", false, {"10.0.9.9", "fd00:1::9"})});
  EXPECT_TRUE(plan.changes.empty());
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
      Snap({{"10.0.1.128/25", kEnforced}}, {"10.0.1.0/24"}),
      {P("a", true, {"10.0.1.200"}), P("b", false, {"10.0.1.201"}), P("c", false, {"10.0.1.10"})});
  ASSERT_EQ(Changes(plan), (std::vector<std::string>{"a:down", "c:up"}));
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
           {"10.0.4.0/24", "10.0.5.0/24"}),
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
           {"10.1.1.0/24"}),
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

}  // namespace
}  // namespace mizarmp::fence
