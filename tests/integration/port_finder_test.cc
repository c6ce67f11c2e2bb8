// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The pass that finds ports through the port index (fence/port_finder.h): the plan over what the
// index finds is the plan over the whole port list, on random clusters at the strict Alcor mock,
// stale index entries and ports that come and go included. The index's own contract is
// port_index_test.cc.
#include "fence/port_finder.h"

#include <grpcpp/server_context.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fence/enforcer.h"
#include "fence/fence_set.h"
#include "fence/plan.h"
#include "fence/service/fence_service.h"
#include "mock-server/mock.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using mizarmp::testing::TempDir;

constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

IpAddress Ip(const std::string& text) { return *IpAddress::Parse(text); }
Cidr Net(const std::string& text) { return *Cidr::ParseNetwork(text); }

// As node `node`'s agent publishes `ports`, saying it enforces the fence set `enforced` (a digest).
Status PublishNow(PortIndex& index, const std::string& node,
                  const std::vector<AddressedPort>& ports, const std::string& enforced = "") {
  return index.Publish(node, ports, std::chrono::system_clock::now(), enforced);
}

// A plan with what depends on the order of the ports taken out: each fence's and unfence's
// changes as port ids, the changes as (port, state, fences served).
struct NormalPlan {
  std::set<std::tuple<std::string, bool, std::vector<Cidr>>> changes;
  std::map<Cidr, std::pair<FenceState, std::set<std::string>>> fences;
  std::map<Cidr, std::set<std::string>> unfences;
  std::set<std::pair<Cidr, std::string>> holds;
  std::set<std::string> released;
  size_t unreadable = 0;
  bool operator==(const NormalPlan&) const = default;
};

NormalPlan Normalized(const EnforcementPlan& plan) {
  NormalPlan n;
  for (const PortChange& c : plan.changes) n.changes.emplace(c.port_id, c.admin_state_up, c.serves);
  const auto ids = [&](const std::vector<size_t>& depends_on) {
    std::set<std::string> out;
    for (size_t i : depends_on) out.insert(plan.changes[i].port_id);
    return out;
  };
  for (const PlannedFence& f : plan.fences) n.fences[f.cidr] = {f.state, ids(f.depends_on)};
  for (const PlannedUnfence& u : plan.unfences) n.unfences[u.cidr] = ids(u.depends_on);
  for (const PortHold& h : plan.holds) n.holds.emplace(h.fence, h.port_id);
  n.released.insert(plan.released.begin(), plan.released.end());
  n.unreadable = plan.unreadable.size();
  return n;
}

// One random cluster at the strict Alcor mock, its index, and a random fence store snapshot.
class RandomCluster {
 public:
  RandomCluster(unsigned seed, client::Client& mp, PortIndex& index)
      : rng_(seed), mp_(mp), index_(index) {}

  // `n` ports on `nodes` nodes, a tenth of them down already, at addresses (past the gateway) drawn
  // from 10.240.0.0/18 (so that fences of every size hold some, and none holds all).
  void CreatePorts(int n, int nodes) {
    std::vector<client::PortSpec> specs;
    for (int i = 0; i < n; ++i) {
      uint32_t host;
      do host = 2 + static_cast<uint32_t>(Draw(16000));
      while (!taken_.insert(host).second);
      const IpAddress ip = IpAddress::V4((10u << 24) | (240u << 16) | host);
      const std::string id = "p" + std::to_string(next_id_++);
      const std::string node = "node-" + std::to_string(Draw(nodes));
      client::PortSpec s = testing::PortSpecFor(id, "/var/run/netns/none", node);
      s.network_id = client::kDefaultVpcId;
      s.fixed_ips.push_back({kSubnet, ip.ToString()});
      s.admin_state_up = Draw(10) != 0;
      if (s.admin_state_up) up_.insert(id);
      specs.push_back(std::move(s));
      ports_.push_back({ip, id, node});
    }
    auto created = mp_.CreatePorts(specs);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  // Every node publishes its ports, plus `stale` entries that point at addresses the ports do not
  // have (an address since moved: the finder reads the port back and sees where it is), saying
  // it enforces the fence set of digest `enforced`.
  void Publish(int stale, const std::string& enforced = "") {
    std::map<std::string, std::vector<AddressedPort>> by_node;
    for (const IndexedPort& p : ports_) by_node[p.node].push_back({p.ip, p.port_id});
    for (int i = 0; i < stale && !ports_.empty(); ++i) {
      const IndexedPort& p = ports_[Draw(ports_.size())];
      const auto host = static_cast<uint32_t>(2 + Draw(16000));
      by_node[p.node].push_back({IpAddress::V4((10u << 24) | (240u << 16) | host), p.port_id});
    }
    for (const auto& [node, published] : by_node) {
      ASSERT_TRUE(PublishNow(index_, node, published, enforced).ok());
    }
  }

  // Deletes `n` ports at Mizar-MP after they were published (the index still names them).
  void DeleteSome(int n) {
    for (int i = 0; i < n && !ports_.empty(); ++i) {
      const size_t at = Draw(ports_.size());
      ASSERT_TRUE(mp_.DeletePort(ports_[at].port_id).ok());
      gone_.push_back(ports_[at].port_id);
      ports_.erase(ports_.begin() + static_cast<long>(at));
    }
  }

  // Fences and pending unfences of sizes /32 to /22 around random ports' addresses, records
  // naming some down ports, some ports gone at Mizar-MP and some unknown ids.
  StoreSnapshot Snapshot(int fences, int unfences) {
    StoreSnapshot snap;
    std::set<Cidr> used;
    const auto around = [&]() {
      const IpAddress at = ports_.empty() ? Ip("10.240.0.1") : ports_[Draw(ports_.size())].ip;
      const int len = 22 + static_cast<int>(Draw(11));
      return Cidr(at.Masked(len), len);
    };
    for (int i = 0; i < fences; ++i) {
      const Cidr c = around();
      if (!used.insert(c).second) continue;
      FenceEntry e{.cidr = c, .state = Draw(2) ? FenceState::kEnforced : FenceState::kPending};
      e.held_ports = SomeIds(3);
      snap.fences.push_back(e);
    }
    for (int i = 0; i < unfences; ++i) {
      const Cidr c = around();
      if (!used.insert(c).second) continue;
      snap.unfences.push_back(
          UnfenceEntry{.cidr = c, .tracked = Draw(4) != 0, .held_ports = SomeIds(4)});
    }
    std::sort(snap.fences.begin(), snap.fences.end(),
              [](const FenceEntry& a, const FenceEntry& b) { return a.cidr < b.cidr; });
    std::sort(snap.unfences.begin(), snap.unfences.end(),
              [](const UnfenceEntry& a, const UnfenceEntry& b) { return a.cidr < b.cidr; });
    return snap;
  }

  // The address of a random port that is up, and the port at an address.
  IpAddress SomeAddress() {
    for (;;) {
      const IndexedPort& p = ports_[Draw(ports_.size())];
      if (up_.count(p.port_id) != 0) return p.ip;
    }
  }
  std::string PortAt(const IpAddress& ip) const {
    for (const IndexedPort& p : ports_) {
      if (p.ip == ip) return p.port_id;
    }
    return "";
  }

 private:
  size_t Draw(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  // Up to `n` record entries: live ports, ports deleted at Mizar-MP, and ids it never had.
  std::vector<std::string> SomeIds(int n) {
    std::set<std::string> ids;
    for (int i = 0, count = static_cast<int>(Draw(n + 1)); i < count; ++i) {
      switch (Draw(4)) {
        case 0:
          if (!gone_.empty()) ids.insert(gone_[Draw(gone_.size())]);
          break;
        case 1:
          ids.insert("never-" + std::to_string(Draw(1000)));
          break;
        default:
          if (!ports_.empty()) ids.insert(ports_[Draw(ports_.size())].port_id);
      }
    }
    return {ids.begin(), ids.end()};
  }

  std::mt19937 rng_;
  client::Client& mp_;
  PortIndex& index_;
  std::set<std::string> up_;  // the ports created up
  std::set<uint32_t> taken_;  // host parts of 10.240.0.0/16 given out
  int next_id_ = 0;
  std::vector<IndexedPort> ports_;
  std::vector<std::string> gone_;
};

// A strict Alcor mock of its own and a client of it.
struct Controller {
  std::unique_ptr<mock::MockServer> mock;
  std::unique_ptr<client::Client> mp;

  std::unique_ptr<client::Client> NewClient() const {
    client::ClientConfig cc;
    cc.base_url = mock->base_url();
    auto c = client::Client::Create(cc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  PassConnections Connections(int count) const {
    return {.first = mp.get(),
            .more = [this]() -> Result<std::unique_ptr<client::Client>> { return NewClient(); },
            .count = count};
  }
};

// `row_limit`: the rows a list may match before the controller refuses it (Alcor: 100,000).
void StartController(Controller& c, int row_limit = 100000) {
  mock::Options o;
  o.cidr = "10.240.0.0/16";
  o.strict = true;
  o.dialect = mock::Dialect::kAlcor;
  o.row_limit = row_limit;
  ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &c.mock));
  c.mp = c.NewClient();
  ASSERT_NE(c.mp, nullptr);
}

TEST(PortFinder, PlansWhatTheWholeListPlansOnRandomClusters) {
  TempDir dir;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Controller controller;
    ASSERT_NO_FATAL_FAILURE(StartController(controller));
    auto index = OpenSqlitePortIndex(dir.path() + "/index-" + std::to_string(seed) + ".db");
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    RandomCluster cluster(seed, *controller.mp, **index);
    ASSERT_NO_FATAL_FAILURE(cluster.CreatePorts(300, 8));
    ASSERT_NO_FATAL_FAILURE(cluster.Publish(10));
    // Ports deleted after their node published them, and ports made and published since.
    ASSERT_NO_FATAL_FAILURE(cluster.DeleteSome(15));
    ASSERT_NO_FATAL_FAILURE(cluster.CreatePorts(20, 8));
    ASSERT_NO_FATAL_FAILURE(cluster.Publish(5));
    const StoreSnapshot snap = cluster.Snapshot(6, 4);

    auto listed = controller.mp->ListPorts({}, kFencePortFields);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    auto found = FindFencedPorts(snap, **index, /*lapsed=*/{}, controller.Connections(4));
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_TRUE(found->unreadable.empty()) << found->unreadable[0];
    EXPECT_LT(found->ports.size(), listed->ports.size());
    const NormalPlan by_list = Normalized(PlanEnforcement(snap, *listed));
    EXPECT_FALSE(by_list.changes.empty() && by_list.released.empty()) << "a plan with nothing";
    EXPECT_EQ(Normalized(PlanEnforcement(snap, *found)), by_list);
  }
}

// The service with a port index: a fence and its unfence read and change only the ports inside,
// whatever the number of ports at Mizar-MP.
TEST(PortFinder, TheServiceFencesThroughTheIndexWithoutListingPorts) {
  TempDir dir;
  Controller controller;
  ASSERT_NO_FATAL_FAILURE(StartController(controller));
  auto publisher = OpenSqlitePortIndex(dir.path() + "/lib/ports.db");
  ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
  RandomCluster cluster(7, *controller.mp, **publisher);
  ASSERT_NO_FATAL_FAILURE(cluster.CreatePorts(2000, 20));
  const IpAddress target = cluster.SomeAddress();
  const std::string fenced = target.ToString() + "/32";
  // The nodes already enforce the set the fence makes, as their agents would say once it reached
  // them (that acknowledgement is publication_test's subject; here, the index's pass).
  ASSERT_NO_FATAL_FAILURE(cluster.Publish(0, MakeFenceSet({Net(fenced)}).digest));

  FenceOptions o;
  o.mizarmp.base_url = controller.mock->base_url();
  o.mizarmp.project_id = client::kDefaultProjectId;
  o.state_dir = dir.path() + "/cni";
  o.fence_store = dir.path() + "/lib/fence.db";
  o.port_index = true;  // lib/ports.db, beside the store
  o.reconcile_interval = std::chrono::hours(1);
  FenceService service(o);
  ASSERT_TRUE(service.StartAndWait().ok());

  const auto down = [&] {
    std::set<std::string> ids;
    for (const auto& p : controller.mock->Ports()) {
      if (!p.admin_state_up) ids.insert(p.id);
    }
    return ids;
  };
  const std::set<std::string> down_before = down();
  const uint64_t before = controller.mock->requests();
  ::fence::FenceClusterNetworkRequest fence;
  fence.add_cidrs()->set_cidr(fenced);
  ::fence::FenceClusterNetworkResponse fenced_answer;
  grpc::ServerContext fence_context;
  grpc::Status s = service.FenceClusterNetwork(&fence_context, &fence, &fenced_answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The server's first call finds out the controller's generation, its first pass lists the
  // nodes (again only once the lease has passed); then the port is read back and disabled: four
  // requests, where a list would have read 2,000 ports.
  EXPECT_EQ(controller.mock->requests() - before, 4u);
  std::set<std::string> expected = down_before;
  expected.insert(cluster.PortAt(target));
  EXPECT_EQ(down(), expected);

  ASSERT_NO_FATAL_FAILURE(cluster.Publish(0, MakeFenceSet({}).digest));
  ::fence::UnfenceClusterNetworkRequest unfence;
  unfence.add_cidrs()->set_cidr(fenced);
  ::fence::UnfenceClusterNetworkResponse unfenced_answer;
  grpc::ServerContext unfence_context;
  const uint64_t before_unfence = controller.mock->requests();
  s = service.UnfenceClusterNetwork(&unfence_context, &unfence, &unfenced_answer);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(controller.mock->requests() - before_unfence, 2u);
  EXPECT_EQ(down(), down_before);
  service.Stop();
}

// Alcor refuses a list that matches its row limit or more (IgniteClientDbCache); a pass through
// the index lists nothing, so fencing works at twice the limit, where the whole list is refused.
TEST(PortFinder, WorksAtTwiceTheControllersRowLimit) {
  TempDir dir;
  Controller controller;
  ASSERT_NO_FATAL_FAILURE(StartController(controller, /*row_limit=*/150));
  auto index = OpenSqlitePortIndex(dir.path() + "/ports.db");
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  RandomCluster cluster(3, *controller.mp, **index);
  ASSERT_NO_FATAL_FAILURE(cluster.CreatePorts(300, 4));
  ASSERT_NO_FATAL_FAILURE(cluster.Publish(0));
  StoreSnapshot snap;
  snap.fences.push_back(FenceEntry{.cidr = Net("10.240.0.0/16")});

  auto listed = controller.mp->ListPorts({}, kFencePortFields);
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), Code::kFailedPrecondition) << listed.status().ToString();

  auto found = FindFencedPorts(snap, **index, /*lapsed=*/{}, controller.Connections(4));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->ports.size(), 300u);
  EXPECT_TRUE(found->unreadable.empty());
  const EnforcementPlan plan = PlanEnforcement(snap, *found);
  const AppliedPlan applied = ApplyPlan(controller.Connections(4), plan, [] { return true; });
  EXPECT_EQ(applied.report.failed, 0);
  EXPECT_EQ(applied.report.enforced, std::vector<Cidr>{Net("10.240.0.0/16")});
  for (const client::Port& p : found->ports) {
    auto now = controller.mp->GetPort(p.id);
    ASSERT_TRUE(now.ok()) << now.status().ToString();
    EXPECT_FALSE(now->admin_state_up) << p.id;
  }
}

}  // namespace
}  // namespace mizarmp::fence
