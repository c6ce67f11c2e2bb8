// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mizarmp binary driven exactly as a runtime drives it (exec, CNI_* env, config on stdin)
// against mizarmp-mock with its host agent, in real network namespaces.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/fileutil.h"
#include "common/uuid.h"
#include "mizarmp-client/types.h"
#include "mock-server/mock.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using nlohmann::json;
using testing::ProcessResult;
using testing::ScopedNetns;
using testing::UniqueName;

constexpr const char* kCidr = "10.241.0.0/24";
constexpr const char* kGateway = "10.241.0.1";

class PluginNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    host_ = std::make_unique<ScopedNetns>(UniqueName("mzh"));
    StartMock(mock::Faults{});
  }

  void TearDown() override {
    mock_.reset();
    pods_.clear();
    host_.reset();
  }

  // `agent_here`: the agent keeps the bridge and the host ends in this process's namespace (the
  // plugin's), as a real host agent does, instead of in host_.
  void StartMock(const mock::Faults& faults, mock::Dialect dialect = mock::Dialect::kV01,
                 bool agent_here = false, bool strict = false) {
    mock_.reset();
    mock::Options o;
    o.strict = strict;
    o.agent = true;
    o.bridge = UniqueName("mzbr");
    o.agent_netns = agent_here ? std::string() : host_->path();
    o.cidr = kCidr;
    o.dialect = dialect;
    o.faults = faults;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
  }

  // A pod sandbox: a fresh named netns.
  ScopedNetns& NewPod() {
    pods_.push_back(std::make_unique<ScopedNetns>(UniqueName("mzp")));
    return *pods_.back();
  }

  json Config(const std::string& version = "1.0.0") const {
    return json{{"cniVersion", version},
                {"name", network_},
                {"type", "mizarmp"},
                {"mpurl", mock_ ? mock_->base_url() : std::string("http://127.0.0.1:1")},
                {"project", "3dda2801-d675-4688-a63f-dcda8d327f50"},
                {"subnet", "a87e0f87-a2d9-44ef-9194-9a62f178594e"},
                {"hostId", "node-a"},
                {"stateDir", state_.path()},
                {"logLevel", "debug"},
                {"mtu", 1400},
                {"dns", {{"nameservers", {"10.241.0.10"}}, {"search", {"svc.local"}}}},
                {"timeouts", {{"readyMs", 5000}, {"nicMs", 5000}}}};
  }

  std::map<std::string, std::string> Env(const std::string& command, const std::string& container,
                                         const std::string& netns,
                                         const std::string& ifname = "eth0") const {
    std::map<std::string, std::string> env = {{"CNI_COMMAND", command},
                                              {"CNI_CONTAINERID", container},
                                              {"CNI_IFNAME", ifname},
                                              {"CNI_PATH", testing::BinDir()},
                                              {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    if (!netns.empty()) env["CNI_NETNS"] = netns;
    return env;
  }

  ProcessResult Plugin(const std::string& command, const std::string& container,
                       const std::string& netns, const json& config,
                       const std::string& ifname = "eth0") const {
    return testing::RunProcess({testing::BinDir() + "/mizarmp"},
                               Env(command, container, netns, ifname), config.dump(),
                               std::chrono::seconds(60));
  }

  ProcessResult Add(const std::string& container, const ScopedNetns& pod) const {
    return Plugin("ADD", container, pod.path(), Config());
  }
  ProcessResult Del(const std::string& container, const std::string& netns) const {
    return Plugin("DEL", container, netns, Config());
  }

  std::vector<std::string> Records() const {
    auto names = ListDir(state_.path() + "/" + network_);
    std::vector<std::string> out;
    if (!names.ok()) return out;
    for (auto& n : *names) out.push_back(n);
    return out;
  }

  // Links in the agent's host namespace that belong to ports (the host ends of veths).
  int HostVeths() const { return host_->CountLinks("veth"); }

  static json ParseResult(const ProcessResult& r) {
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON: " << r.out << "\nstderr: " << r.err;
    return j;
  }

  static std::string Describe(const ProcessResult& r) {
    return "exit=" + std::to_string(r.exit_code) + " signal=" + std::to_string(r.signal) +
           "\nstdout: " + r.out + "\nstderr: " + r.err;
  }

  std::string network_ = "mzt-" + UniqueName("n");
  testing::TempDir state_;
  std::unique_ptr<ScopedNetns> host_;
  std::unique_ptr<mock::MockServer> mock_;
  std::vector<std::unique_ptr<ScopedNetns>> pods_;
};

// Chained plugins (bandwidth) find the pod's host side among the result's interfaces: listed
// when the agent keeps it in the plugin's namespace, after the pod's interface.
TEST_F(PluginNetnsTest, TheResultListsTheHostEndOfThePodsVeth) {
  StartMock(mock::Faults{}, mock::Dialect::kV01, /*agent_here=*/true);
  auto& pod = NewPod();
  auto r = Add("c1", pod);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  json res = ParseResult(r);
  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 1u);
  ASSERT_FALSE(ports[0].host_veth.empty());
  ASSERT_EQ(res["interfaces"].size(), 2u) << res.dump();
  EXPECT_EQ(res["interfaces"][0]["sandbox"], pod.path());
  EXPECT_EQ(res["interfaces"][1]["name"], ports[0].host_veth);
  EXPECT_FALSE(res["interfaces"][1].contains("sandbox"));
  EXPECT_EQ(res["ips"][0]["interface"], 0);
  json check = Config();
  check["prevResult"] = res;  // CHECK takes such a result back as it is
  auto checked = Plugin("CHECK", "c1", pod.path(), check);
  EXPECT_EQ(checked.exit_code, 0) << Describe(checked);
  auto d = Del("c1", pod.path());
  EXPECT_EQ(d.exit_code, 0) << Describe(d);
}

TEST_F(PluginNetnsTest, AddConfiguresWhatTheControllerAssigned) {
  auto& pod = NewPod();
  auto r = Add("c1", pod);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  json res = ParseResult(r);

  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 1u);
  const auto& port = ports[0];
  ASSERT_EQ(port.ips.size(), 1u);
  EXPECT_EQ(port.host_id, "node-a");

  // The result says what the controller assigned, shaped for 1.0.0.
  EXPECT_EQ(res["cniVersion"], "1.0.0");
  ASSERT_EQ(res["interfaces"].size(), 1u);
  EXPECT_EQ(res["interfaces"][0]["name"], "eth0");
  EXPECT_EQ(res["interfaces"][0]["mac"], port.mac);
  EXPECT_EQ(res["interfaces"][0]["sandbox"], pod.path());
  ASSERT_EQ(res["ips"].size(), 1u);
  EXPECT_EQ(res["ips"][0]["address"], port.ips[0] + "/24");
  EXPECT_EQ(res["ips"][0]["gateway"], kGateway);
  EXPECT_EQ(res["ips"][0]["interface"], 0);
  EXPECT_FALSE(res["ips"][0].contains("version"));
  EXPECT_EQ(res["routes"][0]["dst"], "0.0.0.0/0");
  EXPECT_EQ(res["dns"]["nameservers"][0], "10.241.0.10");

  // The namespace really holds it.
  std::string out;
  ASSERT_EQ(pod.Exec("ip -o addr show dev eth0", &out), 0) << out;
  EXPECT_NE(out.find("inet " + port.ips[0] + "/24"), std::string::npos) << out;
  ASSERT_EQ(pod.Exec("ip -o link show dev eth0", &out), 0);
  EXPECT_NE(out.find("link/ether " + port.mac), std::string::npos) << out;
  EXPECT_NE(out.find("mtu 1400"), std::string::npos) << out;
  EXPECT_NE(out.find("UP"), std::string::npos) << out;
  ASSERT_EQ(pod.Exec("ip route show default", &out), 0);
  EXPECT_NE(out.find(std::string("default via ") + kGateway + " dev eth0"), std::string::npos)
      << out;
  ASSERT_EQ(pod.Exec("ip -o link show dev lo", &out), 0);
  EXPECT_NE(out.find("UP"), std::string::npos) << out;

  // The attachment record the fencing service will read, private to root.
  auto recs = Records();
  ASSERT_EQ(recs.size(), 2u);  // record + its lock
  const std::string rec_path = state_.path() + "/" + network_ + "/c1:eth0.json";
  auto rec_text = ReadFile(rec_path);
  ASSERT_TRUE(rec_text.ok()) << rec_text.status().ToString();
  json rec = json::parse(*rec_text);
  EXPECT_EQ(rec["state"], "complete");
  EXPECT_EQ(rec["portId"], port.id);
  EXPECT_EQ(rec["mac"], port.mac);
  EXPECT_EQ(rec["hostId"], "node-a");
  EXPECT_EQ(rec["ips"][0]["address"], port.ips[0] + "/24");
  struct stat st {};
  ASSERT_EQ(::stat(rec_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(PluginNetnsTest, OldConfigVersionGetsVersionedIps) {
  auto& pod = NewPod();
  auto r = Plugin("ADD", "c031", pod.path(), Config("0.3.1"));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  json res = ParseResult(r);
  EXPECT_EQ(res["cniVersion"], "0.3.1");
  EXPECT_EQ(res["ips"][0]["version"], "4");
  EXPECT_FALSE(res["interfaces"][0].contains("mtu"));
  EXPECT_EQ(Plugin("DEL", "c031", pod.path(), Config("0.3.1")).exit_code, 0);
}

TEST_F(PluginNetnsTest, TwoPodsPingEachOtherAndTheGateway) {
  auto& a = NewPod();
  auto& b = NewPod();
  auto ra = Add("ca", a);
  auto rb = Add("cb", b);
  ASSERT_EQ(ra.exit_code, 0) << Describe(ra);
  ASSERT_EQ(rb.exit_code, 0) << Describe(rb);
  std::string ip_a = ParseResult(ra)["ips"][0]["address"];
  std::string ip_b = ParseResult(rb)["ips"][0]["address"];
  ip_a = ip_a.substr(0, ip_a.find('/'));
  ip_b = ip_b.substr(0, ip_b.find('/'));
  ASSERT_NE(ip_a, ip_b);
  std::string out;
  EXPECT_EQ(a.Exec(std::string("ping -c1 -W2 ") + kGateway, &out), 0) << out;
  EXPECT_EQ(a.Exec("ping -c1 -W2 " + ip_b, &out), 0) << out;
  EXPECT_EQ(b.Exec("ping -c1 -W2 " + ip_a, &out), 0) << out;
}

TEST_F(PluginNetnsTest, DelRemovesPortRecordAndNic) {
  auto& pod = NewPod();
  ASSERT_EQ(Add("c1", pod).exit_code, 0);
  ASSERT_EQ(mock_->Ports().size(), 1u);
  auto r = Del("c1", pod.path());
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
  EXPECT_EQ(HostVeths(), 0);
  std::string out;
  EXPECT_NE(pod.Exec("ip link show eth0", &out), 0) << "eth0 still in the pod: " << out;
}

TEST_F(PluginNetnsTest, DelIsIdempotent) {
  auto& pod = NewPod();
  ASSERT_EQ(Add("c1", pod).exit_code, 0);
  EXPECT_EQ(Del("c1", pod.path()).exit_code, 0);
  auto again = Del("c1", pod.path());
  EXPECT_EQ(again.exit_code, 0) << Describe(again);
  auto never = Del("never-added", pod.path());
  EXPECT_EQ(never.exit_code, 0) << Describe(never);
  auto no_netns = Del("never-added-2", "");
  EXPECT_EQ(no_netns.exit_code, 0) << Describe(no_netns);

  // DEL after the runtime already removed the netns.
  auto& gone = NewPod();
  ASSERT_EQ(Add("c2", gone).exit_code, 0);
  const std::string path = gone.path();
  gone.Remove();
  auto after = Del("c2", path);
  EXPECT_EQ(after.exit_code, 0) << Describe(after);
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
  EXPECT_EQ(HostVeths(), 0);
}

TEST_F(PluginNetnsTest, SecondAddForSameInterfaceFailsAndCreatesNothing) {
  auto& pod = NewPod();
  ASSERT_EQ(Add("c1", pod).exit_code, 0);
  auto again = Add("c1", pod);
  EXPECT_NE(again.exit_code, 0);
  json err = ParseResult(again);
  EXPECT_TRUE(err.contains("code")) << again.out;
  EXPECT_NE(err["msg"].get<std::string>().find("eth0"), std::string::npos) << again.out;
  EXPECT_EQ(mock_->Ports().size(), 1u);
  // The first attachment is untouched.
  std::string out;
  EXPECT_EQ(pod.Exec(std::string("ping -c1 -W2 ") + kGateway, &out), 0) << out;
}

TEST_F(PluginNetnsTest, AddThatTimesOutLeavesNothing) {
  mock::Faults f;
  f.never_ready = true;
  StartMock(f);
  auto& pod = NewPod();
  json cfg = Config();
  cfg["timeouts"]["readyMs"] = 300;
  auto r = Plugin("ADD", "slow", pod.path(), cfg);
  EXPECT_NE(r.exit_code, 0);
  json err = ParseResult(r);
  EXPECT_EQ(err["code"], 11) << r.out;
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
}

TEST_F(PluginNetnsTest, AddRefusedByControllerLeavesNothing) {
  mock::Faults f;
  f.reject_creates = 1;
  StartMock(f);
  auto& pod = NewPod();
  auto r = Add("refused", pod);
  EXPECT_NE(r.exit_code, 0);
  json err = ParseResult(r);
  EXPECT_TRUE(err.contains("code") && err.contains("msg")) << r.out;
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
}

TEST_F(PluginNetnsTest, AddWhosePortFailsLeavesNothing) {
  mock::Faults f;
  f.fail_ready = true;
  StartMock(f);
  auto& pod = NewPod();
  auto r = Add("failing", pod);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
}

TEST_F(PluginNetnsTest, KilledMidAddThenDelLeavesNothing) {
  mock::Faults f;
  f.never_ready = true;
  StartMock(f);
  auto& pod = NewPod();
  json cfg = Config();
  cfg["timeouts"]["readyMs"] = 60000;
  testing::TempDir logs;
  pid_t pid =
      testing::SpawnProcess({testing::BinDir() + "/mizarmp"}, Env("ADD", "victim", pod.path()),
                            cfg.dump(), logs.path() + "/plugin.log");
  ASSERT_GT(pid, 0);
  // Wait until the port exists at the controller: the plugin is now polling.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (mock_->Ports().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(mock_->Ports().size(), 1u);
  ::kill(pid, SIGKILL);
  ASSERT_NE(testing::WaitProcess(pid, std::chrono::seconds(10)), -1);
  EXPECT_FALSE(Records().empty()) << "the intent record must survive the crash";

  auto r = Del("victim", pod.path());
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
}

TEST_F(PluginNetnsTest, AddRetriedAfterCrashRemovesItsEarlierPort) {
  mock::Faults f;
  f.never_ready = true;
  StartMock(f);
  auto& pod = NewPod();
  testing::TempDir logs;
  pid_t pid =
      testing::SpawnProcess({testing::BinDir() + "/mizarmp"}, Env("ADD", "retry", pod.path()),
                            Config().dump(), logs.path() + "/plugin.log");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (mock_->Ports().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(mock_->Ports().size(), 1u);
  const std::string first_port = mock_->Ports()[0].id;
  ::kill(pid, SIGKILL);
  testing::WaitProcess(pid, std::chrono::seconds(10));

  mock_->SetFaults(mock::Faults{});  // the controller recovers
  auto r = Add("retry", pod);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 1u) << "the crashed ADD's port leaked";
  EXPECT_EQ(ports[0].status == "UP" || ports[0].status == "ACTIVE", true) << ports[0].status;
  EXPECT_EQ(Del("retry", pod.path()).exit_code, 0);
  EXPECT_EQ(mock_->Ports().size(), 0u);
  (void)first_port;
}

TEST_F(PluginNetnsTest, TwentyConcurrentAddsThenDels) {
  constexpr int kPods = 20;
  std::vector<ScopedNetns*> pods;
  for (int i = 0; i < kPods; ++i) pods.push_back(&NewPod());
  std::vector<ProcessResult> results(kPods);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kPods; ++i) {
      threads.emplace_back([&, i] { results[i] = Add("burst" + std::to_string(i), *pods[i]); });
    }
    for (auto& t : threads) t.join();
  }
  std::set<std::string> addresses;
  for (int i = 0; i < kPods; ++i) {
    ASSERT_EQ(results[i].exit_code, 0) << "pod " << i << ": " << Describe(results[i]);
    std::string addr = ParseResult(results[i])["ips"][0]["address"];
    addresses.insert(addr);
    std::string out;
    EXPECT_EQ(pods[i]->Exec(std::string("ping -c1 -W2 ") + kGateway, &out), 0)
        << "pod " << i << ": " << out;
  }
  EXPECT_EQ(addresses.size(), static_cast<size_t>(kPods));
  EXPECT_EQ(mock_->Ports().size(), static_cast<size_t>(kPods));
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kPods; ++i) {
      threads.emplace_back(
          [&, i] { results[i] = Del("burst" + std::to_string(i), pods[i]->path()); });
    }
    for (auto& t : threads) t.join();
  }
  for (int i = 0; i < kPods; ++i) EXPECT_EQ(results[i].exit_code, 0) << Describe(results[i]);
  EXPECT_EQ(mock_->Ports().size(), 0u);
  EXPECT_TRUE(Records().empty());
  EXPECT_EQ(HostVeths(), 0);
  for (auto* p : pods) {
    std::string out;
    EXPECT_NE(p->Exec("ip link show eth0", &out), 0);
  }
}

TEST_F(PluginNetnsTest, CheckPassesThenFailsWhenTheAddressIsRemovedByHand) {
  auto& pod = NewPod();
  auto add = Add("chk", pod);
  ASSERT_EQ(add.exit_code, 0) << Describe(add);
  json cfg = Config();
  cfg["prevResult"] = ParseResult(add);
  auto ok = Plugin("CHECK", "chk", pod.path(), cfg);
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);

  std::string address = cfg["prevResult"]["ips"][0]["address"];
  std::string out;
  ASSERT_EQ(pod.Exec("ip addr del " + address + " dev eth0", &out), 0) << out;
  auto bad = Plugin("CHECK", "chk", pod.path(), cfg);
  EXPECT_NE(bad.exit_code, 0);
  json err = ParseResult(bad);
  EXPECT_NE(err["msg"].get<std::string>().find(address.substr(0, address.find('/'))),
            std::string::npos)
      << bad.out;
}

TEST_F(PluginNetnsTest, GcDeletesStaleAttachments) {
  auto& keep = NewPod();
  auto& stale1 = NewPod();
  auto& stale2 = NewPod();
  ASSERT_EQ(Add("keep", keep).exit_code, 0);
  ASSERT_EQ(Add("stale1", stale1).exit_code, 0);
  ASSERT_EQ(Add("stale2", stale2).exit_code, 0);
  ASSERT_EQ(mock_->Ports().size(), 3u);

  json cfg = Config("1.1.0");
  cfg["cni.dev/valid-attachments"] = json::array({{{"containerID", "keep"}, {"ifname", "eth0"}}});
  auto env = Env("GC", "", "");
  env.erase("CNI_CONTAINERID");
  env.erase("CNI_IFNAME");
  auto r = testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, cfg.dump());
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(Records().size(), 2u);  // keep's record and lock
  std::string out;
  EXPECT_EQ(keep.Exec(std::string("ping -c1 -W2 ") + kGateway, &out), 0) << out;
}

TEST_F(PluginNetnsTest, StatusReportsControllerDownAs50) {
  json cfg = Config("1.1.0");
  auto env = Env("STATUS", "", "");
  env.erase("CNI_CONTAINERID");
  env.erase("CNI_IFNAME");
  auto up = testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, cfg.dump());
  EXPECT_EQ(up.exit_code, 0) << Describe(up);
  mock_.reset();  // the controller goes away
  auto down = testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, cfg.dump());
  EXPECT_NE(down.exit_code, 0);
  json err = ParseResult(down);
  EXPECT_EQ(err["code"], 50) << down.out;
}

TEST_F(PluginNetnsTest, AlcorDialectEndToEnd) {
  StartMock(mock::Faults{}, mock::Dialect::kAlcor);
  auto& pod = NewPod();
  auto r = Add("alcor", pod);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::string out;
  EXPECT_EQ(pod.Exec(std::string("ping -c1 -W2 ") + kGateway, &out), 0) << out;
  EXPECT_EQ(Del("alcor", pod.path()).exit_code, 0);
  EXPECT_EQ(Del("alcor", pod.path()).exit_code, 0);  // 404 on the second delete is success
  EXPECT_EQ(mock_->Ports().size(), 0u);
}

// ADD, CHECK, GC and DEL against each real controller generation, as the strict mock plays it
// (mock-server/strict.h): v0.1 answers the POST with the port UP and lists only a subnet's
// ports; Alcor wants the VPC as network_id and lists every project's ports.
TEST_F(PluginNetnsTest, RealControllerGenerationsEndToEnd) {
  for (const mock::Dialect dialect : {mock::Dialect::kV01, mock::Dialect::kAlcor}) {
    const bool alcor = dialect == mock::Dialect::kAlcor;
    SCOPED_TRACE(alcor ? "alcor" : "v0.1");
    ASSERT_NO_FATAL_FAILURE(StartMock(mock::Faults{}, dialect, false, /*strict=*/true));
    json cfg = Config("1.1.0");
    if (alcor) cfg["networkId"] = client::kDefaultVpcId;
    auto& pod = NewPod();
    auto& stale = NewPod();
    auto add = Plugin("ADD", "real", pod.path(), cfg);
    ASSERT_EQ(add.exit_code, 0) << Describe(add);
    ASSERT_EQ(Plugin("ADD", "stale", stale.path(), cfg).exit_code, 0);
    const json result = ParseResult(add);
    EXPECT_EQ(result["interfaces"][0]["mac"].get<std::string>().size(), 17u) << add.out;
    std::string out;
    EXPECT_EQ(pod.Exec(std::string("ping -c1 -W2 ") + kGateway, &out), 0) << out;

    json check = cfg;
    check["prevResult"] = result;
    auto checked = Plugin("CHECK", "real", pod.path(), check);
    EXPECT_EQ(checked.exit_code, 0) << Describe(checked);

    json gc = cfg;
    gc["cni.dev/valid-attachments"] = json::array({{{"containerID", "real"}, {"ifname", "eth0"}}});
    auto env = Env("GC", "", "");
    env.erase("CNI_CONTAINERID");
    env.erase("CNI_IFNAME");
    auto collected = testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, gc.dump());
    EXPECT_EQ(collected.exit_code, 0) << Describe(collected);
    ASSERT_EQ(mock_->Ports().size(), 1u);

    EXPECT_EQ(Plugin("DEL", "real", pod.path(), cfg).exit_code, 0);
    EXPECT_EQ(Plugin("DEL", "real", pod.path(), cfg).exit_code, 0);  // gone already: success
    EXPECT_EQ(mock_->Ports().size(), 0u);
    EXPECT_TRUE(Records().empty());
  }
}

// A runtime may collect garbage while a pod is being created, with a list of valid attachments
// made before the new one: whatever the interleaving, an ADD racing a GC never ends with a
// record and no port (or a port and no record), and neither command crashes.
TEST_F(PluginNetnsTest, AddRacingGcNeverLeavesARecordWithoutItsPort) {
  const json gc_config = Config("1.1.0");  // no cni.dev/valid-attachments: nothing is valid
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE(i);
    auto& pod = NewPod();
    const std::string cid = "race" + std::to_string(i);
    ProcessResult add;
    ProcessResult gc;
    std::thread adder([&] { add = Plugin("ADD", cid, pod.path(), Config()); });
    std::thread collector([&] { gc = Plugin("GC", "", "", gc_config); });
    adder.join();
    collector.join();
    EXPECT_EQ(add.signal, 0) << Describe(add);
    EXPECT_EQ(gc.signal, 0) << Describe(gc);
    EXPECT_EQ(gc.exit_code, 0) << Describe(gc);

    struct stat st {};
    const std::string record = state_.path() + "/" + network_ + "/" + cid + ":eth0.json";
    const bool has_record = ::stat(record.c_str(), &st) == 0;
    // The port id ADD derives for the attachment (see cni/attachment.h).
    const std::string port_id = *UuidV5(kPortIdNamespace, network_ + "/" + cid + "/eth0");
    bool has_port = false;
    for (const auto& p : mock_->Ports()) has_port = has_port || p.id == port_id;
    EXPECT_EQ(has_record, has_port) << "ADD: " << Describe(add) << "\nGC: " << Describe(gc);
    if (add.exit_code != 0) {
      EXPECT_FALSE(has_record) << Describe(add);
    }
  }
}

}  // namespace
}  // namespace mizarmp
