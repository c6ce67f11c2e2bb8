// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Which nodes a pass through the port index lists by host id (fence/listed_nodes.h): the lapsed
// and the never-published, from a lease read that fence passes reuse but that never hides a
// node that lapsed since.
#include "fence/listed_nodes.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace mizarmp::fence {
namespace {

using std::chrono::seconds;
using Time = std::chrono::system_clock::time_point;
using Leases = ListedNodes::Leases;

constexpr seconds kLease{30};
const Time kStart = Time(std::chrono::hours(24 * 365 * 56));

// An index that holds publications only, and counts how often they are read.
class LeaseIndex final : public PortIndex {
 public:
  Status Publish(const std::string& node, const std::vector<AddressedPort>& ports, Time at,
                 const std::string& enforced) override {
    published[node] = Publication{node, at, ports.size(), enforced};
    return Status::Ok();
  }
  Status Acknowledge(const std::string& node, const std::string& enforced) override {
    published.at(node).enforced = enforced;
    return Status::Ok();
  }
  Result<std::vector<Publication>> Publications() const override {
    ++reads;
    if (!available) return UnavailableError("the index is down");
    std::vector<Publication> out;
    for (const auto& [node, p] : published) out.push_back(p);
    return out;
  }
  Status Forget(const std::string& node) override {
    published.erase(node);
    return Status::Ok();
  }
  Result<std::vector<IndexedPort>> Inside(const std::vector<Cidr>&) const override {
    return std::vector<IndexedPort>();
  }
  Result<std::vector<IpAddress>> AddressesOn(const std::string&) const override {
    return std::vector<IpAddress>();
  }

  std::map<std::string, Publication> published;
  mutable int reads = 0;
  bool available = true;
};

struct Fixture {
  Time now = kStart;
  LeaseIndex index;
  ListedNodes listed{kLease, [this] { return now; }};

  std::vector<std::string> Find(
      Leases leases, const std::shared_ptr<const std::vector<client::Node>>& registered = nullptr) {
    auto found = listed.Find(index, registered, leases);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() ? *found : std::vector<std::string>();
  }
};

TEST(ListedNodes, FencePassesReuseALeaseReadYoungerThanAThirdOfTheLease) {
  Fixture f;
  ASSERT_TRUE(f.index.Publish("worker-1", {}, kStart, "").ok());
  EXPECT_TRUE(f.Find(Leases::kRecent).empty());
  f.now += seconds(9);
  EXPECT_TRUE(f.Find(Leases::kRecent).empty());
  EXPECT_EQ(f.index.reads, 1);
  // The reconcile reads them now, whatever their age.
  EXPECT_TRUE(f.Find(Leases::kReadNow).empty());
  EXPECT_EQ(f.index.reads, 2);
  // Ten seconds after the last read, a fence pass reads again.
  f.now += seconds(10);
  EXPECT_TRUE(f.Find(Leases::kRecent).empty());
  EXPECT_EQ(f.index.reads, 3);
}

// The read a pass reuses predates the lapse, yet the pass lists the node: its lease lapsed by
// the time of the pass, not of the read.
TEST(ListedNodes, AReusedReadStillListsANodeThatLapsedSince) {
  Fixture f;
  ASSERT_TRUE(f.index.Publish("worker-1", {}, kStart, "").ok());
  ASSERT_TRUE(f.index.Publish("worker-2", {}, kStart + seconds(25), "").ok());
  f.now = kStart + seconds(25);
  EXPECT_TRUE(f.Find(Leases::kReadNow).empty());
  f.now = kStart + seconds(31);
  EXPECT_EQ(f.Find(Leases::kRecent), std::vector<std::string>{"worker-1"});
  EXPECT_EQ(f.index.reads, 1);
}

// A node that published only after the read is in no lease of it; if Mizar-MP knows it, it
// counts as never published and is listed, which a read made now does not do.
TEST(ListedNodes, ANodeThatPublishedAfterTheReadIsListedUntilReadAgain) {
  Fixture f;
  const auto registered = std::make_shared<const std::vector<client::Node>>(
      std::vector<client::Node>{{"9a0b", "worker-1"}, {"4c2e", "worker-2"}});
  ASSERT_TRUE(f.index.Publish("worker-1", {}, kStart, "").ok());
  EXPECT_EQ(f.Find(Leases::kReadNow, registered), (std::vector<std::string>{"4c2e", "worker-2"}));
  ASSERT_TRUE(f.index.Publish("worker-2", {}, kStart, "").ok());
  EXPECT_EQ(f.Find(Leases::kRecent, registered), (std::vector<std::string>{"4c2e", "worker-2"}));
  EXPECT_TRUE(f.Find(Leases::kReadNow, registered).empty());
}

// The registered nodes are worked against the leases again when Mizar-MP's list changes, though
// the leases are not read again.
TEST(ListedNodes, ANewRegisteredListIsMatchedAgainstTheReusedRead) {
  Fixture f;
  ASSERT_TRUE(f.index.Publish("worker-1", {}, kStart, "").ok());
  const auto one = std::make_shared<const std::vector<client::Node>>(
      std::vector<client::Node>{{"9a0b", "worker-1"}});
  EXPECT_TRUE(f.Find(Leases::kReadNow, one).empty());
  const auto two = std::make_shared<const std::vector<client::Node>>(
      std::vector<client::Node>{{"9a0b", "worker-1"}, {"77d1", ""}});
  EXPECT_EQ(f.Find(Leases::kRecent, two), std::vector<std::string>{"77d1"});
  EXPECT_EQ(f.index.reads, 1);
}

// A clock set back makes no read look young; an index that cannot be read is the pass's error,
// and the next pass tries again.
TEST(ListedNodes, AClockSetBackOrAFailedReadReadsAgain) {
  Fixture f;
  ASSERT_TRUE(f.index.Publish("worker-1", {}, kStart, "").ok());
  EXPECT_TRUE(f.Find(Leases::kReadNow).empty());
  f.now -= seconds(60);
  EXPECT_TRUE(f.Find(Leases::kRecent).empty());
  EXPECT_EQ(f.index.reads, 2);
  f.now += seconds(100);
  f.index.available = false;
  const auto failed = f.listed.Find(f.index, nullptr, Leases::kRecent);
  EXPECT_EQ(failed.status().code(), Code::kUnavailable);
  f.index.available = true;
  EXPECT_EQ(f.Find(Leases::kRecent), std::vector<std::string>{"worker-1"});
  EXPECT_EQ(f.index.reads, 4);
}

// A node counts as published under either of the names Mizar-MP knows it by; one that did not
// publish is listed by both, since its ports may name it by either.
TEST(ListedNodes, UnpublishedNodesAreThoseKnownByNeitherName) {
  const std::vector<Publication> published = {{"worker-1", kStart, 3}, {"4c2e", kStart, 1}};
  const std::vector<client::Node> registered = {
      {"9a0b", "worker-1"}, {"4c2e", "worker-2"}, {"77d1", "worker-3"}, {"", "worker-4"}};
  EXPECT_EQ(UnpublishedNodes(registered, published),
            (std::vector<std::string>{"77d1", "worker-3", "worker-4"}));
  EXPECT_TRUE(UnpublishedNodes({}, published).empty());
}

// A fence change waits for the live nodes whose last publication names another fence set than
// the one holding it; a lapsed node has nothing left to acknowledge.
TEST(NodesNotEnforcing, NamesTheLiveNodesBehindTheSetAndNeverALapsedOne) {
  const std::vector<Publication> publications = {
      {"node-a", kStart, 3, "2-aaaa"},                 // enforces the set
      {"node-b", kStart - seconds(10), 1, "1-bbbb"},   // live, an older set
      {"node-c", kStart - seconds(31), 2, "1-bbbb"},   // lapsed
      {"node-d", kStart, 0, ""},                       // live, never enforced any
  };
  EXPECT_EQ(NodesNotEnforcing(publications, "2-aaaa", kLease, kStart),
            (std::vector<std::string>{"node-b", "node-d"}));
  EXPECT_EQ(NodesNotEnforcing(publications, "1-bbbb", kLease, kStart),
            (std::vector<std::string>{"node-a", "node-d"}));
  EXPECT_TRUE(NodesNotEnforcing({}, "2-aaaa", kLease, kStart).empty());
}

}  // namespace
}  // namespace mizarmp::fence
