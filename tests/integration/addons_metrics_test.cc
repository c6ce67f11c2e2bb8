// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What an operator's Prometheus and Kubernetes' probes see of the real mizarmp-addons binary:
// the metrics endpoint's families move with the RPCs made (controller and node mode), the
// health listener answers grpc.health.v1 and nothing else until the server stops, every log
// line of an RPC carries its request id, and SIGHUP reopens the log file.
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "fence/fence.grpc.pb.h"
#include "health.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "tests/support/port_spec.h"
#include "tests/support/scrape.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using json = nlohmann::json;
using testing::LinesWith;
using testing::LogAt;
using testing::PortFromLog;
using testing::Scrape;
using testing::ScrapeMetrics;
using testing::TempDir;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

// The key of an RPC counter's series.
std::string RpcSeries(const std::string& method, const std::string& code) {
  return "mizarmp_addons_rpcs_total{code=\"" + code + "\",method=\"" + method + "\"}";
}

// The key of the RPC latency histogram's count (calls observed) for a method.
std::string RpcTimedSeries(const std::string& method) {
  return "mizarmp_addons_rpc_duration_seconds_count{method=\"" + method + "\"}";
}

// The key of a Mizar-MP request counter's series.
std::string MizarMpSeries(const std::string& call, const std::string& outcome) {
  return "mizarmp_addons_mizarmp_requests_total{call=\"" + call + "\",outcome=\"" + outcome + "\"}";
}

double Value(const Scrape& s, const std::string& key) {
  auto it = s.find(key);
  return it == s.end() ? 0 : it->second;
}

// A gRPC status as a gtest assertion: a failure names its code and message.
::testing::AssertionResult Succeeded(const grpc::Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "gRPC status " << s.error_code() << ": " << s.error_message();
}

// The fence store opens in the background after the socket is up, and until it has a fence
// is refused (UNAVAILABLE, "still opening"), so the tests start once Probe says ready, as a
// CSI-Addons sidecar does.
bool WaitUntilReady(const std::shared_ptr<grpc::Channel>& channel) {
  auto identity = identity::Identity::NewStub(channel);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    identity::ProbeResponse resp;
    if (identity->Probe(&ctx, {}, &resp).ok() && resp.ready().value()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Against the real Alcor controller's behaviour (strict, mock-server/strict.h), the generation
// whose port list a fence reads; AddonsMetricsSeedTest's tests need a seed controller's fault.
class AddonsMetricsTest : public ::testing::Test {
 protected:
  // The seed README's controller (v0.1 dialect) instead of strict Alcor.
  virtual bool seed() const { return false; }

  void SetUp() override {
    mock::Options o;
    o.cidr = "10.248.0.0/24";
    o.strict = !seed();
    o.dialect = seed() ? mock::Dialect::kV01 : mock::Dialect::kAlcor;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
    const json config = {{"endpoint", "unix://" + dir_.path() + "/run/csi-addons.sock"},
                         {"mpurl", mock_->base_url()},
                         {"project", kProject},
                         {"subnet", kSubnet},
                         {"stateDir", dir_.path() + "/state"},
                         {"fenceStore", dir_.path() + "/fence.db"},
                         {"hostId", "node-a"},
                         {"healthAddress", "127.0.0.1:0"},
                         {"metricsAddress", "127.0.0.1:0"},
                         {"logFile", log_path()},
                         {"logLevel", "info"}};
    ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/addons.json", config.dump()).ok());
    ASSERT_TRUE(addons_.Start(
        {testing::BinDir() + "/mizarmp-addons", "--config", dir_.path() + "/addons.json"},
        dir_.path() + "/addons.out"));
    metrics_port_ = PortFromLog(log_path(), "serving Prometheus metrics on ");
    health_port_ = PortFromLog(log_path(), "serving grpc.health.v1 for probes on ");
    ASSERT_GT(metrics_port_, 0) << Log();
    ASSERT_GT(health_port_, 0) << Log();
    auto channel = grpc::CreateChannel("unix:" + dir_.path() + "/run/csi-addons.sock",
                                       grpc::InsecureChannelCredentials());
    fence_ = ::fence::FenceController::NewStub(channel);
    ASSERT_TRUE(
        channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20)));
    ASSERT_TRUE(WaitUntilReady(channel)) << Log();
    // Ready means the store is open; the loop's first pass follows it. A test that injects a
    // fault must not have that pass come after it and consume it.
    ASSERT_TRUE(WaitForTheFirstPass()) << Log();
  }

  // Until the metrics count an enforcement pass (30 s at most).
  bool WaitForTheFirstPass() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const Scrape now = ScrapeMetrics();
      if (Value(now, "mizarmp_addons_enforcement_passes_total{result=\"ok\"}") +
              Value(now, "mizarmp_addons_enforcement_passes_total{result=\"failed\"}") >=
          1) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string log_path() const { return dir_.path() + "/addons.log"; }
  std::string Log() const { return LogAt(log_path()); }
  Scrape ScrapeMetrics() const { return testing::ScrapeMetrics(metrics_port_); }

  // A port at the mock with this address on this node: what a fence of its CIDR disables.
  void AddPort(const std::string& id, const std::string& ip) {
    client::ClientConfig cc;
    cc.base_url = mock_->base_url();
    cc.project_id = kProject;
    auto mp = client::Client::Create(cc);
    ASSERT_TRUE(mp.ok()) << mp.status().ToString();
    client::PortSpec spec = testing::PortSpecFor(id, "/var/run/netns/none-" + id);
    spec.network_id = seed() ? kSubnet : client::kDefaultVpcId;  // Alcor's is the VPC
    spec.fixed_ips.push_back({kSubnet, ip});
    auto port = (*mp)->CreatePort(spec);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
  }

  grpc::Status Fence(bool fence, const std::string& cidr, const std::string& request_id = "") {
    grpc::ClientContext ctx;
    if (!request_id.empty()) ctx.AddMetadata("x-request-id", request_id);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (fence) {
      ::fence::FenceClusterNetworkRequest req;
      req.add_cidrs()->set_cidr(cidr);
      ::fence::FenceClusterNetworkResponse resp;
      return fence_->FenceClusterNetwork(&ctx, req, &resp);
    }
    ::fence::UnfenceClusterNetworkRequest req;
    req.add_cidrs()->set_cidr(cidr);
    ::fence::UnfenceClusterNetworkResponse resp;
    return fence_->UnfenceClusterNetwork(&ctx, req, &resp);
  }

  TempDir dir_;
  std::unique_ptr<mock::MockServer> mock_;
  testing::Daemon addons_;
  std::unique_ptr<::fence::FenceController::Stub> fence_;
  int metrics_port_ = 0;
  int health_port_ = 0;
};

class AddonsMetricsSeedTest : public AddonsMetricsTest {
 protected:
  bool seed() const override { return true; }
};

TEST_F(AddonsMetricsTest, TheFamiliesMoveWithTheRpcsMade) {
  const std::string fence_rpc = "/fence.FenceController/FenceClusterNetwork";
  const std::string unfence_rpc = "/fence.FenceController/UnfenceClusterNetwork";
  const std::string list_rpc = "/fence.FenceController/ListClusterFence";
  const std::string clients_rpc = "/fence.FenceController/GetFenceClients";
  const std::string passes_ok = "mizarmp_addons_enforcement_passes_total{result=\"ok\"}";
  ASSERT_NO_FATAL_FAILURE(AddPort("0b6a1c3e-5f7d-4e1a-9c2b-8d4f6a0e1b2c", "10.248.0.10"));
  const Scrape before = ScrapeMetrics();
  EXPECT_EQ(Value(before, RpcSeries(fence_rpc, "OK")), 0);

  ASSERT_TRUE(Succeeded(Fence(true, "10.248.0.0/24")));
  const Scrape fenced = ScrapeMetrics();
  EXPECT_EQ(Value(fenced, RpcSeries(fence_rpc, "OK")), 1);
  EXPECT_EQ(Value(fenced, RpcTimedSeries(fence_rpc)), 1);
  EXPECT_EQ(Value(fenced, "mizarmp_addons_fences{state=\"enforced\"}"), 1);
  EXPECT_EQ(Value(fenced, "mizarmp_addons_fences{state=\"pending\"}"), 0);
  EXPECT_GT(Value(fenced, passes_ok), Value(before, passes_ok));
  EXPECT_GT(Value(fenced, MizarMpSeries("GET /ports", "ok")),
            Value(before, MizarMpSeries("GET /ports", "ok")));
  // The fence disabled the port: one update, labelled by the path's shape, never by the id.
  EXPECT_EQ(Value(fenced, MizarMpSeries("PUT /ports/{id}", "ok")), 1);
  EXPECT_GE(
      Value(fenced,
            "mizarmp_addons_mizarmp_request_duration_seconds_count{call=\"PUT /ports/{id}\"}"),
      1);
  EXPECT_EQ(Value(fenced, "mizarmp_addons_leader"), 1);

  // An RPC refused: counted under its code.
  grpc::ClientContext ctx;
  ::fence::FenceClusterNetworkRequest bad;
  bad.add_cidrs()->set_cidr("not-a-cidr");
  ::fence::FenceClusterNetworkResponse resp;
  EXPECT_EQ(fence_->FenceClusterNetwork(&ctx, bad, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  {
    grpc::ClientContext lctx;
    ::fence::ListClusterFenceResponse listed;
    ASSERT_TRUE(fence_->ListClusterFence(&lctx, {}, &listed).ok());
  }
  {
    grpc::ClientContext cctx;
    ::fence::GetFenceClientsResponse clients;
    ASSERT_TRUE(fence_->GetFenceClients(&cctx, {}, &clients).ok());
  }
  ASSERT_TRUE(Succeeded(Fence(false, "10.248.0.0/24")));
  const Scrape after = ScrapeMetrics();
  EXPECT_EQ(Value(after, RpcSeries(fence_rpc, "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(Value(after, RpcSeries(list_rpc, "OK")), 1);
  EXPECT_EQ(Value(after, RpcSeries(clients_rpc, "OK")), 1);
  EXPECT_EQ(Value(after, RpcSeries(unfence_rpc, "OK")), 1);
  EXPECT_EQ(Value(after, RpcTimedSeries(fence_rpc)), 2);
  EXPECT_EQ(Value(after, MizarMpSeries("PUT /ports/{id}", "ok")), 2);  // re-enabled
  EXPECT_EQ(Value(after, "mizarmp_addons_fences{state=\"enforced\"}"), 0);
  EXPECT_EQ(Value(after, "mizarmp_addons_unfences_pending"), 0);
  for (const auto& [series, value] : after) {
    EXPECT_EQ(series.find("0b6a1c3e"), std::string::npos) << "a port id in a label: " << series;
  }
}

// The store's gauges after a pass that could not enforce a fence show it pending (read from the
// store), and after the pass that does, enforced (counted from what that pass completed).
// Seed: a refused update is the seed routes' reject_updates fault; no strict mode has it.
TEST_F(AddonsMetricsSeedTest, AFenceMizarMpRefusedStaysPendingInTheGaugesUntilAPassEnforcesIt) {
  const std::string failed = "mizarmp_addons_enforcement_passes_total{result=\"failed\"}";
  ASSERT_NO_FATAL_FAILURE(AddPort("5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", "10.248.0.20"));
  mock::Faults faults;
  faults.reject_updates = 1;
  mock_->SetFaults(faults);
  EXPECT_FALSE(Fence(true, "10.248.0.20/32").ok());
  const Scrape refused = ScrapeMetrics();
  EXPECT_GE(Value(refused, failed), 1);
  EXPECT_EQ(Value(refused, "mizarmp_addons_fences{state=\"pending\"}"), 1);
  EXPECT_EQ(Value(refused, "mizarmp_addons_fences{state=\"enforced\"}"), 0);

  mock_->SetFaults({});
  ASSERT_TRUE(Succeeded(Fence(true, "10.248.0.20/32")));
  const Scrape enforced = ScrapeMetrics();
  EXPECT_EQ(Value(enforced, "mizarmp_addons_fences{state=\"pending\"}"), 0);
  EXPECT_EQ(Value(enforced, "mizarmp_addons_fences{state=\"enforced\"}"), 1);
  EXPECT_EQ(Value(enforced, "mizarmp_addons_unfences_pending"), 0);
}

TEST_F(AddonsMetricsTest, TheHealthListenerServesOnlyHealthUntilTheServerStops) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(health_port_),
                                     grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckResponse answer;
  grpc::Status s;
  for (int i = 0; i < 100; ++i) {  // SERVING once the server has started its services
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    s = health->Check(&ctx, {}, &answer);
    if (s.ok() && answer.status() == grpc::health::v1::HealthCheckResponse::SERVING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(answer.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  grpc::health::v1::HealthCheckRequest named;
  named.set_service("fence.FenceController");
  grpc::ClientContext ctx;
  ASSERT_TRUE(health->Check(&ctx, named, &answer).ok());
  EXPECT_EQ(answer.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  auto fence = ::fence::FenceController::NewStub(channel);
  grpc::ClientContext fctx;
  ::fence::ListClusterFenceResponse listed;
  EXPECT_EQ(fence->ListClusterFence(&fctx, {}, &listed).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  // Once the server has stopped, nothing answers there (nor at the metrics address).
  ASSERT_EQ(::kill(addons_.pid(), SIGTERM), 0);
  const int status = addons_.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << Log();
  grpc::ClientContext after;
  after.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(health->Check(&after, {}, &answer).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(testing::Shell("curl -sS --max-time 5 http://127.0.0.1:" +
                           std::to_string(metrics_port_) + "/metrics"),
            0);
}

TEST_F(AddonsMetricsTest, EveryLineOfAnRpcCarriesItsRequestId) {
  ASSERT_TRUE(Succeeded(Fence(true, "10.248.0.0/24", "ci-req-42")));
  const auto tagged = LinesWith(Log(), "req=ci-req-42");
  ASSERT_FALSE(tagged.empty()) << Log();
  for (const auto& line : tagged) EXPECT_NE(line.find("10.248.0.0/24"), std::string::npos) << line;

  // Without an id, or with one that could forge a line, each call gets a fresh one.
  ASSERT_TRUE(Succeeded(Fence(false, "10.248.0.0/24")));
  ASSERT_TRUE(Succeeded(Fence(false, "10.248.1.0/24", "two words")));
  std::set<std::string> ids;
  const std::string log = Log();
  for (const std::string& line : LinesWith(log, " unfence of 10.248.")) {
    const size_t at = line.find("req=");
    ASSERT_NE(at, std::string::npos) << "a line of an RPC without its id: " << line;
    const std::string id = line.substr(at + 4, line.find(' ', at) - at - 4);
    if (id == "ci-req-42") continue;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << line;
    EXPECT_EQ(id.size(), 16u) << line;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 2u) << log;
  EXPECT_EQ(log.find("req=two"), std::string::npos) << log;
}

TEST_F(AddonsMetricsTest, SighupReopensTheLogFile) {
  ASSERT_EQ(::rename(log_path().c_str(), (log_path() + ".1").c_str()), 0);
  ASSERT_EQ(::kill(addons_.pid(), SIGHUP), 0);
  // The reopen is logged into the new file; the RPC after it lands there too.
  ASSERT_NE(testing::WaitForFile(log_path(), std::chrono::seconds(10)), "");
  ASSERT_TRUE(Succeeded(Fence(false, "10.248.2.0/24")));
  const std::string fresh = Log();
  EXPECT_NE(fresh.find("SIGHUP: log file reopened"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find("unfence of 10.248.2.0/24"), std::string::npos) << fresh;
  auto rotated = ReadFile(log_path() + ".1");
  ASSERT_TRUE(rotated.ok());
  EXPECT_EQ(rotated->find("10.248.2.0/24"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat(log_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(::kill(addons_.pid(), 0), 0) << "SIGHUP ended the server";
}

// mizarmp-addons in node mode, as the DaemonSet runs it, serving metrics.
struct NodeServer {
  // Starts it with the node's keys and `extra`; fails the test unless it serves metrics.
  void Start(const json& extra) {
    json config = {{"mode", "node"},
                   {"endpoint", "unix://" + socket},
                   {"hostId", "node-a"},
                   {"stateDir", dir.path() + "/state"},
                   {"keyStoreDir", dir.path() + "/keys"},
                   {"metricsAddress", "127.0.0.1:0"},
                   {"logFile", log},
                   {"logLevel", "info"}};
    config.update(extra);
    ASSERT_TRUE(WriteFileAtomic(dir.path() + "/addons.json", config.dump()).ok());
    ASSERT_TRUE(daemon.Start(
        {testing::BinDir() + "/mizarmp-addons", "--config", dir.path() + "/addons.json"},
        dir.path() + "/addons.out"));
    metrics_port = PortFromLog(log, "serving Prometheus metrics on ");
    ASSERT_GT(metrics_port, 0) << LogAt(log);
    channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  }

  TempDir dir;
  const std::string log = dir.path() + "/addons.log";
  const std::string socket = dir.path() + "/run/csi-addons.sock";
  testing::Daemon daemon;
  int metrics_port = 0;
  std::shared_ptr<grpc::Channel> channel;
};

// Node mode serves no FenceController, but the framework still counts every RPC.
TEST(AddonsMetricsNode, TheRpcFamiliesCountNodeModesCalls) {
  NodeServer node;
  ASSERT_NO_FATAL_FAILURE(node.Start(json::object()));
  auto channel = node.channel;
  ASSERT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20)));
  auto identity = identity::Identity::NewStub(channel);
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext ctx;
    identity::GetCapabilitiesResponse caps;
    ASSERT_TRUE(identity->GetCapabilities(&ctx, {}, &caps).ok());
  }
  const Scrape scraped = ScrapeMetrics(node.metrics_port);
  const std::string method = "/identity.Identity/GetCapabilities";
  EXPECT_EQ(Value(scraped, RpcSeries(method, "OK")), 2);
  EXPECT_EQ(Value(scraped, RpcTimedSeries(method)), 2);
  EXPECT_EQ(scraped.count("mizarmp_addons_leader"), 0u) << "fence families in node mode";
}

// The node's relay, as an operator sees whether plugins use it: /metrics counts its requests by
// outcome and times the controller's answers; Probe fails naming it once its socket is gone.
TEST(AddonsMetricsNode, TheRelayIsCountedAndProbedOnceItsSocketIsGone) {
  mock::Options o;
  o.agent = false;
  // The real v0.1 controller (strict): a plugin's GET of a port it does not have is 200.
  o.strict = true;
  std::unique_ptr<mock::MockServer> controller;
  ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &controller));
  NodeServer node;
  const std::string relay = node.dir.path() + "/run/relay.sock";
  ASSERT_NO_FATAL_FAILURE(node.Start({{"mpurl", controller->base_url()}, {"relaySocket", relay}}));
  ASSERT_TRUE(WaitUntilReady(node.channel)) << LogAt(node.log);

  // Two requests as a plugin sends them, one for another controller.
  const std::string get = "curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket " +
                          relay + " http://localhost/project/" + kProject + "/ports/p1 -H ";
  std::string code;
  EXPECT_EQ(testing::Shell(get + "'Mizarmp-Relay-To: " + controller->base_url() + "'", &code), 0);
  EXPECT_EQ(code, "200");
  EXPECT_EQ(testing::Shell(get + "'Mizarmp-Relay-To: https://elsewhere.example'", &code), 0);
  EXPECT_EQ(code, "421");
  const Scrape scraped = ScrapeMetrics(node.metrics_port);
  const auto requests = [&](const std::string& outcome) {
    return Value(scraped, "mizarmp_addons_relay_requests_total{outcome=\"" + outcome + "\"}");
  };
  EXPECT_EQ(requests("relayed"), 1);
  EXPECT_EQ(requests("other_controller"), 1);
  EXPECT_EQ(scraped.count("mizarmp_addons_relay_requests_total{outcome=\"upstream_failed\"}"), 1u)
      << "every outcome is a series from the start";
  EXPECT_EQ(requests("upstream_failed"), 0);
  EXPECT_EQ(Value(scraped, "mizarmp_addons_relay_upstream_duration_seconds_count"), 1);

  EXPECT_EQ(Value(scraped, "mizarmp_addons_dependency_ready{dependency=\"relay\"}"), 1);

  // Someone removes the socket: plugins would go directly. Probe answers not ready (not an
  // error, which would make the CSI-Addons sidecar exit) and says why in its trailing metadata;
  // the metrics name the dependency.
  ASSERT_EQ(::unlink(relay.c_str()), 0);
  auto identity = identity::Identity::NewStub(node.channel);
  grpc::ClientContext ctx;
  identity::ProbeResponse probed;
  const grpc::Status s = identity->Probe(&ctx, {}, &probed);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(probed.ready().value());
  const auto& trailing = ctx.GetServerTrailingMetadata();
  auto why = trailing.find("mizarmp-not-ready");
  ASSERT_NE(why, trailing.end());
  const std::string reason(why->second.data(), why->second.size());
  EXPECT_NE(reason.find("relay: the relay socket \"" + relay + "\""), std::string::npos) << reason;
  const Scrape after = ScrapeMetrics(node.metrics_port);
  ASSERT_EQ(after.count("mizarmp_addons_ready"), 1u);
  EXPECT_EQ(Value(after, "mizarmp_addons_dependency_ready{dependency=\"relay\"}"), 0);
  EXPECT_EQ(Value(after, "mizarmp_addons_ready"), 0);
}

// The CNI plugin's outcomes on this node, as the real plugin binary leaves them in the state
// dir: counted by command, result and code on node mode's /metrics; a hostile line is skipped.
TEST(AddonsMetricsNode, ThePluginsOutcomesOnThisNodeAreCounted) {
  mock::Options o;
  o.agent = false;
  o.strict = true;
  std::unique_ptr<mock::MockServer> controller;
  ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &controller));
  NodeServer node;
  ASSERT_NO_FATAL_FAILURE(node.Start(json::object()));
  const std::string state_dir = node.dir.path() + "/state";
  const json conf = {{"cniVersion", "1.1.0"},       {"name", "net1"},
                     {"type", "mizarmp"},           {"mpurl", controller->base_url()},
                     {"project", kProject},         {"subnet", kSubnet},
                     {"hostId", "node-a"},          {"stateDir", state_dir},
                     {"logLevel", "off"}};
  const auto run_plugin = [&](const std::map<std::string, std::string>& env) {
    return testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, conf.dump(),
                               std::chrono::seconds(30));
  };
  const std::map<std::string, std::string> del = {{"CNI_COMMAND", "DEL"},
                                                  {"CNI_CONTAINERID", "c1"},
                                                  {"CNI_IFNAME", "eth0"},
                                                  {"CNI_PATH", "/opt/cni/bin"}};
  const std::map<std::string, std::string> status = {{"CNI_COMMAND", "STATUS"},
                                                     {"CNI_PATH", "/opt/cni/bin"}};
  ASSERT_TRUE(run_plugin(del).ok());
  ASSERT_TRUE(run_plugin(status).ok());
  controller.reset();
  const testing::ProcessResult failed = run_plugin(status);
  ASSERT_FALSE(failed.ok());
  const json error = json::parse(failed.out, nullptr, false);
  ASSERT_TRUE(error.contains("code")) << failed.Describe();
  const std::string code = std::to_string(error["code"].get<int>());
  {
    std::ofstream hostile(state_dir + "/.cni-outcomes.log", std::ios::app);
    hostile << "not an outcome\n";
  }

  const std::string failures =
      "mizarmp_cni_command_errors_total{code=\"" + code + "\",command=\"STATUS\"}";
  Scrape scraped;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    scraped = ScrapeMetrics(node.metrics_port);
    if (Value(scraped, failures) == 1 &&
        Value(scraped, "mizarmp_cni_outcome_log_bad_lines_total") == 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  const auto commands = [&](const char* command, const char* result) {
    return Value(scraped, std::string("mizarmp_cni_commands_total{command=\"") + command +
                              "\",result=\"" + result + "\"}");
  };
  EXPECT_EQ(Value(scraped, failures), 1) << LogAt(node.log);
  EXPECT_EQ(commands("DEL", "success"), 1);
  EXPECT_EQ(commands("STATUS", "success"), 1);
  EXPECT_EQ(commands("STATUS", "error"), 1);
  EXPECT_EQ(commands("ADD", "error"), 0);
  EXPECT_EQ(Value(scraped, "mizarmp_cni_command_duration_seconds_count{command=\"STATUS\"}"), 2);
  EXPECT_EQ(Value(scraped, "mizarmp_cni_outcome_log_bad_lines_total"), 1);
}

TEST(AddonsMetricsConfig, ABadListenAddressIsRefusedNamingTheKey) {
  const std::pair<const char*, const char*> keys[] = {{"--metrics-address", "metricsAddress"},
                                                      {"--health-address", "healthAddress"}};
  for (const auto& [flag, key] : keys) {
    for (const char* bad : {"9090", ":9090", "127.0.0.1:http", "127.0.0.1:65536"}) {
      const auto r = testing::RunProcess(
          {testing::BinDir() + "/mizarmp-addons", "--mode", "node", flag, bad}, {}, "");
      EXPECT_EQ(r.exit_code, 2) << r.Describe();
      EXPECT_NE(r.err.find(std::string(key) + " \"" + bad + "\""), std::string::npos) << r.err;
    }
  }
}

}  // namespace
}  // namespace mizarmp
