// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// kubelet's path: containerd's CRI service (Debian's containerd, driven through the published
// CRI runtime v1 API as kubelet drives it) runs pod sandboxes on the `mizarmp` network, the
// project's conf/mizarmp.conflist: the built mizarmp plugin chained with the reference portmap
// and bandwidth plugins, against mizarmp-mock as Mizar-MP controller and host agent.
//
// A network namespace plays the node: containerd runs in it (so do the CNI plugins it execs,
// with their iptables rules and qdiscs), the mock's agent keeps its bridge and the pods' host-side
// veths there, the mock's REST server listens on its loopback. Nothing touches the host's own
// network namespace.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/fd.h"
#include "common/fileutil.h"
#include "mizarmp-client/types.h"
#include "mock-server/mock.h"
#include "tests/support/containerd.h"
#include "tests/support/ovs_sandbox.h"

namespace mizarmp {
namespace {

namespace fs = std::filesystem;
namespace cri = runtime::v1;
using nlohmann::json;
using testing::Containerd;
using testing::ScopedNetns;
using testing::UniqueName;

constexpr const char* kCidr = "10.248.0.0/24";
constexpr const char* kNodeAddress = "192.0.2.10";  // the node's own address (TEST-NET-1)
constexpr const char* kHostId = "cri-node";

// Runs `job` on a thread of its own that first joins the network namespace at `netns_path`:
// sockets it creates stay in that namespace, and the caller's thread never changes namespace.
// False when the namespace could not be joined.
bool RunInNetns(const std::string& netns_path, const std::function<void()>& job) {
  bool joined = false;
  std::thread worker([&] {
    UniqueFd ns(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid() || ::setns(ns.get(), CLONE_NEWNET) != 0) return;
    joined = true;
    job();
  });
  worker.join();
  return joined;
}

// A TCP socket made in the network namespace at `netns_path` (invalid on failure).
UniqueFd TcpSocketIn(const std::string& netns_path) {
  UniqueFd fd;
  RunInNetns(netns_path, [&] { fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)); });
  return fd;
}

sockaddr_in Ipv4(const std::string& address, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  return a;
}

// Whether `fd` becomes ready for `events` within 10 s.
bool PollFor(int fd, short events) {
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, 10000) == 1;
}

// What a user sees of a running pod: its IP as CRI reports it, and its namespace and process
// from the verbose status (containerd's "info" document).
struct Pod {
  std::string id;
  std::string ip;
  std::string netns;
  int pid = 0;
};

class CriTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_CONTAINERD();
    MZ_REQUIRE_NETNS();
    if (alcor_) {
      // The node's Open vSwitch, in the node's namespace.
      MZ_REQUIRE_OVS();
      ovs_ = std::make_unique<testing::OvsSandbox>();
      ASSERT_EQ(ovs_->error(), "");
    } else {
      node_ = std::make_unique<ScopedNetns>(UniqueName("mzcri"));
      ASSERT_TRUE(node_->ok());
    }
    std::string out;
    // The node's own address sits on its loopback (this kernel has no dummy links).
    ASSERT_EQ(node().Exec("sh -c 'ip link set lo up && ip addr add " + std::string(kNodeAddress) +
                              "/32 dev lo'",
                          &out),
              0)
        << out;
    ASSERT_NO_FATAL_FAILURE(StartMockInNode());
    testing::ContainerdOptions options;
    options.netns_path = node().path();
    options.cni_plugins = {testing::BinDir() + "/mizarmp", "/usr/lib/cni/portmap",
                           "/usr/lib/cni/bandwidth", "/usr/lib/cni/loopback"};
    ASSERT_NO_FATAL_FAILURE(options.conflist = Conflist());
    if (install_by_image_) {
      ASSERT_NO_FATAL_FAILURE(InstallByImage(options));
    }
    options.sandbox_image_archive = MIZARMP_CRI_PAUSE_IMAGE_ARCHIVE;
    options.sandbox_image = MIZARMP_CRI_PAUSE_IMAGE;
    containerd_ = std::make_unique<Containerd>(options);
    ASSERT_EQ(containerd_->error(), "");
  }

  void TearDown() override {
    if (HasFailure()) PrintPluginLog();
    containerd_.reset();  // removes what is left through CRI: the plugin's DEL needs the mock
    mock_.reset();
    node_.reset();
    ovs_.reset();
  }

  // The node's namespace: the sandbox's on Alcor, else one of its own.
  const ScopedNetns& node() const { return ovs_ ? ovs_->netns() : *node_; }

  // The mock serves on the node's loopback, where containerd's plugins reach it.
  void StartMockInNode() {
    mock::Options o;
    o.strict = true;  // as the real controller answers (mock-server/strict.h)
    if (alcor_) {
      // Alcor's agent on OVS: it places no NIC, the plugin plugs the pod (cni/ovs_plug.h).
      o.dialect = mock::Dialect::kAlcor;
      o.agent_ovsdb = ovs_->socket_path();
      o.bridge = ovs_->bridge();
    } else {
      o.agent = true;
      o.bridge = UniqueName("mzcbr");
    }
    o.agent_netns = node().path();
    o.cidr = kCidr;
    Status started = InternalError("not started");
    ASSERT_TRUE(RunInNetns(node().path(), [&] {
      auto m = mock::MockServer::Create(o);
      if (!m.ok()) {
        started = m.status();
        return;
      }
      mock_ = std::move(*m);
      started = mock_->Start();
    }));
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  // The plugin and the conflist as the installer image puts them on a node (the conflist above
  // as its template, the node's host id set by the installer), instead of the build's.
  void InstallByImage(testing::ContainerdOptions& options) {
    const std::string host = logs_.path() + "/host";
    const std::string template_path = logs_.path() + "/template.conflist";
    json template_conf = json::parse(options.conflist);
    template_conf["plugins"][0].erase("hostId");  // the installer's --host-id sets it
    ASSERT_TRUE(WriteFileAtomic(template_path, template_conf.dump(2), 0644).ok());
    std::string out;
    ASSERT_EQ(testing::Shell("bash " + testing::SourceDir() + "/tests/e2e/install_by_image.sh " +
                                 testing::BinDir() + " " + host + " " + template_path + " " +
                                 kHostId + " 2>&1",
                             &out),
              0)
        << out;
    options.cni_plugins[0] = host + "/opt/cni/bin/mizarmp";
    auto installed = ReadFile(host + "/etc/cni/net.d/10-mizarmp.conflist");
    ASSERT_TRUE(installed.ok()) << installed.status().ToString();
    options.conflist = *installed;
  }

  // The project's example network, pointed at this mock, state dir and node.
  std::string Conflist() {
    auto text = ReadFile(testing::SourceDir() + "/conf/mizarmp.conflist");
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    json conf = json::parse(text.ok() ? *text : "{}", nullptr, false);
    std::vector<std::string> types;
    for (const auto& p : conf.value("plugins", json::array())) types.push_back(p.value("type", ""));
    EXPECT_EQ(types, (std::vector<std::string>{"mizarmp", "portmap", "bandwidth"}))
        << "conf/mizarmp.conflist must chain mizarmp, portmap and bandwidth";
    if (types.empty() || types[0] != "mizarmp") return "";
    json& plugin = conf["plugins"][0];
    plugin["mpurl"] = mock_->base_url();
    plugin["stateDir"] = state_.path();
    plugin["hostId"] = kHostId;
    plugin["logLevel"] = "debug";
    plugin["logFile"] = logs_.path() + "/mizarmp.log";
    if (alcor_) {
      plugin["networkId"] = client::kDefaultVpcId;  // Alcor's network_id is the VPC
      plugin["ovsdbSocket"] = ovs_->socket_path();
      plugin["ovsBridge"] = ovs_->bridge();
    }
    return conf.dump(2);
  }

  cri::PodSandboxConfig PodConfig(const std::string& name) const {
    cri::PodSandboxConfig config;
    auto* meta = config.mutable_metadata();
    meta->set_name(name);
    meta->set_uid(name + "-" + UniqueName("uid"));
    meta->set_namespace_("mizarmp-cri-test");
    config.set_hostname(name);
    config.set_log_directory(containerd_->log_dir() + "/" + name);
    (*config.mutable_labels())["app"] = "mizarmp-cri-test";
    auto* linux = config.mutable_linux();
    linux->set_cgroup_parent(containerd_->cgroup_parent());
    linux->mutable_security_context()->mutable_namespace_options()->set_network(cri::POD);
    return config;
  }

  grpc::Status RunPodSandbox(const cri::PodSandboxConfig& config, std::string* id) {
    cri::RunPodSandboxRequest request;
    *request.mutable_config() = config;
    cri::RunPodSandboxResponse response;
    grpc::Status st =
        containerd_->runtime().RunPodSandbox(Containerd::Call().get(), request, &response);
    *id = response.pod_sandbox_id();
    return st;
  }

  // Runs a pod and reads back what CRI says about it; a failure is a test failure.
  void RunPod(const cri::PodSandboxConfig& config, Pod* pod) {
    grpc::Status st = RunPodSandbox(config, &pod->id);
    ASSERT_TRUE(st.ok()) << "RunPodSandbox " << config.metadata().name() << ": "
                         << st.error_message();
    ASSERT_NO_FATAL_FAILURE(ReadStatus(pod));
    netns_paths_.push_back(pod->netns);
    sandbox_ids_.push_back(pod->id);
  }

  void ReadStatus(Pod* pod) {
    cri::PodSandboxStatusRequest request;
    request.set_pod_sandbox_id(pod->id);
    request.set_verbose(true);
    cri::PodSandboxStatusResponse response;
    grpc::Status st =
        containerd_->runtime().PodSandboxStatus(Containerd::Call().get(), request, &response);
    ASSERT_TRUE(st.ok()) << "PodSandboxStatus: " << st.error_message();
    EXPECT_EQ(response.status().state(), cri::SANDBOX_READY);
    pod->ip = response.status().network().ip();
    ASSERT_TRUE(response.info().contains("info")) << "no verbose info for " << pod->id;
    json info = json::parse(response.info().at("info"), nullptr, false);
    ASSERT_FALSE(info.is_discarded()) << response.info().at("info");
    pod->pid = info.value("pid", 0);
    for (const auto& ns : info["runtimeSpec"]["linux"]["namespaces"]) {
      if (ns.value("type", "") == "network") pod->netns = ns.value("path", "");
    }
    ASSERT_FALSE(pod->netns.empty()) << "no network namespace in " << info.dump();
  }

  void StopAndRemove(const std::string& id) {
    cri::StopPodSandboxRequest stop;
    stop.set_pod_sandbox_id(id);
    cri::StopPodSandboxResponse stopped;
    grpc::Status st =
        containerd_->runtime().StopPodSandbox(Containerd::Call().get(), stop, &stopped);
    ASSERT_TRUE(st.ok()) << "StopPodSandbox " << id << ": " << st.error_message();
    cri::RemovePodSandboxRequest remove;
    remove.set_pod_sandbox_id(id);
    cri::RemovePodSandboxResponse removed;
    st = containerd_->runtime().RemovePodSandbox(Containerd::Call().get(), remove, &removed);
    ASSERT_TRUE(st.ok()) << "RemovePodSandbox " << id << ": " << st.error_message();
  }

  // The mock's port for the pod: the one the pod's attachment record names.
  std::optional<mock::PortSummary> PortOf(const Pod& pod) const {
    auto text = ReadFile(state_.path() + "/mizarmp/" + pod.id + ":eth0.json");
    if (!text.ok()) return std::nullopt;
    const std::string port_id = json::parse(*text, nullptr, false).value("portId", "");
    for (const auto& port : mock_->Ports()) {
      if (port.id == port_id) return port;
    }
    return std::nullopt;
  }

  std::vector<std::string> Records() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(state_.path(), ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().extension() == ".json") out.push_back(it->path());
    }
    return out;
  }

  std::string InNode(const std::string& command) const {
    std::string out;
    node().Exec(command, &out);
    return out;
  }

  // Runs the shell command `command` in the pod's network namespace; its exit code.
  static int InPod(const Pod& pod, const std::string& command, std::string* out) {
    return testing::Shell("nsenter --net=" + pod.netns + " " + command, out);
  }

  // Nothing of any pod is left where a user would look: CRI, the controller, the plugin's
  // records, the node's links and NAT rules, the pods' namespaces.
  void ExpectNothingLeft(const std::string& when) {
    cri::ListPodSandboxResponse list;
    grpc::Status st = containerd_->runtime().ListPodSandbox(Containerd::Call().get(), {}, &list);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(list.items_size(), 0) << when << ": sandboxes CRI still lists";
    EXPECT_EQ(mock_->Ports().size(), 0u) << when << ": ports at the controller";
    EXPECT_EQ(Records(), std::vector<std::string>{}) << when << ": attachment records";
    EXPECT_EQ(node().CountLinks("veth"), 0) << when << ": veths\n" << InNode("ip -o link");
    EXPECT_EQ(node().CountLinks("ifb"), 0) << when << ": ifb devices\n" << InNode("ip -o link");
    if (ovs_) {
      EXPECT_EQ(OvsPorts(), std::vector<std::string>{}) << when << ": OVS ports";
    }
    EXPECT_EQ(InNode("iptables -t nat -S").find("CNI-DN-"), std::string::npos)
        << when << ": hostPort rules\n"
        << InNode("iptables -t nat -S");
    for (const auto& netns : netns_paths_) {
      EXPECT_FALSE(fs::exists(netns)) << when << ": pod netns " << netns;
    }
    for (const auto& id : sandbox_ids_) {  // libcni's result cache, global to the host
      EXPECT_FALSE(fs::exists("/var/lib/cni/results/mizarmp-" + id + "-eth0")) << when;
    }
    std::error_code ec;
    EXPECT_TRUE(fs::is_empty(containerd_->netns_dir(), ec) || !fs::exists(containerd_->netns_dir()))
        << when << ": containerd's netns directory " << containerd_->netns_dir();
  }

  void PrintPluginLog() const {
    auto log = ReadFile(logs_.path() + "/mizarmp.log");
    if (log.ok()) std::fprintf(stderr, "----- mizarmp plugin log -----\n%s\n", log->c_str());
    if (containerd_) {
      std::fprintf(stderr, "----- containerd log -----\n%s\n", containerd_->LogTail().c_str());
    }
  }

  // The ports on the node's OVS bridge (Alcor only).
  std::vector<std::string> OvsPorts() const { return ovs_->Ports(); }

  bool install_by_image_ = false;  // set by a subclass's constructor, read by SetUp
  bool alcor_ = false;             // likewise: Alcor's controller, its agent on OVS
  std::unique_ptr<testing::OvsSandbox> ovs_;
  testing::TempDir state_;
  testing::TempDir logs_;
  std::unique_ptr<ScopedNetns> node_;
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<Containerd> containerd_;
  std::vector<std::string> netns_paths_;
  std::vector<std::string> sandbox_ids_;
};

TEST_F(CriTest, PodsGetTheControllersAddressesAndReachEachOther) {
  Pod a, b;
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-a"), &a));
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-b"), &b));

  ASSERT_EQ(mock_->Ports().size(), 2u);
  for (const Pod* pod : {&a, &b}) {
    auto port = PortOf(*pod);
    ASSERT_TRUE(port.has_value()) << "no port at the controller for " << pod->id;
    ASSERT_EQ(port->ips.size(), 1u);
    EXPECT_EQ(pod->ip, port->ips[0]) << "PodSandboxStatus's IP is not the port's";
    EXPECT_EQ(port->host_id, kHostId);
    EXPECT_GT(pod->pid, 0);
    std::error_code ec;
    EXPECT_TRUE(fs::equivalent("/proc/" + std::to_string(pod->pid) + "/ns/net", pod->netns, ec))
        << "the pause process is not in the sandbox's netns " << pod->netns;
  }
  EXPECT_NE(a.ip, b.ip);

  std::string out;
  EXPECT_EQ(InPod(a, "ping -c 2 -W 3 " + b.ip, &out), 0) << "ping a -> b: " << out;
  EXPECT_EQ(InPod(b, "ping -c 2 -W 3 " + a.ip, &out), 0) << "ping b -> a: " << out;

  ASSERT_NO_FATAL_FAILURE(StopAndRemove(a.id));
  ASSERT_NO_FATAL_FAILURE(StopAndRemove(b.id));
  ExpectNothingLeft("after removing both pods");
}

// The same on Alcor: containerd's pods are plugged into the node's br-int by the plugin, the
// mock's agent tags their OVS ports, and they reach each other through it.
class CriOnAlcorTest : public CriTest {
 protected:
  CriOnAlcorTest() { alcor_ = true; }
};

TEST_F(CriOnAlcorTest, PodsArePluggedIntoBrIntAndReachEachOther) {
  Pod a, b;
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-a"), &a));
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-b"), &b));
  ASSERT_EQ(OvsPorts().size(), 2u);
  for (const Pod* pod : {&a, &b}) {
    auto port = PortOf(*pod);
    ASSERT_TRUE(port.has_value()) << "no port at the controller for " << pod->id;
    EXPECT_EQ(port->status, "ACTIVE");
    ASSERT_EQ(port->ips.size(), 1u);
    EXPECT_EQ(pod->ip, port->ips[0]) << "PodSandboxStatus's IP is not the port's";
    std::string tag;
    ASSERT_EQ(ovs_->Vsctl("get port tap" + port->id.substr(0, 11) + " tag", &tag), 0) << tag;
    EXPECT_EQ(tag, std::to_string(port->vlan) + "\n") << "the tag the agent set";
  }
  std::string out;
  EXPECT_EQ(InPod(a, "ping -c 2 -W 3 " + b.ip, &out), 0) << "ping a -> b: " << out;
  EXPECT_EQ(InPod(b, "ping -c 2 -W 3 " + a.ip, &out), 0) << "ping b -> a: " << out;

  ASSERT_NO_FATAL_FAILURE(StopAndRemove(a.id));
  ASSERT_NO_FATAL_FAILURE(StopAndRemove(b.id));
  ExpectNothingLeft("after removing both pods");
}

#ifdef MIZARMP_CRI_INSTALLER_IMAGE
// The node as deploy/ makes it: the installer image (scripts/images.sh) put the plugin and the
// conflist in place, and pods run through CRI with what it installed.
class CriInstalledByImageTest : public CriTest {
 protected:
  CriInstalledByImageTest() { install_by_image_ = true; }
};

TEST_F(CriInstalledByImageTest, ThePluginTheInstallerImagePutInPlaceServesPods) {
  Pod a, b;
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-a"), &a));
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-b"), &b));
  for (const Pod* pod : {&a, &b}) {
    auto port = PortOf(*pod);
    ASSERT_TRUE(port.has_value()) << "no port at the controller for " << pod->id;
    EXPECT_EQ(pod->ip, port->ips[0]);
    EXPECT_EQ(port->host_id, kHostId) << "the installer did not set the node's host id";
  }
  std::string out;
  EXPECT_EQ(InPod(a, "ping -c 2 -W 3 " + b.ip, &out), 0) << "ping a -> b: " << out;
  ASSERT_NO_FATAL_FAILURE(StopAndRemove(a.id));
  ASSERT_NO_FATAL_FAILURE(StopAndRemove(b.id));
  ExpectNothingLeft("after removing both pods");
}
#endif  // MIZARMP_CRI_INSTALLER_IMAGE

TEST_F(CriTest, HostPortReachesTheListenerInThePod) {
  constexpr int kContainerPort = 8080;
  constexpr int kHostPort = 18080;
  cri::PodSandboxConfig config = PodConfig("pod-web");
  auto* mapping = config.add_port_mappings();
  mapping->set_protocol(cri::TCP);
  mapping->set_container_port(kContainerPort);
  mapping->set_host_port(kHostPort);
  Pod pod;
  ASSERT_NO_FATAL_FAILURE(RunPod(config, &pod));

  // A listener inside the pod's netns, a client in the node's, dialling the node's address.
  UniqueFd listener = TcpSocketIn(pod.netns);
  ASSERT_TRUE(listener.valid());
  const sockaddr_in any = Ipv4("0.0.0.0", kContainerPort);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  UniqueFd client = TcpSocketIn(node().path());
  ASSERT_TRUE(client.valid());
  ASSERT_EQ(::fcntl(client.get(), F_SETFL, O_NONBLOCK), 0);
  const sockaddr_in node = Ipv4(kNodeAddress, kHostPort);
  ::connect(client.get(), reinterpret_cast<const sockaddr*>(&node), sizeof(node));
  ASSERT_TRUE(PollFor(listener.get(), POLLIN))
      << "no connection reached the pod through " << kNodeAddress << ":" << kHostPort << "\n"
      << InNode("iptables -t nat -S");
  UniqueFd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  ASSERT_EQ(::write(accepted.get(), "pong", 4), 4);
  ASSERT_TRUE(PollFor(client.get(), POLLIN));
  char reply[8] = {};
  EXPECT_EQ(::read(client.get(), reply, sizeof(reply)), 4);
  EXPECT_STREQ(reply, "pong");
  accepted.reset();
  client.reset();
  listener.reset();

  ASSERT_NO_FATAL_FAILURE(StopAndRemove(pod.id));
  ExpectNothingLeft("after removing the pod with a hostPort");
}

TEST_F(CriTest, BandwidthAnnotationsShapeThePodsHostInterface) {
  cri::PodSandboxConfig config = PodConfig("pod-slow");
  (*config.mutable_annotations())["kubernetes.io/ingress-bandwidth"] = "1M";
  (*config.mutable_annotations())["kubernetes.io/egress-bandwidth"] = "2M";
  Pod pod;
  ASSERT_NO_FATAL_FAILURE(RunPod(config, &pod));
  auto port = PortOf(pod);
  ASSERT_TRUE(port.has_value());
  ASSERT_FALSE(port->host_veth.empty());

  // Ingress to the pod leaves the node through the host side of its interface.
  const std::string host_side = InNode("tc qdisc show dev " + port->host_veth);
  EXPECT_NE(host_side.find("qdisc tbf"), std::string::npos) << host_side;
  EXPECT_NE(host_side.find("rate 1Mbit"), std::string::npos) << host_side;
  // Egress from the pod is redirected to an ifb device that carries the limit.
  const std::string ifb = InNode("ip -o link show type ifb");
  const size_t colon = ifb.find(": ");
  ASSERT_NE(colon, std::string::npos) << "no ifb device on the node:\n" << InNode("ip -o link");
  const std::string ifb_name = ifb.substr(colon + 2, ifb.find(':', colon + 2) - colon - 2);
  const std::string egress = InNode("tc qdisc show dev " + ifb_name);
  EXPECT_NE(egress.find("qdisc tbf"), std::string::npos) << egress;
  EXPECT_NE(egress.find("rate 2Mbit"), std::string::npos) << egress;

  ASSERT_NO_FATAL_FAILURE(StopAndRemove(pod.id));
  ExpectNothingLeft("after removing the shaped pod");
}

TEST_F(CriTest, FailedAddLeavesNothing) {
  mock::Faults faults;
  // The agent cannot program the port: v0.1 pushes the goal state before it answers the
  // POST, so the POST fails (500, the controller's message in its Spring error body).
  faults.fail_ready = true;
  mock_->SetFaults(faults);
  std::string id;
  grpc::Status st = RunPodSandbox(PodConfig("pod-doomed"), &id);
  ASSERT_FALSE(st.ok()) << "RunPodSandbox succeeded with sandbox " << id;
  // The plugin's own words, and the controller's, reach kubelet.
  EXPECT_NE(st.error_message().find("plugin type=\"mizarmp\" failed (add): POST "),
            std::string::npos)
      << st.error_message();
  EXPECT_NE(st.error_message().find("HTTP 500: goal state could not be programmed on the host"),
            std::string::npos)
      << st.error_message();
  ExpectNothingLeft("after the failed RunPodSandbox");

  // The node is not left broken: with the fault gone a pod runs.
  mock_->SetFaults(mock::Faults{});
  Pod pod;
  ASSERT_NO_FATAL_FAILURE(RunPod(PodConfig("pod-after"), &pod));
  ASSERT_NO_FATAL_FAILURE(StopAndRemove(pod.id));
  ExpectNothingLeft("after removing the pod that followed the failure");
}

}  // namespace
}  // namespace mizarmp
