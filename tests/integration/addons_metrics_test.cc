// What an operator's Prometheus and Kubernetes' probes see of the real mizarmp-addons binary:
// the metrics endpoint's families move with the RPCs made, and the health listener answers
// grpc.health.v1 and nothing else.
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "fence.grpc.pb.h"
#include "health.grpc.pb.h"
#include "identity.grpc.pb.h"
#include "mock-server/mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using json = nlohmann::json;
using testing::TempDir;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

// One scrape: "name{label="v",...}" (labels sorted by name, as prometheus-cpp writes them) ->
// value.
using Scrape = std::map<std::string, double>;

Scrape Parse(const std::string& text) {
  Scrape out;
  static const std::regex line(R"(^([a-z_]+(\{[^}]*\})?) ([-+0-9.eE]+|NaN|\+Inf)$)");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    std::smatch m;
    if (std::regex_match(l, m, line)) out[m[1]] = std::stod(m[3]);
    start = end + 1;
  }
  return out;
}

double Value(const Scrape& s, const std::string& key) {
  auto it = s.find(key);
  return it == s.end() ? 0 : it->second;
}

class AddonsMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mock::Options o;
    o.cidr = "10.248.0.0/24";
    auto m = mock::MockServer::Create(o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mock_ = std::move(*m);
    ASSERT_TRUE(mock_->Start().ok());
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
    metrics_port_ = PortFromLog("serving Prometheus metrics on .* \\(port ([0-9]+)\\)");
    health_port_ = PortFromLog("serving grpc.health.v1 for probes on .* \\(port ([0-9]+)\\)");
    ASSERT_GT(metrics_port_, 0) << Log();
    ASSERT_GT(health_port_, 0) << Log();
    auto channel = grpc::CreateChannel("unix:" + dir_.path() + "/run/csi-addons.sock",
                                       grpc::InsecureChannelCredentials());
    fence_ = ::fence::FenceController::NewStub(channel);
    ASSERT_TRUE(
        channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20)));
  }

  std::string log_path() const { return dir_.path() + "/addons.log"; }
  std::string Log() const {
    auto text = ReadFile(log_path());
    return text.ok() ? *text : "(no log)";
  }

  int PortFromLog(const std::string& pattern) const {
    const std::regex re(pattern);
    for (int i = 0; i < 200; ++i) {
      std::smatch m;
      const std::string log = Log();
      if (std::regex_search(log, m, re)) return std::stoi(m[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }

  Scrape ScrapeMetrics() const {
    std::string out;
    const int rc = testing::Shell("curl -sS --fail --max-time 10 http://127.0.0.1:" +
                                      std::to_string(metrics_port_) + "/metrics",
                                  &out);
    EXPECT_EQ(rc, 0) << out;
    return Parse(out);
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

TEST_F(AddonsMetricsTest, TheFamiliesMoveWithTheRpcsMade) {
  const std::string fence_rpc = "/fence.FenceController/FenceClusterNetwork";
  const std::string unfence_rpc = "/fence.FenceController/UnfenceClusterNetwork";
  const std::string list_rpc = "/fence.FenceController/ListClusterFence";
  const auto rpcs = [](const std::string& method, const std::string& code) {
    return "mizarmp_addons_rpcs_total{code=\"" + code + "\",method=\"" + method + "\"}";
  };
  const Scrape before = ScrapeMetrics();
  EXPECT_EQ(Value(before, rpcs(fence_rpc, "OK")), 0);

  ASSERT_TRUE(Fence(true, "10.248.0.0/24").ok());
  const Scrape fenced = ScrapeMetrics();
  EXPECT_EQ(Value(fenced, rpcs(fence_rpc, "OK")), 1);
  EXPECT_EQ(
      Value(fenced, "mizarmp_addons_rpc_duration_seconds_count{method=\"" + fence_rpc + "\"}"), 1);
  EXPECT_EQ(Value(fenced, "mizarmp_addons_fences{state=\"enforced\"}"), 1);
  EXPECT_EQ(Value(fenced, "mizarmp_addons_fences{state=\"pending\"}"), 0);
  EXPECT_GT(Value(fenced, "mizarmp_addons_enforcement_passes_total{result=\"ok\"}"),
            Value(before, "mizarmp_addons_enforcement_passes_total{result=\"ok\"}"));
  EXPECT_GT(
      Value(fenced, "mizarmp_addons_mizarmp_requests_total{call=\"GET /ports\",outcome=\"ok\"}"),
      Value(before, "mizarmp_addons_mizarmp_requests_total{call=\"GET /ports\",outcome=\"ok\"}"));
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
  ASSERT_TRUE(Fence(false, "10.248.0.0/24").ok());
  const Scrape after = ScrapeMetrics();
  EXPECT_EQ(Value(after, rpcs(fence_rpc, "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(Value(after, rpcs(list_rpc, "OK")), 1);
  EXPECT_EQ(Value(after, rpcs(unfence_rpc, "OK")), 1);
  EXPECT_EQ(Value(after, "mizarmp_addons_fences{state=\"enforced\"}"), 0);
  EXPECT_EQ(Value(after, "mizarmp_addons_unfences_pending"), 0);
}

TEST_F(AddonsMetricsTest, TheHealthListenerServesOnlyHealth) {
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
}

// The lines of `log` holding `needle`.
std::vector<std::string> LinesWith(const std::string& log, const std::string& needle) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = log.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = log.substr(start, end - start);
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST_F(AddonsMetricsTest, EveryLineOfAnRpcCarriesItsRequestId) {
  ASSERT_TRUE(Fence(true, "10.248.0.0/24", "ci-req-42").ok());
  const auto tagged = LinesWith(Log(), "req=ci-req-42");
  ASSERT_FALSE(tagged.empty()) << Log();
  for (const auto& line : tagged) EXPECT_NE(line.find("10.248.0.0/24"), std::string::npos) << line;

  // Without an id, or with one that could forge a line, each call gets a fresh one.
  ASSERT_TRUE(Fence(false, "10.248.0.0/24").ok());
  ASSERT_TRUE(Fence(false, "10.248.1.0/24", "two words").ok());
  const std::regex generated("req=([0-9a-f]{16}) unfence of (10.248.[01].0/24)");
  std::set<std::string> ids;
  const std::string log = Log();
  for (auto it = std::sregex_iterator(log.begin(), log.end(), generated);
       it != std::sregex_iterator(); ++it) {
    ids.insert((*it)[1]);
  }
  EXPECT_EQ(ids.size(), 2u) << log;
  EXPECT_EQ(log.find("req=two"), std::string::npos) << log;
}

TEST_F(AddonsMetricsTest, SighupReopensTheLogFile) {
  ASSERT_EQ(::rename(log_path().c_str(), (log_path() + ".1").c_str()), 0);
  ASSERT_EQ(::kill(addons_.pid(), SIGHUP), 0);
  // The reopen is logged into the new file; the RPC after it lands there too.
  ASSERT_NE(testing::WaitForFile(log_path(), std::chrono::seconds(10)), "");
  ASSERT_TRUE(Fence(false, "10.248.2.0/24").ok());
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

TEST(AddonsMetricsConfig, ABadListenAddressIsRefusedNamingTheKey) {
  const auto r = testing::RunProcess(
      {testing::BinDir() + "/mizarmp-addons", "--mode", "node", "--metrics-address", "9090"}, {},
      "");
  EXPECT_EQ(r.exit_code, 2) << r.Describe();
  EXPECT_NE(r.err.find("metricsAddress \"9090\""), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mizarmp
