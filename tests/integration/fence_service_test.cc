// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The FenceController against the in-process mizarmp-mock (no agent: loopback HTTP only):
// what each RPC answers and what it does to the ports at Mizar-MP, the store across a restart,
// faults, the reconcile, secrets, readiness and the Identity wiring.
#include "fence/service/fence_service.h"

#include <grpcpp/server_context.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "addons/identity.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"
#include "mock-server/mock.h"
#include "records/records.h"
#include "tests/support/port_spec.h"
#include "tests/support/records.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using mizarmp::testing::TempDir;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
constexpr const char* kSubnet6 = "b87e0f87-a2d9-44ef-9194-9a62f178594f";

// Against the real Alcor controller's behaviour (the strict mock, mock-server/strict.h): the
// generation whose port list a fence reads and whose agent takes a disabled port down. The tests
// that need the seed controller's faults or subnets are FenceServiceSeedTest's, below.
class FenceServiceTest : public ::testing::Test {
 protected:
  // The seed README's controller (v0.1 dialect) instead of strict Alcor.
  virtual bool seed() const { return false; }

  void SetUp() override {
    mock::Options o;
    o.cidr = "10.240.0.0/16";
    if (seed()) {
      o.subnet6_id = kSubnet6;
      o.cidr6 = "fd00:240::/64";
    } else {
      o.strict = true;
      o.dialect = mock::Dialect::kAlcor;
    }
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
    client::ClientConfig cc;
    cc.base_url = mock_->base_url();
    auto c = client::Client::Create(cc);
    ASSERT_TRUE(c.ok());
    mp_ = std::move(*c);
  }

  void TearDown() override {
    if (service_) service_->Stop();
    service_.reset();
  }

  FenceOptions Options() const {
    FenceOptions o;
    o.mizarmp.base_url = mock_->base_url();
    o.mizarmp.project_id = kProject;
    o.mizarmp.max_attempts = 2;
    o.mizarmp.request_timeout = std::chrono::milliseconds(3000);
    o.state_dir = dir_.path() + "/cni";
    o.fence_store = dir_.path() + "/lib/fence.db";
    o.reconcile_interval = std::chrono::hours(1);  // tests call Reconcile() themselves
    return o;
  }

  FenceService& Start(FenceOptions o) {
    if (service_) service_->Stop();
    service_ = std::make_unique<FenceService>(std::move(o));
    Status s = service_->StartAndWait();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *service_;
  }
  FenceService& Start() { return Start(Options()); }

  // What a create names as its network: Alcor's network_id is the VPC, v0.1's the subnet.
  std::string NetworkId() const { return seed() ? kSubnet : client::kDefaultVpcId; }

  // A port at the mock with this v4 address on this host.
  std::string Port(const std::string& id, const std::string& ip, const std::string& host) {
    client::PortSpec s = testing::PortSpecFor(id, "/var/run/netns/none-" + id, host);
    s.network_id = NetworkId();
    s.fixed_ips.push_back({kSubnet, ip});
    auto p = mp_->CreatePort(s);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return id;
  }

  // `n` ports at the mock in one bulk create, "p<i>" at 10.240.<2 + i / 250>.<1 + i % 250>, on
  // node-a; their addresses in that order.
  std::vector<std::string> ManyPorts(int n) {
    std::vector<client::PortSpec> specs;
    std::vector<std::string> ips;
    for (int i = 0; i < n; ++i) {
      const std::string ip =
          "10.240." + std::to_string(2 + i / 250) + "." + std::to_string(1 + i % 250);
      const std::string id = "p" + std::to_string(i);
      client::PortSpec s = testing::PortSpecFor(id, "/var/run/netns/none-" + id);
      s.network_id = NetworkId();
      s.fixed_ips.push_back({kSubnet, ip});
      specs.push_back(std::move(s));
      ips.push_back(ip);
    }
    auto made = mp_->CreatePorts(specs);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return ips;
  }

  // The ports that are down at the mock.
  std::set<std::string> DownPorts() const {
    std::set<std::string> out;
    for (const auto& p : mock_->Ports()) {
      if (!p.admin_state_up) out.insert(p.id);
    }
    return out;
  }

  std::map<std::string, bool> AdminUp() const {
    std::map<std::string, bool> out;
    for (const auto& p : mock_->Ports()) out[p.id] = p.admin_state_up;
    return out;
  }

  grpc::Status Fence(const std::vector<std::string>& cidrs,
                     const std::map<std::string, std::string>& secrets = {}) {
    ::fence::FenceClusterNetworkRequest req;
    for (const auto& c : cidrs) req.add_cidrs()->set_cidr(c);
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    ::fence::FenceClusterNetworkResponse resp;
    grpc::ServerContext ctx;
    return service_->FenceClusterNetwork(&ctx, &req, &resp);
  }

  grpc::Status Unfence(const std::vector<std::string>& cidrs,
                       const std::map<std::string, std::string>& secrets = {}) {
    ::fence::UnfenceClusterNetworkRequest req;
    for (const auto& c : cidrs) req.add_cidrs()->set_cidr(c);
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    ::fence::UnfenceClusterNetworkResponse resp;
    grpc::ServerContext ctx;
    return service_->UnfenceClusterNetwork(&ctx, &req, &resp);
  }

  std::vector<std::string> List(grpc::Status* status = nullptr,
                                const std::map<std::string, std::string>& secrets = {}) {
    ::fence::ListClusterFenceRequest req;
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    ::fence::ListClusterFenceResponse resp;
    grpc::ServerContext ctx;
    grpc::Status s = service_->ListClusterFence(&ctx, &req, &resp);
    if (status) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
    std::vector<std::string> out;
    for (const auto& c : resp.cidrs()) out.push_back(c.cidr());
    return out;
  }

  // id -> addresses
  std::map<std::string, std::vector<std::string>> Clients(
      const std::map<std::string, std::string>& params = {}, grpc::Status* status = nullptr) {
    ::fence::GetFenceClientsRequest req;
    for (const auto& [k, v] : params) (*req.mutable_parameters())[k] = v;
    ::fence::GetFenceClientsResponse resp;
    grpc::ServerContext ctx;
    grpc::Status s = service_->GetFenceClients(&ctx, &req, &resp);
    if (status) *status = s;
    EXPECT_TRUE(status != nullptr || s.ok()) << s.error_message();
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& c : resp.clients()) {
      auto& v = out[c.id()];
      for (const auto& a : c.addresses()) v.push_back(a.cidr());
    }
    return out;
  }

  void Record(const std::string& container, const std::string& host,
              const std::vector<std::string>& addresses, const std::string& network = "net1") {
    ASSERT_TRUE(records::RecordStore(dir_.path() + "/cni")
                    .Write(testing::CompleteRecord(network, container, host, addresses))
                    .ok());
  }

  TempDir dir_;
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<client::Client> mp_;
  std::unique_ptr<FenceService> service_;
};

// The seed README's controller, for the tests that need what strict Alcor does not have: the
// seed routes' faults (malformed_ports, update_no_content, reject_updates) or a second subnet.
class FenceServiceSeedTest : public FenceServiceTest {
 protected:
  bool seed() const override { return true; }
};

TEST_F(FenceServiceTest, FenceDisablesExactlyThePortsInside) {
  Port("a1", "10.240.1.10", "node-a");
  Port("a2", "10.240.1.11", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  Start();
  grpc::Status s = Fence({"10.240.1.10", "10.240.1.11/32"});
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"a2", false}, {"b1", true}}));
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.10/32", "10.240.1.11/32"}));
  // Repeating it is harmless: same answer, same store, same ports.
  ASSERT_TRUE(Fence({"10.240.1.10/32", "10.240.1.11"}).ok());
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.10/32", "10.240.1.11/32"}));
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"a2", false}, {"b1", true}}));
}

// Seed: strict Alcor has one subnet, so its ports have no IPv6 address (Options::subnet6_id).
TEST_F(FenceServiceSeedTest, Ipv6FenceCoversDualStackPorts) {
  Port("a1", "10.240.1.10", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  std::string v6_of_a1;
  for (const auto& p : mock_->Ports()) {
    if (p.id != "a1") continue;
    for (const auto& ip : p.ips) {
      if (ip.find(':') != std::string::npos) v6_of_a1 = ip;
    }
  }
  ASSERT_FALSE(v6_of_a1.empty()) << "the mock gives every port an IPv6 address";
  Start();
  ASSERT_TRUE(Fence({v6_of_a1 + "/128"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"b1", true}}));
  ASSERT_TRUE(Fence({"fd00:240::/64"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"b1", false}}));
  EXPECT_EQ(List(), (std::vector<std::string>{"fd00:240::/64", v6_of_a1 + "/128"}));
}

// The store is opened once: a second start would replace it while a pass holds pointers into
// the one it opened. A StartAndWait() after Start() (or after itself) is refused, and the
// service goes on with the store it has.
TEST_F(FenceServiceTest, ASecondStartIsRefusedAndKeepsTheStore) {
  Port("a1", "10.240.1.10", "node-a");
  Start();
  const Status again = service_->StartAndWait();
  EXPECT_EQ(again.code(), Code::kFailedPrecondition) << again.ToString();
  EXPECT_NE(again.message().find("already started"), std::string::npos) << again.message();

  FenceService started(Options());
  started.Start();  // opens the store on its own thread
  EXPECT_EQ(started.StartAndWait().code(), Code::kFailedPrecondition);
  started.Stop();

  ASSERT_TRUE(Fence({"10.240.1.10/32"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}}));
}

TEST_F(FenceServiceTest, BadAndMissingCidrsAreInvalidArgumentNamingTheValue) {
  Port("a1", "10.240.1.10", "node-a");
  Start();
  struct Case {
    std::vector<std::string> cidrs;
    std::string named;
  };
  for (const Case& c : std::vector<Case>{{{}, "cidrs"},
                                         {{"10.240.1.0/24", "10.240.1.1/24"}, "10.240.1.1/24"},
                                         {{"300.1.1.1"}, "300.1.1.1"},
                                         {{""}, "cidrs[0]"},
                                         {{"fd00::/200"}, "fd00::/200"},
                                         {{"10.240.0.0/16", "x"}, "\"x\""}}) {
    grpc::Status s = Fence(c.cidrs);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.named;
    EXPECT_NE(s.error_message().find(c.named), std::string::npos) << s.error_message();
    grpc::Status u = Unfence(c.cidrs);
    EXPECT_EQ(u.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.named;
  }
  // Nothing was stored or disabled by the refused requests.
  EXPECT_TRUE(List().empty());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}}));
}

// The leader reads the port list while the fence is committed; a commit that fails must still
// leave every port as it was, and answer.
TEST_F(FenceServiceTest, AFenceTheStoreRefusesChangesNoPort) {
  Port("a1", "10.240.1.10", "node-a");
  Start();
  {
    // Another writer of the file (an operator's sqlite3) makes every new fence fail to commit.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(Options().fence_store.c_str(), &raw), SQLITE_OK);
    std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
    ASSERT_EQ(sqlite3_exec(db.get(),
                           "CREATE TRIGGER refuse_fences BEFORE INSERT ON fences "
                           "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db.get());
  }
  grpc::Status s = Fence({"10.240.1.0/24"});
  EXPECT_NE(s.error_code(), grpc::StatusCode::OK);
  EXPECT_NE(s.error_message().find("storing the fence"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("refused by the test"), std::string::npos) << s.error_message();
  EXPECT_TRUE(List().empty());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}}));
}

TEST_F(FenceServiceTest, UnfenceReenablesOnlyWhatNoRemainingFenceCovers) {
  Port("a1", "10.240.1.10", "node-a");
  Port("a2", "10.240.1.200", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  Start();
  ASSERT_TRUE(Fence({"10.240.1.0/24", "10.240.1.128/25"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"a2", false}, {"b1", true}}));
  // Lifting the /24 leaves a2 covered by the /25.
  grpc::Status s = Unfence({"10.240.1.0/24"});
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"a2", false}, {"b1", true}}));
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.128/25"}));
  // Unfencing what is not fenced is harmless, also a retry of the same unfence: the /25
  // inside the /24 stays (unfencing matches stored fences exactly).
  ASSERT_TRUE(Unfence({"192.168.0.0/16", "10.240.1.0/24"}).ok());
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.128/25"}));
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"a2", false}, {"b1", true}}));
  ASSERT_TRUE(Unfence({"10.240.1.128/25"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"a2", true}, {"b1", true}}));
  EXPECT_TRUE(List().empty());
}

TEST_F(FenceServiceTest, UnfenceLeavesAPortThatWasDownBeforeTheFenceDown) {
  Port("a1", "10.240.1.10", "node-a");
  Port("q", "10.240.1.66", "node-a");
  // An operator's quarantine, before any fence.
  ASSERT_TRUE(mp_->UpdatePort("q", nlohmann::json{{"admin_state_up", false}}).ok());
  Start();
  ASSERT_TRUE(Fence({"10.240.1.0/24"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"q", false}}));
  // A restart between fence and unfence: the record is in the store, not in memory.
  Start();
  grpc::Status s = Unfence({"10.240.1.0/24"});
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"q", false}}));
  ASSERT_TRUE(service_->Reconcile().ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"q", false}}));
}

TEST_F(FenceServiceTest, OverlappingFencesLiftedInEitherOrderRestoreTheirPorts) {
  Port("a1", "10.240.1.10", "node-a");
  Start();
  // The /25 comes after the /24 disabled a1; lifting the /24 first, then the /25, brings it back.
  ASSERT_TRUE(Fence({"10.240.1.0/24"}).ok());
  ASSERT_TRUE(Fence({"10.240.1.0/25"}).ok());
  ASSERT_TRUE(Unfence({"10.240.1.0/24"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}}));
  ASSERT_TRUE(Unfence({"10.240.1.0/25"}).ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}}));
}

// Seed: the malformed_ports fault (a list with holes) is the seed routes' only.
TEST_F(FenceServiceSeedTest, UnreadablePortsAreSkippedAndReportedTheOthersStillFenced) {
  Port("a1", "10.240.1.10", "node-a");
  Port("a2", "10.240.1.11", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  Start();
  mock::Faults holes;
  holes.malformed_ports = 2;
  mock_->SetFaults(holes);
  auto fence_states = [&] {
    auto store = OpenFenceStore(Options().fence_store);
    EXPECT_TRUE(store.ok());
    auto snap = (*store)->Snapshot();
    EXPECT_TRUE(snap.ok());
    std::vector<std::string> out;
    for (const auto& e : snap->fences) out.push_back(std::string(FenceStateName(e.state)));
    for (const auto& u : snap->unfences) out.push_back("unfence " + CanonicalCidr(u.cidr));
    return out;
  };

  // The readable ports inside are fenced; the answer names the unreadable entries and says the
  // fence is not known enforced.
  grpc::Status s = Fence({"10.240.1.0/24"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN) << s.error_message();
  EXPECT_NE(s.error_message().find("could not be read"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("ports[3]"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("ports[4]"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("10.240.1.0/24 is stored"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"a2", false}, {"b1", true}}));
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.0/24"}));
  // An unreadable entry could be inside the fence: it stays pending, pass after pass.
  EXPECT_FALSE(service_->Reconcile().ok());
  EXPECT_EQ(fence_states(), (std::vector<std::string>{"pending"}));
  // A complete list: the reconcile marks it enforced.
  mock_->SetFaults({});
  ASSERT_TRUE(service_->Reconcile().ok());
  EXPECT_EQ(fence_states(), (std::vector<std::string>{"enforced"}));

  // The unfence re-enables the readable ports but is not done until a complete list.
  mock_->SetFaults(holes);
  s = Unfence({"10.240.1.0/24"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"a2", true}, {"b1", true}}));
  EXPECT_TRUE(List().empty());
  EXPECT_FALSE(service_->Reconcile().ok());
  EXPECT_EQ(fence_states(), (std::vector<std::string>{"unfence 10.240.1.0/24"}));
  mock_->SetFaults({});
  ASSERT_TRUE(service_->Reconcile().ok());
  EXPECT_TRUE(fence_states().empty());
}

// `call`'s answer, failing the test when it takes longer than a generous deadline (a bound
// against a hang or a quadratic pass, not a measurement); prints how long it took.
template <typename F>
grpc::Status AnsweredWithin(const std::string& what, std::chrono::seconds deadline, F call) {
  const auto t0 = std::chrono::steady_clock::now();
  auto answer = std::async(std::launch::async, call);
  EXPECT_EQ(answer.wait_for(deadline), std::future_status::ready)
      << what << " not answered within " << deadline.count() << " s";
  grpc::Status s = answer.get();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  std::cout << "[ timing   ] " << what << ": " << ms << " ms\n";
  return s;
}

// `n` distinct IPv6 host CIDRs of the longest canonical text (43 characters), outside the mock's
// subnets.
std::vector<std::string> LongCidrs(size_t n) {
  std::vector<std::string> out;
  out.reserve(n);
  char buf[64];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "fd12:3456:789a:bcde:f012:3456:%x:%x/128",
                  static_cast<unsigned>(0x1000 + (i >> 12)),
                  static_cast<unsigned>(0x1000 + (i & 0xfff)));
    out.push_back(buf);
  }
  return out;
}

TEST_F(FenceServiceTest, TwoHundredThousandCidrsAreRefusedAtOnceNamingTheLimit) {
  Port("a1", "10.240.1.10", "node-a");
  Start();
  std::vector<std::string> cidrs = LongCidrs(200000);
  cidrs.back() = "10.240.1.10/32";
  for (const bool fence : {true, false}) {
    grpc::Status s =
        AnsweredWithin(fence ? "fence of 200000" : "unfence of 200000", std::chrono::seconds(60),
                       [&] { return fence ? Fence(cidrs) : Unfence(cidrs); });
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("200000"), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find(std::to_string(kMaxCidrsPerRequest)), std::string::npos)
        << s.error_message();
  }
  EXPECT_TRUE(List().empty());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}}));
}

TEST_F(FenceServiceTest, FenceAndUnfenceAtTheLimitAreAppliedAndTheListFitsAClient) {
  Port("a1", "10.240.1.10", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  Start();
  std::vector<std::string> cidrs = LongCidrs(kMaxCidrsPerRequest);
  cidrs.back() = "10.240.1.10/32";
  grpc::Status s = AnsweredWithin("fence of " + std::to_string(cidrs.size()),
                                  std::chrono::seconds(120), [&] { return Fence(cidrs); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"b1", true}}));

  // The whole list in one answer a default gRPC client accepts.
  ::fence::ListClusterFenceRequest req;
  ::fence::ListClusterFenceResponse resp;
  grpc::ServerContext ctx;
  ASSERT_TRUE(service_->ListClusterFence(&ctx, &req, &resp).ok());
  EXPECT_EQ(static_cast<size_t>(resp.cidrs_size()), kMaxStoredFences);
  EXPECT_LE(resp.ByteSizeLong(), kMaxListResponseBytes);

  // One more fence is refused, naming the limit; a repeat of a stored one is not "more".
  s = Fence({"10.240.2.10/32"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find(std::to_string(kMaxStoredFences)), std::string::npos)
      << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"b1", true}}));
  EXPECT_TRUE(Fence({"10.240.1.10/32"}).ok());

  s = AnsweredWithin("unfence of " + std::to_string(cidrs.size()), std::chrono::seconds(120),
                     [&] { return Unfence(cidrs); });
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"b1", true}}));
  EXPECT_TRUE(List().empty());
}

TEST_F(FenceServiceTest, AListTooLargeForAClientIsRefusedNamingTheCount) {
  // A store filled past the limit by other means (the limit is the service's, not the store's).
  {
    auto store = OpenFenceStore(Options().fence_store);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    std::vector<Cidr> many;
    for (const auto& text : LongCidrs(100000)) many.push_back(*ParseFenceCidr(text));
    ASSERT_TRUE((*store)->AddFences(many).ok());
  }
  Port("a1", "10.240.1.10", "node-a");
  Start();
  grpc::Status s;
  EXPECT_TRUE(List(&s).empty());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("100000 fences"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("4194304"), std::string::npos) << s.error_message();
}

// Seed: the update_no_content fault is the seed routes' only.
TEST_F(FenceServiceSeedTest, AControllerAnsweringUpdatesWith204IsASuccess) {
  Port("a1", "10.240.1.10", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  Start();
  mock::Faults f;
  f.update_no_content = true;
  mock_->SetFaults(f);
  grpc::Status s = Fence({"10.240.1.0/24"});
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"b1", true}}));
  s = Unfence({"10.240.1.0/24"});
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"b1", true}}));
  // Nothing left pending: the reconcile has nothing to do.
  auto r = service_->Reconcile();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->disabled + r->enabled + r->failed, 0);
}

TEST_F(FenceServiceTest, FenceSurvivesARestartAndPortsStayDisabled) {
  Port("a1", "10.240.1.10", "node-a");
  Start();
  ASSERT_TRUE(Fence({"10.240.1.0/24"}).ok());
  service_->Stop();
  service_.reset();
  // A new server process on the same store.
  Start();
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.0/24"}));
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}}));
}

TEST_F(FenceServiceTest, MizarMpDownKeepsTheIntentAndTheReconcileFinishesIt) {
  Port("a1", "10.240.1.10", "node-a");
  Port("a2", "10.240.1.11", "node-a");
  Start();
  mock::Faults f;
  f.close_connections = 1000;
  mock_->SetFaults(f);
  grpc::Status s = Fence({"10.240.1.0/24"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_NE(s.error_message().find("10.240.1.0/24"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("stored"), std::string::npos) << s.error_message();
  // The intent is kept...
  EXPECT_EQ(List(), (std::vector<std::string>{"10.240.1.0/24"}));
  mock_->SetFaults({});
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"a2", true}}));
  // ...and the reconcile completes it.
  auto r = service_->Reconcile();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->disabled, 2);
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"a2", false}}));
  auto store = OpenFenceStore(Options().fence_store);
  ASSERT_TRUE(store.ok());
  auto fences = (*store)->ListFences();
  ASSERT_TRUE(fences.ok());
  ASSERT_EQ(fences->size(), 1u);
  EXPECT_EQ((*fences)[0].state, FenceState::kEnforced);

  // An interrupted unfence is finished the same way.
  mock_->SetFaults(f);
  s = Unfence({"10.240.1.0/24"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_TRUE(List().empty());
  mock_->SetFaults({});
  ASSERT_TRUE(service_->Reconcile().ok());
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}, {"a2", true}}));
}

// ------------------------------------------------------------- port updates over N connections

// Every `stride`-th of `n` ports: their /32s and ids.
struct Chosen {
  std::vector<std::string> cidrs;
  std::set<std::string> ids;
};
Chosen EveryNth(const std::vector<std::string>& ips, size_t stride) {
  Chosen out;
  for (size_t i = 0; i < ips.size(); i += stride) {
    out.cidrs.push_back(ips[i] + "/32");
    out.ids.insert("p" + std::to_string(i));
  }
  return out;
}

TEST_F(FenceServiceTest, ParallelUpdatesFenceAndUnfenceExactlyTheFencedPorts) {
  const std::vector<std::string> ips = ManyPorts(900);
  const Chosen fenced = EveryNth(ips, 3);  // 300 ports
  FenceOptions o = Options();
  o.update_connections = 8;
  Start(o);
  uint64_t before = mock_->requests();
  grpc::Status s = Fence(fenced.cidrs);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // One port list and one update per fenced port, however many connections carried them.
  EXPECT_EQ(mock_->requests() - before, 1 + fenced.ids.size());
  EXPECT_EQ(DownPorts(), fenced.ids);
  EXPECT_EQ(List().size(), fenced.cidrs.size());

  before = mock_->requests();
  s = Unfence(fenced.cidrs);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(mock_->requests() - before, 1 + fenced.ids.size());
  EXPECT_TRUE(DownPorts().empty());
  EXPECT_TRUE(List().empty());
}

// Seed: the reject_updates fault is the seed routes' only.
TEST_F(FenceServiceSeedTest, RefusedParallelUpdatesAreCountedNamedAndFinishedByTheReconcile) {
  const std::vector<std::string> ips = ManyPorts(600);
  const Chosen fenced = EveryNth(ips, 3);  // 200 ports
  FenceOptions o = Options();
  o.update_connections = 8;
  Start(o);
  mock::Faults f;
  f.reject_updates = 7;
  mock_->SetFaults(f);
  grpc::Status s = Fence(fenced.cidrs);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN) << s.error_message();
  EXPECT_NE(s.error_message().find("7 of 200 port update(s) failed"), std::string::npos)
      << s.error_message();
  // Exactly the refused ones are still up, each named in the answer; nothing else was lost.
  const std::set<std::string> down = DownPorts();
  std::set<std::string> still_up;
  for (const std::string& id : fenced.ids) {
    if (down.count(id) == 0) still_up.insert(id);
  }
  EXPECT_EQ(still_up.size(), 7u);
  EXPECT_EQ(down.size(), 193u);
  for (const std::string& id : down) EXPECT_EQ(fenced.ids.count(id), 1u) << id;
  for (const std::string& id : still_up) {
    EXPECT_NE(s.error_message().find("port " + id + " ("), std::string::npos) << id;
  }
  auto r = service_->Reconcile();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->disabled, 7);
  EXPECT_EQ(DownPorts(), fenced.ids);

  // The same for the unfence: the refused ports stay down until the reconcile.
  mock_->SetFaults(f);
  s = Unfence(fenced.cidrs);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN) << s.error_message();
  EXPECT_NE(s.error_message().find("7 of 200 port update(s) failed"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(DownPorts().size(), 7u);
  r = service_->Reconcile();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->enabled, 7);
  EXPECT_TRUE(DownPorts().empty());
}

// The plan of one stored fence over the ports at the mock.
EnforcementPlan PlanOneFence(client::Client& mp, const std::string& cidr) {
  StoreSnapshot snap;
  FenceEntry e;
  e.cidr = *ParseFenceCidr(cidr);
  snap.fences.push_back(e);
  auto ports = mp.ListPorts();
  EXPECT_TRUE(ports.ok()) << ports.status().ToString();
  return PlanEnforcement(snap, ports.ok() ? *ports : client::PortList{});
}

// More clients of the mock, as the service makes them.
// Clients of the mock that know its generation from `first`, as FenceService gives its pass's
// clients what the list found out: they send updates only.
ClientFactory MockClients(const std::string& url, const client::Client& first) {
  return [url, generation = first.generation_found()]() -> Result<std::unique_ptr<client::Client>> {
    client::ClientConfig cc;
    cc.base_url = url;
    cc.known_generation = generation;
    return client::Client::Create(cc);
  };
}

TEST_F(FenceServiceTest, LeadershipLostMidPassStopsFurtherUpdates) {
  ManyPorts(300);
  const EnforcementPlan plan = PlanOneFence(*mp_, "10.240.0.0/16");
  ASSERT_EQ(plan.changes.size(), 300u);
  std::atomic<int> leads_for{120};  // the lease covers 120 more updates, then it is lost
  const uint64_t before = mock_->requests();
  const AppliedPlan applied = ApplyPlan(
      PassConnections{.first = mp_.get(), .more = MockClients(mock_->base_url(), *mp_), .count = 8},
      plan, [&] { return leads_for.fetch_sub(1) > 0; });
  EXPECT_EQ(mock_->requests() - before, 120u);  // nothing went out once it said no
  EXPECT_EQ(DownPorts().size(), 120u);
  EXPECT_EQ(applied.report.disabled, 120);
  EXPECT_EQ(applied.report.failed, 180);
  ASSERT_EQ(applied.left.size(), 180u);
  EXPECT_EQ(applied.first_error.code(), Code::kUnavailable);
  EXPECT_TRUE(applied.report.enforced.empty());
  // Reported in the plan's order, whichever connection got there first.
  size_t at = 0;
  for (const std::string& left : applied.left) {
    while (at < plan.changes.size() && plan.changes[at].label + " to disable" != left) ++at;
    ASSERT_LT(at, plan.changes.size()) << left << " is out of the plan's order";
  }
}

TEST_F(FenceServiceTest, ConnectionsThatCannotBeMadeLeaveTheirShareToTheOthers) {
  ManyPorts(100);
  const EnforcementPlan plan = PlanOneFence(*mp_, "10.240.0.0/16");
  ClientFactory broken = []() -> Result<std::unique_ptr<client::Client>> {
    return FailedPreconditionError("Mizar-MP client: no such CA file");
  };
  const AppliedPlan applied = ApplyPlan(
      PassConnections{.first = mp_.get(), .more = broken, .count = 8}, plan, [] { return true; });
  EXPECT_EQ(applied.report.disabled, 100);
  EXPECT_EQ(applied.report.failed, 0);
  EXPECT_EQ(applied.report.enforced.size(), 1u);
  EXPECT_EQ(DownPorts().size(), 100u);
}

TEST_F(FenceServiceTest, NoConnectionAtAllLeavesEveryChangeWithItsError) {
  ManyPorts(50);
  const EnforcementPlan plan = PlanOneFence(*mp_, "10.240.0.0/16");
  ClientFactory broken = []() -> Result<std::unique_ptr<client::Client>> {
    return FailedPreconditionError("Mizar-MP client: no such CA file");
  };
  const uint64_t before = mock_->requests();
  const AppliedPlan applied = ApplyPlan(
      PassConnections{.first = nullptr, .more = broken, .count = 4}, plan, [] { return true; });
  EXPECT_EQ(mock_->requests(), before);
  EXPECT_EQ(applied.report.failed, 50);
  EXPECT_EQ(applied.left.size(), 50u);
  EXPECT_NE(applied.first_error.message().find("no such CA file"), std::string::npos)
      << applied.first_error.ToString();
  EXPECT_TRUE(applied.report.enforced.empty());
  EXPECT_TRUE(DownPorts().empty());
}

TEST_F(FenceServiceTest, UpdatesOnOtherConnectionsLogUnderTheCallersRequestId) {
  ManyPorts(40);
  const EnforcementPlan plan = PlanOneFence(*mp_, "10.240.0.0/16");
  const std::string log_path = dir_.path() + "/addons.log";
  ASSERT_TRUE(log::SetFile(log_path).ok());
  const log::Level level = log::GetLevel();
  log::SetLevel(log::Level::kInfo);
  log::SetThreadContext("req=feedc0de");
  const AppliedPlan applied = ApplyPlan(
      PassConnections{.first = mp_.get(), .more = MockClients(mock_->base_url(), *mp_), .count = 4},
      plan, [] { return true; });
  log::SetThreadContext("");
  log::SetLevel(level);
  ASSERT_TRUE(log::SetFile("").ok());
  EXPECT_EQ(applied.report.disabled, 40);
  auto text = ReadFile(log_path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  int disabled_lines = 0;
  for (const std::string& line : Split(*text, '\n')) {
    if (line.find(" disabled port ") == std::string::npos) continue;
    ++disabled_lines;
    EXPECT_NE(line.find(" req=feedc0de "), std::string::npos) << line;
  }
  EXPECT_EQ(disabled_lines, 40);
}

TEST_F(FenceServiceTest, OneConnectionAndEightMakeTheSameReport) {
  ManyPorts(200);
  const EnforcementPlan plan = PlanOneFence(*mp_, "10.240.0.0/16");
  auto apply = [&](int count) {
    // A port deleted meanwhile is released, not failed, whichever connection finds it gone.
    EXPECT_TRUE(mp_->DeletePort("p17").ok());
    AppliedPlan applied = ApplyPlan(
        PassConnections{
            .first = mp_.get(), .more = MockClients(mock_->base_url(), *mp_), .count = count},
        plan, [] { return true; });
    return applied;
  };
  const AppliedPlan one = apply(1);
  for (const std::string& id : DownPorts()) {
    EXPECT_TRUE(mp_->UpdatePort(id, nlohmann::json{{"admin_state_up", true}}).ok());
  }
  const AppliedPlan eight = apply(8);
  EXPECT_EQ(one.report.disabled, 199);
  EXPECT_EQ(eight.report.disabled, one.report.disabled);
  EXPECT_EQ(eight.report.failed, one.report.failed);
  EXPECT_EQ(eight.report.enforced, one.report.enforced);
  EXPECT_EQ(eight.newly_enforced, one.newly_enforced);
  EXPECT_EQ(eight.released, one.released);
  EXPECT_EQ(eight.left, one.left);
}

TEST_F(FenceServiceTest, ReconcileDisablesPortsCreatedLaterInsideAFence) {
  Port("a1", "10.240.1.10", "node-a");
  FenceOptions o = Options();
  o.reconcile_interval = std::chrono::milliseconds(50);
  Start(o);
  ASSERT_TRUE(Fence({"10.240.1.0/24"}).ok());
  Port("a3", "10.240.1.77", "node-a");
  Port("b2", "10.240.2.77", "node-b");
  // The periodic pass (not a call from the test) disables it; generous bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (AdminUp()["a3"] && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", false}, {"a3", false}, {"b2", true}}));
  EXPECT_GE(service_->reconcile_passes(), 2u);
}

TEST_F(FenceServiceTest, SecretsMustMatch) {
  Port("a1", "10.240.1.10", "node-a");
  FenceOptions o = Options();
  o.expected_secrets = {{"user", "fencer"}, {"key", "s3cr3t-value"}};
  Start(o);
  const std::map<std::string, std::string> good = {{"user", "fencer"}, {"key", "s3cr3t-value"}};
  const std::map<std::string, std::string> bad = {{"user", "fencer"}, {"key", "wrong"}};
  grpc::Status s = Fence({"10.240.1.0/24"}, bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message().find("wrong"), std::string::npos) << "a value leaked";
  EXPECT_EQ(s.error_message().find("s3cr3t"), std::string::npos) << "a value leaked";
  EXPECT_EQ(Fence({"10.240.1.0/24"}).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Unfence({"10.240.1.0/24"}, bad).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status ls;
  List(&ls, bad);
  EXPECT_EQ(ls.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ::fence::GetFenceClientsRequest req;
  ::fence::GetFenceClientsResponse resp;
  grpc::ServerContext ctx;
  EXPECT_EQ(service_->GetFenceClients(&ctx, &req, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(AdminUp(), (std::map<std::string, bool>{{"a1", true}}));
  ASSERT_TRUE(Fence({"10.240.1.0/24"}, good).ok());
  EXPECT_EQ(List(&ls, good), (std::vector<std::string>{"10.240.1.0/24"}));
}

TEST_F(FenceServiceTest, FenceClientsFromRecordsAndNodeAddresses) {
  Record("c1", "node-a", {"10.240.1.10/16"});
  Record("c2", "node-a", {"10.240.1.11/16"});
  Record("c3", "node-b", {"10.240.2.10/16", "fd00:240::5/64"}, "net2");
  Record("c4", "", {"10.240.3.1/16"});  // no host id in the record: the configured hostId
  FenceOptions o = Options();
  o.host_id = "node-c";
  o.node_addresses = {{"node-a", {"192.168.10.4/24"}}, {"node-d", {"172.16.0.0/30"}}};
  Start(o);
  EXPECT_EQ(Clients(), (std::map<std::string, std::vector<std::string>>{
                           {"node-a", {"10.240.1.10/31", "192.168.10.4/32"}},
                           {"node-b", {"10.240.2.10/32", "fd00:240::5/128"}},
                           {"node-c", {"10.240.3.1/32"}},
                           {"node-d", {"172.16.0.0/30"}}}));
  EXPECT_EQ(Clients({{kHostIdParameter, "node-b"}}),
            (std::map<std::string, std::vector<std::string>>{
                {"node-b", {"10.240.2.10/32", "fd00:240::5/128"}}}));
  EXPECT_TRUE(Clients({{kHostIdParameter, "nobody"}}).empty());
  grpc::Status s;
  Clients({{kHostIdParameter, ""}}, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(FenceServiceTest, FenceClientsFromThePortList) {
  Port("a1", "10.240.1.10", "node-a");
  Port("a2", "10.240.1.11", "node-a");
  Port("b1", "10.240.2.10", "node-b");
  Record("c9", "node-e", {"10.240.9.9/16"});
  FenceOptions o = Options();
  o.use_port_list = true;
  Start(o);
  auto clients = Clients();
  ASSERT_EQ(clients.size(), 3u);
  EXPECT_EQ(clients["node-a"], (std::vector<std::string>{"10.240.1.10/31"}));
  EXPECT_EQ(clients["node-b"], (std::vector<std::string>{"10.240.2.10/32"}));
  EXPECT_EQ(clients["node-e"], (std::vector<std::string>{"10.240.9.9/32"}));
  auto only_b = Clients({{kHostIdParameter, "node-b"}});
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_EQ(only_b["node-b"], (std::vector<std::string>{"10.240.2.10/32"}));
  // Mizar-MP unreachable: UNAVAILABLE naming it.
  mock::Faults f;
  f.close_connections = 1000;
  mock_->SetFaults(f);
  grpc::Status s;
  Clients({}, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_NE(s.error_message().find("Mizar-MP"), std::string::npos) << s.error_message();
  mock_->SetFaults({});
}

TEST_F(FenceServiceTest, UnusableStoreMakesProbeNotReadyAndRpcsFail) {
  // A directory where the database file should be.
  FenceOptions o = Options();
  ASSERT_TRUE(MakeDirs(o.fence_store).ok());
  service_ = std::make_unique<FenceService>(o);
  EXPECT_FALSE(service_->StoreReadiness().ready) << "opening";
  EXPECT_FALSE(service_->StartAndWait().ok());
  addons::Readiness r = service_->StoreReadiness();
  EXPECT_FALSE(r.error.ok());
  EXPECT_NE(r.error.message().find(o.fence_store), std::string::npos) << r.error.message();
  grpc::Status s = Fence({"10.240.1.0/24"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();

  addons::IdentityService identity(addons::IdentityOptions{}, {service_.get()});
  identity::ProbeResponse resp;
  grpc::ServerContext ctx;
  // Not ready, and not an error: the CSI-Addons sidecar would exit on one.
  grpc::Status p = identity.Probe(&ctx, nullptr, &resp);
  EXPECT_TRUE(p.ok()) << p.error_message();
  ASSERT_TRUE(resp.has_ready());
  EXPECT_FALSE(resp.ready().value());
  const addons::ReadinessReport report = identity.CheckReady();
  EXPECT_FALSE(report.ready);
  EXPECT_EQ(report.Reason().rfind("fence store: ", 0), 0u) << report.Reason();
  EXPECT_NE(report.Reason().find(o.fence_store), std::string::npos) << report.Reason();
}

TEST_F(FenceServiceTest, IdentityAdvertisesFencingAndProbesReady) {
  Start();
  addons::IdentityService identity(addons::IdentityOptions{}, {service_.get()});
  identity::GetCapabilitiesResponse advertised;
  grpc::ServerContext ctx;
  ASSERT_TRUE(identity.GetCapabilities(&ctx, nullptr, &advertised).ok());
  std::set<std::string> caps;
  for (const auto& c : advertised.capabilities()) {
    if (c.has_network_fence()) {
      caps.insert(identity::Capability::NetworkFence::Type_Name(c.network_fence().type()));
    }
  }
  // Not GET_CLIENTS_TO_FENCE: the CSI-Addons controller would file this replica's answer (every
  // node's clients) under the CSIAddonsNode of the replica's own node. It is still served.
  EXPECT_EQ(caps, (std::set<std::string>{"NETWORK_FENCE"}));
  ::fence::GetFenceClientsRequest asked;
  ::fence::GetFenceClientsResponse answered;
  const grpc::Status served = service_->GetFenceClients(&ctx, &asked, &answered);
  EXPECT_TRUE(served.ok()) << served.error_message();
  const addons::ReadinessReport ready = identity.CheckReady();
  EXPECT_TRUE(ready.ready) << ready.Reason();
}

// The FenceController owns the Mizar-MP check Probe reports for it (the framework knows no
// Mizar-MP): after the fence store, named as the metric labels it, failing while Mizar-MP drops
// every connection.
TEST_F(FenceServiceTest, ReportsMizarMpToProbe) {
  client::MizarMpCheckOptions mp;
  mp.mizarmp = Options().mizarmp;
  mp.subnet_id = kSubnet;
  mp.cache_ttl = std::chrono::milliseconds(0);  // every evaluation asks
  service_ = std::make_unique<FenceService>(Options(), mp);
  ASSERT_TRUE(service_->StartAndWait().ok());
  std::vector<std::string> names;
  for (const auto& check : service_->readiness_checks()) names.push_back(check.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fence store", "Mizar-MP"}));
  addons::IdentityService identity(addons::IdentityOptions{}, {service_.get()});
  const addons::ReadinessReport up = identity.CheckReady();
  EXPECT_TRUE(up.ready) << up.Reason();

  mock::Faults f;
  f.close_connections = 1000;
  mock_->SetFaults(f);
  const addons::ReadinessReport down = identity.CheckReady();
  mock_->SetFaults({});
  EXPECT_FALSE(down.ready);
  EXPECT_EQ(down.Reason().rfind("Mizar-MP at " + mock_->base_url() + " is unreachable", 0), 0u)
      << down.Reason();
  EXPECT_TRUE(identity.CheckReady().ready);
}

TEST_F(FenceServiceTest, RegistersAsAnAddonsService) {
  FenceService& service = Start();
  addons::AddonsService& as_addon = service;
  EXPECT_EQ(as_addon.grpc_service(), static_cast<grpc::Service*>(&service));
  EXPECT_EQ(as_addon.health_name(), "fence.FenceController");
  auto checks = as_addon.readiness_checks();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].name, "fence store");
  addons::Readiness ready = checks[0].check();
  EXPECT_TRUE(ready.ready);
  EXPECT_TRUE(ready.error.ok()) << ready.error.ToString();
}

}  // namespace
}  // namespace mizarmp::fence
