// mizarmp-addons configuration: JSON file, flags over it, defaults, validation and the
// drivername rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fileutil.h"
#include "fence/config.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

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
  EXPECT_EQ(c.endpoint, "unix:///run/mizarmp/csi-addons.sock");
  EXPECT_EQ(c.mode, Mode::kController);
  EXPECT_EQ(c.drivername, "mizarmp.csi-addons.mizar.io");
  EXPECT_EQ(c.state_dir, "/var/lib/cni/mizarmp");
  EXPECT_EQ(c.fence_store, "/var/lib/mizarmp/fence.db");
  EXPECT_EQ(c.reconcile_interval.count(), 10000);
  EXPECT_EQ(c.mizarmp.project_id, client::kDefaultProjectId);
  EXPECT_EQ(c.subnet_id, client::kDefaultSubnetId);
  EXPECT_EQ(c.mizarmp.dialect, client::Dialect::kAuto);
  EXPECT_FALSE(c.use_port_list);
  EXPECT_FALSE(c.insecure_tcp);
  EXPECT_TRUE(c.node_addresses.empty());
  EXPECT_TRUE(c.expected_secrets.empty());
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
  EXPECT_EQ(c.endpoint, "unix:///tmp/x/addons.sock");
  EXPECT_EQ(c.mode, Mode::kController);  // the flag wins
  EXPECT_EQ(c.drivername, "example.mizar.io");
  EXPECT_EQ(c.mizarmp.base_url, "https://mp.example:8443");
  EXPECT_EQ(c.mizarmp.project_id, "p1");
  EXPECT_EQ(c.subnet_id, "s2");  // the flag wins
  EXPECT_EQ(c.mizarmp.dialect, client::Dialect::kAlcor);
  EXPECT_EQ(c.mizarmp.token_file, token);
  EXPECT_EQ(c.state_dir, "/srv/state");
  EXPECT_EQ(c.fence_store, "/srv/fence.db");
  ASSERT_EQ(c.node_addresses.size(), 2u);
  EXPECT_EQ(c.node_addresses.at("node-a"), (std::vector<std::string>{"10.0.0.5", "10.1.0.0/24"}));
  EXPECT_EQ(c.node_addresses.at("node-b"),
            (std::vector<std::string>{"192.168.1.9", "192.168.2.0/24"}));
  EXPECT_EQ(c.host_id, "node-a");
  EXPECT_EQ(c.reconcile_interval.count(), 2500);
  EXPECT_EQ(c.log_level, log::Level::kDebug);
  EXPECT_TRUE(c.use_port_list);
  EXPECT_EQ(c.expected_secrets.at("user"), "admin");
  EXPECT_EQ(c.expected_secrets.at("key"), "k3y");
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

TEST(AddonsConfig, NodeModeDoesNotNeedMizarMp) {
  auto r = Parse({"--mode", "node"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.mode, Mode::kNode);
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
  auto r = LoadSecretsFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"key\""), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("topsecret"), std::string::npos);
  EXPECT_EQ(r.status().message().find("admin"), std::string::npos);
}

TEST(AddonsConfig, TcpNeedsTlsUnlessInsecure) {
  TempDir dir;
  ExpectInvalid(Valid({"--endpoint", "tcp://127.0.0.1:5000"}), "tlsCertFile");
  auto insecure = Parse(Valid({"--endpoint", "tcp://127.0.0.1:5000", "--insecure-tcp"}));
  ASSERT_TRUE(insecure.ok()) << insecure.status().ToString();
  EXPECT_TRUE(insecure->config.insecure_tcp);

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

}  // namespace
}  // namespace mizarmp::fence
