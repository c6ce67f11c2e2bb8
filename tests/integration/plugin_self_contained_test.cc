// The plugin file an installer copies onto a node, run where nothing of the build machine is:
// a root filesystem holding only that one file, /etc/hosts (the controller's host name), the
// CA file for https, and mount points for /proc and the pod's netns file (at the same path as on
// the host, as a runtime passes it: the mock's host agent opens it from outside). A dynamically
// linked program cannot even start there (there is no loader and no library). ADD, CHECK and
// DEL run against the mock and its host agent, over http and over https, with a host name in
// mpurl that only that /etc/hosts resolves. Root and netns; registered only for the static build.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fileutil.h"
#include "mock-server/mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ProcessResult;
using testing::ScopedNetns;
using testing::UniqueName;

constexpr const char* kCidr = "10.246.0.0/24";
// Resolved only by the /etc/hosts inside the root: the host's resolver knows nothing of it.
constexpr const char* kControllerName = "mizar-controller.test";

class PluginSelfContainedTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    host_ = std::make_unique<ScopedNetns>(UniqueName("mzh"));
    pod_ = std::make_unique<ScopedNetns>(UniqueName("mzp"));
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    ASSERT_NO_FATAL_FAILURE(StartMock());
    ASSERT_NO_FATAL_FAILURE(MakeRoot());
  }

  bool https() const { return GetParam(); }

  void StartMock() {
    mock::Options o;
    o.agent = true;
    o.bridge = UniqueName("mzbr");
    o.agent_netns = host_->path();
    o.cidr = kCidr;
    if (https()) {
      o.tls_cert_file = pki_.server_cert;
      o.tls_key_file = pki_.server_key;
    }
    auto m = mock::MockServer::Create(o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mock_ = std::move(*m);
    ASSERT_TRUE(mock_->Start().ok());
  }

  // The root: /mizarmp, /etc/hosts, /ca.crt, and the mount points /proc and the pod's netns
  // path; nothing else.
  void MakeRoot() {
    const std::string r = root_.path();
    fs::copy_file(testing::BinDir() + "/mizarmp", r + "/mizarmp");
    fs::create_directories(r + "/etc");
    fs::create_directories(r + "/proc");
    fs::create_directories(r + fs::path(pod_->path()).parent_path().string());
    ASSERT_TRUE(
        WriteFileAtomic(r + "/etc/hosts", "127.0.0.1 " + std::string(kControllerName) + "\n", 0644)
            .ok());
    ASSERT_TRUE(WriteFileAtomic(r + pod_->path(), "", 0644).ok());
    fs::copy_file(pki_.ca, r + "/ca.crt");
  }

  json Config() const {
    json c = {{"cniVersion", "1.0.0"},
              {"name", "mzt-static"},
              {"type", "mizarmp"},
              {"mpurl", std::string(https() ? "https://" : "http://") + kControllerName + ":" +
                            std::to_string(mock_->port())},
              {"project", "3dda2801-d675-4688-a63f-dcda8d327f50"},
              {"subnet", "a87e0f87-a2d9-44ef-9194-9a62f178594e"},
              {"hostId", "node-a"},
              {"stateDir", "/state"},
              {"logLevel", "debug"},
              {"timeouts", {{"readyMs", 5000}, {"nicMs", 5000}}}};
    if (https()) c["tls"] = {{"caFile", "/ca.crt"}};
    return c;
  }

  // The plugin exec'd inside the root as a runtime would exec it: in a private mount namespace
  // (unshare) where /proc and the pod's netns are mounted into the root, then chroot. Only the
  // plugin runs inside; unshare, mount and chroot are the host's.
  ProcessResult Plugin(const std::string& command, const json& config) const {
    const std::string r = root_.path();
    const std::string script = "set -e; mount -t proc proc '" + r + "/proc'; mount --bind '" +
                               pod_->path() + "' '" + r + pod_->path() + "'; exec chroot '" + r +
                               "' /mizarmp";
    return testing::RunProcess(
        {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script},
        {{"CNI_COMMAND", command},
         {"CNI_CONTAINERID", "c1"},
         {"CNI_NETNS", pod_->path()},
         {"CNI_IFNAME", "eth0"},
         {"CNI_PATH", "/"},
         {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
        config.dump(), std::chrono::seconds(60));
  }

  testing::Pki pki_{std::string("DNS:") + kControllerName};
  testing::TempDir root_;
  std::unique_ptr<ScopedNetns> host_;
  std::unique_ptr<ScopedNetns> pod_;
  std::unique_ptr<mock::MockServer> mock_;
};

TEST_P(PluginSelfContainedTest, AddCheckDelInAnEmptyRootWithAHostNameInMpurl) {
  ProcessResult add = Plugin("ADD", Config());
  ASSERT_EQ(add.exit_code, 0) << add.Describe();
  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 1u);
  ASSERT_EQ(ports[0].ips.size(), 1u);
  json result = json::parse(add.out, nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << add.out;
  EXPECT_EQ(result["ips"][0]["address"], ports[0].ips[0] + "/24");
  std::string out;
  ASSERT_EQ(pod_->Exec("ip -o addr show dev eth0", &out), 0) << out;
  EXPECT_NE(out.find("inet " + ports[0].ips[0] + "/24"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(root_.path() + "/state/mzt-static/c1:eth0.json"))
      << "the record is written inside the root";

  json check_config = Config();
  check_config["prevResult"] = result;
  ProcessResult check = Plugin("CHECK", check_config);
  EXPECT_EQ(check.exit_code, 0) << check.Describe();

  ProcessResult del = Plugin("DEL", Config());
  ASSERT_EQ(del.exit_code, 0) << del.Describe();
  EXPECT_TRUE(mock_->Ports().empty());
  EXPECT_EQ(pod_->CountLinks(""), 0);
  EXPECT_FALSE(fs::exists(root_.path() + "/state/mzt-static/c1:eth0.json"));
}

INSTANTIATE_TEST_SUITE_P(Transport, PluginSelfContainedTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Https") : std::string("Http");
                         });

}  // namespace
}  // namespace mizarmp
