// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Replicas of mizarmp-addons sharing one fence state in a real 3-member etcd cluster on loopback
// (tests/support/etcd_cluster.h), against the in-process mizarmp-mock. The replicas are processes,
// so they can be killed with SIGKILL; they are driven over their unix sockets through the
// generated stubs. What is asserted is what an operator sees: the fences each replica lists, the
// ports' admin state at Mizar-MP, the codes of the RPCs while etcd is losing members, and, from
// the mock's journal of port updates (each naming the replica in its User-Agent), that two
// replicas never acted in overlapping periods.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "fence/fence.grpc.pb.h"
#include "health.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/scrape.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
// Alcor's network_id is the VPC; the subnet goes in fixed_ips.
constexpr const char* kVpc = client::kDefaultVpcId;
constexpr const char* kFenced = "10.242.0.0/28";
// The replicas' lease. The stated bound for a change to be enforced after the leader is lost is
// 4/3 of it (a new election) plus the store poll and one pass.
constexpr std::chrono::seconds kLeaseTtl{3};
// The bound plus generous room for a loaded 2-core CI machine: a hang guard, not a benchmark
// (bench/ measures the failover time).
constexpr auto kFailoverDeadline = kLeaseTtl * 4 / 3 + 20s;

template <typename F>
bool WaitFor(F done, Clock::duration timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

std::string Text(const grpc::Status& s) {
  return std::to_string(static_cast<int>(s.error_code())) + " " + s.error_message();
}

// One mizarmp-addons replica: its process, its socket and its stubs.
struct Replica {
  std::string name;
  std::string dir;
  testing::Daemon process;
  std::unique_ptr<identity::Identity::Stub> identity;
  std::unique_ptr<::fence::FenceController::Stub> fence;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
  int metrics_port = 0;

  std::string socket() const { return dir + "/csi-addons.sock"; }
  std::string Log() const { return testing::LogAt(dir + "/addons.log"); }
  // How many times its fence loop has looked at the store so far.
  double Looks() const {
    return testing::ScrapeMetrics(metrics_port)["mizarmp_addons_fence_looks_total"];
  }
  // Waits until its fence loop has looked at the store `n` more times (60 s at most).
  bool WaitForLooks(int n) const {
    const double target = Looks() + n;
    return WaitFor([&] { return Looks() >= target; }, 60s);
  }
  void Kill() {
    ::kill(process.pid(), SIGKILL);
    process.Wait(20s);
  }

  grpc::Status Fence(const std::vector<std::string>& cidrs, bool unfence = false,
                     std::chrono::seconds deadline = 30s) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    if (unfence) {
      ::fence::UnfenceClusterNetworkRequest req;
      for (const auto& c : cidrs) req.add_cidrs()->set_cidr(c);
      ::fence::UnfenceClusterNetworkResponse resp;
      return this->fence->UnfenceClusterNetwork(&ctx, req, &resp);
    }
    ::fence::FenceClusterNetworkRequest req;
    for (const auto& c : cidrs) req.add_cidrs()->set_cidr(c);
    ::fence::FenceClusterNetworkResponse resp;
    return this->fence->FenceClusterNetwork(&ctx, req, &resp);
  }

  // The listed fences, or the RPC's error as "!<code> <message>".
  std::vector<std::string> List() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    ::fence::ListClusterFenceRequest req;
    ::fence::ListClusterFenceResponse resp;
    const grpc::Status s = fence->ListClusterFence(&ctx, req, &resp);
    if (!s.ok()) return {"!" + Text(s)};
    std::vector<std::string> out;
    for (const auto& c : resp.cidrs()) out.push_back(c.cidr());
    return out;
  }

  // Probe answers ready=false, not an error, and its trailing metadata names etcd (within 30 s:
  // a poll of the store and its call timeouts). The CSI-Addons sidecar exits on any Probe
  // error but DEADLINE_EXCEEDED (kubernetes-csi-addons sidecar/internal/client/client.go).
  void ExpectProbeToNameEtcd() {
    bool ready = true;
    std::string why;
    grpc::Status probe;
    EXPECT_TRUE(WaitFor([&] { return (probe = Probe(&ready, &why)).ok() && !ready; }, 30s))
        << name << ": Probe without etcd: " << Text(probe) << " ready=" << ready;
    EXPECT_NE(why.find("fence store: "), std::string::npos) << why;
    EXPECT_NE(why.find("etcd"), std::string::npos) << why;
  }

  // Probe: its status, whether it said ready and why not (its trailing metadata).
  grpc::Status Probe(bool* ready, std::string* why = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    identity::ProbeRequest req;
    identity::ProbeResponse resp;
    const grpc::Status s = identity->Probe(&ctx, req, &resp);
    *ready = resp.has_ready() && resp.ready().value();
    if (why != nullptr) {
      const auto& trailing = ctx.GetServerTrailingMetadata();
      auto it = trailing.find("mizarmp-not-ready");
      why->assign(it == trailing.end() ? "" : std::string(it->second.data(), it->second.size()));
    }
    return s;
  }

  // grpc.health.v1 Check of `service` on the replica's socket: the status's name, or "!<code>".
  std::string Health(const std::string& service) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    const grpc::Status s = health->Check(&ctx, req, &resp);
    if (!s.ok()) return "!" + Text(s);
    return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  }
};

// One entry of the mock's journal of port updates.
struct Update {
  int64_t seq = 0;
  std::string port;
  bool up = false;
  std::string replica;  // from the User-Agent "mizarmp-addons/<version> (<replica>)"
};

class FenceHaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_ETCD();
    etcd_ = std::make_unique<testing::EtcdCluster>(3);
    ASSERT_EQ(etcd_->error(), "");
    mock::Options o;
    o.cidr = "10.242.0.0/24";
    // The real Alcor controller's behaviour (mock-server/strict.h): the generation whose port
    // list the replicas fence from.
    o.strict = true;
    o.dialect = mock::Dialect::kAlcor;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
    client::ClientConfig cc;
    cc.base_url = mock_->base_url();
    cc.project_id = kProject;
    auto c = client::Client::Create(cc);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    mp_ = std::move(*c);
  }

  void TearDown() override {
    if (HasFailure()) {
      for (auto& r : replicas_) std::cerr << "---- " << r->name << " log:\n" << r->Log() << "\n";
    }
    replicas_.clear();
  }

  // Starts replica `name` against `location` (the whole cluster or one member), passing over
  // the fences every `reconcile` besides when the store changes, and waits until Probe says it
  // is ready.
  Replica& StartReplica(const std::string& name, const std::string& location,
                        std::chrono::milliseconds reconcile = 1s) {
    auto r = std::make_unique<Replica>();
    r->name = name;
    r->dir = dir_.path() + "/" + name;
    EXPECT_TRUE(MakeDirs(r->dir + "/cni", 0700).ok());
    const json config = {
        {"endpoint", "unix://" + r->socket()},
        {"mpurl", mock_->base_url()},
        {"project", kProject},
        {"subnet", kSubnet},
        {"stateDir", r->dir + "/cni"},
        {"fenceStore", location},
        {"replicaId", name},
        {"leaseTtlSeconds", kLeaseTtl.count()},
        {"etcdCallTimeoutMs", 1000},
        {"mpConnectTimeoutMs", 500},
        {"mpRequestTimeoutMs", 1000},
        {"reconcileIntervalMs", reconcile.count()},
        // No background readiness check (a Mizar-MP GET) once ready: the tests count the
        // mock's requests, and Probe calls evaluate readiness themselves.
        {"readinessIntervalMs", 3600000},
        {"logLevel", "debug"},
        {"logFile", r->dir + "/addons.log"},
        {"metricsAddress", "127.0.0.1:0"},
    };
    const std::string path = r->dir + "/addons.json";
    EXPECT_TRUE(WriteFileAtomic(path, config.dump(2)).ok());
    EXPECT_TRUE(r->process.Start({testing::BinDir() + "/mizarmp-addons", "--config", path},
                                 r->dir + "/addons.out"));
    auto channel = grpc::CreateChannel("unix:" + r->socket(), grpc::InsecureChannelCredentials());
    r->identity = identity::Identity::NewStub(channel);
    r->fence = ::fence::FenceController::NewStub(channel);
    r->health = grpc::health::v1::Health::NewStub(channel);
    bool ready = false;
    grpc::Status last;
    EXPECT_TRUE(WaitFor([&] { return (last = r->Probe(&ready)).ok() && ready; }, 30s))
        << name << " never became ready: " << Text(last) << "\n"
        << r->Log();
    r->metrics_port = testing::PortFromLog(r->dir + "/addons.log", "serving Prometheus metrics on ");
    EXPECT_GT(r->metrics_port, 0) << name << " serves no metrics\n" << r->Log();
    replicas_.push_back(std::move(r));
    return *replicas_.back();
  }

  // A port at `ip`, up unless `up` is false.
  std::string AddPort(const std::string& ip, bool up = true) {
    client::PortSpec spec;
    spec.id = "port-" + ip;
    spec.name = "k8s_" + spec.id;
    spec.project_id = kProject;
    spec.network_id = kVpc;
    spec.host_id = "node-a";
    spec.admin_state_up = up;
    spec.fixed_ips.push_back({kSubnet, ip});
    auto port = mp_->CreatePort(spec);
    EXPECT_TRUE(port.ok()) << ip << ": " << port.status().ToString();
    return port.ok() ? port->id : "";
  }

  bool Up(const std::string& port_id) {
    auto port = mp_->GetPort(port_id);
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    return port.ok() && port->admin_state_up;
  }

  // How many REST requests the mock has answered.
  int64_t MockRequests() {
    httplib::Client http(mock_->base_url());
    auto res = http.Get("/mock/state");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
    return res ? json::parse(res->body).at("requests").get<int64_t>() : -1;
  }

  std::vector<Update> Journal() {
    httplib::Client http(mock_->base_url());
    auto res = http.Get("/mock/requests");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
    std::vector<Update> out;
    if (!res) return out;
    const json doc = json::parse(res->body);
    for (const auto& e : doc.at("updates")) {
      Update u;
      u.seq = e.at("seq").get<int64_t>();
      u.port = e.at("port").get<std::string>();
      u.up = e.value("admin_state_up", false);
      const std::string agent = e.value("user_agent", "");
      const size_t open = agent.find('(');
      if (open != std::string::npos) u.replica = agent.substr(open + 1, agent.size() - open - 2);
      out.push_back(u);
    }
    return out;
  }

  // Every update by `before` came before every update by `after` (nothing interleaved), and
  // each replica updated at least once.
  void ExpectActedOneAfterTheOther(const std::string& before, const std::string& after) {
    int64_t last_before = -1;
    int64_t first_after = -1;
    const std::vector<Update> journal = Journal();
    std::string shown;
    for (const Update& u : journal) {
      shown += std::to_string(u.seq) + " " + u.port + (u.up ? " up by " : " down by ") + u.replica +
               "\n";
    }
    SCOPED_TRACE("the mock's journal of port updates:\n" + shown);
    for (const Update& u : journal) {
      if (u.replica == before) last_before = u.seq;
      if (u.replica == after && first_after < 0) first_after = u.seq;
    }
    EXPECT_GE(last_before, 0) << before << " never updated a port";
    EXPECT_GE(first_after, 0) << after << " never updated a port";
    EXPECT_LT(last_before, first_after)
        << before << " updated a port (seq " << last_before << ") after " << after
        << " had started (seq " << first_after << ")";
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::EtcdCluster> etcd_;
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<client::Client> mp_;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

TEST_F(FenceHaTest, TheSurvivingReplicaKeepsTheFenceEnforcesItAndUnfencesExactly) {
  Replica& r1 = StartReplica("replica-1", etcd_->Location());
  const std::string inside = AddPort("10.242.0.5");
  const std::string quarantined = AddPort("10.242.0.6", /*up=*/false);  // down before the fence
  const std::string outside = AddPort("10.242.0.100");
  ASSERT_TRUE(r1.Fence({kFenced}).ok());
  Replica& r2 = StartReplica("replica-2", etcd_->Location());
  EXPECT_FALSE(Up(inside));
  EXPECT_TRUE(Up(outside));

  r1.Kill();
  EXPECT_EQ(r2.List(), std::vector<std::string>{kFenced});
  const auto killed = Clock::now();
  const std::string later = AddPort("10.242.0.7");  // a pod added inside the fence afterwards
  EXPECT_TRUE(WaitFor([&] { return !Up(later); }, kFailoverDeadline))
      << "replica-2 never disabled the port added inside the fence";
  std::cout << "port added after the leader's kill -9 disabled after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed).count()
            << " ms (lease " << kLeaseTtl.count() << " s)\n";

  const grpc::Status unfenced = r2.Fence({kFenced}, /*unfence=*/true);
  ASSERT_TRUE(unfenced.ok()) << Text(unfenced);
  EXPECT_TRUE(Up(inside));
  EXPECT_TRUE(Up(later));
  EXPECT_FALSE(Up(quarantined)) << "the unfence re-enabled a port the fence never disabled";
  EXPECT_TRUE(Up(outside));
  EXPECT_EQ(r2.List(), std::vector<std::string>{});
  ExpectActedOneAfterTheOther("replica-1", "replica-2");
}

// The leader's pass accounts for its own writes: after a fence it enforced, it lists no ports
// again while nothing else changes (the interval's pass is a minute away), yet a fence another
// replica stores is enforced by the leader's next pass.
TEST_F(FenceHaTest, TheLeaderPassesAgainForAnotherReplicasChangeNotForItsOwn) {
  Replica& r1 = StartReplica("replica-1", etcd_->Location(), 60s);  // leads: it started first
  Replica& r2 = StartReplica("replica-2", etcd_->Location(), 60s);
  const std::string first = AddPort("10.242.0.5");
  const std::string second = AddPort("10.242.0.20");
  ASSERT_TRUE(r1.Fence({kFenced}).ok());
  EXPECT_FALSE(Up(first));
  const int64_t after_fence = MockRequests();
  ASSERT_TRUE(r1.WaitForLooks(5)) << "the leader's loop stopped looking at the store";
  EXPECT_EQ(MockRequests(), after_fence) << "the leader passed again over its own fence";

  const grpc::Status stored_by_follower = r2.Fence({"10.242.0.16/28"});
  ASSERT_TRUE(stored_by_follower.ok()) << Text(stored_by_follower);
  EXPECT_FALSE(Up(second));
  EXPECT_TRUE(Up(AddPort("10.242.0.100")));
}

TEST_F(FenceHaTest, AMinorityOfEtcdLostLosesNothingAQuorumLostIsUnavailableUntilItReturns) {
  Replica& r1 = StartReplica("replica-1", etcd_->Location());
  Replica& r2 = StartReplica("replica-2", etcd_->Location());
  for (int i = 2; i <= 7; ++i) AddPort("10.242.0." + std::to_string(i));
  ASSERT_TRUE(r1.Fence({"10.242.0.0/30"}).ok());

  // Slow port updates keep the next fence in flight while a member dies under it.
  mock::Faults slow;
  slow.delay_ms = 300;
  mock_->SetFaults(slow);
  grpc::Status during;
  std::thread fence([&] { during = r2.Fence({"10.242.0.4/30"}); });
  // Stored means in flight: the port list and the updates that follow take 300 ms each.
  const auto stored = [&] {
    const std::vector<std::string> fences = r1.List();
    return std::find(fences.begin(), fences.end(), "10.242.0.4/30") != fences.end();
  };
  EXPECT_TRUE(WaitFor(stored, 30s)) << "the fence was never stored";
  etcd_->Kill(0);
  fence.join();
  mock_->SetFaults({});
  EXPECT_TRUE(during.ok()) << "a fence failed when one of three etcd members died: "
                           << Text(during);
  const std::vector<std::string> both = {"10.242.0.0/30", "10.242.0.4/30"};
  EXPECT_EQ(r1.List(), both);

  etcd_->Kill(1);
  const grpc::Status no_quorum = r1.Fence({"10.242.0.8/30"}, false, 20s);
  EXPECT_EQ(no_quorum.error_code(), grpc::StatusCode::UNAVAILABLE) << Text(no_quorum);
  r2.ExpectProbeToNameEtcd();

  ASSERT_TRUE(etcd_->Restart(0));
  ASSERT_TRUE(etcd_->Restart(1));
  grpc::Status resumed;
  EXPECT_TRUE(WaitFor([&] { return (resumed = r1.Fence({"10.242.0.8/30"})).ok(); }, 60s))
      << "fencing never resumed after quorum returned: " << Text(resumed);
  // Nothing acknowledged was lost; the fence refused without a quorum is there now because the
  // retry stored it (a refused write may or may not have been stored, never half).
  const std::vector<std::string> all = {"10.242.0.0/30", "10.242.0.4/30", "10.242.0.8/30"};
  EXPECT_EQ(r1.List(), all);
  EXPECT_EQ(r2.List(), all);
  EXPECT_TRUE(etcd_->WaitForQuorum(10s));
}

// A replica whose etcd is gone answers Probe ready=false, never an error, for as long as the
// outage lasts, and ready=true once etcd is back; grpc.health.v1 follows ("" NOT_SERVING while
// not ready, "liveness" SERVING throughout), and the log says why once, not once per Probe.
// A leader whose lease runs short in the middle of a pass (etcd stalls: a slow disk, a paused
// VM) stops changing ports. The fence is stored all the same, so the RPC waits for the leader's
// next pass and answers OK once that pass has enforced it, rather than failing it.
TEST_F(FenceHaTest, AFenceWhoseLeaderStallsMidPassAnswersOnceTheNextPassEnforcesIt) {
  Replica& r1 = StartReplica("replica-1", etcd_->Location());
  std::vector<std::string> inside;
  for (int i = 129; i < 190; ++i) inside.push_back(AddPort("10.242.0." + std::to_string(i)));
  // Slow updates: 61 at 300 ms over the pass's 8 connections take over 2 s, longer than the
  // lease's margin over an update once etcd stops answering.
  mock::Faults slow;
  slow.delay_ms = 300;
  mock_->SetFaults(slow);
  grpc::Status fenced;
  std::thread fence([&] { fenced = r1.Fence({"10.242.0.128/26"}, false, 60s); });
  EXPECT_TRUE(WaitFor([&] { return !Journal().empty(); }, 30s)) << "no update was ever sent";
  for (int m = 0; m < etcd_->size(); ++m) etcd_->Freeze(m);
  // Whichever pass it is (the RPC's own, or the loop's when the RPC found the lease already
  // short), it stops at an update its lease no longer covers.
  EXPECT_TRUE(WaitFor([&] { return r1.Log().find("stopped leading before the update") !=
                                   std::string::npos; },
                      30s))
      << "the pass never saw the leader's lease run short";
  // The stall is over, and Mizar-MP answers at its usual pace again: the next pass (within the
  // RPC's wait for the leader, twice the lease and 10 s) finishes the fence.
  for (int m = 0; m < etcd_->size(); ++m) etcd_->Thaw(m);
  mock_->SetFaults({});
  fence.join();
  EXPECT_TRUE(fenced.ok()) << Text(fenced);
  for (const std::string& port : inside) EXPECT_FALSE(Up(port)) << port;
}

TEST_F(FenceHaTest, ProbeDuringAnEtcdOutageIsNotReadyWithoutAnErrorAndReadyAfter) {
  // The replica reaches etcd through member 0 only: stopping it is the replica's outage.
  Replica& r = StartReplica("replica-1", etcd_->Location(0));
  EXPECT_EQ(r.Health(""), "SERVING");
  etcd_->Stop(0);
  r.ExpectProbeToNameEtcd();
  for (int i = 0; i < 5; ++i) {  // as the sidecar does, every second while not ready
    bool ready = true;
    const grpc::Status s = r.Probe(&ready);
    EXPECT_TRUE(s.ok()) << Text(s);
    EXPECT_FALSE(ready);
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(r.Health(""), "NOT_SERVING");
  EXPECT_EQ(r.Health("fence.FenceController"), "NOT_SERVING");
  EXPECT_EQ(r.Health("liveness"), "SERVING");

  ASSERT_TRUE(etcd_->Restart(0));
  bool ready = false;
  grpc::Status last;
  EXPECT_TRUE(WaitFor([&] { return (last = r.Probe(&ready)).ok() && ready; }, 30s))
      << "Probe never said ready after etcd returned: " << Text(last);
  EXPECT_EQ(r.Health(""), "SERVING");
  EXPECT_EQ(r.Health("fence.FenceController"), "SERVING");

  const std::string log = r.Log();
  size_t warned = 0;
  for (size_t at = log.find("readiness: not ready: fence store"); at != std::string::npos;
       at = log.find("readiness: not ready: fence store", at + 1)) {
    ++warned;
  }
  EXPECT_EQ(warned, 1u) << "the outage is logged once\n" << log;
  EXPECT_NE(log.find("readiness: fence store is usable again"), std::string::npos) << log;
}

TEST_F(FenceHaTest, AReplicaCutOffFromEtcdStopsEnforcingBeforeAnotherStarts) {
  // Each replica reaches etcd through one member only, so stopping a member cuts off its replica.
  Replica& r1 = StartReplica("replica-1", etcd_->Location(0));
  const std::string a = AddPort("10.242.0.2");
  ASSERT_TRUE(r1.Fence({kFenced}).ok());  // replica-1 is the only candidate: it leads
  Replica& r2 = StartReplica("replica-2", etcd_->Location(1));
  EXPECT_FALSE(Up(a));

  etcd_->Kill(0);
  r1.ExpectProbeToNameEtcd();

  // replica-2 takes over and lifts the fence; replica-1, still running with its last view (the
  // fence standing), must not disable the ports again.
  const grpc::Status unfenced = r2.Fence({kFenced}, /*unfence=*/true, 60s);
  ASSERT_TRUE(unfenced.ok()) << Text(unfenced);
  EXPECT_TRUE(Up(a));
  const std::string b = AddPort("10.242.0.3");
  ASSERT_TRUE(r1.WaitForLooks(5)) << "replica-1's loop stopped looking at the store";
  EXPECT_TRUE(Up(a));
  EXPECT_TRUE(Up(b));
  ExpectActedOneAfterTheOther("replica-1", "replica-2");

  // Back in touch, replica-1 follows: a fence through it is enforced by the leader, replica-2.
  ASSERT_TRUE(etcd_->Restart(0));
  grpc::Status refenced;
  EXPECT_TRUE(WaitFor([&] { return (refenced = r1.Fence({kFenced})).ok(); }, 60s))
      << Text(refenced);
  EXPECT_FALSE(Up(a));
  EXPECT_FALSE(Up(b));
  ExpectActedOneAfterTheOther("replica-1", "replica-2");
}

}  // namespace
}  // namespace mizarmp
