// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-mock's host agent in real network namespaces (root): the bridge with the gateway,
// the veth pair per ready port, admin state on the host end, teardown on delete and on exit.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "mock-server/mock.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::mock {
namespace {

using nlohmann::json;
using testing::ScopedNetns;
using testing::UniqueName;
using Clock = std::chrono::steady_clock;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";

std::string PortPath(const std::string& id) {
  return std::string("/project/") + kProject + "/ports/" + id;
}

bool Contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The flags of `ip -o link show` ("<BROADCAST,MULTICAST,UP,LOWER_UP>") include UP.
bool AdminUp(const std::string& ip_link_line) {
  const size_t a = ip_link_line.find('<');
  const size_t b = ip_link_line.find('>', a);
  if (a == std::string::npos || b == std::string::npos) return false;
  std::stringstream flags(ip_link_line.substr(a + 1, b - a - 1));
  for (std::string f; std::getline(flags, f, ',');) {
    if (f == "UP") return true;
  }
  return false;
}

class MockAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    host_ = std::make_unique<ScopedNetns>(UniqueName("mzah"));
    pod_ = std::make_unique<ScopedNetns>(UniqueName("mzap"));
    bridge_ = UniqueName("mzbr");
  }
  void TearDown() override {
    server_.reset();
    pod_.reset();
    host_.reset();
  }

  void Start(Dialect dialect = Dialect::kV01, bool unplugs_later = false) {
    Options o;
    o.dialect = dialect;
    o.agent = true;
    o.agent_unplugs_later = unplugs_later;
    o.bridge = bridge_;
    o.agent_netns = host_->path();
    o.cidr = "10.66.0.0/24";
    o.subnet6_id = "6a6a6a6a-0000-4000-8000-000000000006";
    o.cidr6 = "fd00:66::/64";
    o.mtu = 1400;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &server_));
  }

  json Call(const std::string& method, const std::string& path, const json& body, int* status) {
    httplib::Client c(server_->base_url());
    c.set_read_timeout(20, 0);
    auto send = [&]() -> httplib::Result {
      if (method == "POST") return c.Post(path, body.dump(), "application/json");
      if (method == "PUT") return c.Put(path, body.dump(), "application/json");
      if (method == "DELETE") return c.Delete(path);
      return c.Get(path);
    };
    httplib::Result r = send();
    if (!r) {
      *status = 0;
      return json{{"transport", httplib::to_string(r.error())}};
    }
    *status = r->status;
    return json::parse(r->body, nullptr, false);
  }

  json CreatePort(const std::string& id, const std::string& netns, const std::string& ifname) {
    int status = 0;
    json port = {{"id", id},
                 {"network_ns", netns},
                 {"veth_name", ifname},
                 {"binding:host_id", "node-a"},
                 {"admin_state_up", true}};
    json r =
        Call("POST", std::string("/project/") + kProject + "/ports", {{"port", port}}, &status);
    EXPECT_EQ(status, 201) << r.dump();
    return r["port"];
  }

  // Polls GET until the port leaves the pending state.
  json WaitSettled(const std::string& id, const std::string& pending = "PENDING") {
    json last;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      int status = 0;
      json r = Call("GET", PortPath(id), json(), &status);
      if (status != 200) return r;
      last = r["port"];
      if (last["status"] != pending) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return last;
  }

  std::string HostVeth(const std::string& id) const {
    for (const auto& p : server_->Ports()) {
      if (p.id == id) return p.host_veth;
    }
    return "";
  }

  std::unique_ptr<ScopedNetns> host_;
  std::unique_ptr<ScopedNetns> pod_;
  std::string bridge_;
  std::unique_ptr<MockServer> server_;
};

TEST_F(MockAgentTest, ReadyPortHasItsVethInThePodNamespace) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::string out;
  ASSERT_EQ(host_->Exec("ip -o addr show dev " + bridge_, &out), 0) << out;
  EXPECT_TRUE(Contains(out, "10.66.0.1/24")) << out;
  EXPECT_TRUE(Contains(out, "fd00:66::1/64")) << out;
  ASSERT_EQ(host_->Exec("ip -o link show dev " + bridge_, &out), 0) << out;
  EXPECT_TRUE(AdminUp(out)) << out;

  const json created = CreatePort("0123abcd-4567-4890-8abc-def012345678", pod_->path(), "eth7");
  const std::string mac = created["mac_address"];
  const json port = WaitSettled("0123abcd-4567-4890-8abc-def012345678");
  ASSERT_EQ(port["status"], "UP") << port.dump();

  // Reported ready: the NIC is already in the pod, named as asked, with the port's MAC.
  ASSERT_EQ(pod_->Exec("ip -o link show dev eth7", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "link/ether " + mac)) << out;
  EXPECT_TRUE(Contains(out, "mtu 1400")) << out;

  const std::string host = HostVeth("0123abcd-4567-4890-8abc-def012345678");
  EXPECT_EQ(host, "mz0123abcd456");
  ASSERT_EQ(host_->Exec("ip -o link show dev " + host, &out), 0) << out;
  EXPECT_TRUE(Contains(out, "master " + bridge_)) << out;
  EXPECT_TRUE(AdminUp(out)) << out;

  // admin_state_up=false takes the host end down; true brings it up again.
  int status = 0;
  json r = Call("PUT", PortPath("0123abcd-4567-4890-8abc-def012345678"),
                {{"port", {{"admin_state_up", false}}}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  ASSERT_EQ(host_->Exec("ip -o link show dev " + host, &out), 0) << out;
  EXPECT_FALSE(AdminUp(out)) << out;
  r = Call("PUT", PortPath("0123abcd-4567-4890-8abc-def012345678"),
           {{"port", {{"admin_state_up", true}}}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  ASSERT_EQ(host_->Exec("ip -o link show dev " + host, &out), 0) << out;
  EXPECT_TRUE(AdminUp(out)) << out;

  // DELETE removes the pair.
  r = Call("DELETE", PortPath("0123abcd-4567-4890-8abc-def012345678"), json(), &status);
  EXPECT_EQ(status, 200) << r.dump();
  EXPECT_NE(host_->Exec("ip link show dev " + host + " 2>&1", &out), 0) << out;
  EXPECT_NE(pod_->Exec("ip link show dev eth7 2>&1", &out), 0) << out;
}

// An agent that removes NICs after the controller answered: the DELETE is answered with the
// pair still there (or already gone), the agent then removes it, and a port for the same pod and
// interface name created right after the DELETE is plugged only after that removal: it goes UP,
// never failed on a name still taken.
TEST_F(MockAgentTest, AnAgentThatUnplugsLaterKeepsItsOrder) {
  ASSERT_NO_FATAL_FAILURE(Start(Dialect::kV01, /*unplugs_later=*/true));
  CreatePort("old", pod_->path(), "eth0");
  ASSERT_EQ(WaitSettled("old")["status"], "UP");
  const std::string old_host = HostVeth("old");
  ASSERT_FALSE(old_host.empty());
  int status = 0;
  json r = Call("DELETE", PortPath("old"), json(), &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json created = CreatePort("new", pod_->path(), "eth0");
  const json port = WaitSettled("new");
  ASSERT_EQ(port["status"], "UP") << port.dump();
  std::string out;
  ASSERT_EQ(pod_->Exec("ip -o link show dev eth0", &out), 0) << out;
  EXPECT_TRUE(Contains(out, "link/ether " + created["mac_address"].get<std::string>())) << out;
  EXPECT_EQ(server_->agent_backlog(), 0u);
  EXPECT_NE(host_->Exec("ip link show dev " + old_host + " 2>&1", &out), 0) << out;
  r = Call("GET", "/mock/state", json(), &status);
  EXPECT_EQ(r["agent_backlog"], 0) << r.dump();

  // Deleted with nothing to follow: the timer thread removes the pair on its own.
  const std::string new_host = HostVeth("new");
  r = Call("DELETE", PortPath("new"), json(), &status);
  ASSERT_EQ(status, 200) << r.dump();
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (server_->agent_backlog() != 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(server_->agent_backlog(), 0u);
  EXPECT_NE(host_->Exec("ip link show dev " + new_host + " 2>&1", &out), 0) << out;
  EXPECT_NE(pod_->Exec("ip link show dev eth0 2>&1", &out), 0) << out;
}

TEST_F(MockAgentTest, MissingNamespaceFailsThePort) {
  ASSERT_NO_FATAL_FAILURE(Start(Dialect::kAlcor));
  CreatePort("lost", "/var/run/netns/" + UniqueName("nonexistent"), "eth0");
  const json port = WaitSettled("lost", "created");
  EXPECT_EQ(port["status"], "failed") << port.dump();
  EXPECT_EQ(HostVeth("lost"), "");
  std::string out;
  EXPECT_EQ(host_->CountLinks("veth", &out), 0) << out;
  // The interface name is taken in the pod: failed as well, nothing left behind.
  CreatePort("first", pod_->path(), "eth0");
  EXPECT_EQ(WaitSettled("first", "created")["status"], "ACTIVE");
  CreatePort("second", pod_->path(), "eth0");
  EXPECT_EQ(WaitSettled("second", "created")["status"], "failed");
  EXPECT_EQ(host_->CountLinks("veth", &out), 1) << out;
}

TEST_F(MockAgentTest, DeleteAfterThePodNamespaceIsGone) {
  ASSERT_NO_FATAL_FAILURE(Start());
  CreatePort("short-lived", pod_->path(), "eth0");
  ASSERT_EQ(WaitSettled("short-lived")["status"], "UP");
  pod_->Remove();  // the pod's end goes with its namespace, and so does the pair
  int status = 0;
  json r = Call("DELETE", PortPath("short-lived"), json(), &status);
  EXPECT_EQ(status, 200) << r.dump();
  EXPECT_TRUE(server_->Ports().empty());
}

TEST_F(MockAgentTest, StopRemovesVethsAndTheBridge) {
  ASSERT_NO_FATAL_FAILURE(Start());
  CreatePort("kept", pod_->path(), "eth0");
  ASSERT_EQ(WaitSettled("kept")["status"], "UP");
  std::string out;
  ASSERT_EQ(host_->Exec("ip link show dev " + bridge_, &out), 0) << out;
  server_.reset();
  EXPECT_NE(host_->Exec("ip link show dev " + bridge_ + " 2>&1", &out), 0) << out;
  EXPECT_NE(pod_->Exec("ip link show dev eth0 2>&1", &out), 0) << out;
  EXPECT_EQ(host_->CountLinks("veth", &out), 0) << out;
}

TEST_F(MockAgentTest, ResetTearsDownVeths) {
  ASSERT_NO_FATAL_FAILURE(Start());
  CreatePort("r1", pod_->path(), "eth0");
  CreatePort("r2", pod_->path(), "eth1");
  ASSERT_EQ(WaitSettled("r1")["status"], "UP");
  ASSERT_EQ(WaitSettled("r2")["status"], "UP");
  int status = 0;
  Call("POST", "/mock/reset", json::object(), &status);
  EXPECT_EQ(status, 200);
  std::string out;
  EXPECT_EQ(host_->CountLinks("veth", &out), 0) << out;
  EXPECT_EQ(pod_->CountLinks("veth", &out), 0) << out;
  // The bridge stays for the ports to come.
  EXPECT_EQ(host_->Exec("ip link show dev " + bridge_, &out), 0) << out;
}

TEST_F(MockAgentTest, ExistingBridgeIsKept) {
  ASSERT_EQ(host_->Exec("ip link add " + bridge_ + " type bridge"), 0);
  ASSERT_NO_FATAL_FAILURE(Start());
  server_.reset();
  std::string out;
  EXPECT_EQ(host_->Exec("ip link show dev " + bridge_, &out), 0) << "a bridge the mock did not "
                                                                    "create is left alone";
}

}  // namespace
}  // namespace mizarmp::mock
