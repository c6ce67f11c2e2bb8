// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Plug mode on Alcor (cni/ovs_plug.h), with a real Open vSwitch in its userspace datapath and real
// network namespaces: the mock plays Alcor's controller (--strict) and Alcor's host agent on OVS
// (it places no NIC, tags tap<id> on br-int and only then reports the port ACTIVE), and the
// mizarmp binary, exec'd as a runtime does, plugs each pod in itself. The test thread enters the
// sandbox's namespace first: that namespace is the node, where OVS, the mock and the plugin run.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cni/attachment.h"
#include "common/fileutil.h"
#include "mizarmp-client/client.h"
#include "mizarmp-client/types.h"
#include "mock-server/mock.h"
#include "ovsdb/ovsdb.h"
#include "records/records.h"
#include "tests/support/entered_netns.h"
#include "tests/support/ovs_sandbox.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using nlohmann::json;
using testing::ProcessResult;
using testing::ScopedNetns;
using testing::UniqueName;

constexpr const char* kCidr = "10.243.0.0/24";

class PluginOvsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    MZ_REQUIRE_OVS();
    ovs_ = std::make_unique<testing::OvsSandbox>();
    ASSERT_EQ(ovs_->error(), "");
    node_ = std::make_unique<testing::EnteredNetns>(ovs_->netns_path());
    ASSERT_EQ(node_->error(), "");
    ASSERT_NO_FATAL_FAILURE(StartMock(mock::Faults{}));
  }

  void TearDown() override {
    mock_.reset();  // its threads were born in the node's namespace: gone before it is left
    pods_.clear();
    node_.reset();
    ovs_.reset();
  }

  void StartMock(const mock::Faults& faults) {
    mock_.reset();
    mock::Options o;
    o.strict = true;
    o.dialect = mock::Dialect::kAlcor;
    o.agent_ovsdb = ovs_->socket_path();
    o.bridge = ovs_->bridge();
    o.cidr = kCidr;
    o.faults = faults;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
  }

  ScopedNetns& NewPod() {
    pods_.push_back(std::make_unique<ScopedNetns>(UniqueName("mzp")));
    return *pods_.back();
  }

  // Plug mode is not named: "auto" finds Alcor at the controller and plugs.
  json Config() const {
    return json{{"cniVersion", "1.0.0"},
                {"name", network_},
                {"type", "mizarmp"},
                {"mpurl", mock_->base_url()},
                {"project", client::kDefaultProjectId},
                {"subnet", client::kDefaultSubnetId},
                {"networkId", client::kDefaultVpcId},  // Alcor's network_id is the VPC
                {"hostId", "node-a"},
                {"stateDir", state_.path()},
                {"ovsdbSocket", ovs_->socket_path()},
                {"ovsBridge", ovs_->bridge()},
                {"logLevel", "debug"},
                {"timeouts", {{"readyMs", 10000}}}};
  }

  ProcessResult Plugin(const std::string& command, const std::string& container,
                       const std::string& netns, const json& config) const {
    std::map<std::string, std::string> env = {{"CNI_COMMAND", command},
                                              {"CNI_PATH", testing::BinDir()},
                                              {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    if (!container.empty()) env.insert({{"CNI_CONTAINERID", container}, {"CNI_IFNAME", "eth0"}});
    if (!netns.empty()) env["CNI_NETNS"] = netns;
    return testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, config.dump(),
                               std::chrono::seconds(60));
  }
  ProcessResult Add(const std::string& container, const ScopedNetns& pod) const {
    return Plugin("ADD", container, pod.path(), Config());
  }
  ProcessResult Del(const std::string& container, const ScopedNetns& pod) const {
    return Plugin("DEL", container, pod.path(), Config());
  }
  ProcessResult Check(const std::string& container, const ScopedNetns& pod,
                      const json& prev) const {
    json config = Config();
    config["prevResult"] = prev;
    return Plugin("CHECK", container, pod.path(), config);
  }
  ProcessResult Gc(const json& valid) const {
    json config = Config();
    config["cniVersion"] = "1.1.0";  // GC is new in 1.1
    config["cni.dev/valid-attachments"] = valid;
    return Plugin("GC", "", "", config);
  }

  std::string PortId(const std::string& container) const {
    return cni::PortIdFor(network_, container, "eth0");
  }
  std::string TapOf(const std::string& container) const {
    return "tap" + PortId(container).substr(0, 11);
  }

  // What the node holds: OVS ports on the bridge, veths, ports at the controller, records.
  std::vector<std::string> OvsPorts() const { return ovs_->Ports(); }
  int Veths() const { return ovs_->netns().CountLinks("veth"); }
  std::vector<std::string> Records() const {
    auto names = ListDir(state_.path() + "/" + network_);
    return names.ok() ? *names : std::vector<std::string>{};
  }
  void ExpectNothingLeft(const std::string& when) const {
    EXPECT_TRUE(OvsPorts().empty()) << when;
    EXPECT_EQ(Veths(), 0) << when;
    EXPECT_TRUE(mock_->Ports().empty()) << when;
    EXPECT_TRUE(Records().empty()) << when;
  }

  std::string VsctlGet(const std::string& args) const {
    std::string out;
    EXPECT_EQ(ovs_->Vsctl("get " + args, &out), 0) << out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  static std::string AddressOf(const json& result) {
    const std::string cidr = result["ips"][0]["address"];
    return cidr.substr(0, cidr.find('/'));
  }
  static bool Pings(const ScopedNetns& from, const std::string& ip) {
    return from.Exec("ping -c 1 -W 2 " + ip) == 0;
  }
  static std::string Slurp(const std::string& path) {
    auto text = ReadFile(path);
    return text.ok() ? *text : "(" + text.status().message() + ")";
  }
  static std::string Describe(const ProcessResult& r) {
    return "exit=" + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
  }

  std::string network_ = "mzt-" + UniqueName("o");
  testing::TempDir state_;
  std::unique_ptr<testing::OvsSandbox> ovs_;
  std::unique_ptr<testing::EnteredNetns> node_;
  std::unique_ptr<mock::MockServer> mock_;
  std::vector<std::unique_ptr<ScopedNetns>> pods_;
};

TEST_F(PluginOvsTest, PodsPingThroughBrIntAndDelTwiceLeavesNothing) {
  auto& pod_a = NewPod();
  auto& pod_b = NewPod();
  ProcessResult a = Add("ca", pod_a);
  ASSERT_EQ(a.exit_code, 0) << Describe(a);
  ProcessResult b = Add("cb", pod_b);
  ASSERT_EQ(b.exit_code, 0) << Describe(b);
  const json result_a = json::parse(a.out);
  const json result_b = json::parse(b.out);

  // The pod's end carries the port's MAC; the host end, named as the agent wants, is listed too.
  ASSERT_EQ(result_a["interfaces"].size(), 2u) << a.out;
  EXPECT_EQ(result_a["interfaces"][0]["name"], "eth0");
  EXPECT_EQ(result_a["interfaces"][0]["sandbox"], pod_a.path());
  EXPECT_EQ(result_a["interfaces"][1]["name"], TapOf("ca"));

  // The OVS ports: the agent's names, nova's external_ids, and the VLAN tag the agent set,
  // one tag for the one VPC.
  std::vector<std::string> ports = OvsPorts();
  std::sort(ports.begin(), ports.end());
  std::vector<std::string> want = {TapOf("ca"), TapOf("cb")};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ports, want);
  EXPECT_EQ(VsctlGet("interface " + TapOf("ca") + " external_ids:iface-id"),
            "\"" + PortId("ca") + "\"");
  EXPECT_EQ(VsctlGet("interface " + TapOf("ca") + " external_ids:attached-mac"),
            "\"" + result_a["interfaces"][0]["mac"].get<std::string>() + "\"");
  const std::string tag = VsctlGet("port " + TapOf("ca") + " tag");
  EXPECT_EQ(VsctlGet("port " + TapOf("cb") + " tag"), tag);
  bool found = false;
  for (const mock::PortSummary& p : mock_->Ports()) {
    EXPECT_EQ(p.status, "ACTIVE") << p.id;
    if (p.id == PortId("ca")) {
      found = true;
      EXPECT_EQ(std::to_string(p.vlan), tag) << "the tag on br-int is the one the agent set";
    }
  }
  EXPECT_TRUE(found);

  // Two pods on the node reach each other through br-int.
  EXPECT_TRUE(Pings(pod_a, AddressOf(result_b)));
  EXPECT_TRUE(Pings(pod_b, AddressOf(result_a)));

  ProcessResult check = Check("ca", pod_a, result_a);
  EXPECT_EQ(check.exit_code, 0) << Describe(check);

  // DEL, twice: the OVS port, the veth, the controller port and the record go.
  for (int i = 0; i < 2; ++i) {
    ProcessResult d = Del("ca", pod_a);
    EXPECT_EQ(d.exit_code, 0) << Describe(d);
  }
  EXPECT_EQ(OvsPorts(), std::vector<std::string>{TapOf("cb")});
  EXPECT_EQ(Veths(), 1);
  EXPECT_EQ(mock_->Ports().size(), 1u);

  // CHECK sees an OVS port taken away from under the pod.
  ASSERT_EQ(ovs_->Vsctl("del-port " + ovs_->bridge() + " " + TapOf("cb")), 0);
  check = Check("cb", pod_b, result_b);
  EXPECT_NE(check.exit_code, 0) << Describe(check);
  const json mismatch = json::parse(check.out, nullptr, false);
  EXPECT_EQ(mismatch.value("code", 0), 101) << check.out;  // the attachment differs from ADD's
  EXPECT_NE(mismatch.value("msg", "").find(TapOf("cb")), std::string::npos) << check.out;

  ProcessResult d = Del("cb", pod_b);
  EXPECT_EQ(d.exit_code, 0) << Describe(d);
  ExpectNothingLeft("after every DEL");
}

// What a crash at each step of ADD leaves, made by hand so that each step is hit exactly: the
// intent record alone; and the port at the controller; and the veth; and the OVS port. DEL
// removes all of it, and so does GC.
TEST_F(PluginOvsTest, DelOrGcAfterACrashAtEachStepOfAddLeavesNothing) {
  client::ClientConfig cc;
  cc.base_url = mock_->base_url();
  auto controller = client::Client::Create(cc);
  ASSERT_TRUE(controller.ok()) << controller.status().ToString();
  const records::RecordStore store(state_.path());

  for (const char* command : {"DEL", "GC"}) {
    for (int step = 1; step <= 4; ++step) {
      SCOPED_TRACE(std::string(command) + " after step " + std::to_string(step));
      auto& pod = NewPod();
      const std::string container = std::string("crash") + command + std::to_string(step);
      records::Record intent;
      intent.network = network_;
      intent.container_id = container;
      intent.ifname = "eth0";
      intent.netns = pod.path();
      intent.port_id = PortId(container);
      intent.mpurl = mock_->base_url();
      intent.ovs = records::OvsPlug{ovs_->socket_path(), ovs_->bridge(), TapOf(container)};
      ASSERT_TRUE(store.Write(intent).ok());
      if (step >= 2) {
        client::PortSpec spec = testing::PortSpecFor(intent.port_id, pod.path());
        spec.network_id = client::kDefaultVpcId;
        spec.description = "cni " + container + ", net:" + network_ + ", if:eth0";
        ASSERT_TRUE((*controller)->CreatePort(spec).ok());
      }
      if (step >= 3) {
        ASSERT_EQ(ovs_->netns().Exec("ip link add " + intent.ovs.port +
                                     " type veth peer name eth0 netns " + pod.name()),
                  0);
      }
      if (step >= 4) {
        ASSERT_EQ(ovs_->Vsctl("add-port " + ovs_->bridge() + " " + intent.ovs.port), 0);
      }
      ProcessResult r = std::string(command) == "DEL" ? Del(container, pod) : Gc(json::array());
      EXPECT_EQ(r.exit_code, 0) << Describe(r);
      ExpectNothingLeft(std::string(command) + " after step " + std::to_string(step));
    }
  }
}

// A real crash: the plugin killed while it waits for a port the agent never reports (plugged,
// not ACTIVE), then DEL.
TEST_F(PluginOvsTest, KilledWhileWaitingThenDelLeavesNothing) {
  mock::Faults f;
  f.never_ready = true;
  ASSERT_NO_FATAL_FAILURE(StartMock(f));
  auto& pod = NewPod();
  json config = Config();
  config["timeouts"]["readyMs"] = 60000;
  testing::TempDir logs;
  pid_t pid = testing::SpawnProcess({testing::BinDir() + "/mizarmp"},
                                    {{"CNI_COMMAND", "ADD"},
                                     {"CNI_CONTAINERID", "victim"},
                                     {"CNI_IFNAME", "eth0"},
                                     {"CNI_NETNS", pod.path()},
                                     {"CNI_PATH", testing::BinDir()},
                                     {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
                                    config.dump(), logs.path() + "/plugin.log");
  ASSERT_GT(pid, 0);
  // The OVS port appearing is the event: the plugin has plugged and now waits.
  auto db = ovsdb::Connection::Open(ovs_->socket_path(), std::chrono::seconds(5));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  auto plugged = ovsdb::WaitForPort(*db, TapOf("victim"), std::chrono::seconds(20));
  ASSERT_TRUE(plugged.ok() && *plugged) << "the plugin never plugged; its log:\n"
                                        << Slurp(logs.path() + "/plugin.log");
  ::kill(pid, SIGKILL);
  ASSERT_NE(testing::WaitProcess(pid, std::chrono::seconds(10)), -1);
  EXPECT_FALSE(Records().empty()) << "the intent record must survive the crash";

  ProcessResult d = Del("victim", pod);
  EXPECT_EQ(d.exit_code, 0) << Describe(d);
  ExpectNothingLeft("after DEL");
}

// After a node restart the veths are gone but OVS keeps its ports and the plugin its records:
// GC of the attachments the runtime no longer has removes the rows and the controller's ports.
TEST_F(PluginOvsTest, GcAfterANodeRestartLeavesNothing) {
  auto& pod_a = NewPod();
  auto& pod_b = NewPod();
  ASSERT_EQ(Add("ra", pod_a).exit_code, 0);
  ASSERT_EQ(Add("rb", pod_b).exit_code, 0);
  ASSERT_EQ(OvsPorts().size(), 2u);
  // The restart: the veths go (deleted here, as the kernel's namespace teardown is
  // asynchronous), and so do the pods' namespaces; OVS keeps its rows.
  for (const char* container : {"ra", "rb"}) {
    ASSERT_EQ(ovs_->netns().Exec("ip link del " + TapOf(container)), 0);
  }
  pods_.clear();
  ASSERT_EQ(Veths(), 0);

  ProcessResult gc = Gc(json::array());
  EXPECT_EQ(gc.exit_code, 0) << Describe(gc);
  ExpectNothingLeft("after GC");
}

}  // namespace
}  // namespace mizarmp
