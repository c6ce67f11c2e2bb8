// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// JSON <-> struct conversions of the Mizar-MP client for both controller generations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mizarmp-client/port_list_reader.h"
#include "mizarmp-client/types.h"

namespace mizarmp::client {
namespace {

using nlohmann::json;

PortSpec SampleSpec() {
  PortSpec s;
  s.project_id = kDefaultProjectId;
  s.id = "0f3d1c2e-0000-4000-8000-000000000001";
  s.name = "k8s_0f3d1c2e-0000-4000-8000-000000000001";
  s.description = "cni sandbox-1, ns:/var/run/netns/x, host:node-a";
  s.network_id = kDefaultSubnetId;
  s.veth_name = "eth0";
  s.network_ns = "/var/run/netns/x";
  s.host_id = "node-a";
  return s;
}

TEST(PortSpecToJson, WritesEverySeedKey) {
  json j = PortSpecToJson(SampleSpec());
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["project_id"], kDefaultProjectId);
  EXPECT_EQ(j["id"], "0f3d1c2e-0000-4000-8000-000000000001");
  EXPECT_EQ(j["name"], "k8s_0f3d1c2e-0000-4000-8000-000000000001");
  EXPECT_EQ(j["admin_state_up"], true);
  EXPECT_EQ(j["description"], "cni sandbox-1, ns:/var/run/netns/x, host:node-a");
  EXPECT_EQ(j["network_id"], kDefaultSubnetId);
  EXPECT_EQ(j["veth_name"], "eth0");
  // Single create (network_ns) and bulk create (veth_namespace) spellings, both present.
  EXPECT_EQ(j["network_ns"], "/var/run/netns/x");
  EXPECT_EQ(j["veth_namespace"], "/var/run/netns/x");
  EXPECT_EQ(j["port_security_enabled"], false);
  ASSERT_TRUE(j.contains("allowed_address_pairs"));
  EXPECT_TRUE(j["allowed_address_pairs"].is_array());
  EXPECT_TRUE(j["allowed_address_pairs"].empty());
  EXPECT_EQ(j["binding:host_id"], "node-a");
  ASSERT_TRUE(j.contains("binding:profile"));
  EXPECT_TRUE(j["binding:profile"].is_null());
  EXPECT_EQ(j["binding:vnic_type"], "normal");
  EXPECT_EQ(j["fast_path"], true);
  EXPECT_FALSE(j.contains("fixed_ips")) << "fixed_ips only when addresses are requested";
}

TEST(PortSpecToJson, FixedIpsOnlyWhenRequested) {
  PortSpec s = SampleSpec();
  s.admin_state_up = false;
  s.fast_path = false;
  s.vnic_type = "direct";
  s.fixed_ips.push_back({kDefaultSubnetId, "10.240.0.7"});
  json j = PortSpecToJson(s);
  ASSERT_TRUE(j["fixed_ips"].is_array());
  ASSERT_EQ(j["fixed_ips"].size(), 1u);
  EXPECT_EQ(j["fixed_ips"][0]["subnet_id"], kDefaultSubnetId);
  EXPECT_EQ(j["fixed_ips"][0]["ip_address"], "10.240.0.7");
  EXPECT_EQ(j["admin_state_up"], false);
  EXPECT_EQ(j["fast_path"], false);
  EXPECT_EQ(j["binding:vnic_type"], "direct");
}

TEST(PortFromJson, ReadsV01Response) {
  // The seed's GET port answer, with network_ns from a single create.
  json doc = json::parse(R"({
    "port": {
      "project_id": "3dda2801-d675-4688-a63f-dcda8d327f50",
      "id": "p1",
      "name": "k8s_p1",
      "admin_state_up": true,
      "network_id": "a87e0f87-a2d9-44ef-9194-9a62f178594e",
      "veth_name": "eth0",
      "network_ns": "/var/run/netns/pod1",
      "binding:host_id": "node-a",
      "binding:profile": null,
      "status": "UP",
      "mac_address": "aa:bb:cc:00:00:01",
      "fixed_ips": [{"subnet_id": "a87e0f87-a2d9-44ef-9194-9a62f178594e",
                     "ip_address": "10.240.0.2"}],
      "unknown_field": {"ignored": [1, 2, 3]}
    }
  })");
  auto p = PortFromJson(doc);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->id, "p1");
  EXPECT_EQ(p->project_id, kDefaultProjectId);
  EXPECT_EQ(p->name, "k8s_p1");
  EXPECT_EQ(p->network_id, kDefaultSubnetId);
  EXPECT_EQ(p->veth_name, "eth0");
  EXPECT_EQ(p->network_ns, "/var/run/netns/pod1");
  EXPECT_EQ(p->host_id, "node-a");
  EXPECT_EQ(p->status, "UP");
  EXPECT_EQ(p->state(), PortState::kReady);
  EXPECT_EQ(p->mac_address, "aa:bb:cc:00:00:01");
  EXPECT_TRUE(p->admin_state_up);
  ASSERT_EQ(p->fixed_ips.size(), 1u);
  EXPECT_EQ(p->fixed_ips[0].subnet_id, kDefaultSubnetId);
  EXPECT_EQ(p->fixed_ips[0].ip_address, "10.240.0.2");
}

TEST(PortFromJson, ReadsAlcorResponseWithVethNamespaceAndNulls) {
  // Later Alcor: veth_namespace, ACTIVE, nulls for unset fields, bare object (no envelope).
  json doc = json::parse(R"({
      "id": "p2",
      "project_id": "proj",
      "name": null,
      "description": null,
      "veth_namespace": "/var/run/netns/pod2",
      "binding:host_id": "node-b",
      "status": "ACTIVE",
      "admin_state_up": false,
      "fixed_ips": null
  })");
  auto p = PortFromJson(doc);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->id, "p2");
  EXPECT_EQ(p->name, "");
  EXPECT_EQ(p->network_ns, "/var/run/netns/pod2");
  EXPECT_EQ(p->host_id, "node-b");
  EXPECT_FALSE(p->admin_state_up);
  EXPECT_EQ(p->state(), PortState::kReady);
  EXPECT_TRUE(p->fixed_ips.empty());
}

TEST(PortFromJson, MissingOptionalFieldsAreFine) {
  auto p = PortFromJson(json{{"port", {{"id", "p3"}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->id, "p3");
  EXPECT_EQ(p->status, "");
  EXPECT_EQ(p->state(), PortState::kPending);
  EXPECT_TRUE(p->admin_state_up);
  EXPECT_TRUE(p->fixed_ips.empty());
}

void ExpectInternal(const json& doc, const std::string& needle) {
  auto p = PortFromJson(doc);
  ASSERT_FALSE(p.ok()) << "accepted " << doc.dump();
  EXPECT_EQ(p.status().code(), Code::kInternal) << p.status().ToString();
  EXPECT_NE(p.status().message().find(needle), std::string::npos)
      << "message \"" << p.status().message() << "\" should mention \"" << needle << "\"";
}

TEST(PortFromJson, BadShapesNameTheField) {
  ExpectInternal(json{{"port", {{"name", "x"}}}}, "port.id is missing");
  ExpectInternal(json{{"port", {{"id", 42}}}}, "port.id is not a string");
  ExpectInternal(json{{"port", {{"id", ""}}}}, "port.id is empty");
  ExpectInternal(json{{"port", {{"id", "p"}, {"status", 1}}}}, "port.status is not a string");
  ExpectInternal(json{{"port", {{"id", "p"}, {"admin_state_up", "yes"}}}},
                 "port.admin_state_up is not a boolean");
  ExpectInternal(json{{"port", {{"id", "p"}, {"binding:host_id", json::array()}}}},
                 "port.binding:host_id is not a string");
  ExpectInternal(json{{"port", {{"id", "p"}, {"veth_namespace", 7}}}},
                 "port.veth_namespace is not a string");
  ExpectInternal(json{{"port", {{"id", "p"}, {"fixed_ips", "10.0.0.1"}}}},
                 "port.fixed_ips is not an array");
  ExpectInternal(json{{"port", {{"id", "p"}, {"fixed_ips", {"10.0.0.1"}}}}},
                 "port.fixed_ips[0] is not an object");
  ExpectInternal(json::parse(R"({"port":{"id":"p","fixed_ips":[{"ip_address":"10.0.0.1"},
                                                    {"ip_address":10}]}})"),
                 "port.fixed_ips[1].ip_address is not a string");
  ExpectInternal(json{{"port", "p1"}}, "port is not an object");
  ExpectInternal(json::array(), "port is not an object");
  ExpectInternal(json::parse(R"({"port":null})"), "port is null");
}

// ParsePortList reads a list without a tree; each entry must read as PortFromJson reads it.
Port ReadOne(const char* entry) {
  auto port = PortFromJson(json::parse(entry));
  EXPECT_TRUE(port.ok()) << entry << ": " << port.status().ToString();
  return port.ok() ? *port : Port();
}

TEST(ParsePortList, ReadsEachEntryAsPortFromJsonDoes) {
  const char* bare = R"({"id":"a","status":"UP","binding:host_id":"node-1","admin_state_up":false,
      "extra":{"nested":[1,{"id":"not-this"}]},"fixed_ips":[{"subnet_id":"s","ip_address":"10.0.0.2",
      "more":[]}],"veth_namespace":"/ns/a","network_ns":null,"mac_address":"aa:bb:cc:dd:ee:ff"})";
  const char* envelope = R"({"port":{"id":"b","network_ns":"/ns/b","veth_namespace":"/old",
      "port":{"id":"inner"},"fixed_ips":null}})";
  auto read = ParsePortList(std::string(R"({"before":[{"id":"x"}],"ports":[)") + bare + "," +
                            envelope + R"(],"after":{"ports":[]}})");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->type, JsonType::kObject);
  EXPECT_EQ(read->ports_type, JsonType::kArray);
  EXPECT_TRUE(read->list.unreadable.empty()) << read->list.unreadable[0];
  ASSERT_EQ(read->list.ports.size(), 2u);
  EXPECT_EQ(read->list.ports[0], ReadOne(bare));
  EXPECT_EQ(read->list.ports[0].fixed_ips, (std::vector<FixedIp>{{"s", "10.0.0.2"}}));
  EXPECT_FALSE(read->list.ports[0].admin_state_up);
  EXPECT_EQ(read->list.ports[1], ReadOne(envelope));
  EXPECT_EQ(read->list.ports[1].network_ns, "/ns/b");
}

TEST(ParsePortList, NamesEachUnreadableEntryAndReadsTheRest) {
  auto read = ParsePortList(R"([{"id":"a"}, 5, {"port":null}, ["id"],
      {"id":"b","fixed_ips":[{"ip_address":1}]}, {"port":{"id":"c"},"id":7}, {"id":"d"}])");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->type, JsonType::kArray);
  EXPECT_EQ(read->ports_type, JsonType::kAbsent);
  ASSERT_EQ(read->list.ports.size(), 2u);
  EXPECT_EQ(read->list.ports[0].id, "a");
  EXPECT_EQ(read->list.ports[1].id, "d");
  EXPECT_EQ(read->list.unreadable,
            (std::vector<std::string>{
                "ports[1]: port is not an object (got number)",
                "ports[2]: port is null",
                "ports[3]: port is not an object (got array)",
                "ports[4]: port.fixed_ips[0].ip_address is not a string (got number)",
                "ports[5]: port.id is not a string (got number)",
            }));
}

TEST(ParsePortList, TheLastOfARepeatedMemberCounts) {
  auto read = ParsePortList(R"({"ports":[{"id":"gone"}],
      "ports":[{"id":"a","status":"DOWN","status":"UP","fixed_ips":[{"ip_address":"10.0.0.1"}],
                "fixed_ips":[],"port":{"id":"unread"}}]})");
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->list.ports.size(), 1u);
  EXPECT_EQ(read->list.ports[0].id, "a");
  EXPECT_EQ(read->list.ports[0].status, "UP");
  EXPECT_TRUE(read->list.ports[0].fixed_ips.empty());

  auto replaced = ParsePortList(R"({"ports":[{"id":"a"}],"ports":null})");
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->ports_type, JsonType::kNull);
  EXPECT_EQ(replaced->list, PortList());
}

// simdjson refuses integers beyond 64 bits, which JSON allows: such a body is read by nlohmann's
// parser instead, so a counter in a member the plugin does not read costs nothing.
TEST(ParsePortList, ReadsNumbersBeyond64Bits) {
  auto read =
      ParsePortList(R"({"ports":[{"id":"a","rx_bytes":340282366920938463463374607431768211456},
      {"id":"b","status":18446744073709551616}]})");
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->list.ports.size(), 1u);
  EXPECT_EQ(read->list.ports[0].id, "a");
  EXPECT_EQ(read->list.unreadable,
            std::vector<std::string>{"ports[1]: port.status is not a string (got number)"});
}

TEST(ParsePortList, ReportsTheShapeAndRefusesWhatIsNotJson) {
  auto no_ports = ParsePortList(R"({"items":[{"id":"a"}]})");
  ASSERT_TRUE(no_ports.has_value());
  EXPECT_EQ(no_ports->type, JsonType::kObject);
  EXPECT_EQ(no_ports->ports_type, JsonType::kAbsent);
  EXPECT_TRUE(no_ports->list.ports.empty());

  auto text = ParsePortList(R"("ports")");
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->type, JsonType::kString);

  for (const char* broken : {"", "[", R"({"ports":[{"id":"a"}]} x)", R"({"ports":[{"id":"a"},]})",
                             "[1e999]", "[\"\xff\"]"}) {
    EXPECT_FALSE(ParsePortList(broken).has_value()) << broken;
  }
}

TEST(PortState, MapsBothGenerations) {
  struct Case {
    const char* status;
    PortState want;
  } cases[] = {
      {"UP", PortState::kReady},        {"ACTIVE", PortState::kReady},
      {"up", PortState::kReady},        {"Active", PortState::kReady},
      {"failed", PortState::kFailed},   {"ERROR", PortState::kFailed},
      {"FAILED", PortState::kFailed},   {"error", PortState::kFailed},
      {"PENDING", PortState::kPending}, {"created", PortState::kPending},
      {"pending", PortState::kPending}, {"DOWN", PortState::kPending},
      {"", PortState::kPending},        {"BUILD", PortState::kPending},
  };
  for (const Case& c : cases) {
    Port p;
    p.status = c.status;
    EXPECT_EQ(p.state(), c.want) << "status \"" << c.status << "\"";
  }
}

TEST(PortToJson, RoundTrips) {
  Port p;
  p.id = "p9";
  p.project_id = "proj";
  p.name = "k8s_p9";
  p.description = "d";
  p.network_id = "net";
  p.status = "UP";
  p.mac_address = "aa:bb:cc:dd:ee:ff";
  p.host_id = "node-z";
  p.veth_name = "eth1";
  p.network_ns = "/proc/1/ns/net";
  p.admin_state_up = false;
  p.fixed_ips = {{"s4", "10.0.0.9"}, {"s6", "fd00::9"}};
  json j = PortToJson(p);
  EXPECT_EQ(j["binding:host_id"], "node-z");
  EXPECT_EQ(j["network_ns"], "/proc/1/ns/net");
  EXPECT_EQ(j["veth_namespace"], "/proc/1/ns/net");
  auto back = PortFromJson(json{{"port", j}});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, p.id);
  EXPECT_EQ(back->project_id, p.project_id);
  EXPECT_EQ(back->name, p.name);
  EXPECT_EQ(back->description, p.description);
  EXPECT_EQ(back->network_id, p.network_id);
  EXPECT_EQ(back->status, p.status);
  EXPECT_EQ(back->mac_address, p.mac_address);
  EXPECT_EQ(back->host_id, p.host_id);
  EXPECT_EQ(back->veth_name, p.veth_name);
  EXPECT_EQ(back->network_ns, p.network_ns);
  EXPECT_EQ(back->admin_state_up, p.admin_state_up);
  ASSERT_EQ(back->fixed_ips.size(), 2u);
  EXPECT_EQ(back->fixed_ips[1].subnet_id, "s6");
  EXPECT_EQ(back->fixed_ips[1].ip_address, "fd00::9");
}

TEST(SubnetFromJson, ReadsSeedResponseAndRoundTrips) {
  json doc = json::parse(R"({"subnet": {
      "project_id": "proj", "id": "sub1", "network_id": "vpc1",
      "cidr": "192.168.100.0/24", "gateway_ip": "192.168.100.1", "ip_version": 4}})");
  auto s = SubnetFromJson(doc);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->id, "sub1");
  EXPECT_EQ(s->project_id, "proj");
  EXPECT_EQ(s->network_id, "vpc1");
  EXPECT_EQ(s->cidr, "192.168.100.0/24");
  EXPECT_EQ(s->gateway_ip, "192.168.100.1");
  EXPECT_EQ(s->ip_version, 4);

  auto back = SubnetFromJson(SubnetToJson(*s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cidr, s->cidr);
  EXPECT_EQ(back->gateway_ip, s->gateway_ip);
  EXPECT_EQ(back->ip_version, 4);
}

TEST(NodesFromJson, ReadsAlcorsNodeListAndNamesAMalformedField) {
  auto nodes = NodesFromJson(json::parse(R"({"nodeInfos":[
      {"node_id":"1f0c","node_name":"worker-1","local_ip":"10.0.0.5","server_port":50001},
      {"node_id":"","node_name":""}]})"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(*nodes, (std::vector<Node>{{"1f0c", "worker-1"}}));  // a nameless entry names none
  auto none = NodesFromJson(json::parse(R"({"nodeInfos":null})"));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  auto bad = NodesFromJson(json::parse(R"({"nodeInfos":[{"node_id":7}]})"));
  EXPECT_EQ(bad.status().code(), Code::kInternal);
  EXPECT_NE(bad.status().message().find("nodeInfos[0].node_id"), std::string::npos)
      << bad.status().ToString();
}

TEST(SubnetFromJson, OptionalGatewayAndV6) {
  auto s = SubnetFromJson(json::parse(R"({"subnet":{"id":"s6","cidr":"fd00::/64",
                                           "gateway_ip":null}})"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gateway_ip, "");
  EXPECT_EQ(s->ip_version, 6);
}

TEST(SubnetFromJson, BadShapesNameTheField) {
  auto check = [](const char* text, const std::string& needle) {
    auto s = SubnetFromJson(json::parse(text));
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().code(), Code::kInternal);
    EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status().message();
  };
  check(R"({"subnet":{"cidr":"10.0.0.0/8"}})", "subnet.id is missing");
  check(R"({"subnet":{"id":"s"}})", "subnet.cidr is missing");
  check(R"({"subnet":{"id":"s","cidr":10}})", "subnet.cidr is not a string");
  check(R"({"subnet":{"id":"s","cidr":"10.0.0.0/8","gateway_ip":false}})",
        "subnet.gateway_ip is not a string");
  check(R"({"subnet":{"id":"s","cidr":"10.0.0.0/8","ip_version":"4"}})",
        "subnet.ip_version is not an integer");
  check(R"({"subnet":{"id":"s","cidr":"10.0.0.0/8","ip_version":5}})", "subnet.ip_version is 5");
  check(R"({"subnet":null})", "subnet is null");
}

}  // namespace
}  // namespace mizarmp::client
