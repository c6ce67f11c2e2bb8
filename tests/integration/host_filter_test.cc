// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The standing fence set (fence/fence_set.h) and the node's host filter (fence/host_filter.h):
// the set's digest, the controller's bytes refused naming the entry, and, in a namespace of its
// own (root), traffic to and from a fenced address dropped while the controller stays reachable,
// an unfence lifting exactly that, and a restart putting the kept set back.
#include "fence/host_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fileutil.h"
#include "tests/support/entered_netns.h"
#include "tests/support/pki.h"
#include "tests/support/process.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using testing::EnteredNetns;
using testing::ScopedNetns;

FenceSet SetOf(const std::vector<std::string>& texts) {
  auto set = ParseFenceSet(texts, "cidrs");
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  return set.ok() ? *set : FenceSet{};
}

TEST(FenceSet, TheDigestNamesTheSetWhateverTheOrder) {
  const FenceSet a = SetOf({"10.0.0.0/24", "fd00::/64", "10.0.0.7/32"});
  const FenceSet b = SetOf({"10.0.0.7/32", "10.0.0.0/24", "fd00::/64", "10.0.0.0/24"});
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.cidrs.size(), 3u);
  EXPECT_EQ(a.digest.rfind("3-", 0), 0u) << a.digest;
  EXPECT_NE(a.digest, SetOf({"10.0.0.0/24", "fd00::/64"}).digest);
  EXPECT_NE(SetOf({}).digest, "");  // the empty set is a set a node can hold
}

TEST(FenceSet, AnEntryThatIsNoNetworkIsRefusedNamingIt) {
  for (const std::string bad : {"10.0.0.1/24", "nonsense", "10.0.0.0/33", ""}) {
    auto set = ParseFenceSet({"10.1.0.0/16", bad}, "fenced_cidrs");
    EXPECT_EQ(set.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(set.status().message().find("fenced_cidrs[1]"), std::string::npos)
        << set.status().message();
  }
  EXPECT_EQ(ParseFenceSet(std::vector<std::string>(kMaxFenceSetCidrs + 1, "10.0.0.0/8"), "x")
                .status()
                .code(),
            Code::kInvalidArgument);
}

TEST(HostFilterScript, AnEmptySetRemovesTheTable) {
  const std::string script = HostFilterScript(SetOf({}), {});
  EXPECT_EQ(script, "add table inet mizarmp_fence\ndelete table inet mizarmp_fence\n");
}

// A change is the elements that changed: addresses in a hash set, wider CIDRs merged (so none
// overlaps another) in an interval set, deletions before additions.
TEST(HostFilterScript, AChangeNamesOnlyTheElementsThatChanged) {
  EXPECT_EQ(HostFilterDelta(SetOf({"10.0.0.1/32", "10.1.0.0/24", "fd00::1/128"}),
                            SetOf({"10.0.0.2/32", "10.1.0.0/24", "fd00::1/128"})),
            "delete element inet mizarmp_fence hosts4 { 10.0.0.1 }\n"
            "add element inet mizarmp_fence hosts4 { 10.0.0.2 }\n");
  EXPECT_EQ(HostFilterDelta(SetOf({"10.1.0.0/25"}), SetOf({"10.1.0.0/24", "10.1.0.0/25"})),
            "delete element inet mizarmp_fence nets4 { 10.1.0.0/25 }\n"
            "add element inet mizarmp_fence nets4 { 10.1.0.0/24 }\n");
  EXPECT_EQ(HostFilterDelta(SetOf({"fd00::/64"}), SetOf({"fd00::/64"})), "");
  const std::string whole = HostFilterScript(SetOf({"10.0.0.1/32", "10.0.0.2/32"}), {});
  EXPECT_NE(whole.find("elements = { 10.0.0.1, 10.0.0.2 }"), std::string::npos) << whole;
}

// A node in a namespace of its own: its loopback holds a fenced address and an unfenced one,
// and a listener stands for the controller, inside a fenced CIDR.
class HostFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    ASSERT_TRUE(node_.ok());
    ASSERT_EQ(node_.Exec("ip link set lo up"), 0);
    for (const char* address : {"10.251.0.10/32", "10.251.1.10/32", "10.252.0.1/32"}) {
      ASSERT_EQ(node_.Exec(std::string("ip addr add ") + address + " dev lo"), 0);
    }
  }

  // Whether `address` answers a ping from the node itself.
  bool Reaches(const std::string& address) const {
    return node_.Exec("ping -c1 -W1 " + address + " >/dev/null 2>&1") == 0;
  }

  // Whether a TCP connection from the node's unfenced address 10.251.1.10 to `port` on the
  // controller's address (where something listens) is made within a second.
  bool ConnectsToController(int port) const {
    const std::string script =
        "import socket\n"
        "srv = socket.create_server(('10.252.0.1', " + std::to_string(port) + "))\n"
        "c = socket.socket(); c.bind(('10.251.1.10', 0)); c.settimeout(1)\n"
        "c.connect(('10.252.0.1', " + std::to_string(port) + "))\n";
    return node_.Exec("python3 -c \"" + script + "\" >/dev/null 2>&1") == 0;
  }

  // What nftables holds in the node, as `nft list ruleset` prints it.
  std::string Ruleset() const {
    std::string out;
    node_.Exec("nft list ruleset", &out);
    return out;
  }

  // Applies `set` from inside the node, as its agent does.
  Status Apply(HostFilter& filter, const FenceSet& set) const {
    EnteredNetns inside(node_.path());
    if (!inside.error().empty()) return InternalError(inside.error());
    return filter.Apply(set);
  }

  testing::TempDir dir_;
  ScopedNetns node_{testing::UniqueName("mzhf")};
  const std::vector<KeptPeer> controller_{{*IpAddress::Parse("10.252.0.1"), 9811}};
};

TEST_F(HostFilterTest, AFencedAddressIsCutOffAndTheUnfenceLiftsExactlyThat) {
  ASSERT_TRUE(Reaches("10.251.0.10"));
  HostFilter filter(dir_.path() + "/fence-set", controller_);
  // The fence covers the controller's own network too: its port stays reachable.
  const Status fenced = Apply(filter, SetOf({"10.251.0.10/32", "10.252.0.0/24"}));
  ASSERT_TRUE(fenced.ok()) << fenced.ToString();
  EXPECT_FALSE(Reaches("10.251.0.10")) << Ruleset();
  EXPECT_FALSE(Reaches("10.252.0.1"));  // ping is not the controller's TCP port
  EXPECT_TRUE(Reaches("10.251.1.10")) << "an address outside the fence was cut";
  EXPECT_TRUE(ConnectsToController(9811)) << "the channel an unfence travels by was cut";
  EXPECT_FALSE(ConnectsToController(9812)) << "only the controller's endpoint is kept";
  EXPECT_EQ(filter.digest(), SetOf({"10.251.0.10/32", "10.252.0.0/24"}).digest);

  const Status lifted = Apply(filter, SetOf({"10.252.0.0/24"}));
  ASSERT_TRUE(lifted.ok()) << lifted.ToString();
  EXPECT_TRUE(Reaches("10.251.0.10"));
  EXPECT_FALSE(Reaches("10.252.0.1"));

  const Status none = Apply(filter, SetOf({}));
  ASSERT_TRUE(none.ok()) << none.ToString();
  EXPECT_TRUE(Reaches("10.252.0.1"));
  EXPECT_TRUE(ConnectsToController(9812));
  EXPECT_EQ(Ruleset().find("mizarmp_fence"), std::string::npos) << Ruleset();
}

// Neighbouring addresses and overlapping CIDRs stay apart as fenced (no range joins them), so
// lifting one lifts exactly it; a table changed behind the agent's back is built whole again.
TEST_F(HostFilterTest, NeighbouringFencesLiftOneAtATimeAndAChangedTableIsRebuilt) {
  ASSERT_EQ(node_.Exec("ip addr add 10.251.0.11/32 dev lo"), 0);
  HostFilter filter(dir_.path() + "/fence-set", controller_);
  const std::vector<std::string> both = {"10.251.0.10/32", "10.251.0.11/32", "10.252.0.0/24",
                                         "10.252.0.0/25"};
  ASSERT_TRUE(Apply(filter, SetOf(both)).ok()) << Ruleset();
  EXPECT_FALSE(Reaches("10.251.0.10"));
  EXPECT_FALSE(Reaches("10.251.0.11"));
  EXPECT_FALSE(Reaches("10.252.0.1"));

  const Status lifted = Apply(filter, SetOf({"10.251.0.11/32", "10.252.0.0/25"}));
  ASSERT_TRUE(lifted.ok()) << lifted.ToString() << Ruleset();
  EXPECT_TRUE(Reaches("10.251.0.10")) << Ruleset();
  EXPECT_FALSE(Reaches("10.251.0.11")) << Ruleset();
  EXPECT_FALSE(Reaches("10.252.0.1")) << "the /25 still stands" << Ruleset();

  // Someone removed an element by hand: the change that removes it too cannot be applied as a
  // delta, and the whole table is made instead.
  ASSERT_EQ(node_.Exec("nft delete element inet mizarmp_fence hosts4 { 10.251.0.11 }"), 0);
  const Status rebuilt = Apply(filter, SetOf({"10.251.0.10/32", "10.252.0.0/25"}));
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.ToString();
  EXPECT_FALSE(Reaches("10.251.0.10")) << Ruleset();
  EXPECT_TRUE(Reaches("10.251.0.11")) << Ruleset();
  EXPECT_FALSE(Reaches("10.252.0.1")) << Ruleset();
}

// `nft flush ruleset` (Debian's nftables.service runs it as it starts) removes every table:
// the agent's next look puts the fence set back.
TEST_F(HostFilterTest, AFlushedRulesetGetsTheFenceSetBack) {
  HostFilter filter(dir_.path() + "/fence-set", controller_);
  ASSERT_TRUE(Apply(filter, SetOf({"10.251.0.0/24"})).ok());
  ASSERT_EQ(node_.Exec("nft flush ruleset"), 0);
  ASSERT_TRUE(Reaches("10.251.0.10"));
  {
    EnteredNetns inside(node_.path());
    ASSERT_EQ(inside.error(), "");
    const Status repaired = filter.Repair();
    ASSERT_TRUE(repaired.ok()) << repaired.ToString();
    ASSERT_TRUE(filter.Repair().ok());  // present now: nothing to do
  }
  EXPECT_FALSE(Reaches("10.251.0.10")) << Ruleset();
}

TEST_F(HostFilterTest, ARestartedAgentPutsTheKeptSetBack) {
  {
    HostFilter before(dir_.path() + "/fence-set", controller_);
    ASSERT_TRUE(Apply(before, SetOf({"10.251.0.0/24"})).ok());
  }
  auto kept = ReadFile(dir_.path() + "/fence-set");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, "10.251.0.0/24\n");
  ASSERT_EQ(node_.Exec("nft delete table inet mizarmp_fence"), 0);  // as a reboot loses it
  ASSERT_TRUE(Reaches("10.251.0.10"));

  HostFilter after(dir_.path() + "/fence-set", controller_);
  EXPECT_EQ(after.digest(), "");
  {
    EnteredNetns inside(node_.path());
    ASSERT_EQ(inside.error(), "");
    const Status restored = after.Restore();
    ASSERT_TRUE(restored.ok()) << restored.ToString();
  }
  EXPECT_FALSE(Reaches("10.251.0.10"));
  EXPECT_EQ(after.digest(), SetOf({"10.251.0.0/24"}).digest);
}

}  // namespace
}  // namespace mizarmp::fence
