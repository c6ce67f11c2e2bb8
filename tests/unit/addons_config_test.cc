// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-addons configuration: JSON file, flags over it, defaults, validation and the
// drivername rules.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "addons/driver.h"
#include "addons/server.h"
#include "cmd/mizarmp-addons/config.h"
#include "common/fileutil.h"
#include "common/strings.h"
#include "endpoint/endpoint.h"
#include "endpoint/secrets_file.h"
#include "tests/support/support.h"

namespace mizarmp::cmd {
namespace {

using addons::Mode;
using addons::ValidateDriverName;
using endpoint::Endpoint;
using endpoint::ParseEndpoint;
using mizarmp::testing::TempDir;

Result<CommandLine> Parse(std::vector<std::string> args) { return ParseCommandLine(args); }

// A minimal valid command line (controller mode needs the Mizar-MP URL).
std::vector<std::string> Valid(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--mpurl", "http://127.0.0.1:9090"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

void ExpectInvalid(const std::vector<std::string>& args, const std::string& needle) {
  auto r = ParseCommandLine(args);
  ASSERT_FALSE(r.ok()) << "accepted: " << ::testing::PrintToString(args);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "error \"" << r.status().message() << "\" does not name \"" << needle << "\"";
}

TEST(AddonsConfig, Defaults) {
  auto r = Parse(Valid());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ServerConfig& c = r->config;
  EXPECT_EQ(c.server.endpoint, "unix:///run/mizarmp/csi-addons.sock");
  EXPECT_EQ(c.identity.mode, Mode::kController);
  EXPECT_EQ(c.identity.drivername, "mizarmp.csi-addons.mizar.io");
  EXPECT_EQ(c.fence.state_dir, "/var/lib/cni/mizarmp");
  EXPECT_EQ(c.fence.fence_store, "/var/lib/mizarmp/fence.db");
  EXPECT_EQ(c.fence.reconcile_interval.count(), 10000);
  EXPECT_EQ(c.fence.update_connections, 8);
  EXPECT_EQ(c.mizarmp.project_id, client::kDefaultProjectId);
  EXPECT_EQ(c.subnet_id, client::kDefaultSubnetId);
  EXPECT_EQ(c.mizarmp.dialect, client::Dialect::kAuto);
  EXPECT_FALSE(c.fence.use_port_list);
  EXPECT_FALSE(c.server.insecure_tcp);
  EXPECT_TRUE(c.fence.node_addresses.empty());
  EXPECT_TRUE(c.fence.expected_secrets.empty());
  EXPECT_TRUE(c.keyrotation.expected_secrets.empty());
  EXPECT_EQ(c.keyrotation.key_store_dir, "/var/lib/mizarmp/keys");
  EXPECT_EQ(c.keyrotation.mount_table, "/proc/self/mountinfo");
  EXPECT_EQ(c.keyrotation.kubelet_dir, "/var/lib/kubelet");
  EXPECT_EQ(c.keyrotation.driver_name, "mizarmp.csi-addons.mizar.io");
  EXPECT_EQ(c.mizarmp_check.timeout.count(), 1000);
}

TEST(AddonsConfig, JsonFileThenFlagsOverride) {
  TempDir dir;
  const std::string token = dir.path() + "/token";
  ASSERT_TRUE(WriteFileAtomic(token, "s3cret\n").ok());
  const std::string secrets = dir.path() + "/secrets.json";
  ASSERT_TRUE(WriteFileAtomic(secrets, R"({"user":"admin","key":"k3y"})").ok());
  const std::string cfg = dir.path() + "/addons.json";
  ASSERT_TRUE(WriteFileAtomic(cfg, R"({
    "endpoint": "unix:///tmp/x/addons.sock",
    "mode": "node",
    "drivername": "example.mizar.io",
    "mpurl": "https://mp.example:8443",
    "project": "p1", "subnet": "s1", "dialect": "alcor",
    "tokenFile": ")" + token + R"(",
    "stateDir": "/srv/state", "fenceStore": "/srv/fence.db",
    "nodeAddresses": {"node-a": ["10.0.0.5", "10.1.0.0/24"], "node-b": ["fd00::7"]},
    "hostId": "node-a",
    "secretsFile": ")" + secrets + R"(",
    "reconcileIntervalMs": 2500,
    "logLevel": "debug",
    "usePortList": true
  })")
                  .ok());

  auto r = Parse({"--config", cfg, "--mode=controller", "--subnet", "s2", "--node-address",
                  "node-b=192.168.1.9,192.168.2.0/24"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ServerConfig& c = r->config;
  EXPECT_EQ(c.server.endpoint, "unix:///tmp/x/addons.sock");
  EXPECT_EQ(c.identity.mode, Mode::kController);  // the flag wins
  EXPECT_EQ(c.identity.drivername, "example.mizar.io");
  EXPECT_EQ(c.mizarmp.base_url, "https://mp.example:8443");
  EXPECT_EQ(c.mizarmp.project_id, "p1");
  EXPECT_EQ(c.subnet_id, "s2");  // the flag wins
  EXPECT_EQ(c.mizarmp.dialect, client::Dialect::kAlcor);
  EXPECT_EQ(c.mizarmp.token_file, token);
  EXPECT_EQ(c.fence.state_dir, "/srv/state");
  EXPECT_EQ(c.fence.fence_store, "/srv/fence.db");
  ASSERT_EQ(c.fence.node_addresses.size(), 2u);
  EXPECT_EQ(c.fence.node_addresses.at("node-a"),
            (std::vector<std::string>{"10.0.0.5", "10.1.0.0/24"}));
  EXPECT_EQ(c.fence.node_addresses.at("node-b"),
            (std::vector<std::string>{"192.168.1.9", "192.168.2.0/24"}));
  EXPECT_EQ(c.fence.host_id, "node-a");
  EXPECT_EQ(c.fence.reconcile_interval.count(), 2500);
  EXPECT_EQ(c.log_level, log::Level::kDebug);
  EXPECT_TRUE(c.fence.use_port_list);
  for (const auto* expected : {&c.fence.expected_secrets, &c.keyrotation.expected_secrets}) {
    EXPECT_EQ(expected->size(), 2u);
    EXPECT_EQ(expected->at("user"), "admin");
    EXPECT_EQ(expected->at("key"), "k3y");
  }
  // The Mizar-MP settings reach every component that talks to it.
  for (const auto* mp : {&c.mizarmp_check.mizarmp, &c.fence.mizarmp}) {
    EXPECT_EQ(mp->base_url, "https://mp.example:8443");
    EXPECT_EQ(mp->project_id, "p1");
    EXPECT_EQ(mp->dialect, client::Dialect::kAlcor);
    EXPECT_EQ(mp->token_file, token);
  }
  EXPECT_EQ(c.identity.mizarmp_url, "https://mp.example:8443");
  EXPECT_EQ(c.mizarmp_check.subnet_id, "s2");
}

TEST(AddonsConfig, BadValuesNameTheKey) {
  TempDir dir;
  auto with_config = [&](const std::string& json) {
    const std::string path = dir.path() + "/c.json";
    EXPECT_TRUE(WriteFileAtomic(path, json).ok());
    return std::vector<std::string>{"--config", path, "--mpurl", "http://127.0.0.1:1"};
  };
  ExpectInvalid(with_config(R"({"mode": "sidecar"})"), "\"mode\"");
  ExpectInvalid(with_config(R"({"reconcileIntervalMs": "10"})"), "reconcileIntervalMs");
  ExpectInvalid(with_config(R"({"reconcileIntervalMs": 0})"), "reconcileIntervalMs");
  ExpectInvalid(with_config(R"({"updateConnections": 0})"), "updateConnections");
  ExpectInvalid(with_config(R"({"updateConnections": 65})"), "updateConnections");
  ExpectInvalid(with_config(R"({"updateConnections": "8"})"), "updateConnections");
  ExpectInvalid(with_config(R"({"updateConnections": 2.5})"), "updateConnections");
  ExpectInvalid(Valid({"--update-connections", "0"}), "--update-connections");
  ExpectInvalid(Valid({"--update-connections", "eight"}), "--update-connections");
  ExpectInvalid(with_config(R"({"endpoitn": "unix:///x"})"), "endpoitn");
  ExpectInvalid(with_config(R"({"nodeAddresses": {"n1": ["10.0.0.300"]}})"), "10.0.0.300");
  ExpectInvalid(with_config(R"({"nodeAddresses": ["10.0.0.1"]})"), "nodeAddresses");
  ExpectInvalid(with_config(R"({"usePortList": "yes"})"), "usePortList");
  ExpectInvalid(with_config(R"({"token": "abc"})"), "tokenFile");
  ExpectInvalid(with_config("{not json"), "not valid JSON");
  ExpectInvalid({"--config", dir.path() + "/missing.json"}, "missing.json");

  ExpectInvalid(Valid({"--dialect", "v2"}), "--dialect");
  ExpectInvalid(Valid({"--log-level", "loud"}), "--log-level");
  ExpectInvalid(Valid({"--reconcile-interval-ms", "ten"}), "--reconcile-interval-ms");
  ExpectInvalid(Valid({"--no-such-flag", "1"}), "--no-such-flag");
  ExpectInvalid(Valid({"--node-address", "10.0.0.1"}), "--node-address");
  ExpectInvalid(Valid({"--mode"}), "--mode");
  ExpectInvalid({"--mpurl", "ftp://x"}, "mpurl");
  ExpectInvalid({}, "mpurl");  // controller mode needs Mizar-MP
  ExpectInvalid(Valid({"--state-dir", "relative/dir"}), "stateDir");
  ExpectInvalid(Valid({"--token-file", dir.path() + "/absent"}), "tokenFile");
  ExpectInvalid(Valid({"--secrets-file", dir.path() + "/absent.json"}), "secretsFile");
}

TEST(AddonsConfig, UpdateConnectionsFromTheFileOrTheFlag) {
  TempDir dir;
  const std::string path = dir.path() + "/c.json";
  ASSERT_TRUE(WriteFileAtomic(path, R"({"updateConnections": 64})").ok());
  auto r = Parse(Valid({"--config", path}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.fence.update_connections, 64);
  r = Parse(Valid({"--config", path, "--update-connections", "1"}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.fence.update_connections, 1);
}

TEST(AddonsConfig, NodeModeDoesNotNeedMizarMp) {
  auto r = Parse({"--mode", "node"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.identity.mode, Mode::kNode);
}

// Key rotation finds a volume the sidecar names by volume_id where kubelet staged it: under
// kubeletDir, in the directory of the server's own driver name.
TEST(AddonsConfig, KeyRotationLooksUnderKubeletDirForItsDriverName) {
  TempDir dir;
  const std::string path = dir.path() + "/c.json";
  ASSERT_TRUE(WriteFileAtomic(path, R"({"mode": "node", "drivername": "rbd.csi.ceph.com",
                                "kubeletDir": "/srv/kubelet"})")
                  .ok());
  auto r = Parse({"--config", path});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.keyrotation.kubelet_dir, "/srv/kubelet");
  EXPECT_EQ(r->config.keyrotation.driver_name, "rbd.csi.ceph.com");
  r = Parse({"--config", path, "--kubelet-dir", "/var/lib/k0s/kubelet", "--drivername",
             "ebs.csi.aws.com"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.keyrotation.kubelet_dir, "/var/lib/k0s/kubelet");
  EXPECT_EQ(r->config.keyrotation.driver_name, "ebs.csi.aws.com");
  ExpectInvalid({"--mode", "node", "--kubelet-dir", "var/lib/kubelet"},
                "kubeletDir \"var/lib/kubelet\": must be an absolute path");
  ExpectInvalid({"--mode", "node", "--kubelet-dir", ""},
                "kubeletDir \"\": must be an absolute path");
  ExpectInvalid({"--config", path, "--kubelet-dir=./k"}, "kubeletDir");
}

TEST(AddonsConfig, TheRelayServesTheNodeAndNeedsTheController) {
  auto r = Parse({"--mode", "node", "--mpurl", "https://mp.example:9443", "--relay-socket",
                  "/run/mizarmp/relay.sock"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.relay.socket_path, "/run/mizarmp/relay.sock");
  ExpectInvalid({"--mode", "node", "--relay-socket", "/run/mizarmp/relay.sock"}, "needs mpurl");
  ExpectInvalid({"--mode", "node", "--mpurl", "https://mp.example", "--relay-socket", "relay.sock"},
                "relaySocket \"relay.sock\": must be an absolute path");
  ExpectInvalid(Valid({"--relay-socket", "/run/mizarmp/relay.sock"}), "only in node mode");
  // The relay's own check (RelayOptions::Validate), which Relay::Start asks too.
  ExpectInvalid({"--mode", "node", "--mpurl", "https://mp.example", "--relay-socket",
                 "/" + std::string(200, 'r')},
                "bytes (a unix socket's limit)");
}

TEST(AddonsConfig, TokensOnlyFromFiles) {
  // The value after --token must never be echoed back.
  auto r = Parse(Valid({"--token", "hunter2"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("hunter2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--token-file"), std::string::npos);
  auto r2 = Parse(Valid({"--token=hunter2"}));
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().message().find("hunter2"), std::string::npos) << r2.status().message();
}

TEST(AddonsConfig, SecretsFileErrorsNeverShowValues) {
  TempDir dir;
  const std::string path = dir.path() + "/secrets.json";
  ASSERT_TRUE(WriteFileAtomic(path, R"({"user":"admin","key":["topsecret"]})").ok());
  auto r = endpoint::ReadSecretsFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"key\""), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("topsecret"), std::string::npos);
  EXPECT_EQ(r.status().message().find("admin"), std::string::npos);
}

// A config or secrets file nested 100,000 levels deep is refused before a tree is built (one
// that deep overflows the stack when parsed or destroyed).
TEST(AddonsConfig, DeeplyNestedFilesAreRefusedNotACrash) {
  TempDir dir;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string config = dir.path() + "/config.json";
  ASSERT_TRUE(WriteFileAtomic(config, R"({"nodeAddresses":)" + deep + "}").ok());
  ExpectInvalid(Valid({"--config", config}), "nests deeper than 64 levels");
  const std::string secrets = dir.path() + "/secrets.json";
  ASSERT_TRUE(WriteFileAtomic(secrets, R"({"key":)" + deep + "}").ok());
  auto r = endpoint::ReadSecretsFile(secrets);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "\"" + secrets + "\": nests deeper than 64 levels");
  ExpectInvalid(Valid({"--secrets-file", secrets}), "secretsFile \"" + secrets + "\": nests");
}

// A secrets file with one secret: what authenticates tcp:// clients without client certs.
std::string WriteSecrets(const TempDir& dir, const std::string& json = R"({"key":"k3y"})") {
  const std::string path = dir.path() + "/secrets.json";
  EXPECT_TRUE(WriteFileAtomic(path, json).ok());
  return path;
}

TEST(AddonsConfig, TcpNeedsTlsUnlessInsecure) {
  TempDir dir;
  const std::string secrets = WriteSecrets(dir);
  ExpectInvalid(Valid({"--endpoint", "tcp://127.0.0.1:5000", "--secrets-file", secrets}),
                "tlsCertFile");
  auto insecure = Parse(
      Valid({"--endpoint", "tcp://127.0.0.1:5000", "--insecure-tcp", "--secrets-file", secrets}));
  ASSERT_TRUE(insecure.ok()) << insecure.status().ToString();
  EXPECT_TRUE(insecure->config.server.insecure_tcp);
  EXPECT_TRUE(insecure->config.server.requests_need_secrets);

  const std::string cert = dir.path() + "/c.pem";
  const std::string key = dir.path() + "/k.pem";
  ASSERT_TRUE(WriteFileAtomic(cert, "-----BEGIN CERTIFICATE-----\n").ok());
  ASSERT_TRUE(WriteFileAtomic(key, "-----BEGIN PRIVATE KEY-----\n").ok());
  ExpectInvalid(Valid({"--endpoint", "tcp://127.0.0.1:5000", "--tls-cert-file", cert}),
                "tlsKeyFile");
  ExpectInvalid(Valid({"--tls-cert-file", cert, "--tls-key-file", key}), "tcp://");
  ExpectInvalid(Valid({"--endpoint", "tcp://127.0.0.1:5000", "--tls-cert-file", cert,
                       "--tls-key-file", dir.path() + "/nokey.pem"}),
                "tlsKeyFile");
  auto tls = Parse(Valid({"--endpoint", "tcp://127.0.0.1:5000", "--tls-cert-file", cert,
                          "--tls-key-file", key, "--tls-client-ca-file", cert}));
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  auto tls_secrets = Parse(Valid({"--endpoint", "tcp://127.0.0.1:5000", "--tls-cert-file", cert,
                                  "--tls-key-file", key, "--secrets-file", secrets}));
  ASSERT_TRUE(tls_secrets.ok()) << tls_secrets.status().ToString();
}

// Anyone on the network reaches a tcp:// endpoint: without client certificates or secrets it
// does not start, and the error says why and names both keys that fix it.
TEST(AddonsConfig, TcpWithoutClientAuthenticationRefused) {
  TempDir dir;
  const std::string cert = dir.path() + "/c.pem";
  const std::string key = dir.path() + "/k.pem";
  ASSERT_TRUE(WriteFileAtomic(cert, "-----BEGIN CERTIFICATE-----\n").ok());
  ASSERT_TRUE(WriteFileAtomic(key, "-----BEGIN PRIVATE KEY-----\n").ok());
  const std::vector<std::vector<std::string>> unauthenticated = {
      // TLS without client certificates.
      {"--endpoint", "tcp://127.0.0.1:5000", "--tls-cert-file", cert, "--tls-key-file", key},
      // The test escape alone.
      {"--endpoint", "tcp://127.0.0.1:5000", "--insecure-tcp"},
      // A secrets file with no secret authenticates nobody.
      {"--endpoint", "tcp://127.0.0.1:5000", "--insecure-tcp", "--secrets-file",
       WriteSecrets(dir, "{}")},
  };
  for (const auto& args : unauthenticated) {
    SCOPED_TRACE(::testing::PrintToString(args));
    ExpectInvalid(Valid(args), "tlsClientCaFile");
    ExpectInvalid(Valid(args), "secretsFile");
    ExpectInvalid(Valid(args), "authenticated");
  }
  // The same in a config file.
  const std::string cfg = dir.path() + "/addons.json";
  ASSERT_TRUE(
      WriteFileAtomic(cfg, R"({"endpoint": "tcp://127.0.0.1:5000", "insecureTcp": true})").ok());
  ExpectInvalid(Valid({"--config", cfg}), "secretsFile");
  // A unix socket (0600, owner only) needs neither.
  auto unix_ep = Parse(Valid({"--endpoint", "unix:///tmp/x/addons.sock"}));
  ASSERT_TRUE(unix_ep.ok()) << unix_ep.status().ToString();
  EXPECT_FALSE(unix_ep->config.server.requests_need_secrets);
}

TEST(AddonsConfig, ThePortIndexsPublicationIsAuthenticatedByClientCertificate) {
  TempDir dir;
  const std::string pem = dir.path() + "/x.pem";
  ASSERT_TRUE(WriteFileAtomic(pem, "-----BEGIN CERTIFICATE-----\n").ok());
  const std::vector<std::string> tls = {"--tls-cert-file", pem, "--tls-key-file", pem};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = tls;
    args.insert(args.end(), more.begin(), more.end());
    return Valid(args);
  };
  // The sidecar's unix socket and a TLS listener for the node agents, with client certificates.
  auto ok = Parse(with({"--port-index", "--publication-endpoint", "tcp://0.0.0.0:9811",
                        "--tls-client-ca-file", pem, "--publication-lease-seconds", "60"}));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->config.fence.port_index);
  EXPECT_EQ(ok->config.server.additional_endpoint, "tcp://0.0.0.0:9811");
  EXPECT_EQ(ok->config.fence.publication_lease, std::chrono::seconds(60));
  // Publications carry no secrets: a secrets file does not authenticate them.
  ExpectInvalid(with({"--port-index", "--publication-endpoint", "tcp://0.0.0.0:9811",
                      "--secrets-file", WriteSecrets(dir, R"({"k":"v"})")}),
                "tlsClientCaFile");
  ExpectInvalid(Valid({"--publication-endpoint", "tcp://0.0.0.0:9811"}),
                "only in controller mode "
                "with portIndex");
  ExpectInvalid(with({"--port-index", "--publication-endpoint", "unix:///run/x.sock",
                      "--tls-client-ca-file", pem}),
                "an additional endpoint must be tcp://HOST:PORT");
  ExpectInvalid(Valid({"--port-index", "--publication-lease-seconds", "1"}),
                "publicationLeaseSeconds");

  // Node agents publish with a certificate of their own, in node mode only.
  auto node =
      Parse({"--mode", "node", "--host-id", "node-7", "--publish-to", "tcp://controller:9811",
             "--publish-ca-file", pem, "--publish-cert-file", pem, "--publish-key-file", pem});
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->config.publisher.node, "node-7");
  EXPECT_EQ(node->config.publisher.state_dir, node->config.fence.state_dir);
  ExpectInvalid(Valid({"--publish-to", "tcp://controller:9811"}), "publishTo: only in node mode");
  ExpectInvalid({"--mode", "node", "--publish-to", "tcp://c:1", "--publish-ca-file",
                 dir.path() + "/absent.pem"},
                "publishCaFile");
}

TEST(AddonsConfig, Endpoints) {
  auto unix_ep = ParseEndpoint("unix:///run/mizarmp/csi-addons.sock");
  ASSERT_TRUE(unix_ep.ok());
  EXPECT_EQ(unix_ep->kind, Endpoint::Kind::kUnix);
  EXPECT_EQ(unix_ep->path, "/run/mizarmp/csi-addons.sock");
  EXPECT_EQ(unix_ep->GrpcAddress(), "unix:/run/mizarmp/csi-addons.sock");

  auto tcp = ParseEndpoint("tcp://0.0.0.0:9070");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->kind, Endpoint::Kind::kTcp);
  EXPECT_EQ(tcp->host, "0.0.0.0");
  EXPECT_EQ(tcp->port, 9070);
  EXPECT_EQ(tcp->GrpcAddress(), "0.0.0.0:9070");

  auto v6 = ParseEndpoint("tcp://[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->GrpcAddress(), "[::1]:0");

  for (const char* bad :
       {"unix://relative.sock", "unix://", "tcp://host", "tcp://:80", "tcp://h:99999", "tcp://h:x",
        "http://h:1", "/run/x.sock", "tcp://[::1]80"}) {
    auto r = ParseEndpoint(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(bad), std::string::npos) << bad;
    }
  }
  EXPECT_FALSE(ParseEndpoint("unix:///" + std::string(120, 'a')).ok());
}

TEST(AddonsConfig, RedactUrl) {
  EXPECT_EQ(RedactUrl("http://127.0.0.1:9090"), "http://127.0.0.1:9090");
  EXPECT_EQ(RedactUrl("https://admin:pw@mp.example:8443/api?x=a@b"),
            "https://***@mp.example:8443/api?x=a@b");
  EXPECT_EQ(RedactUrl("http://tok@h"), "http://***@h");
  EXPECT_EQ(RedactUrl("not a url"), "not a url");
}

TEST(AddonsConfig, DriverNameRules) {
  for (const char* good :
       {"mizarmp.csi-addons.mizar.io", "a", "A1", "rbd.csi.ceph.com", "x-y.z", "0abc9"}) {
    EXPECT_TRUE(ValidateDriverName(good).ok()) << good;
  }
  const std::string max(63, 'a');
  EXPECT_TRUE(ValidateDriverName(max).ok());

  struct Bad {
    std::string name;
    std::string why;
  };
  for (const Bad& b : std::vector<Bad>{{"", "empty"},
                                       {std::string(64, 'a'), "at most 63"},
                                       {"-abc", "begin and end"},
                                       {"abc.", "begin and end"},
                                       {".abc", "begin and end"},
                                       {"ab_c", "'_'"},
                                       {"ab c", "' '"},
                                       {"ab/c", "'/'"},
                                       {"äbc", "begin and end"}}) {
    Status s = ValidateDriverName(b.name);
    EXPECT_FALSE(s.ok()) << b.name;
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_NE(s.message().find(b.why), std::string::npos) << s.message();
  }
  ExpectInvalid(Valid({"--drivername", "bad_name"}), "drivername");
}

TEST(AddonsConfig, PluginShapedTlsObject) {
  TempDir dir;
  const std::string ca = dir.path() + "/ca.pem";
  ASSERT_TRUE(WriteFileAtomic(ca, "-----BEGIN CERTIFICATE-----\n").ok());
  ServerConfig c;
  ASSERT_TRUE(ApplyConfigJson(R"({"tls": {"caFile": ")" + ca + R"(", "certFile": "/c.pem",
                                 "keyFile": "/k.pem", "insecureSkipVerify": true}})",
                              c)
                  .ok());
  EXPECT_EQ(c.mizarmp.tls.ca_file, ca);
  EXPECT_EQ(c.mizarmp.tls.cert_file, "/c.pem");
  EXPECT_EQ(c.mizarmp.tls.key_file, "/k.pem");
  EXPECT_TRUE(c.mizarmp.tls.insecure_skip_verify);
  // The flat keys still work and mean the same.
  ServerConfig flat;
  ASSERT_TRUE(ApplyConfigJson(R"({"mpCaFile": ")" + ca + R"("})", flat).ok());
  EXPECT_EQ(flat.mizarmp.tls.ca_file, ca);
  // Errors name the nested key.
  ServerConfig bad;
  Status s = ApplyConfigJson(R"({"tls": {"caFile": 7}})", bad);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("tls.caFile"), std::string::npos) << s.message();
  s = ApplyConfigJson(R"({"tls": {"cafile": "x"}})", bad);
  EXPECT_NE(s.message().find("tls.cafile"), std::string::npos) << s.message();
  s = ApplyConfigJson(R"({"tls": "on"})", bad);
  EXPECT_NE(s.message().find("\"tls\""), std::string::npos) << s.message();
  // No flag named after the object.
  ExpectInvalid({"--mpurl", "http://127.0.0.1:1", "--tls", "x"}, "--tls");
}

// "tls" and the flat mp* keys set the same settings. A JSON object has no order a reader must
// keep (nlohmann::json applies keys alphabetically), so one file holding both is refused,
// whichever comes first, rather than one silently beating the other.
TEST(AddonsConfig, TheTlsObjectAndTheFlatMpKeysAreNotMixedInOneFile) {
  for (const std::string flat : {"mpCaFile", "mpCertFile", "mpKeyFile"}) {
    for (const bool tls_first : {true, false}) {
      const std::string tls = R"("tls": {"caFile": "/a.pem"})";
      const std::string other = "\"" + flat + "\": \"/b.pem\"";
      ServerConfig c;
      const Status s = ApplyConfigJson(
          "{" + (tls_first ? tls + ", " + other : other + ", " + tls) + "}", c);
      EXPECT_EQ(s.code(), Code::kInvalidArgument) << flat;
      EXPECT_NE(s.message().find("\"tls\" and \"" + flat + "\""), std::string::npos)
          << s.message();
    }
  }
  ServerConfig c;
  const Status s = ApplyConfigJson(R"({"mpInsecureSkipVerify": true, "tls": {}})", c);
  EXPECT_NE(s.message().find("\"mpInsecureSkipVerify\""), std::string::npos) << s.message();
}

// The reader, the flags and --help are generated from one table (config.cc): every JSON key has
// a kebab-case flag (only "tls", the --mp-* settings in the CNI plugin's shape, is config file
// only), and each key and flag shows up in --help with its help line.
TEST(AddonsConfig, EtcdFenceStore) {
  TempDir dir;
  const std::string password = dir.path() + "/etcd.password";
  ASSERT_TRUE(WriteFileAtomic(password, "s3cret\n").ok());
  auto parsed = Parse(Valid({"--fence-store", "etcd://10.0.0.1:2379,etcd-2.example:2379",
                             "--etcd-username", "mizarmp", "--etcd-password-file", password,
                             "--etcd-prefix", "/prod/fence/", "--lease-ttl-seconds", "20",
                             "--replica-id", "addons-0", "--etcd-call-timeout-ms", "1500"}));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const fence::FenceOptions& f = parsed->config.fence;
  EXPECT_EQ(f.fence_store, "etcd://10.0.0.1:2379,etcd-2.example:2379");
  EXPECT_EQ(f.etcd.client.username, "mizarmp");
  EXPECT_EQ(f.etcd.client.password_file, password);
  EXPECT_EQ(f.etcd.prefix, "/prod/fence/");
  EXPECT_EQ(f.etcd.lease_ttl, std::chrono::seconds(20));
  EXPECT_EQ(f.etcd.client.call_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(f.replica_id, "addons-0");

  auto defaulted = Parse(Valid());
  ASSERT_TRUE(defaulted.ok());
  EXPECT_FALSE(defaulted->config.fence.replica_id.empty()) << "the host name is the default";

  const std::vector<std::string> etcd = {"--fence-store", "etcd://127.0.0.1:2379"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = etcd;
    args.insert(args.end(), more.begin(), more.end());
    return Valid(args);
  };
  ExpectInvalid(Valid({"--fence-store", "etcd://127.0.0.1"}), "127.0.0.1");
  ExpectInvalid(Valid({"--fence-store", "etcd://a:1,,b:2"}), "fenceStore");
  ExpectInvalid(Valid({"--fence-store", "relative.db"}), "fenceStore");
  ExpectInvalid(with({"--etcd-username", "u"}), "etcdUsername/etcdPasswordFile");
  ExpectInvalid(with({"--etcd-cert-file", password}), "etcdCertFile/etcdKeyFile");
  ExpectInvalid(with({"--etcd-ca-file", dir.path() + "/absent.pem"}), "etcdCaFile");
  ExpectInvalid(with({"--etcd-prefix", "fence"}), "etcdPrefix");
  // The default lease (15 s) covers the default Mizar-MP timeouts (2 s + 5 s); 5 s does not.
  ExpectInvalid(with({"--lease-ttl-seconds", "5"}), "leaseTtlSeconds 5");
  EXPECT_TRUE(Parse(with({"--lease-ttl-seconds", "3", "--mp-connect-timeout-ms", "500",
                          "--mp-request-timeout-ms", "1000"}))
                  .ok());
  // etcd settings with a file store would be silently ignored: refused instead.
  ExpectInvalid(Valid({"--etcd-username", "u"}), "only for an etcd:// fenceStore");
  ExpectInvalid(Valid({"--etcd-prefix", "/x/"}), "only for an etcd:// fenceStore");
}

TEST(AddonsConfig, EveryKeyHasAFlagAndIsInHelp) {
  const std::string usage = Usage();
  const std::vector<KeyHelp> keys = DescribeKeys();
  std::set<std::string> json_keys;
  for (const KeyHelp& k : keys) json_keys.insert(k.json_key);
  EXPECT_EQ(json_keys, (std::set<std::string>{"endpoint",
                                              "tlsCertFile",
                                              "tlsKeyFile",
                                              "tlsClientCaFile",
                                              "healthAddress",
                                              "metricsAddress",
                                              "insecureTcp",
                                              "mode",
                                              "drivername",
                                              "mpurl",
                                              "project",
                                              "subnet",
                                              "dialect",
                                              "tls",
                                              "mpCaFile",
                                              "mpCertFile",
                                              "mpKeyFile",
                                              "mpInsecureSkipVerify",
                                              "tokenFile",
                                              "relaySocket",
                                              "stateDir",
                                              "fenceStore",
                                              "etcdCaFile",
                                              "etcdCertFile",
                                              "etcdKeyFile",
                                              "etcdUsername",
                                              "etcdPasswordFile",
                                              "etcdPrefix",
                                              "etcdCallTimeoutMs",
                                              "leaseTtlSeconds",
                                              "replicaId",
                                              "mpConnectTimeoutMs",
                                              "mpRequestTimeoutMs",
                                              "nodeAddresses",
                                              "hostId",
                                              "secretsFile",
                                              "reconcileIntervalMs",
                                              "updateConnections",
                                              "probeTimeoutMs",
                                              "readinessIntervalMs",
                                              "logLevel",
                                              "logFile",
                                              "usePortList",
                                              "portIndex",
                                              "publicationEndpoint",
                                              "publicationLeaseSeconds",
                                              "publishTo",
                                              "publishCaFile",
                                              "publishCertFile",
                                              "publishKeyFile",
                                              "publishInsecure",
                                              "publishIntervalMs",
                                              "keyStoreDir",
                                              "mountTable",
                                              "kubeletDir"}));
  EXPECT_EQ(json_keys.size(), keys.size()) << "a key is in the table twice";
  std::set<std::string> flagless;
  for (const KeyHelp& k : keys) {
    SCOPED_TRACE(k.json_key);
    EXPECT_NE(usage.find(" " + k.json_key + " "), std::string::npos);
    EXPECT_FALSE(k.help.empty());
    EXPECT_NE(usage.find(k.help), std::string::npos);
    // A known key: a value of the wrong type is rejected as such, not as an unknown key.
    ServerConfig c;
    Status s = ApplyConfigJson("{\"" + k.json_key + "\": null}", c);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.message().find("unknown key"), std::string::npos) << s.message();
    if (k.flag.empty()) {
      flagless.insert(k.json_key);
      continue;
    }
    std::string kebab;
    for (char ch : k.json_key) {
      if (std::isupper(static_cast<unsigned char>(ch))) {
        kebab += '-';
        kebab += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      } else {
        kebab += ch;
      }
    }
    EXPECT_EQ(k.flag, k.json_key == "nodeAddresses" ? "node-address" : kebab);
    const std::string shown = "  --" + k.flag + (k.value_name.empty() ? "" : " " + k.value_name);
    EXPECT_NE(usage.find(shown + " "), std::string::npos) << usage;
    // A known flag: whatever its value does, the parser knows the flag.
    auto r = Parse(Valid({"--" + k.flag + "=x"}));
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().find("unknown flag"), std::string::npos)
          << r.status().message();
    }
  }
  EXPECT_EQ(flagless, (std::set<std::string>{"tls"}));

  // And the other way round: every flag --help lists is a key's or one of the program's own.
  std::set<std::string> known = {"config", "help", "version"};
  for (const KeyHelp& k : keys) {
    if (!k.flag.empty()) known.insert(k.flag);
  }
  std::istringstream lines(usage);
  int listed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("  --")) continue;
    const std::string flag = line.substr(4, line.find(' ', 4) - 4);
    EXPECT_TRUE(known.count(flag)) << "--help lists --" << flag;
    ++listed;
  }
  EXPECT_EQ(listed, static_cast<int>(known.size()));
}

// README.md's configuration examples (its ```json blocks) are files this server takes as they
// stand: every key known, every value of its type, nothing required missing. Of what this box
// cannot have, only a certificate or CA file the example names at a path that is not here is
// refused.
TEST(AddonsConfig, TheReadmeExamplesAreAccepted) {
  std::ifstream readme(std::string(MIZARMP_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(readme.good());
  std::vector<std::string> examples;
  std::string line, block;
  bool in_block = false;
  while (std::getline(readme, line)) {
    if (!in_block && line == "```json") {
      in_block = true;
      block.clear();
    } else if (in_block && line == "```") {
      in_block = false;
      examples.push_back(block);
    } else if (in_block) {
      block += line + "\n";
    }
  }
  ASSERT_GE(examples.size(), 4u) << "README.md's configuration examples were not found";
  TempDir dir;
  const std::string file = dir.path() + "/addons.json";
  for (const std::string& example : examples) {
    ASSERT_TRUE(WriteFileAtomic(file, example).ok());
    auto parsed = Parse({"--config", file});
    if (parsed.ok()) continue;
    bool names_an_absent_file = false;
    const std::string& message = parsed.status().message();
    for (size_t at = message.find("/etc/"); at != std::string::npos;
         at = message.find("/etc/", at + 1)) {
      const size_t end = message.find_first_of(" \"':,()", at);
      const std::string path = message.substr(at, end == std::string::npos ? end : end - at);
      names_an_absent_file = names_an_absent_file || (example.find(path) != std::string::npos &&
                                                      !std::filesystem::exists(path));
    }
    EXPECT_TRUE(names_an_absent_file)
        << parsed.status().ToString() << "\nin README.md's example:\n" << example;
  }
}

TEST(AddonsConfig, HelpAndVersionStopTheParse) {
  auto help = Parse({"--help"});
  ASSERT_TRUE(help.ok()) << help.status().ToString();
  EXPECT_TRUE(help->help);
  // Nothing is validated or read: no Mizar-MP URL, a config file that does not exist.
  auto version = Parse({"--version", "--config", "/nonexistent/addons.json"});
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_TRUE(version->version);
  // Flags are still checked for being flags.
  ExpectInvalid({"--help", "--no-such-flag"}, "--no-such-flag");
}

}  // namespace
}  // namespace mizarmp::cmd
