// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The plugin file an installer copies onto a node, run where nothing of the build machine is:
// a root filesystem holding only that one file, /etc/hosts (the controller's host name), the
// CA file for https, and mount points for /proc and the pod's netns file (at the same path as on
// the host, as a runtime passes it: the mock's host agent opens it from outside). A dynamically
// linked program cannot even start there (there is no loader and no library). ADD, CHECK and
// DEL run against the mock and its host agent, over http and over https, with a host name in
// mpurl that only that /etc/hosts resolves. Over https the CA comes from the config's caFile or
// from the root's own system trust store, Debian's layout: /etc/ssl/certs as a hash directory
// (the CA found by its subject's hash; the bundle beside it holds another CA, so only the lookup
// can pass) or as a bundle alone. Root and netns; registered only for the static build.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fileutil.h"
#include "common/strings.h"
#include "mock-server/mock.h"
#include "tests/support/started_mock.h"
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

// How the plugin reaches the controller, and where it finds the CA over https.
enum class Transport { kHttp, kHttpsCaFile, kHttpsHashDir, kHttpsBundle };

std::string TransportName(Transport t) {
  switch (t) {
    case Transport::kHttp:
      return "Http";
    case Transport::kHttpsCaFile:
      return "HttpsCaFile";
    case Transport::kHttpsHashDir:
      return "HttpsSystemHashDirectory";
    case Transport::kHttpsBundle:
      return "HttpsSystemBundle";
  }
  return "?";
}

class PluginSelfContainedTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    host_ = std::make_unique<ScopedNetns>(UniqueName("mzh"));
    pod_ = std::make_unique<ScopedNetns>(UniqueName("mzp"));
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    ASSERT_NO_FATAL_FAILURE(StartMock());
    ASSERT_NO_FATAL_FAILURE(MakeRoot());
  }

  bool https() const { return GetParam() != Transport::kHttp; }

  void StartMock() {
    mock::Options o;
    o.agent = true;
    o.bridge = UniqueName("mzbr");
    o.agent_netns = host_->path();
    o.cidr = kCidr;
    o.strict = true;  // the real v0.1 controller's behaviour (mock-server/strict.h)
    if (https()) {
      o.tls_cert_file = pki_.server_cert;
      o.tls_key_file = pki_.server_key;
    }
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
  }

  // The root: /mizarmp, /etc/hosts, the CA where the transport under test looks for it, and the
  // mount points /proc and the pod's netns path; nothing else.
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
    ASSERT_NO_FATAL_FAILURE(PlaceCa(r));
  }

  void PlaceCa(const std::string& r) {
    const std::string certs = r + "/etc/ssl/certs";
    switch (GetParam()) {
      case Transport::kHttp:
        return;
      case Transport::kHttpsCaFile:
        fs::copy_file(pki_.ca, r + "/ca.crt");
        return;
      case Transport::kHttpsHashDir: {
        fs::create_directories(certs);
        ASSERT_TRUE(other_pki_.error.empty()) << other_pki_.error;
        fs::copy_file(other_pki_.ca, certs + "/ca-certificates.crt");
        fs::copy_file(pki_.ca, certs + "/test-ca.pem");
        std::string hash;
        ASSERT_EQ(testing::Shell("openssl x509 -hash -noout -in '" + pki_.ca + "'", &hash), 0);
        fs::create_symlink("test-ca.pem", certs + "/" + std::string(Trim(hash)) + ".0");
        return;
      }
      case Transport::kHttpsBundle:
        fs::create_directories(certs);
        fs::copy_file(pki_.ca, certs + "/ca-certificates.crt");
        return;
    }
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
    if (GetParam() == Transport::kHttpsCaFile) c["tls"] = {{"caFile", "/ca.crt"}};
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
  testing::Pki other_pki_{std::string("DNS:") + kControllerName};
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

  // Over https the ADD kept its TLS session in the state dir, and the later processes resumed it.
  const std::string sessions = root_.path() + "/state/.tls-sessions";
  if (!https()) {
    EXPECT_FALSE(fs::exists(sessions));
    return;
  }
  EXPECT_NE(add.err.find("full handshake with"), std::string::npos) << add.err;
  for (const ProcessResult* later : {&check, &del}) {
    EXPECT_NE(later->err.find("resumed a kept session with"), std::string::npos) << later->err;
  }
  auto kept = ListDir(sessions);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ(fs::status(sessions + "/" + (*kept)[0]).permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
}

// No trust store in the root at all: the handshake is never tried, and the error says where the
// plugin looked and what to configure.
using PluginWithoutTrustStoreTest = PluginSelfContainedTest;

TEST_P(PluginWithoutTrustStoreTest, TheErrorNamesWhereItLooked) {
  fs::remove_all(root_.path() + "/etc/ssl");
  ProcessResult add = Plugin("ADD", Config());
  EXPECT_NE(add.exit_code, 0) << add.Describe();
  json error = json::parse(add.out, nullptr, false);
  ASSERT_FALSE(error.is_discarded()) << add.out;
  const std::string msg = error.value("msg", "");
  EXPECT_NE(msg.find("no system CA store found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/etc/ssl/certs/ca-certificates.crt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("configure a CA file"), std::string::npos) << msg;
  EXPECT_TRUE(mock_->Ports().empty());
}

INSTANTIATE_TEST_SUITE_P(Transports, PluginSelfContainedTest,
                         ::testing::Values(Transport::kHttp, Transport::kHttpsCaFile,
                                           Transport::kHttpsHashDir, Transport::kHttpsBundle),
                         [](const ::testing::TestParamInfo<Transport>& p) {
                           return TransportName(p.param);
                         });
INSTANTIATE_TEST_SUITE_P(Transports, PluginWithoutTrustStoreTest,
                         ::testing::Values(Transport::kHttpsBundle),
                         [](const ::testing::TestParamInfo<Transport>& p) {
                           return TransportName(p.param);
                         });

}  // namespace
}  // namespace mizarmp
