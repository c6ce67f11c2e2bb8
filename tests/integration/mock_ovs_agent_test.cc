// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The strict Alcor mock playing Alcor's host agent on Open vSwitch (Options::agent_ovsdb)
// against a real ovsdb-server and ovs-vswitchd (OvsSandbox): no NIC placed, a port ACTIVE only
// once its tap port is on br-int, the VPC's VLAN on it, admin state only recorded (as the real
// agent does).
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "mock-server/mock.h"
#include "mock-server/ovs_agent.h"
#include "tests/support/ovs_sandbox.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::mock {
namespace {

using nlohmann::json;
using testing::OvsSandbox;
using testing::ScopedNetns;
using testing::UniqueName;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kVpc = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038";

// Whether `ip -o link show` output's flags ("<BROADCAST,MULTICAST,UP,LOWER_UP>") hold UP.
bool FlagsSayUp(const std::string& line) {
  const size_t open = line.find('<');
  const size_t close = line.find('>', open);
  if (open == std::string::npos || close == std::string::npos) return false;
  std::stringstream flags(line.substr(open + 1, close - open - 1));
  for (std::string flag; std::getline(flags, flag, ',');) {
    if (flag == "UP") return true;
  }
  return false;
}

TEST(MockOvsAgentOptionsTest, NeedsStrictAlcorAndNoVethAgent) {
  Options o;
  o.agent_ovsdb = "/nonexistent/db.sock";
  auto m = MockServer::Create(o);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().IsInvalidArgument()) << m.status().ToString();
  EXPECT_NE(m.status().message().find("--agent-ovsdb"), std::string::npos);
  o.strict = true;
  o.dialect = Dialect::kAlcor;
  o.agent = true;
  m = MockServer::Create(o);
  EXPECT_TRUE(m.status().IsInvalidArgument()) << m.status().ToString();
}

TEST(VlanAllocatorTest, OneVlanPerVpcCountedFromOne) {
  VlanAllocator vlans;
  EXPECT_EQ(*vlans.For("vpc-a"), 1);
  EXPECT_EQ(*vlans.For("vpc-b"), 2);
  EXPECT_EQ(*vlans.For("vpc-a"), 1);
  EXPECT_EQ(*vlans.For("vpc-c"), 3);
}

TEST(VlanAllocatorTest, PortNameIsAlcorsTapName) {
  EXPECT_EQ(OvsAgent::PortName("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"), "tap0a1b2c3d-4e");
  EXPECT_EQ(OvsAgent::PortName("short"), "tapshort");
}

class MockOvsAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    MZ_REQUIRE_OVS();
    sandbox_ = std::make_unique<OvsSandbox>();
    ASSERT_EQ(sandbox_->error(), "");
    pod_ = std::make_unique<ScopedNetns>(UniqueName("mzop"));
    ASSERT_TRUE(pod_->ok());
  }
  void TearDown() override {
    server_.reset();
    pod_.reset();
    sandbox_.reset();
  }

  void Start() {
    Options o;
    o.strict = true;
    o.dialect = Dialect::kAlcor;
    o.agent_ovsdb = sandbox_->socket_path();
    o.agent_netns = sandbox_->netns_path();
    // o.bridge left empty: the OVS agent's default, br-int.
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &server_));
  }

  json Call(const std::string& method, const std::string& path, const json& body, int* status) {
    httplib::Client c(server_->base_url());
    c.set_read_timeout(20, 0);
    httplib::Result r = method == "POST"     ? c.Post(path, body.dump(), "application/json")
                        : method == "PUT"    ? c.Put(path, body.dump(), "application/json")
                        : method == "DELETE" ? c.Delete(path)
                                             : c.Get(path);
    if (!r) {
      *status = 0;
      return json{{"transport", httplib::to_string(r.error())}};
    }
    *status = r->status;
    return json::parse(r->body, nullptr, false);
  }

  static std::string PortPath(const std::string& id) {
    return std::string("/project/") + kProject + "/ports/" + id;
  }

  void CreatePort(const std::string& id) {
    int status = 0;
    json port = {{"id", id}, {"network_id", kVpc}, {"binding:host_id", "node-a"}};
    json r =
        Call("POST", std::string("/project/") + kProject + "/ports", {{"port", port}}, &status);
    ASSERT_EQ(status, 201) << r.dump();
  }

  json GetPort(const std::string& id) {
    int status = 0;
    json r = Call("GET", PortPath(id), json(), &status);
    EXPECT_EQ(status, 200) << r.dump();
    return r.value("port", json());
  }

  // Polls the port until Alcor says ACTIVE (bounded: the agent is told by ovsdb-server the
  // moment the port appears, so this is milliseconds).
  json WaitActive(const std::string& id) {
    json last;
    const auto deadline = Clock::now() + 20s;
    while (Clock::now() < deadline) {
      last = GetPort(id);
      if (last.value("status", "") == "ACTIVE") return last;
      std::this_thread::sleep_for(10ms);
    }
    return last;
  }

  // What nova (or the CNI plugin) does: a veth whose host end is the tap, plugged into br-int.
  void PlugTap(const std::string& tap) {
    std::string out;
    ASSERT_EQ(sandbox_->netns().Exec("ip link add " + tap + " type veth peer name eth" +
                                         std::to_string(++pods_) + " netns " + pod_->name(),
                                     &out),
              0)
        << out;
    ASSERT_EQ(sandbox_->netns().Exec("ip link set " + tap + " up", &out), 0) << out;
    ASSERT_EQ(sandbox_->Vsctl("add-port br-int " + tap, &out), 0) << out;
  }

  std::string Tag(const std::string& tap) {
    std::string out;
    EXPECT_EQ(sandbox_->Vsctl("get port " + tap + " tag", &out), 0) << out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  bool LinkUp(const std::string& tap) {
    std::string out;
    EXPECT_EQ(sandbox_->netns().Exec("ip -o link show dev " + tap, &out), 0) << out;
    return FlagsSayUp(out);
  }

  int VlanOf(const std::string& id) const {
    for (const PortSummary& p : server_->Ports()) {
      if (p.id == id) return p.vlan;
    }
    return -1;
  }

  // Whether the agent has `n` workers waiting within 10 s: the timer thread hands a new port
  // to the agent right after the create, not within it.
  bool WaitForWorkers(size_t n) {
    const auto deadline = Clock::now() + 10s;
    while (server_->agent_waiting() != n) {
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  json SetAdmin(const std::string& id, bool up) {
    int status = 0;
    json r = Call("PUT", PortPath(id), {{"port", {{"admin_state_up", up}}}}, &status);
    EXPECT_EQ(status, 200) << r.dump();
    return r.value("port", json());
  }

  std::unique_ptr<OvsSandbox> sandbox_;
  std::unique_ptr<ScopedNetns> pod_;
  std::unique_ptr<MockServer> server_;
  int pods_ = 0;
};

TEST_F(MockOvsAgentTest, PortIsActiveOnlyOnceItsTapIsOnTheBridgeWithTheVpcTag) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string a = "a1a1a1a1-0000-4000-8000-000000000001";
  const std::string b = "b2b2b2b2-0000-4000-8000-000000000002";
  ASSERT_NO_FATAL_FAILURE(CreatePort(a));
  ASSERT_NO_FATAL_FAILURE(CreatePort(b));
  // Pending: strict Alcor's GET shows an empty status until the data plane answered (the
  // entity's status is null, and a GET answers every field).
  json pending = GetPort(a);
  EXPECT_EQ(pending.value("status", "?"), "") << pending.dump();
  EXPECT_EQ(VlanOf(a), 0);

  const std::string tap_a = OvsAgent::PortName(a);
  ASSERT_NO_FATAL_FAILURE(PlugTap(tap_a));
  json active = WaitActive(a);
  ASSERT_EQ(active.value("status", ""), "ACTIVE") << active.dump();
  EXPECT_EQ(VlanOf(a), 1);
  EXPECT_EQ(Tag(tap_a), "1");
  // The other port is still waiting for its own tap.
  EXPECT_EQ(GetPort(b).value("status", "?"), "");

  const std::string tap_b = OvsAgent::PortName(b);
  ASSERT_NO_FATAL_FAILURE(PlugTap(tap_b));
  ASSERT_EQ(WaitActive(b).value("status", ""), "ACTIVE");
  // Same VPC, same VLAN.
  EXPECT_EQ(Tag(tap_b), "1");
  EXPECT_EQ(VlanOf(b), 1);
  int status = 0;
  json state = Call("GET", "/mock/state", json(), &status);
  EXPECT_EQ(state["vlans"], (json{{a, 1}, {b, 1}})) << state.dump();
  EXPECT_EQ(state["agent_waiting"], 0) << state.dump();

  // Deleting the port leaves the OVS port alone (nova's to remove).
  Call("DELETE", PortPath(a), json(), &status);
  EXPECT_EQ(status, 200);
  std::string out;
  EXPECT_EQ(sandbox_->Vsctl("port-to-br " + tap_a, &out), 0) << out;
}

TEST_F(MockOvsAgentTest, TapPresentBeforeThePortIsTaggedAtOnce) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string id = "c3c3c3c3-0000-4000-8000-000000000003";
  ASSERT_NO_FATAL_FAILURE(PlugTap(OvsAgent::PortName(id)));
  ASSERT_NO_FATAL_FAILURE(CreatePort(id));
  ASSERT_EQ(WaitActive(id).value("status", ""), "ACTIVE");
  EXPECT_EQ(Tag(OvsAgent::PortName(id)), "1");
}

TEST_F(MockOvsAgentTest, PortDeletedBeforeItsTapIsNeverTagged) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string id = "d4d4d4d4-0000-4000-8000-000000000004";
  ASSERT_NO_FATAL_FAILURE(CreatePort(id));
  EXPECT_EQ(GetPort(id).value("status", "?"), "");
  ASSERT_TRUE(WaitForWorkers(1));
  int status = 0;
  Call("DELETE", PortPath(id), json(), &status);
  ASSERT_EQ(status, 200);
  // The DELETE joined the worker before it answered.
  EXPECT_EQ(server_->agent_waiting(), 0u);
  const std::string tap = OvsAgent::PortName(id);
  ASSERT_NO_FATAL_FAILURE(PlugTap(tap));
  // A port created afterwards gets tagged: had the deleted one's worker still been there, it
  // would have tagged its tap before this one was.
  const std::string other = "e5e5e5e5-0000-4000-8000-000000000005";
  ASSERT_NO_FATAL_FAILURE(CreatePort(other));
  ASSERT_NO_FATAL_FAILURE(PlugTap(OvsAgent::PortName(other)));
  ASSERT_EQ(WaitActive(other).value("status", ""), "ACTIVE");
  EXPECT_EQ(Tag(tap), "[]");
}

TEST_F(MockOvsAgentTest, AdminStateIsOnlyRecordedAsByTheRealAgent) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const std::string id = "f6f6f6f6-0000-4000-8000-000000000006";
  ASSERT_NO_FATAL_FAILURE(CreatePort(id));
  const std::string tap = OvsAgent::PortName(id);
  ASSERT_NO_FATAL_FAILURE(PlugTap(tap));
  ASSERT_EQ(WaitActive(id).value("status", ""), "ACTIVE");
  json port = SetAdmin(id, false);
  EXPECT_EQ(port["admin_state_up"], false) << port.dump();
  EXPECT_TRUE(LinkUp(tap));
}

TEST_F(MockOvsAgentTest, StopWithAPortStillWaitingIsPrompt) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(CreatePort("b8b8b8b8-0000-4000-8000-000000000008"));
  ASSERT_TRUE(WaitForWorkers(1));
  const auto start = Clock::now();
  server_->Stop();
  // The worker's wait is for 300 s; Stop wakes it instead of waiting it out.
  EXPECT_LT(Clock::now() - start, 10s);
  EXPECT_EQ(server_->agent_waiting(), 0u);
}

TEST_F(MockOvsAgentTest, MissingBridgeFailsStart) {
  Options o;
  o.strict = true;
  o.dialect = Dialect::kAlcor;
  o.agent_ovsdb = sandbox_->socket_path();
  o.agent_netns = sandbox_->netns_path();
  o.bridge = "br-none";
  auto m = MockServer::Create(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Status st = (*m)->Start();
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
}

}  // namespace
}  // namespace mizarmp::mock
