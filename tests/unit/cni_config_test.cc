// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The network configuration: required keys, types, defaults, and the hostId fallback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cni/config.h"
#include "tests/support/support.h"

namespace mizarmp::cni {
namespace {

using nlohmann::json;

json Minimal() {
  return json{{"cniVersion", "1.0.0"},
              {"name", "mizarmp-default"},
              {"type", "mizarmp"},
              {"mpurl", "http://127.0.0.1:9090"},
              {"project", "3dda2801-d675-4688-a63f-dcda8d327f50"},
              {"subnet", "a87e0f87-a2d9-44ef-9194-9a62f178594e"}};
}

std::string ParseError(const json& doc) {
  auto c = ParseNetConf(doc);
  if (c.ok()) return "(parsed)";
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  return c.status().message();
}

TEST(CniConfig, MinimalGetsDefaults) {
  auto c = ParseNetConf(Minimal());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cni_version, "1.0.0");
  EXPECT_EQ(c->name, "mizarmp-default");
  EXPECT_EQ(c->network_id, c->subnet) << "network_id defaults to the subnet id (v0.1)";
  EXPECT_EQ(c->host_id, "");
  EXPECT_EQ(c->dialect, client::Dialect::kAuto);
  EXPECT_EQ(c->state_dir, "/var/lib/cni/mizarmp");
  EXPECT_EQ(c->log_level, "warn");
  EXPECT_EQ(c->log_max_bytes, 0u);
  EXPECT_EQ(c->mtu, 0);
  EXPECT_TRUE(c->dns.empty());
  EXPECT_EQ(c->ready_timeout.count(), 60000);
  EXPECT_EQ(c->request_timeout.count(), 5000);
  EXPECT_EQ(c->connect_timeout.count(), 2000);
  EXPECT_EQ(c->nic_timeout.count(), 10000);
  EXPECT_EQ(c->poll_initial.count(), 5);
  EXPECT_EQ(c->poll_max.count(), 5);
  EXPECT_EQ(c->retries, 3);
  EXPECT_TRUE(c->prev_result.is_null());
  EXPECT_EQ(c->plug, PlugMode::kAuto);
  EXPECT_EQ(c->ovs_bridge, "br-int") << "Alcor's agent's integration bridge";
  EXPECT_EQ(c->ovsdb_socket, "/var/run/openvswitch/db.sock");
}

TEST(CniConfig, PlugModeKeys) {
  json doc = Minimal();
  doc["plug"] = "ovs";
  doc["ovsBridge"] = "br-pods";
  doc["ovsdbSocket"] = "/run/ovs/db.sock";
  auto c = ParseNetConf(doc);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->plug, PlugMode::kOvs);
  EXPECT_EQ(c->ovs_bridge, "br-pods");
  EXPECT_EQ(c->ovsdb_socket, "/run/ovs/db.sock");
  doc["plug"] = "agent";
  EXPECT_EQ(ParseNetConf(doc)->plug, PlugMode::kAgent);

  doc["plug"] = "nova";
  EXPECT_EQ(ParseError(doc),
            "config key \"plug\": \"nova\" is not one of \"auto\", \"agent\", \"ovs\"");
  doc["plug"] = true;
  EXPECT_NE(ParseError(doc).find("\"plug\""), std::string::npos);
  doc = Minimal();
  doc["ovsBridge"] = "a-bridge-name-too-long";
  EXPECT_NE(ParseError(doc).find("\"ovsBridge\""), std::string::npos);
  doc = Minimal();
  doc["ovsdbSocket"] = "db.sock";
  EXPECT_EQ(ParseError(doc), "config key \"ovsdbSocket\": \"db.sock\" is not an absolute path");
}

TEST(CniConfig, EveryKey) {
  json doc = Minimal();
  doc["hostId"] = "node-a";
  doc["networkId"] = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038";
  doc["dialect"] = "alcor";
  doc["stateDir"] = "/tmp/state";
  doc["logFile"] = "/tmp/mizarmp.log";
  doc["logLevel"] = "debug";
  doc["logMaxBytes"] = 65536;
  doc["mtu"] = 1400;
  doc["dns"] = {{"nameservers", {"10.0.0.10"}},
                {"domain", "cluster.local"},
                {"search", {"a", "b"}},
                {"options", {"ndots:5"}}};
  doc["tls"] = {
      {"caFile", "/ca"}, {"certFile", "/c"}, {"keyFile", "/k"}, {"insecureSkipVerify", true}};
  doc["tokenFile"] = "/token";
  doc["relaySocket"] = "/run/mizarmp/relay.sock";
  doc["timeouts"] = {{"readyMs", 100}, {"requestMs", 200}, {"connectMs", 300}, {"nicMs", 400}};
  doc["poll"] = {{"initialMs", 2}, {"maxMs", 20}};
  doc["retries"] = 5;
  doc["prevResult"] = {{"cniVersion", "1.0.0"}};
  doc["runtimeConfig"] = {{"portMappings", json::array()}};
  doc["args"] = {{"cni", {{"x", 1}}}};
  doc["somethingAChainedPluginAdded"] = {{"whatever", true}};
  auto c = ParseNetConf(doc);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->host_id, "node-a");
  EXPECT_EQ(c->network_id, "9192a4d4-ffff-4ece-b3f0-8d36e3d88038");
  EXPECT_EQ(c->dialect, client::Dialect::kAlcor);
  EXPECT_EQ(c->state_dir, "/tmp/state");
  EXPECT_EQ(c->log_file, "/tmp/mizarmp.log");
  EXPECT_EQ(c->log_max_bytes, 65536u);
  EXPECT_EQ(c->mtu, 1400);
  EXPECT_EQ(c->dns.nameservers, std::vector<std::string>{"10.0.0.10"});
  EXPECT_EQ(c->dns.domain, "cluster.local");
  EXPECT_EQ(c->dns.search.size(), 2u);
  EXPECT_EQ(c->dns.options, std::vector<std::string>{"ndots:5"});
  EXPECT_EQ(c->tls.ca_file, "/ca");
  EXPECT_TRUE(c->tls.insecure_skip_verify);
  EXPECT_EQ(c->token_file, "/token");
  EXPECT_EQ(c->ready_timeout.count(), 100);
  EXPECT_EQ(c->nic_timeout.count(), 400);
  EXPECT_EQ(c->poll_max.count(), 20);
  EXPECT_EQ(c->retries, 5);
  EXPECT_EQ(c->prev_result["cniVersion"], "1.0.0");
  EXPECT_TRUE(c->runtime_config.contains("portMappings"));

  client::ClientConfig cc = ClientConfigFor(*c);
  EXPECT_EQ(cc.base_url, "http://127.0.0.1:9090");
  EXPECT_EQ(cc.project_id, "3dda2801-d675-4688-a63f-dcda8d327f50");
  EXPECT_EQ(cc.dialect, client::Dialect::kAlcor);
  EXPECT_EQ(cc.request_timeout.count(), 200);
  EXPECT_EQ(cc.connect_timeout.count(), 300);
  EXPECT_EQ(cc.max_attempts, 5);
  EXPECT_EQ(cc.token_file, "/token");
  EXPECT_EQ(cc.relay_socket, "/run/mizarmp/relay.sock");
  client::PollOptions po = PollOptionsFor(*c);
  EXPECT_EQ(po.initial.count(), 2);
  EXPECT_EQ(po.max.count(), 20);
  EXPECT_EQ(po.deadline.count(), 100);
}

TEST(CniConfig, MissingRequiredKeyIsNamed) {
  for (const char* key : {"cniVersion", "name", "type", "mpurl", "project", "subnet"}) {
    json doc = Minimal();
    doc.erase(key);
    std::string msg = ParseError(doc);
    EXPECT_NE(msg.find(std::string("\"") + key + "\""), std::string::npos) << key << ": " << msg;
    EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  }
}

TEST(CniConfig, WrongTypeIsNamed) {
  struct Case {
    const char* key;
    json value;
    const char* named;
  } cases[] = {
      {"name", 5, "\"name\""},
      {"mpurl", json::array(), "\"mpurl\""},
      {"hostId", true, "\"hostId\""},
      {"mtu", "1500", "\"mtu\""},
      {"mtu", 1500.5, "\"mtu\""},
      {"retries", "3", "\"retries\""},
      {"dns", "8.8.8.8", "\"dns\""},
      {"dns", json{{"nameservers", "8.8.8.8"}}, "\"dns.nameservers\""},
      {"dns", json{{"search", {1}}}, "\"dns.search[0]\""},
      {"tls", json{{"insecureSkipVerify", "yes"}}, "\"tls.insecureSkipVerify\""},
      {"timeouts", json{{"readyMs", "60s"}}, "\"timeouts.readyMs\""},
      {"poll", json{{"maxMs", -1}}, "\"poll.maxMs\""},
      {"prevResult", json::array(), "\"prevResult\""},
  };
  for (const auto& c : cases) {
    json doc = Minimal();
    doc[c.key] = c.value;
    std::string msg = ParseError(doc);
    EXPECT_NE(msg.find(c.named), std::string::npos)
        << c.key << "=" << c.value.dump() << ": " << msg;
  }
}

TEST(CniConfig, ValuesOutOfRange) {
  json doc = Minimal();
  doc["project"] = "default";
  EXPECT_NE(ParseError(doc).find("\"default\" is not a UUID"), std::string::npos);
  doc = Minimal();
  doc["subnet"] = "a87e0f87-a2d9-44ef-9194-9a62f178594";
  EXPECT_NE(ParseError(doc).find("subnet"), std::string::npos);
  for (int mtu : {0, 67, 65536, -1}) {
    doc = Minimal();
    doc["mtu"] = mtu;
    std::string msg = ParseError(doc);
    EXPECT_NE(msg.find("\"mtu\" is " + std::to_string(mtu)), std::string::npos) << msg;
  }
  for (int64_t cap : {int64_t{0}, int64_t{4095}, (int64_t{1} << 30) + 1}) {
    doc = Minimal();
    doc["logMaxBytes"] = cap;
    std::string msg = ParseError(doc);
    EXPECT_NE(msg.find("\"logMaxBytes\" is " + std::to_string(cap) + ", want 4096..1073741824"),
              std::string::npos)
        << msg;
  }
  for (int mtu : {68, 65535}) {
    doc = Minimal();
    doc["mtu"] = mtu;
    EXPECT_TRUE(ParseNetConf(doc).ok()) << mtu;
  }
  doc = Minimal();
  doc["dialect"] = "v2";
  EXPECT_NE(ParseError(doc).find("\"v2\""), std::string::npos);
  doc = Minimal();
  doc["logLevel"] = "chatty";
  EXPECT_NE(ParseError(doc).find("chatty"), std::string::npos);
  doc = Minimal();
  doc["stateDir"] = "relative/dir";
  EXPECT_NE(ParseError(doc).find("relative/dir"), std::string::npos);
  doc = Minimal();
  doc["relaySocket"] = "relay.sock";
  EXPECT_NE(ParseError(doc).find("\"relaySocket\": \"relay.sock\" is not an absolute path"),
            std::string::npos)
      << ParseError(doc);
  doc = Minimal();
  doc["poll"] = {{"initialMs", 100}, {"maxMs", 10}};
  EXPECT_NE(ParseError(doc).find("poll.maxMs"), std::string::npos);
  for (const char* name : {"../etc", "a/b", "-net", ""}) {
    doc = Minimal();
    doc["name"] = name;
    EXPECT_NE(ParseError(doc), "(parsed)") << name;
  }
  for (const char* name : {"net", "mizarmp-default", "a.b_c-1"}) {
    doc = Minimal();
    doc["name"] = name;
    EXPECT_TRUE(ParseNetConf(doc).ok()) << name;
  }
}

TEST(CniConfig, DecodeReportsThePosition) {
  auto bad = DecodeJson("{\"cniVersion\": \"1.0.0\",, }");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("byte 24"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(DecodeJson("").ok());
  EXPECT_FALSE(DecodeJson("  \n").ok());
  auto arr = DecodeJson("[1,2]");
  ASSERT_FALSE(arr.ok());
  EXPECT_NE(arr.status().message().find("object"), std::string::npos);
  EXPECT_TRUE(DecodeJson(Minimal().dump()).ok());
}

TEST(CniConfig, VersionDefaultsToTheOriginalSpec) {
  json doc = Minimal();
  doc.erase("cniVersion");
  auto v = ConfigVersion(doc);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "0.1.0");
  doc["cniVersion"] = 1;
  EXPECT_FALSE(ConfigVersion(doc).ok());
}

TEST(CniConfig, HostIdFallbacks) {
  testing::TempDir dir;
  auto conf = ParseNetConf(Minimal());
  ASSERT_TRUE(conf.ok());
  const std::string file = dir.path() + "/hostid";
  std::ofstream(file) << "\n  \n  node-from-file  \nsecond\n";
  auto id = ResolveHostId(*conf, file);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "node-from-file");

  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  id = ResolveHostId(*conf, dir.path() + "/missing");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, host);
  std::ofstream(file, std::ios::trunc) << "\n\n";
  id = ResolveHostId(*conf, file);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, host);

  conf->host_id = "configured";
  id = ResolveHostId(*conf, file);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "configured");
}

}  // namespace
}  // namespace mizarmp::cni
