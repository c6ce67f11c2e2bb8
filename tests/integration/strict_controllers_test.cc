// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The real controller generations as the strict mock plays them (mock-server/strict.h), and the
// client against them.
//
// The contract tests send requests and read answers whose bodies are written from the upstream
// code (futurewei-cloud/alcor@5ca01ef0 for v0.1, @21f11b5c for Alcor; each test names its file),
// so that the mock cannot drift from it unnoticed. The client tests then hold the client to
// what a user of those controllers needs: an update that changes one member and no other, a
// POST whose answer was lost that leaves one port and one address, a fence that never touches
// another project's port or a port the network owns. The agent is off: no root needed.
#include <grpcpp/server_context.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/fileutil.h"
#include "common/strings.h"
#include "fence/plan.h"
#include "fence/service/fence_service.h"
#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "tests/support/pki.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

const std::string kProject = client::kDefaultProjectId;
const std::string kVpc = client::kDefaultVpcId;
const std::string kSubnet = client::kDefaultSubnetId;
const std::string kPorts = "/project/" + kProject + "/ports";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class StrictControllerTest : public ::testing::TestWithParam<mock::Dialect> {
 protected:
  bool alcor() const { return GetParam() == mock::Dialect::kAlcor; }

  void Start(const std::string& token = "", int row_limit = 100000) {
    mock::Options o;
    o.dialect = GetParam();
    o.strict = true;
    o.agent = false;
    o.row_limit = row_limit;
    if (!token.empty()) {
      token_file_ = dir_.path() + "/token";
      ASSERT_TRUE(WriteFileAtomic(token_file_, token + "\n", 0600).ok());
      o.token_file = token_file_;
    }
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
    http_ = std::make_unique<httplib::Client>("127.0.0.1", mock_->port());
    if (!token.empty()) http_->set_default_headers({{"X-Auth-Token", token}});
  }

  // The network_id a create of this generation carries: the subnet in v0.1, the VPC in Alcor.
  std::string NetworkId() const { return alcor() ? kVpc : kSubnet; }

  json PortBody(const std::string& id, const std::string& project = kProject) const {
    return json{{"port",
                 {{"id", id},
                  {"project_id", project},
                  {"name", "k8s_" + id},
                  {"network_id", NetworkId()},
                  {"fixed_ips", json::array({json{{"subnet_id", kSubnet}}})},
                  {"binding:host_id", "node-a"},
                  {"veth_name", "eth0"},
                  {"network_ns", "/var/run/netns/x"}}}};
  }

  httplib::Result Post(const std::string& path, const json& body) {
    return http_->Post(path, body.dump(), "application/json");
  }
  httplib::Result Put(const std::string& path, const json& body) {
    return http_->Put(path, body.dump(), "application/json");
  }
  static json Body(const httplib::Result& r) { return json::parse(r->body, nullptr, false); }

  client::ClientConfig Config() const {
    client::ClientConfig c;
    c.base_url = mock_->base_url();
    c.project_id = kProject;
    c.subnet_id = kSubnet;
    c.token_file = token_file_;
    c.request_timeout = milliseconds(3000);
    c.retry_backoff = milliseconds(5);
    return c;
  }
  std::unique_ptr<client::Client> MakeClient(client::ClientConfig c) {
    auto made = client::Client::Create(std::move(c));
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? std::move(made).value() : nullptr;
  }
  client::PortSpec Spec(const std::string& id) const {
    client::PortSpec s = testing::PortSpecFor(id);
    s.network_id = NetworkId();
    s.fixed_ips = {client::FixedIp{kSubnet, ""}};
    return s;
  }
  // The port's document as the controller answers a GET of it.
  json Document(const std::string& id) {
    auto r = http_->Get(kPorts + "/" + id);
    EXPECT_TRUE(r && r->status == 200);
    return r ? Body(r)["port"] : json();
  }
  json State() {
    auto r = http_->Get("/mock/state");
    return r ? Body(r) : json();
  }

  testing::TempDir dir_;
  std::string token_file_;
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<httplib::Client> http_;
};

INSTANTIATE_TEST_SUITE_P(Generations, StrictControllerTest,
                         ::testing::Values(mock::Dialect::kV01, mock::Dialect::kAlcor),
                         [](const auto& param_info) {
                           return std::string(param_info.param == mock::Dialect::kV01 ? "V01"
                                                                                      : "Alcor");
                         });

// What only Alcor has (its row limit, its gateway's token, its VPC lookup).
class StrictAlcorTest : public StrictControllerTest {};
INSTANTIATE_TEST_SUITE_P(Generations, StrictAlcorTest, ::testing::Values(mock::Dialect::kAlcor),
                         [](const auto&) { return std::string("Alcor"); });

// --- contracts: what the real controllers answer ------------------------------------------------

// v0.1 RestPreconditions: id and network_id are required, and their absence is an exception
// Spring renders as 500. Alcor PortController: NetworkIdRequired, 412.
TEST_P(StrictControllerTest, CreateWithoutNetworkIdIsRefusedWithASpringErrorBody) {
  ASSERT_NO_FATAL_FAILURE(Start());
  json body = PortBody("p1");
  body["port"].erase("network_id");
  auto r = Post(kPorts, body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, alcor() ? 412 : 500);
  const json error = Body(r);
  for (const char* key : {"timestamp", "status", "error", "message", "path"}) {
    EXPECT_TRUE(error.contains(key)) << key << " missing from " << r->body;
  }
  EXPECT_EQ(error["path"], kPorts);
  EXPECT_TRUE(Contains(error["message"].get<std::string>(),
                       alcor() ? "Network id is required" : "ResourceNotFoundException"))
      << r->body;
}

// v0.1 ControllerUtil.CreatePort: status UP at once, the MAC written without zero padding; a
// POST of the same id writes over the port with a new address (no 409). Alcor: the answer has
// no status yet, and the same overwrite (PortRepositoryV2), its old address not given back.
TEST_P(StrictControllerTest, CreateAnswersAtOnceAndASecondPostOverwrites) {
  ASSERT_NO_FATAL_FAILURE(Start());
  auto first = Post(kPorts, PortBody("p1"));
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 201) << first->body;
  const json port = Body(first)["port"];
  if (alcor()) {
    EXPECT_FALSE(port.contains("status")) << first->body;
    EXPECT_EQ(port["network_id"], kVpc);
    EXPECT_EQ(port["port_security_enabled"], true);
  } else {
    EXPECT_EQ(port["status"], "UP");
    EXPECT_TRUE(port.contains("tenant_id") && port["tenant_id"].is_null()) << first->body;
    // Six groups of hex digits, none with a leading zero (Integer.toHexString).
    const std::string mac = port["mac_address"].get<std::string>();
    const std::vector<std::string> groups = Split(mac, ':');
    EXPECT_EQ(groups.size(), 6u) << mac;
    for (const std::string& g : groups) EXPECT_TRUE(g == "0" || g[0] != '0') << mac;
    EXPECT_EQ(port["fixed_ips"][0]["subnet_id"], kSubnet);
  }
  auto second = Post(kPorts, PortBody("p1"));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 201) << second->body;
  EXPECT_NE(Body(second)["port"]["fixed_ips"][0]["ip_address"], port["fixed_ips"][0]["ip_address"]);
  EXPECT_EQ(State()["ports"], 1);
  EXPECT_EQ(State()["leaked_addresses"], alcor() ? 1 : 0);
}

// v0.1 maps /ports for POST only: its one list is a subnet's, an object keyed by port id.
// Alcor lists every project's ports whatever the URL's project (PortServiceImpl.listPort).
TEST_P(StrictControllerTest, PortListsAsEachGenerationHasThem) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Post(kPorts, PortBody("mine"))->status, 201);
  ASSERT_EQ(Post("/project/other-project/ports", PortBody("theirs", "other-project"))->status,
            alcor() ? 201 : 201);
  auto list = http_->Get(kPorts);
  ASSERT_TRUE(list);
  if (!alcor()) {
    EXPECT_EQ(list->status, 405);
    auto of_subnet = http_->Get("/project/" + kProject + "/subnet/" + kSubnet + "/ports");
    ASSERT_TRUE(of_subnet);
    const json ports = Body(of_subnet);
    ASSERT_TRUE(ports.is_object()) << of_subnet->body;
    EXPECT_TRUE(ports.contains("mine"));
    // The body's project_id names the project: another project's port is not this one's.
    EXPECT_EQ(ports.size(), 1u) << of_subnet->body;
    return;
  }
  ASSERT_EQ(list->status, 200);
  const json ports = Body(list)["ports"];
  ASSERT_EQ(ports.size(), 2u) << list->body;
  EXPECT_EQ(ports[1]["project_id"], "other-project");
  // JacksonJsonFilter: a null member reads "" (scalar), [] (list) or {} (object).
  EXPECT_EQ(ports[0]["device_owner"], "");
  EXPECT_EQ(ports[0]["tags"], json::array());
  EXPECT_EQ(ports[0]["binding:profile"], json::object());
  // A list or object member is no filter (QueryParamTypeNotSupportException).
  EXPECT_EQ(http_->Get(kPorts + "?fixed_ips=x")->status, 500);
  auto selected = http_->Get(kPorts + "?binding:host_id=node-a&fields=id&fields=status");
  ASSERT_TRUE(selected);
  EXPECT_EQ(Body(selected)["ports"][0].size(), 2u) << selected->body;
}

// IgniteClientDbCache.getAll: RESULT_THRESHOLD_SIZE rows or more is a 500.
TEST_P(StrictAlcorTest, AlcorRefusesAListAtItsRowLimit) {
  ASSERT_NO_FATAL_FAILURE(Start("", /*row_limit=*/2));
  ASSERT_EQ(Post(kPorts, PortBody("a"))->status, 201);
  EXPECT_EQ(http_->Get(kPorts)->status, 200);
  ASSERT_EQ(Post(kPorts, PortBody("b"))->status, 201);
  auto refused = http_->Get(kPorts);
  EXPECT_EQ(refused->status, 500);
  EXPECT_TRUE(Contains(refused->body, "too many rows found")) << refused->body;
  EXPECT_EQ(http_->Get(kPorts + "?id=a")->status, 200);  // a filtered list is under it
}

// Alcor's node manager lists every node a port may name (NodeController.getAllNodes); v0.1 has
// no node manager, which the client reports as UNIMPLEMENTED.
TEST_P(StrictControllerTest, NodeListsAsEachGenerationHasThem) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Post(kPorts, PortBody("on-a"))->status, 201);
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  auto nodes = mp->ListNodes();
  if (!alcor()) {
    EXPECT_EQ(nodes.status().code(), Code::kUnimplemented) << nodes.status().ToString();
    return;
  }
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ(*nodes, (std::vector<client::Node>{{"node-a", "node-a"}}));
}

// v0.1: an unknown port is 200 {"port":null}; DELETE answers {"id": ...}, null when unknown.
// Alcor: 404 "Port not found" for both, and DELETE answers nothing.
TEST_P(StrictControllerTest, UnknownPortsAndDeletes) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Post(kPorts, PortBody("p1"))->status, 201);
  auto unknown = http_->Get(kPorts + "/nope");
  auto deleted = http_->Delete(kPorts + "/p1");
  auto again = http_->Delete(kPorts + "/p1");
  ASSERT_TRUE(unknown && deleted && again);
  if (alcor()) {
    EXPECT_EQ(unknown->status, 404);
    EXPECT_EQ(Body(unknown)["message"], "Port not found");
    EXPECT_EQ(deleted->status, 200);
    EXPECT_TRUE(deleted->body.empty()) << deleted->body;
    EXPECT_EQ(again->status, 404);
  } else {
    EXPECT_EQ(unknown->status, 200);
    EXPECT_EQ(Body(unknown), json({{"port", nullptr}}));
    EXPECT_EQ(Body(deleted), json({{"id", "p1"}}));
    EXPECT_EQ(Body(again), json({{"id", nullptr}}));
  }
}

// v0.1 PortController.updatePortState writes the body as the whole record: a partial update
// loses every member it leaves out. Alcor merges, but a body without port_security_enabled turns
// it on (PortEntity's initializer); an explicit null keeps it.
TEST_P(StrictControllerTest, WhatAPartialUpdateDoes) {
  ASSERT_NO_FATAL_FAILURE(Start());
  json body = PortBody("p1");
  body["port"]["port_security_enabled"] = false;
  ASSERT_EQ(Post(kPorts, body)->status, 201);
  const json before = Document("p1");
  auto partial =
      Put(kPorts + "/p1",
          json{{"port", {{"id", "p1"}, {"network_id", NetworkId()}, {"admin_state_up", false}}}});
  ASSERT_TRUE(partial);
  ASSERT_EQ(partial->status, 200) << partial->body;
  const json after = Document("p1");
  if (!alcor()) {
    EXPECT_TRUE(after["mac_address"].is_null()) << after.dump();
    EXPECT_TRUE(after["fixed_ips"].is_null()) << after.dump();
    auto no_id = Put(kPorts + "/p1", json{{"port", {{"admin_state_up", true}}}});
    EXPECT_EQ(no_id->status, 500);
    return;
  }
  EXPECT_EQ(after["mac_address"], before["mac_address"]);
  EXPECT_EQ(after["port_security_enabled"], true);
  ASSERT_EQ(Put(kPorts + "/p1", json{{"port", {{"port_security_enabled", false}}}})->status, 200);
  ASSERT_EQ(Put(kPorts + "/p1",
                json{{"port", {{"admin_state_up", true}, {"port_security_enabled", nullptr}}}})
                ->status,
            200);
  EXPECT_EQ(Document("p1")["port_security_enabled"], false);
}

// Alcor's API gateway with Keystone: X-Auth-Token, 401 without a body otherwise.
TEST_P(StrictAlcorTest, AlcorWantsXAuthToken) {
  ASSERT_NO_FATAL_FAILURE(Start("s3cret"));
  EXPECT_EQ(Post(kPorts, PortBody("p1"))->status, 201);
  httplib::Client bearer("127.0.0.1", mock_->port());
  bearer.set_default_headers({{"Authorization", "Bearer s3cret"}});
  auto refused = bearer.Get(kPorts + "/p1");
  EXPECT_EQ(refused->status, 401);
  EXPECT_TRUE(refused->body.empty());
}

// --- the client against them --------------------------------------------------------------------

// Create, read, list, disable and enable, delete: after the update and its undoing, every member
// but admin_state_up reads exactly as it did.
TEST_P(StrictControllerTest, ClientUpdatesChangeOnlyWhatTheyName) {
  ASSERT_NO_FATAL_FAILURE(Start());
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  auto created = mp->CreatePort(Spec("p1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  // The MAC reads padded whatever the controller wrote (runtimes parse it strictly).
  EXPECT_EQ(created->mac_address.size(), 17u) << created->mac_address;
  ASSERT_TRUE(mp->CreatePort(Spec("p2")).ok());
  const json before = Document("p1");

  auto down = mp->UpdatePort("p1", {{"admin_state_up", false}});
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_FALSE(down->admin_state_up);
  json disabled = Document("p1");
  EXPECT_EQ(disabled["admin_state_up"], false);
  disabled["admin_state_up"] = before["admin_state_up"];
  EXPECT_EQ(disabled, before);

  ASSERT_TRUE(mp->UpdatePort("p1", {{"admin_state_up", true}}).ok());
  EXPECT_EQ(Document("p1"), before);
  EXPECT_EQ(mp->generation_found(), alcor() ? client::Dialect::kAlcor : client::Dialect::kV01);

  auto listed = mp->ListPorts({{"binding:host_id", "node-a"}}, fence::kFencePortFields);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->ports.size(), 2u);
  EXPECT_TRUE(listed->unreadable.empty());

  EXPECT_TRUE(mp->DeletePort("p1").ok());
  EXPECT_TRUE(mp->DeletePort("p1").ok());  // gone already is success
  EXPECT_TRUE(mp->GetPort("p1").status().IsNotFound());
}

// A POST whose answer is lost after the controller stored the port: looked up, not sent again,
// so one port and one address (a blind retry would overwrite it with a second address).
TEST_P(StrictControllerTest, LostCreateAnswerLeavesOnePortAndOneAddress) {
  ASSERT_NO_FATAL_FAILURE(Start());
  mock::Faults lose;
  lose.lose_create_answers = 1;
  mock_->SetFaults(lose);
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  auto created = mp->CreatePort(Spec("p1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const json state = State();
  EXPECT_EQ(state["ports"], 1);
  EXPECT_EQ(state["allocated"].size(), 1u) << state.dump();
  EXPECT_EQ(state["leaked_addresses"], 0);
  EXPECT_EQ(created->fixed_ips[0].ip_address, Document("p1")["fixed_ips"][0]["ip_address"]);
}

// A configuration error (network_id that is not a VPC) reaches the caller as what the
// controller said, at once: no retries.
TEST_P(StrictAlcorTest, ConfigurationErrorsAreReportedNotRetried) {
  ASSERT_NO_FATAL_FAILURE(Start());
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  client::PortSpec spec = Spec("p1");
  spec.network_id = kSubnet;
  auto created = mp->CreatePort(spec);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), Code::kFailedPrecondition) << created.status().ToString();
  EXPECT_TRUE(Contains(created.status().message(), "HTTP 500: Get VpcEntity exception"))
      << created.status().message();
  EXPECT_EQ(mp->requests_sent(), 1u);
}

// Alcor's list holds every project's ports and the network's own: the client keeps its
// project's, and a fence of the whole subnet plans to disable only the workload.
TEST_P(StrictControllerTest, FencesTouchNeitherOtherProjectsNorTheNetworksPorts) {
  ASSERT_NO_FATAL_FAILURE(Start());
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  ASSERT_TRUE(mp->CreatePort(Spec("workload")).ok());
  json router = PortBody("router");
  router["port"]["device_owner"] = "network:router_interface";
  ASSERT_EQ(Post(kPorts, router)->status, 201);
  ASSERT_EQ(Post("/project/other-project/ports", PortBody("theirs", "other-project"))->status, 201);

  auto listed = mp->ListPorts({}, fence::kFencePortFields);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> ids;
  for (const auto& p : listed->ports) ids.push_back(p.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"router", "workload"}));

  fence::StoreSnapshot snapshot;
  fence::FenceEntry everything;
  everything.cidr = *Cidr::Parse("10.240.0.0/16");
  snapshot.fences.push_back(everything);
  const fence::EnforcementPlan plan = fence::PlanEnforcement(snapshot, *listed);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].port_id, "workload");
}

// With a token: X-Auth-Token to Alcor, and a wrong one is a clear error.
TEST_P(StrictAlcorTest, TokensAsTheGenerationWantsThem) {
  ASSERT_NO_FATAL_FAILURE(Start("s3cret"));
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  EXPECT_TRUE(mp->CreatePort(Spec("p1")).ok());
  ASSERT_TRUE(WriteFileAtomic(token_file_, "wrong\n", 0600).ok());
  auto refused = mp->GetPort("p1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnauthenticated) << refused.status().ToString();
  EXPECT_TRUE(Contains(refused.status().message(), "HTTP 401")) << refused.status().message();
}

// --- the FenceController against them ----------------------------------------------------------

// Fence and unfence through the FenceController: only the workload inside goes down (not the
// router port nor another project's port in the same range), and after the unfence every port
// reads exactly as before; GetFenceClients names the workload's node and address.
TEST_P(StrictControllerTest, FenceAndUnfenceChangeOnlyTheProjectsWorkloads) {
  ASSERT_NO_FATAL_FAILURE(Start());
  auto mp = MakeClient(Config());
  ASSERT_NE(mp, nullptr);
  auto workload = mp->CreatePort(Spec("workload"));
  ASSERT_TRUE(workload.ok()) << workload.status().ToString();
  ASSERT_TRUE(mp->CreatePort(Spec("outside")).ok());
  json router = PortBody("router");
  router["port"]["device_owner"] = "network:router_interface";
  ASSERT_EQ(Post(kPorts, router)->status, 201);
  ASSERT_EQ(Post("/project/other-project/ports", PortBody("theirs", "other-project"))->status, 201);
  const std::map<std::string, json> before = {{"workload", Document("workload")},
                                              {"outside", Document("outside")},
                                              {"router", Document("router")},
                                              {"theirs", Document("theirs")}};
  std::vector<std::string> cidrs;
  for (const char* id : {"workload", "router", "theirs"}) {
    cidrs.push_back(before.at(id)["fixed_ips"][0]["ip_address"].get<std::string>() + "/32");
  }

  fence::FenceOptions o;
  o.mizarmp = Config();
  o.state_dir = dir_.path() + "/cni";
  o.fence_store = dir_.path() + "/fence.db";
  o.use_port_list = true;
  o.reconcile_interval = std::chrono::hours(1);
  fence::FenceService service(o);
  ASSERT_TRUE(service.StartAndWait().ok());

  ::fence::FenceClusterNetworkRequest fence;
  for (const auto& c : cidrs) fence.add_cidrs()->set_cidr(c);
  ::fence::FenceClusterNetworkResponse fenced;
  grpc::ServerContext fence_context;
  grpc::Status s = service.FenceClusterNetwork(&fence_context, &fence, &fenced);
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (const auto& [id, document] : before) {
    json now = Document(id);
    if (id == "workload") {
      EXPECT_EQ(now["admin_state_up"], false);
      now["admin_state_up"] = document["admin_state_up"];
    }
    EXPECT_EQ(now, document) << id;
  }

  ::fence::GetFenceClientsRequest ask;
  ::fence::GetFenceClientsResponse clients;
  grpc::ServerContext ask_context;
  s = service.GetFenceClients(&ask_context, &ask, &clients);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(clients.clients_size(), 1) << clients.DebugString();
  EXPECT_EQ(clients.clients(0).id(), "node-a");
  // The two workloads' addresses (merged into the fewest CIDRs), not the router's nor theirs.
  const auto answered = [&clients, &before](const char* id) {
    const auto ip =
        IpAddress::Parse(before.at(id)["fixed_ips"][0]["ip_address"].get<std::string>());
    for (const auto& a : clients.clients(0).addresses()) {
      if (Cidr::Parse(a.cidr())->Contains(*ip)) return true;
    }
    return false;
  };
  EXPECT_TRUE(answered("workload") && answered("outside")) << clients.DebugString();
  EXPECT_FALSE(answered("router")) << clients.DebugString();

  ::fence::UnfenceClusterNetworkRequest unfence;
  for (const auto& c : cidrs) unfence.add_cidrs()->set_cidr(c);
  ::fence::UnfenceClusterNetworkResponse unfenced;
  grpc::ServerContext unfence_context;
  s = service.UnfenceClusterNetwork(&unfence_context, &unfence, &unfenced);
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (const auto& [id, document] : before) EXPECT_EQ(Document(id), document) << id;
  service.Stop();
}

}  // namespace
}  // namespace mizarmp
