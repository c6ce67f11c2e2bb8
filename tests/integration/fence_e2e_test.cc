// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// FenceController end to end (root): mizarmp-mock runs as a process with its host agent in its
// own netns, the real mizarmp plugin binary puts pods of two nodes (separate hostId and state
// dir per node) into real network namespaces, and mizarmp-addons runs as a process, driven
// over its unix socket through the generated C++ stubs. What is asserted is what an operator
// sees: the clients listed, the ports' admin state at Mizar-MP, who can still ping whom, and
// the fences that survive a kill -9 of the server.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <memory>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "common/ipaddr.h"
#include "fence/fence.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "mizarmp-client/client.h"
#include "tests/support/entered_netns.h"
#include "tests/support/ovs_sandbox.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using nlohmann::json;
using testing::ProcessResult;
using testing::ScopedNetns;
using testing::UniqueName;
using Clock = std::chrono::steady_clock;

constexpr const char* kSubnetCidr = "10.242.0.0/24";
constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
// Node A's pod block, configured as one of node A's own addresses (nodeAddresses); the test
// steers the mock's next-fit allocator so that node A's pods land inside it. Pods added to A
// later land inside it too, which is what lets the reconcile find them inside the fence.
constexpr const char* kNodeABlock = "10.242.0.8/29";
constexpr const char* kNodeAAddress = "192.168.77.1";
constexpr const char* kNodeBAddress = "192.168.77.2";

// A child process killed (SIGKILL) and reaped on destruction unless stopped before.
class Child {
 public:
  Child() = default;
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() { Kill(SIGKILL); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  Child& operator=(Child&& o) noexcept {
    if (this != &o) {
      Kill(SIGKILL);
      pid_ = o.pid_;
      o.pid_ = -1;
    }
    return *this;
  }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Sends `sig` and reaps the process (SIGKILL after 20 s if it does not exit). Returns the
  // raw wait status, or -1 when there was no process.
  int Kill(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = testing::WaitProcess(pid_, std::chrono::seconds(20));
    if (status == -1) {
      ::kill(pid_, SIGKILL);
      status = testing::WaitProcess(pid_, std::chrono::seconds(20));
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

// Polls `done` every 100 ms until it returns true or `timeout` passes.
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string StatusText(const grpc::Status& s) {
  return std::to_string(static_cast<int>(s.error_code())) + " " + s.error_message();
}

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

// Every address a list of CIDRs covers (the blocks here are small).
std::set<std::string> Expand(const std::vector<std::string>& cidrs) {
  std::set<std::string> out;
  for (const auto& text : cidrs) {
    auto c = Cidr::Parse(text, /*allow_bare=*/true);
    EXPECT_TRUE(c.ok()) << text;
    if (!c.ok()) continue;
    EXPECT_FALSE(c->has_host_bits()) << text << " is not in canonical network form";
    EXPECT_GE(c->prefix_len(), c->address().bits() - 8) << text << " is larger than expected";
    if (c->prefix_len() < c->address().bits() - 8) continue;
    const uint64_t n = uint64_t{1} << (c->address().bits() - c->prefix_len());
    for (uint64_t i = 0; i < n; ++i) out.insert(c->network().Plus(i).ToString());
  }
  return out;
}

std::set<std::string> Range(const std::string& cidr) { return Expand({cidr}); }

class FenceE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    if (alcor_) {
      // Alcor's node: its Open vSwitch, whose namespace this thread enters, so that the mock,
      // the plugin, the server and this test's clients all run on that node.
      MZ_REQUIRE_OVS();
      ovs_ = std::make_unique<testing::OvsSandbox>();
      ASSERT_EQ(ovs_->error(), "");
      node_ = std::make_unique<testing::EnteredNetns>(ovs_->netns_path());
      ASSERT_EQ(node_->error(), "");
    } else {
      host_ = std::make_unique<ScopedNetns>(UniqueName("mzh"));
    }
    ASSERT_TRUE(MakeDirs(dir_.path() + "/a", 0700).ok());
    ASSERT_TRUE(MakeDirs(dir_.path() + "/b", 0700).ok());
    StartMock();
    if (HasFatalFailure()) return;
    client::ClientConfig cc;
    cc.base_url = mpurl_;
    cc.project_id = kProject;
    cc.subnet_id = kSubnet;
    auto c = client::Client::Create(cc);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    mp_ = std::move(*c);
  }

  void TearDown() override {
    agent_b_.Kill(SIGTERM);  // lifts nothing: its table goes with the pods' namespaces
    addons_.Kill(SIGTERM);
    mock_.Kill(SIGTERM);  // the mock tears its veths and bridge down
    pods_.clear();
    host_.reset();
    mp_.reset();
    node_.reset();
    ovs_.reset();
  }

  std::vector<std::string> MockCommand(const std::string& port_file) const {
    std::vector<std::string> command = {testing::BinDir() + "/mizarmp-mock",
                                        "--listen",
                                        "127.0.0.1:0",
                                        "--port-file",
                                        port_file,
                                        "--cidr",
                                        kSubnetCidr,
                                        "--log-level",
                                        "debug"};
    if (alcor_) {
      // Alcor's agent on OVS, which does not act on admin_state_up (DESIGN.md, plug mode): what
      // cuts the data plane is node-b's agent (StartNodeBAgent).
      command.insert(command.end(), {"--dialect", "alcor", "--strict", "--agent-ovsdb",
                                     ovs_->socket_path(), "--bridge", ovs_->bridge()});
    } else {
      command.insert(command.end(),
                     {"--agent", "--bridge", UniqueName("mzbr"), "--agent-netns", host_->path()});
    }
    return command;
  }

  void StartMock() {
    const std::string port_file = dir_.path() + "/mock.port";
    pid_t pid =
        testing::SpawnProcess(MockCommand(port_file), {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
                              "", dir_.path() + "/mock.log");
    ASSERT_GT(pid, 0);
    mock_ = Child(pid);
    std::string port;
    ASSERT_TRUE(WaitFor(
        [&] {
          auto text = ReadFile(port_file);
          if (!text.ok() || text->empty()) return false;
          port = *text;
          while (!port.empty() && (port.back() == '\n' || port.back() == ' ')) port.pop_back();
          return !port.empty();
        },
        std::chrono::seconds(20)))
        << "mizarmp-mock did not write its port file; log:\n"
        << Log("mock.log");
    mpurl_ = "http://127.0.0.1:" + port;
  }

  std::string Log(const std::string& name) const {
    auto text = ReadFile(dir_.path() + "/" + name);
    return text.ok() ? *text : std::string("(no log)");
  }

  // How often mizarmp-addons has listed the ports at the mock so far: at debug level it logs
  // every call it makes, and each reconcile pass lists the ports once (usePortList).
  int PortListings() const {
    static const std::regex kListing(R"(GET \S*/ports(\?\S*)? -> HTTP 200 )");
    const std::string log = Log("addons.log");
    return static_cast<int>(std::distance(
        std::sregex_iterator(log.begin(), log.end(), kListing), std::sregex_iterator()));
  }

  // Whether the reconcile passes `n` more times within 20 s.
  bool ReconcilePasses(int n) const {
    const int before = PortListings();
    return WaitFor([&] { return PortListings() >= before + n; }, std::chrono::seconds(20));
  }

  std::string StateDir(char node) const { return dir_.path() + "/" + std::string(1, node); }
  std::string SocketPath() const { return dir_.path() + "/run/csi-addons.sock"; }

  // The server: controller mode, node A's records in its state dir, the whole cluster from the
  // Mizar-MP port list, a short reconcile interval.
  void StartAddons() {
    json config = {
        {"endpoint", "unix://" + SocketPath()},
        {"mpurl", mpurl_},
        {"project", kProject},
        {"subnet", kSubnet},
        {"stateDir", StateDir('a')},
        {"hostId", "node-a"},
        {"fenceStore", dir_.path() + "/store/fence.db"},
        {"usePortList", true},
        {"nodeAddresses", {{"node-a", {kNodeABlock, kNodeAAddress}}, {"node-b", {kNodeBAddress}}}},
        {"reconcileIntervalMs", 300},
        {"logLevel", "debug"},
        {"logFile", dir_.path() + "/addons.log"},
    };
    if (alcor_) {
      // The port index, and its publication endpoint for node-b's agent (TLS, client
      // certificates).
      pki_ = std::make_unique<testing::Pki>();
      ASSERT_EQ(pki_->error, "");
      config.update({{"portIndex", true},
                     {"publicationEndpoint", "tcp://127.0.0.1:0"},
                     {"tlsCertFile", pki_->server_cert},
                     {"tlsKeyFile", pki_->server_key},
                     {"tlsClientCaFile", pki_->ca}});
    }
    const std::string path = dir_.path() + "/addons.json";
    ASSERT_TRUE(WriteFileAtomic(path, config.dump(2)).ok());
    pid_t pid = testing::SpawnProcess({testing::BinDir() + "/mizarmp-addons", "--config", path},
                                      {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "",
                                      dir_.path() + "/addons.out");
    ASSERT_GT(pid, 0);
    addons_ = Child(pid);
    auto channel = grpc::CreateChannel("unix:" + SocketPath(), grpc::InsecureChannelCredentials());
    identity_ = identity::Identity::NewStub(channel);
    fence_ = ::fence::FenceController::NewStub(channel);
    // Ready once Probe says so (the store opens in the background).
    grpc::Status last;
    const bool ready = WaitFor(
        [&] {
          identity::ProbeRequest req;
          identity::ProbeResponse resp;
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
          last = identity_->Probe(&ctx, req, &resp);
          return last.ok() && resp.has_ready() && resp.ready().value();
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(ready) << "mizarmp-addons never became ready: " << StatusText(last) << "\nlog:\n"
                       << Log("addons.log") << Log("addons.out");
    if (alcor_) StartNodeBAgent();
  }

  // The port the controller bound for publications, from its log; 0 when it has not said.
  int PublicationPort() const {
    static const std::regex kBound(R"(and on tcp://127\.0\.0\.1:0 \(bound port (\d+)\))");
    const std::string log = Log("addons.log");
    std::smatch m;
    return std::regex_search(log, m, kBound) ? std::stoi(m[1].str()) : 0;
  }

  // node-b's agent: mizarmp-addons in node mode on this node's namespace, publishing node-b's
  // pods (its records) to the controller and enforcing the fence set on them. node-a has none:
  // it is the dead node, and what a fence of it does to the data plane is node-b's doing.
  void StartNodeBAgent() {
    const int port = PublicationPort();
    ASSERT_GT(port, 0) << Log("addons.log");
    const testing::Pki::KeyPair own = pki_->NodeClient("node-b");
    ASSERT_EQ(pki_->error, "");
    ASSERT_TRUE(MakeDirs(dir_.path() + "/agent-b", 0700).ok());
    pid_t pid = testing::SpawnProcess(
        {testing::BinDir() + "/mizarmp-addons", "--mode=node",
         "--endpoint=unix://" + dir_.path() + "/agent-b/run/addons.sock",
         "--key-store-dir=" + dir_.path() + "/agent-b/keys", "--state-dir=" + StateDir('b'),
         "--host-id=node-b", "--publish-to=tcp://127.0.0.1:" + std::to_string(port),
         "--publish-ca-file=" + pki_->ca, "--publish-cert-file=" + own.cert,
         "--publish-key-file=" + own.key, "--publish-interval-ms=200",
         "--log-file=" + dir_.path() + "/agent-b.log"},
        {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "", dir_.path() + "/agent-b.out");
    ASSERT_GT(pid, 0);
    agent_b_ = Child(pid);
    ASSERT_TRUE(WaitFor([&] { return Log("agent-b.log").find("this node enforces") !=
                                     std::string::npos; },
                        std::chrono::seconds(30)))
        << "node-b's agent never enforced a fence set:\n"
        << Log("agent-b.log") << Log("agent-b.out");
  }

  json PluginConfig(char node) const {
    json config = {{"cniVersion", "1.0.0"},
                   {"name", network_},
                   {"type", "mizarmp"},
                   {"mpurl", mpurl_},
                   {"project", kProject},
                   {"subnet", kSubnet},
                   {"hostId", std::string("node-") + node},
                   {"stateDir", StateDir(node)},
                   {"logLevel", "debug"},
                   {"timeouts", {{"readyMs", 10000}, {"nicMs", 10000}}}};
    if (alcor_) {
      config["networkId"] = client::kDefaultVpcId;  // Alcor's network_id is the VPC
      config["ovsdbSocket"] = ovs_->socket_path();  // the plugin plugs the pods (plug mode)
      config["ovsBridge"] = ovs_->bridge();
    }
    return config;
  }

  ProcessResult Plugin(const std::string& command, char node, const std::string& container,
                       const std::string& netns) const {
    std::map<std::string, std::string> env = {
        {"CNI_COMMAND", command},        {"CNI_CONTAINERID", container},
        {"CNI_IFNAME", "eth0"},          {"CNI_NETNS", netns},
        {"CNI_PATH", testing::BinDir()}, {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    return testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, PluginConfig(node).dump(),
                               std::chrono::seconds(60));
  }

  struct Pod {
    ScopedNetns* ns = nullptr;
    std::string container;
    std::string ip;
  };

  // ADD of a new pod on `node`; its address (without the prefix length).
  Pod AddPod(char node, const std::string& container) {
    pods_.push_back(std::make_unique<ScopedNetns>(UniqueName("mzp")));
    Pod pod{pods_.back().get(), container, ""};
    ProcessResult r = Plugin("ADD", node, container, pod.ns->path());
    EXPECT_EQ(r.exit_code, 0) << "ADD " << container << ": " << r.out << "\n" << r.err;
    json res = json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || res.is_discarded() || !res.contains("ips") || res["ips"].empty()) {
      ADD_FAILURE() << "ADD " << container << " gave no address: " << r.out;
      return pod;
    }
    std::string addr = res["ips"][0]["address"].get<std::string>();
    pod.ip = addr.substr(0, addr.find('/'));
    return pod;
  }

  void DelPod(char node, const Pod& pod) {
    ProcessResult r = Plugin("DEL", node, pod.container, pod.ns->path());
    EXPECT_EQ(r.exit_code, 0) << "DEL " << pod.container << ": " << r.out << "\n" << r.err;
  }

  // Pods on node B are created and deleted until the mock's next-fit cursor is right before
  // node A's block, so node A's pods land inside it.
  void SteerAllocatorToNodeABlock() {
    const std::set<std::string> block = Range(kNodeABlock);
    const std::string before_block = "10.242.0.7";
    for (int i = 0; i < 20; ++i) {
      Pod filler = AddPod('b', "filler" + std::to_string(i));
      ASSERT_FALSE(filler.ip.empty());
      ASSERT_EQ(block.count(filler.ip), 0u) << "allocator ran past " << kNodeABlock;
      DelPod('b', filler);
      if (filler.ip == before_block) return;
    }
    FAIL() << "the mock never handed out " << before_block;
  }

  // Alcor's gateway as a router port would be: an internal port on br-int in the VPC's VLAN (the
  // tag the agent gave b1's port) holding the subnet's gateway address.
  void GatewayOnOvs() {
    std::string tag;
    auto ports = PortsByIp();
    ASSERT_EQ(ports.count(b1_.ip), 1u);
    ASSERT_EQ(ovs_->Vsctl("get port tap" + ports[b1_.ip].id.substr(0, 11) + " tag", &tag), 0)
        << tag;
    while (!tag.empty() && tag.back() == '\n') tag.pop_back();
    std::string out;
    ASSERT_EQ(ovs_->Vsctl("add-port " + ovs_->bridge() + " gw -- set interface gw type=internal" +
                              " -- set port gw tag=" + tag,
                          &out),
              0)
        << out;
    ASSERT_EQ(
        ovs_->netns().Exec("sh -c 'ip addr add 10.242.0.1/24 dev gw && ip link set gw up'", &out),
        0)
        << out;
  }

  // Every port at Mizar-MP with one of `ips`, by address.
  std::map<std::string, client::Port> PortsByIp() const {
    std::map<std::string, client::Port> out;
    auto ports = mp_->ListPorts();
    EXPECT_TRUE(ports.ok()) << ports.status().ToString();
    if (!ports.ok()) return out;
    for (const auto& p : ports->ports) {
      for (const auto& f : p.fixed_ips) out[f.ip_address] = p;
    }
    return out;
  }

  // admin_state_up of the port holding `ip`; fails the test when there is none.
  bool AdminUp(const std::string& ip) const {
    auto ports = PortsByIp();
    auto it = ports.find(ip);
    EXPECT_NE(it, ports.end()) << "no port holds " << ip;
    return it == ports.end() ? true : it->second.admin_state_up;
  }

  bool WaitAdmin(const std::string& ip, bool up, std::chrono::milliseconds timeout) const {
    return WaitFor([&] { return AdminUp(ip) == up; }, timeout);
  }

  static bool Ping(const Pod& from, const std::string& to) {
    return from.ns->Exec("ping -c1 -W1 " + to + " >/dev/null 2>&1") == 0;
  }
  // From the gateway: the mock's agent's bridge, or on Alcor an OVS internal port (GatewayOnOvs).
  bool PingFromGateway(const std::string& to) const {
    const ScopedNetns& gateway = alcor_ ? ovs_->netns() : *host_;
    return gateway.Exec("ping -c1 -W1 " + to + " >/dev/null 2>&1") == 0;
  }
  // Reachable within `timeout` (ARP and link state may take a moment after a change).
  static bool EventuallyPings(const Pod& from, const std::string& to,
                              std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    return WaitFor([&] { return Ping(from, to); }, timeout);
  }
  // Unreachable: several attempts, none answered.
  static bool NeverPings(const Pod& from, const std::string& to) {
    return from.ns->Exec("ping -c3 -i0.3 -W1 " + to + " >/dev/null 2>&1") != 0;
  }

  // RPC helpers.
  std::map<std::string, std::vector<std::string>> Clients(
      const std::map<std::string, std::string>& params = {}) {
    ::fence::GetFenceClientsRequest req;
    for (const auto& [k, v] : params) (*req.mutable_parameters())[k] = v;
    ::fence::GetFenceClientsResponse resp;
    auto ctx = Ctx();
    grpc::Status s = fence_->GetFenceClients(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << "GetFenceClients: " << StatusText(s);
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& c : resp.clients()) {
      EXPECT_EQ(out.count(c.id()), 0u) << "node " << c.id() << " listed twice";
      auto& list = out[c.id()];
      for (const auto& a : c.addresses()) list.push_back(a.cidr());
    }
    return out;
  }

  grpc::Status Fence(const std::vector<std::string>& cidrs) {
    ::fence::FenceClusterNetworkRequest req;
    for (const auto& c : cidrs) req.add_cidrs()->set_cidr(c);
    ::fence::FenceClusterNetworkResponse resp;
    auto ctx = Ctx();
    return fence_->FenceClusterNetwork(ctx.get(), req, &resp);
  }

  grpc::Status Unfence(const std::vector<std::string>& cidrs) {
    ::fence::UnfenceClusterNetworkRequest req;
    for (const auto& c : cidrs) req.add_cidrs()->set_cidr(c);
    ::fence::UnfenceClusterNetworkResponse resp;
    auto ctx = Ctx();
    return fence_->UnfenceClusterNetwork(ctx.get(), req, &resp);
  }

  std::vector<std::string> ListFences() {
    ::fence::ListClusterFenceRequest req;
    ::fence::ListClusterFenceResponse resp;
    auto ctx = Ctx();
    grpc::Status s = fence_->ListClusterFence(ctx.get(), req, &resp);
    EXPECT_TRUE(s.ok()) << "ListClusterFence: " << StatusText(s);
    std::vector<std::string> out;
    for (const auto& c : resp.cidrs()) out.push_back(c.cidr());
    return out;
  }

  // Replaces the mock's injected faults (its control endpoint, not part of Mizar-MP).
  void SetFaults(const json& faults) const {
    std::string out;
    const int rc = testing::Shell("curl -sS -f -X POST -H 'Content-Type: application/json' -d '" +
                                      faults.dump() + "' " + mpurl_ + "/mock/faults",
                                  &out);
    ASSERT_EQ(rc, 0) << "POST /mock/faults: " << out;
  }

  // Node A fenced by its clients' addresses: its pods cut off, B's not; a pod added to A later
  // cut off by the reconcile; the unfence brings everything back.
  void FenceIsolatesNodeAReconcileCatchesNewPodsUnfenceRestores() {
    CreateCluster();
    if (HasFatalFailure()) return;
    StartAddons();
    if (HasFatalFailure()) return;

    // GetFenceClients: node A and node B, each with exactly its own addresses and its pods'.
    auto clients = Clients();
    ASSERT_EQ(clients.size(), 2u) << Log("addons.log");
    ASSERT_EQ(clients.count("node-a"), 1u);
    ASSERT_EQ(clients.count("node-b"), 1u);
    std::set<std::string> want_a = Range(kNodeABlock);  // holds a1 and a2
    want_a.insert(kNodeAAddress);
    EXPECT_EQ(Expand(clients["node-a"]), want_a);
    EXPECT_EQ(clients["node-a"],
              (std::vector<std::string>{kNodeABlock, std::string(kNodeAAddress) + "/32"}));
    EXPECT_EQ(Expand(clients["node-b"]), (std::set<std::string>{b1_.ip, kNodeBAddress}));
    EXPECT_EQ(clients["node-b"].size(), 2u);
    // The "hostId" parameter narrows the answer to one node.
    auto only_b = Clients({{"hostId", "node-b"}});
    ASSERT_EQ(only_b.size(), 1u);
    EXPECT_EQ(only_b.begin()->first, "node-b");

    // Fence node A: its ports go down at Mizar-MP, its pods lose the network, node B's pod
    // stays reachable.
    const std::vector<std::string> fence_a = clients["node-a"];
    grpc::Status s = Fence(fence_a);
    ASSERT_TRUE(s.ok()) << StatusText(s) << "\n" << Log("addons.log");
    EXPECT_FALSE(AdminUp(a1_.ip));
    EXPECT_FALSE(AdminUp(a2_.ip));
    EXPECT_TRUE(AdminUp(b1_.ip));
    EXPECT_TRUE(NeverPings(a1_, b1_.ip));
    EXPECT_TRUE(NeverPings(a2_, b1_.ip));
    EXPECT_TRUE(NeverPings(b1_, a1_.ip));
    EXPECT_TRUE(WaitFor([&] { return PingFromGateway(b1_.ip); }, std::chrono::seconds(10)))
        << "node B's pod must stay reachable";
    EXPECT_EQ(ListFences(), fence_a);
    // Repeating the fence is harmless.
    s = Fence(fence_a);
    EXPECT_TRUE(s.ok()) << StatusText(s);
    EXPECT_EQ(ListFences(), fence_a);

    // A pod added to node A after the fence lands inside it and the reconcile disables it.
    Pod a3 = AddPod('a', "a3");
    ASSERT_FALSE(a3.ip.empty());
    ASSERT_EQ(Range(kNodeABlock).count(a3.ip), 1u) << a3.ip;
    EXPECT_TRUE(WaitAdmin(a3.ip, false, std::chrono::seconds(20)))
        << "the reconcile did not disable " << a3.ip << "\n"
        << Log("addons.log");
    EXPECT_TRUE(NeverPings(a3, b1_.ip));
    EXPECT_TRUE(AdminUp(b1_.ip));

    // Unfence: every port of node A comes back, and so does the traffic.
    s = Unfence(fence_a);
    ASSERT_TRUE(s.ok()) << StatusText(s) << "\n" << Log("addons.log");
    EXPECT_TRUE(ListFences().empty());
    EXPECT_TRUE(WaitAdmin(a1_.ip, true, std::chrono::seconds(20)));
    EXPECT_TRUE(WaitAdmin(a2_.ip, true, std::chrono::seconds(20)));
    EXPECT_TRUE(WaitAdmin(a3.ip, true, std::chrono::seconds(20)));
    EXPECT_TRUE(EventuallyPings(a1_, b1_.ip));
    EXPECT_TRUE(EventuallyPings(a2_, b1_.ip));
    EXPECT_TRUE(EventuallyPings(a3, b1_.ip));
    EXPECT_TRUE(EventuallyPings(b1_, a1_.ip));
    // Unfencing what is not fenced is harmless.
    s = Unfence(fence_a);
    EXPECT_TRUE(s.ok()) << StatusText(s);
  }

  // The common start: B1 on node B, then two pods on node A inside node A's block.
  void CreateCluster() {
    b1_ = AddPod('b', "b1");
    ASSERT_FALSE(b1_.ip.empty());
    if (alcor_) {
      ASSERT_NO_FATAL_FAILURE(GatewayOnOvs());
    }
    SteerAllocatorToNodeABlock();
    if (HasFatalFailure()) return;
    a1_ = AddPod('a', "a1");
    a2_ = AddPod('a', "a2");
    ASSERT_FALSE(a1_.ip.empty());
    ASSERT_FALSE(a2_.ip.empty());
    const auto block = Range(kNodeABlock);
    ASSERT_EQ(block.count(a1_.ip), 1u) << a1_.ip;
    ASSERT_EQ(block.count(a2_.ip), 1u) << a2_.ip;
    ASSERT_EQ(block.count(b1_.ip), 0u) << b1_.ip;
    // Everyone talks to everyone before any fence.
    EXPECT_TRUE(EventuallyPings(a1_, b1_.ip));
    EXPECT_TRUE(EventuallyPings(a2_, b1_.ip));
    EXPECT_TRUE(EventuallyPings(b1_, a1_.ip));
  }

  // The mock plays the real Alcor controller (--strict) and its agent on OVS, into which the
  // plugin plugs the pods (plug mode); node-b runs its own agent (StartNodeBAgent).
  bool alcor_ = false;
  testing::TempDir dir_;
  std::string network_ = "mzt-" + UniqueName("f");
  std::unique_ptr<ScopedNetns> host_;            // the mock's agent's namespace (v0.1)
  std::unique_ptr<testing::OvsSandbox> ovs_;     // Alcor's node and its OVS
  std::unique_ptr<testing::EnteredNetns> node_;  // this thread inside it
  std::vector<std::unique_ptr<ScopedNetns>> pods_;
  Child mock_;
  Child addons_;
  Child agent_b_;                         // node-b's agent, on Alcor
  std::unique_ptr<testing::Pki> pki_;     // the controller's and node-b's certificates, on Alcor
  std::string mpurl_;
  std::unique_ptr<client::Client> mp_;
  std::unique_ptr<identity::Identity::Stub> identity_;
  std::unique_ptr<::fence::FenceController::Stub> fence_;
  Pod a1_, a2_, b1_;
};

TEST_F(FenceE2eTest, FenceIsolatesNodeAReconcileCatchesNewPodsUnfenceRestores) {
  FenceIsolatesNodeAReconcileCatchesNewPodsUnfenceRestores();
}

// The same against the real Alcor controller's behaviour (mock-server/strict.h): its list holds
// every project's ports and its update merges, so what a fence changes must still be exactly
// the ports' admin state. Its agent ignores admin_state_up and node-a runs no agent of ours (it
// died): the cut is node-b's agent's, in node-b's pods, through the port index's channel.
class FenceE2eOnAlcorTest : public FenceE2eTest {
 protected:
  FenceE2eOnAlcorTest() { alcor_ = true; }
};

TEST_F(FenceE2eOnAlcorTest, FenceIsolatesNodeAReconcileCatchesNewPodsUnfenceRestores) {
  FenceIsolatesNodeAReconcileCatchesNewPodsUnfenceRestores();
}

TEST_F(FenceE2eTest, AcknowledgedFenceSurvivesKill9OfTheServer) {
  CreateCluster();
  if (HasFatalFailure()) return;
  StartAddons();
  if (HasFatalFailure()) return;

  auto clients = Clients();
  ASSERT_EQ(clients.count("node-a"), 1u);
  const std::vector<std::string> fence_a = clients["node-a"];
  ASSERT_FALSE(fence_a.empty());

  // kill -9 the moment the fence is acknowledged.
  grpc::Status s = Fence(fence_a);
  ASSERT_TRUE(s.ok()) << StatusText(s) << "\n" << Log("addons.log");
  const int status = addons_.Kill(SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "raw status " << status;

  // While the server is down, someone re-enables one of node A's ports behind its back.
  {
    auto ports = PortsByIp();
    ASSERT_EQ(ports.count(a1_.ip), 1u);
    auto up = mp_->UpdatePort(ports[a1_.ip].id, json{{"admin_state_up", true}});
    ASSERT_TRUE(up.ok()) << up.status().ToString();
    EXPECT_TRUE(AdminUp(a1_.ip));
  }

  // Restart on the same store: the fence is still there, and the reconcile keeps node A's
  // ports disabled.
  StartAddons();
  if (HasFatalFailure()) return;
  EXPECT_EQ(ListFences(), fence_a);
  EXPECT_TRUE(WaitAdmin(a1_.ip, false, std::chrono::seconds(20))) << Log("addons.log");
  EXPECT_FALSE(AdminUp(a2_.ip));
  EXPECT_TRUE(AdminUp(b1_.ip));
  EXPECT_TRUE(NeverPings(a1_, b1_.ip));
  EXPECT_TRUE(NeverPings(a2_, b1_.ip));
  EXPECT_TRUE(WaitFor([&] { return PingFromGateway(b1_.ip); }, std::chrono::seconds(10)));
  // Several reconcile passes later nothing has changed.
  EXPECT_TRUE(ReconcilePasses(3)) << Log("addons.log");
  EXPECT_FALSE(AdminUp(a1_.ip));
  EXPECT_FALSE(AdminUp(a2_.ip));
  EXPECT_EQ(ListFences(), fence_a);
}

TEST_F(FenceE2eTest, FenceInterruptedAtMizarMpIsKeptAndFinishedByTheReconcile) {
  CreateCluster();
  if (HasFatalFailure()) return;
  StartAddons();
  if (HasFatalFailure()) return;
  auto clients = Clients();
  ASSERT_EQ(clients.count("node-a"), 1u);
  const std::vector<std::string> fence_a = clients["node-a"];
  ASSERT_FALSE(fence_a.empty());

  // Mizar-MP drops every REST connection: the fence cannot be enforced now.
  SetFaults({{"close_connections", 100000}});
  if (HasFatalFailure()) return;
  grpc::Status s = Fence(fence_a);
  ASSERT_FALSE(s.ok()) << "a fence that could not be enforced was acknowledged as done";
  EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAVAILABLE ||
              s.error_code() == grpc::StatusCode::UNKNOWN)
      << StatusText(s);
  EXPECT_NE(s.error_message().find(fence_a[0]), std::string::npos)
      << "the error should name the fence left to do: " << s.error_message();
  // The intent is kept, and nothing was enforced yet: node A still talks.
  EXPECT_EQ(ListFences(), fence_a);
  EXPECT_TRUE(EventuallyPings(a1_, b1_.ip));

  // Mizar-MP recovers: the reconcile finishes the fence without another call.
  SetFaults(json::object());
  if (HasFatalFailure()) return;
  EXPECT_TRUE(WaitAdmin(a1_.ip, false, std::chrono::seconds(20))) << Log("addons.log");
  EXPECT_TRUE(WaitAdmin(a2_.ip, false, std::chrono::seconds(20)));
  EXPECT_TRUE(AdminUp(b1_.ip));
  EXPECT_TRUE(NeverPings(a1_, b1_.ip));
  EXPECT_TRUE(NeverPings(a2_, b1_.ip));
  EXPECT_TRUE(WaitFor([&] { return PingFromGateway(b1_.ip); }, std::chrono::seconds(10)));
  EXPECT_EQ(ListFences(), fence_a);
}

TEST_F(FenceE2eTest, OperatorQuarantinedPortSurvivesFenceAndUnfence) {
  CreateCluster();
  if (HasFatalFailure()) return;
  // An operator quarantines a2 before any fence.
  {
    auto ports = PortsByIp();
    ASSERT_EQ(ports.count(a2_.ip), 1u);
    auto down = mp_->UpdatePort(ports[a2_.ip].id, json{{"admin_state_up", false}});
    ASSERT_TRUE(down.ok()) << down.status().ToString();
    ASSERT_FALSE(AdminUp(a2_.ip));
  }
  StartAddons();
  if (HasFatalFailure()) return;
  auto clients = Clients();
  ASSERT_EQ(clients.count("node-a"), 1u);
  const std::vector<std::string> fence_a = clients["node-a"];

  grpc::Status s = Fence(fence_a);
  ASSERT_TRUE(s.ok()) << StatusText(s) << "\n" << Log("addons.log");
  EXPECT_FALSE(AdminUp(a1_.ip));
  EXPECT_FALSE(AdminUp(a2_.ip));
  EXPECT_TRUE(NeverPings(a1_, b1_.ip));

  // The unfence brings back what the fence disabled, and only that.
  s = Unfence(fence_a);
  ASSERT_TRUE(s.ok()) << StatusText(s) << "\n" << Log("addons.log");
  EXPECT_TRUE(ListFences().empty());
  EXPECT_TRUE(AdminUp(a1_.ip));
  EXPECT_TRUE(AdminUp(b1_.ip));
  EXPECT_TRUE(EventuallyPings(a1_, b1_.ip));
  // Several reconcile passes later the quarantined port is still down, and unreachable. A fence
  // of an address no port has keeps the passes planning (with no fence they call nothing), and
  // their port lists are what the test counts.
  s = Fence({"192.0.2.1/32"});
  ASSERT_TRUE(s.ok()) << StatusText(s);
  EXPECT_TRUE(ReconcilePasses(3)) << Log("addons.log");
  EXPECT_FALSE(AdminUp(a2_.ip)) << "the unfence re-enabled a port the fence did not disable\n"
                                << Log("addons.log");
  EXPECT_TRUE(NeverPings(a2_, b1_.ip));
  EXPECT_TRUE(AdminUp(a1_.ip));
}

TEST_F(FenceE2eTest, MalformedPortInTheListDoesNotStopTheOthersBeingFenced) {
  CreateCluster();
  if (HasFatalFailure()) return;
  StartAddons();
  if (HasFatalFailure()) return;
  auto clients = Clients();
  ASSERT_EQ(clients.count("node-a"), 1u);
  const std::vector<std::string> fence_a = clients["node-a"];

  // Mizar-MP's port list carries an entry that does not parse.
  SetFaults({{"malformed_ports", 1}});
  if (HasFatalFailure()) return;
  grpc::Status s = Fence(fence_a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN) << StatusText(s);
  EXPECT_NE(s.error_message().find("could not be read"), std::string::npos) << StatusText(s);
  // Every readable port inside was fenced all the same.
  EXPECT_FALSE(AdminUp(a1_.ip));
  EXPECT_FALSE(AdminUp(a2_.ip));
  EXPECT_TRUE(AdminUp(b1_.ip));
  EXPECT_TRUE(NeverPings(a1_, b1_.ip));
  EXPECT_TRUE(NeverPings(a2_, b1_.ip));
  EXPECT_EQ(ListFences(), fence_a);
  const std::string log = Log("addons.log");
  EXPECT_NE(log.find("could not be read"), std::string::npos) << log;

  // The unfence re-enables the readable ports too; it completes once the list is whole.
  s = Unfence(fence_a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNKNOWN) << StatusText(s);
  EXPECT_TRUE(ListFences().empty());
  EXPECT_TRUE(AdminUp(a1_.ip));
  EXPECT_TRUE(AdminUp(a2_.ip));
  EXPECT_TRUE(EventuallyPings(a1_, b1_.ip));
  SetFaults(json::object());
  if (HasFatalFailure()) return;
  EXPECT_TRUE(WaitFor([&] { return Unfence(fence_a).ok(); }, std::chrono::seconds(20)))
      << Log("addons.log");
  EXPECT_TRUE(AdminUp(a1_.ip));
  EXPECT_TRUE(AdminUp(b1_.ip));
}

}  // namespace
}  // namespace mizarmp
