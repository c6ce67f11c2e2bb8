// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-mock at the HTTP level: a raw cpp-httplib client (independent of our REST client)
// asserts exact status codes and bodies for both controller dialects, address allocation,
// readiness, every injectable fault, the bearer token, and the mizarmp-mock binary itself.
// The host agent is off here (see mock_agent_test.cc), so no root is needed.
#include "mock-server/mock.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/fileutil.h"
#include "common/ipaddr.h"
#include "common/uuid.h"
#include "mizarmp-client/client.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::mock {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

std::string Ports() { return std::string("/project/") + kProject + "/ports"; }
std::string PortPath(const std::string& id) { return Ports() + "/" + id; }

bool Contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

struct Http {
  int status = 0;  // 0: no HTTP response at all
  std::string body;
  std::string content_type;
  json j;             // discarded when the body is not JSON
  std::string error;  // transport error when status == 0

  std::string Describe() const {
    return status == 0 ? "no response: " + error : "HTTP " + std::to_string(status) + " " + body;
  }
};

// One request on a fresh connection, so a closed connection affects only this call.
Http Do(const std::string& base, const std::string& method, const std::string& path,
        const std::string& body = "", const httplib::Headers& headers = {}) {
  httplib::Client c(base);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(10, 0);
  c.set_keep_alive(false);
  auto send = [&]() -> httplib::Result {
    if (method == "POST") return c.Post(path, headers, body, "application/json");
    if (method == "PUT") return c.Put(path, headers, body, "application/json");
    if (method == "DELETE") return c.Delete(path, headers);
    return c.Get(path, headers);
  };
  httplib::Result r = send();
  Http out;
  if (!r) {
    out.error = httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  out.body = r->body;
  out.j = json::parse(r->body, nullptr, false);
  out.content_type = r->get_header_value("Content-Type");
  return out;
}

// The samples of a Prometheus text-format answer, "name{labels}" -> value.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

// -1 for a sample the answer does not have, which no counter or gauge of the mock is.
double Sample(const std::map<std::string, double>& samples, const std::string& key) {
  auto it = samples.find(key);
  return it == samples.end() ? -1 : it->second;
}

json PortDoc(const std::string& id, const std::string& host = "node-a",
             const std::string& netns = "/var/run/netns/nothing") {
  json p = {{"project_id", kProject}, {"name", "k8s_" + id}, {"admin_state_up", true},
            {"network_id", kSubnet},  {"veth_name", "eth0"}, {"network_ns", netns},
            {"binding:host_id", host}};
  if (!id.empty()) p["id"] = id;
  return p;
}

const char* Name(Dialect d) { return d == Dialect::kV01 ? "V01" : "Alcor"; }

class MockTest : public ::testing::TestWithParam<Dialect> {
 protected:
  Options Opts() const {
    Options o;
    o.dialect = GetParam();
    return o;
  }
  void Start(Options o) { ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &server_)); }
  void Start() { Start(Opts()); }

  Http Get(const std::string& path, const httplib::Headers& h = {}) {
    return Do(server_->base_url(), "GET", path, "", h);
  }
  Http Post(const std::string& path, const json& body, const httplib::Headers& h = {}) {
    return Do(server_->base_url(), "POST", path, body.dump(), h);
  }
  Http PostRaw(const std::string& path, const std::string& body) {
    return Do(server_->base_url(), "POST", path, body);
  }
  Http Put(const std::string& path, const json& body, const httplib::Headers& h = {}) {
    return Do(server_->base_url(), "PUT", path, body.dump(), h);
  }
  Http Del(const std::string& path) { return Do(server_->base_url(), "DELETE", path); }

  Http Create(const json& port) { return Post(Ports(), json{{"port", port}}); }
  void SetFaults(const json& f) {
    Http r = Post("/mock/faults", f);
    ASSERT_EQ(r.status, 200) << r.Describe();
  }

  bool alcor() const { return GetParam() == Dialect::kAlcor; }
  std::string Ready() const { return alcor() ? "ACTIVE" : "UP"; }
  std::string Pending() const { return alcor() ? "created" : "PENDING"; }
  std::string Failed() const { return alcor() ? "failed" : "ERROR"; }

  // Polls GET until the status is not pending; returns the last port document.
  json WaitSettled(const std::string& id) {
    json last;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      Http r = Get(PortPath(id));
      if (r.status != 200) return json{{"http", r.status}};
      last = r.j["port"];
      if (last.is_null() || last["status"] != Pending()) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return last;
  }

  std::unique_ptr<MockServer> server_;
};

INSTANTIATE_TEST_SUITE_P(Dialects, MockTest, ::testing::Values(Dialect::kV01, Dialect::kAlcor),
                         [](const auto& param_info) {
                           return std::string(Name(param_info.param));
                         });

TEST_P(MockTest, CreateGetListUpdateDelete) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Http c = Create(PortDoc("p-1", "node-a"));
  ASSERT_EQ(c.status, 201) << c.Describe();
  const json& p = c.j["port"];
  EXPECT_EQ(p["id"], "p-1");
  EXPECT_EQ(p["project_id"], kProject);
  EXPECT_EQ(p["status"], Pending());
  EXPECT_EQ(p["binding:host_id"], "node-a");
  EXPECT_EQ(p["name"], "k8s_p-1");
  EXPECT_EQ(p["veth_name"], "eth0");
  ASSERT_TRUE(p["mac_address"].is_string());
  EXPECT_EQ(p["mac_address"].get<std::string>().rfind("fa:16:3e:", 0), 0u) << p.dump();
  ASSERT_EQ(p["fixed_ips"].size(), 1u) << p.dump();
  EXPECT_EQ(p["fixed_ips"][0]["subnet_id"], kSubnet);
  auto ip = IpAddress::Parse(p["fixed_ips"][0]["ip_address"].get<std::string>());
  ASSERT_TRUE(ip.ok());
  EXPECT_TRUE(Cidr::Parse("10.240.0.0/16")->Contains(*ip)) << ip->ToString();
  EXPECT_NE(ip->ToString(), "10.240.0.1");

  // Without id, network_id and veth_name; the namespace spelled the bulk way.
  json bare = {{"binding:host_id", "node-b"}, {"veth_namespace", "/var/run/netns/b"}};
  Http c2 = Create(bare);
  ASSERT_EQ(c2.status, 201) << c2.Describe();
  const std::string generated = c2.j["port"]["id"];
  EXPECT_TRUE(IsUuid(generated)) << generated;
  EXPECT_EQ(generated[14], '4') << "a version-4 UUID: " << generated;
  EXPECT_EQ(c2.j["port"]["network_id"], kSubnet);
  EXPECT_EQ(c2.j["port"]["veth_name"], "eth0");
  EXPECT_EQ(c2.j["port"]["network_ns"], "/var/run/netns/b");
  EXPECT_NE(c2.j["port"]["mac_address"], p["mac_address"]);

  json got = WaitSettled("p-1");
  EXPECT_EQ(got["status"], Ready()) << got.dump();
  EXPECT_EQ(got["fixed_ips"], p["fixed_ips"]);
  EXPECT_EQ(got["network_ns"], "/var/run/netns/nothing");

  Http all = Get(Ports());
  ASSERT_EQ(all.status, 200) << all.Describe();
  EXPECT_EQ(all.j["ports"].size(), 2u);
  Http on_a = Get(Ports() + "?binding:host_id=node-a");
  ASSERT_EQ(on_a.status, 200) << on_a.Describe();
  ASSERT_EQ(on_a.j["ports"].size(), 1u) << on_a.body;
  EXPECT_EQ(on_a.j["ports"][0]["id"], "p-1");
  Http nobody = Get(Ports() + "?binding:host_id=nobody");
  EXPECT_EQ(nobody.j["ports"].size(), 0u) << nobody.body;

  Http up = Put(PortPath("p-1"), json{{"port", {{"admin_state_up", false}}}});
  ASSERT_EQ(up.status, 200) << up.Describe();
  EXPECT_EQ(up.j["port"]["admin_state_up"], false);
  EXPECT_EQ(Get(PortPath("p-1")).j["port"]["admin_state_up"], false);
  // The list shows the port as it is now: ready (a change the mock made) and down (the PUT).
  Http listed = Get(Ports());
  ASSERT_EQ(listed.status, 200) << listed.Describe();
  ASSERT_EQ(listed.j["ports"].size(), 2u) << listed.body;
  EXPECT_EQ(listed.j["ports"][0]["id"], "p-1") << listed.body;
  EXPECT_EQ(listed.j["ports"][0]["status"], Ready()) << listed.body;
  EXPECT_EQ(listed.j["ports"][0]["admin_state_up"], false) << listed.body;
  Http bad_put = Put(PortPath("p-1"), json{{"port", {{"admin_state_up", "no"}}}});
  EXPECT_EQ(bad_put.status, 400) << bad_put.Describe();
  EXPECT_TRUE(Contains(bad_put.j.value("error", ""), "admin_state_up")) << bad_put.body;
  Http ro = Put(PortPath("p-1"), json{{"port", {{"mac_address", "fa:16:3e:00:00:01"}}}});
  EXPECT_EQ(ro.status, 400) << ro.Describe();
  EXPECT_EQ(Put(PortPath("nope"), json{{"port", {{"admin_state_up", false}}}}).status, 404);

  Http d = Del(PortPath("p-1"));
  EXPECT_EQ(d.status, 200) << d.Describe();
  Http gone = Get(PortPath("p-1"));
  Http gone_del = Del(PortPath("p-1"));
  if (alcor()) {
    EXPECT_EQ(gone.status, 404) << gone.Describe();
    EXPECT_TRUE(Contains(gone.j.value("error", ""), "p-1")) << gone.body;
    EXPECT_EQ(gone_del.status, 404) << gone_del.Describe();
  } else {
    EXPECT_EQ(gone.status, 200) << gone.Describe();
    EXPECT_TRUE(gone.j.contains("port") && gone.j["port"].is_null()) << gone.body;
    EXPECT_EQ(gone_del.status, 200) << gone_del.Describe();
  }
  EXPECT_EQ(server_->Ports().size(), 1u);
}

TEST_P(MockTest, BulkCreateOnBothUrls) {
  ASSERT_NO_FATAL_FAILURE(Start());
  Http a = Post(Ports(), json{{"ports", {PortDoc("b-1"), PortDoc("b-2", "node-b")}}});
  ASSERT_EQ(a.status, 201) << a.Describe();
  ASSERT_EQ(a.j["ports"].size(), 2u);
  EXPECT_EQ(a.j["ports"][0]["id"], "b-1");
  EXPECT_EQ(a.j["ports"][1]["id"], "b-2");
  EXPECT_NE(a.j["ports"][0]["fixed_ips"], a.j["ports"][1]["fixed_ips"]);

  Http b = Post(Ports() + "/bulk", json{{"ports", {PortDoc("b-3")}}});
  ASSERT_EQ(b.status, 201) << b.Describe();
  ASSERT_EQ(b.j["ports"].size(), 1u);
  EXPECT_EQ(b.j["ports"][0]["id"], "b-3");
  EXPECT_EQ(server_->Ports().size(), 3u);

  // A batch with one duplicate creates nothing.
  Http dup = Post(Ports() + "/bulk", json{{"ports", {PortDoc("b-4"), PortDoc("b-1")}}});
  EXPECT_EQ(dup.status, 409) << dup.Describe();
  EXPECT_TRUE(Contains(dup.j.value("error", ""), "b-1")) << dup.body;
  EXPECT_EQ(server_->Ports().size(), 3u);
  Http twice = Post(Ports(), json{{"ports", {PortDoc("b-5"), PortDoc("b-5")}}});
  EXPECT_EQ(twice.status, 409) << twice.Describe();
  EXPECT_EQ(server_->Ports().size(), 3u);

  Http not_array = Post(Ports() + "/bulk", json{{"port", PortDoc("b-6")}});
  EXPECT_EQ(not_array.status, 400) << not_array.Describe();
  EXPECT_TRUE(Contains(not_array.j.value("error", ""), "ports")) << not_array.body;
}

// Sends `request` on the connected socket `fd` and reads one whole answer (headers, then a body
// of Content-Length bytes); "" when the connection closed or failed first.
std::string ExchangeOn(int fd, const std::string& request) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return "";
  }
  std::string got;
  char buf[4096];
  for (;;) {
    const size_t end = got.find("\r\n\r\n");
    if (end != std::string::npos) {
      const size_t at = got.find("Content-Length: ");
      const size_t length = at == std::string::npos ? 0 : std::stoul(got.substr(at + 16));
      if (got.size() >= end + 4 + length) return got;
    }
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return "";
    got.append(buf, static_cast<size_t>(n));
  }
}

// A client updating many ports keeps its connections: the mock answers request after request on
// one connection (cpp-httplib's own default closes it after 5).
TEST_P(MockTest, KeepsAConnectionForManyRequests) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(server_->port()));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0) << std::strerror(errno);
  for (int i = 1; i <= 50; ++i) {
    const std::string answer = ExchangeOn(fd, "GET /healthz HTTP/1.1\r\nHost: mock\r\n\r\n");
    ASSERT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << "request " << i << ": " << answer;
    EXPECT_FALSE(Contains(answer, "Connection: close")) << "request " << i << ": " << answer;
  }
  ::close(fd);
}

TEST_P(MockTest, RequestErrors) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Create(PortDoc("e-1")).status, 201);
  Http dup = Create(PortDoc("e-1"));
  EXPECT_EQ(dup.status, 409) << dup.Describe();
  EXPECT_TRUE(Contains(dup.j.value("error", ""), "e-1 already exists")) << dup.body;

  Http bad = PostRaw(Ports(), "{\"port\": {\"id\": \"x\",");
  EXPECT_EQ(bad.status, 400) << bad.Describe();
  EXPECT_TRUE(Contains(bad.j.value("error", ""), "not valid JSON")) << bad.body;
  Http empty = PostRaw(Ports(), "");
  EXPECT_EQ(empty.status, 400) << empty.Describe();
  Http shape = Post(Ports(), json{{"port", {{"id", "e-2"}, {"admin_state_up", "yes"}}}});
  EXPECT_EQ(shape.status, 400) << shape.Describe();
  EXPECT_TRUE(Contains(shape.j.value("error", ""), "admin_state_up")) << shape.body;
  Http neither = Post(Ports(), json{{"something", 1}});
  EXPECT_EQ(neither.status, 400) << neither.Describe();

  const std::string other = "/project/00000000-0000-4000-8000-000000000000";
  Http wrong = Get(other + "/ports/e-1");
  EXPECT_EQ(wrong.status, 404) << wrong.Describe();
  EXPECT_TRUE(Contains(wrong.j.value("error", ""), "project")) << wrong.body;
  EXPECT_EQ(Post(other + "/ports", json{{"port", PortDoc("e-3")}}).status, 404);
  EXPECT_EQ(Del(other + "/ports/e-1").status, 404);
  EXPECT_EQ(server_->Ports().size(), 1u);

  Http subnet = Get(std::string("/project/") + kProject + "/subnets/" + kSubnet);
  ASSERT_EQ(subnet.status, 200) << subnet.Describe();
  EXPECT_EQ(subnet.j["subnet"]["cidr"], "10.240.0.0/16");
  EXPECT_EQ(subnet.j["subnet"]["gateway_ip"], "10.240.0.1");
  EXPECT_EQ(subnet.j["subnet"]["id"], kSubnet);
  EXPECT_EQ(Get(std::string("/project/") + kProject + "/subnets/nope").status, 404);

  Http unknown_fault = Post("/mock/faults", json{{"fail_everything", 1}});
  EXPECT_EQ(unknown_fault.status, 400) << unknown_fault.Describe();
  EXPECT_TRUE(Contains(unknown_fault.j.value("error", ""), "fail_everything"))
      << unknown_fault.body;
  EXPECT_EQ(Post("/mock/faults", json{{"fail_gets", "two"}}).status, 400);
  EXPECT_EQ(Get("/healthz").body, "ok");
}

TEST_P(MockTest, AllocationIsDistinctAndReleased) {
  Options o = Opts();
  o.cidr = "10.77.3.0/24";
  ASSERT_NO_FATAL_FAILURE(Start(o));
  const Cidr cidr = *Cidr::Parse("10.77.3.0/24");
  std::set<std::string> ips, macs;
  for (int i = 0; i < 200; ++i) {
    Http r = Create(PortDoc("a-" + std::to_string(i)));
    ASSERT_EQ(r.status, 201) << r.Describe();
    const std::string ip = r.j["port"]["fixed_ips"][0]["ip_address"];
    auto parsed = IpAddress::Parse(ip);
    ASSERT_TRUE(parsed.ok()) << ip;
    EXPECT_TRUE(cidr.Contains(*parsed)) << ip;
    EXPECT_NE(ip, "10.77.3.0");
    EXPECT_NE(ip, "10.77.3.1") << "the gateway was handed out";
    EXPECT_NE(ip, "10.77.3.255");
    EXPECT_TRUE(ips.insert(ip).second) << "duplicate " << ip;
    EXPECT_TRUE(macs.insert(r.j["port"]["mac_address"].get<std::string>()).second);
  }
  Http state = Get("/mock/state");
  ASSERT_EQ(state.status, 200);
  EXPECT_EQ(state.j["ports"], 200);
  EXPECT_EQ(state.j["allocated"].size(), 200u);

  // Delete releases; next-fit does not hand the released address straight back.
  const std::string released = Get(PortPath("a-7")).j["port"]["fixed_ips"][0]["ip_address"];
  ASSERT_EQ(Del(PortPath("a-7")).status, 200);
  state = Get("/mock/state");
  EXPECT_EQ(state.j["allocated"].size(), 199u);
  for (const auto& a : state.j["allocated"]) EXPECT_NE(a, released);
  Http next = Create(PortDoc("a-new"));
  ASSERT_EQ(next.status, 201);
  EXPECT_NE(next.j["port"]["fixed_ips"][0]["ip_address"], released);

  // A requested address: honoured when free, 409 when taken, 400 outside the subnet.
  json want = PortDoc("fixed-1");
  want["fixed_ips"] = json::array({{{"subnet_id", kSubnet}, {"ip_address", released}}});
  Http fixed = Create(want);
  ASSERT_EQ(fixed.status, 201) << fixed.Describe();
  EXPECT_EQ(fixed.j["port"]["fixed_ips"][0]["ip_address"], released);
  want["id"] = "fixed-2";
  Http taken = Create(want);
  EXPECT_EQ(taken.status, 409) << taken.Describe();
  EXPECT_TRUE(Contains(taken.j.value("error", ""), released)) << taken.body;
  want["fixed_ips"][0]["ip_address"] = "10.77.3.1";
  EXPECT_EQ(Create(want).status, 409) << "the gateway";
  want["fixed_ips"][0]["ip_address"] = "192.0.2.9";
  Http outside = Create(want);
  EXPECT_EQ(outside.status, 400) << outside.Describe();
  EXPECT_TRUE(Contains(outside.j.value("error", ""), "192.0.2.9")) << outside.body;
  want["fixed_ips"][0]["ip_address"] = "not-an-ip";
  EXPECT_EQ(Create(want).status, 400);
}

TEST_P(MockTest, SmallSubnetExhaustsWithAClearError) {
  Options o = Opts();
  o.cidr = "10.77.9.0/29";  // .1 gateway, .2-.6 usable, .7 broadcast
  ASSERT_NO_FATAL_FAILURE(Start(o));
  std::set<std::string> got;
  for (int i = 0; i < 5; ++i) {
    Http r = Create(PortDoc("x-" + std::to_string(i)));
    ASSERT_EQ(r.status, 201) << r.Describe();
    got.insert(r.j["port"]["fixed_ips"][0]["ip_address"].get<std::string>());
  }
  EXPECT_EQ(got, (std::set<std::string>{"10.77.9.2", "10.77.9.3", "10.77.9.4", "10.77.9.5",
                                        "10.77.9.6"}));
  Http full = Create(PortDoc("x-5"));
  EXPECT_EQ(full.status, 503) << full.Describe();
  const std::string err = full.j.value("error", "");
  EXPECT_TRUE(Contains(err, "10.77.9.0/29")) << err;
  EXPECT_TRUE(Contains(err, "no free address")) << err;
  EXPECT_EQ(server_->Ports().size(), 5u);
  // A bulk create that does not fit creates nothing.
  ASSERT_EQ(Del(PortPath("x-0")).status, 200);
  Http bulk = Post(Ports(), json{{"ports", {PortDoc("y-1"), PortDoc("y-2")}}});
  EXPECT_EQ(bulk.status, 503) << bulk.Describe();
  EXPECT_EQ(server_->Ports().size(), 4u);
  EXPECT_EQ(Create(PortDoc("y-3")).status, 201);
}

// A create refused part-way through building its ports (a later item, or a later address of
// the same port) gives back every address the earlier steps took.
TEST_P(MockTest, RefusedCreateLeavesNothingAllocated) {
  Options o = Opts();
  o.cidr = "10.77.5.0/24";
  o.subnet6_id = "6a6a6a6a-0000-4000-8000-000000000006";
  o.cidr6 = "fd00:75::/64";
  ASSERT_NO_FATAL_FAILURE(Start(o));
  json keep = PortDoc("keep");
  keep["fixed_ips"] = json::array({{{"subnet_id", kSubnet}, {"ip_address", "10.77.5.9"}}});
  ASSERT_EQ(Create(keep).status, 201);
  const json before = Get("/mock/state").j["allocated"];
  ASSERT_EQ(before.size(), 2u) << before.dump() << ": one IPv4 and one IPv6 address";

  // The second port of the batch asks for the first port's address.
  json clash = PortDoc("n-2");
  clash["fixed_ips"] = json::array({{{"subnet_id", kSubnet}, {"ip_address", "10.77.5.9"}}});
  Http batch = Post(Ports(), json{{"ports", {PortDoc("n-1"), clash}}});
  EXPECT_EQ(batch.status, 409) << batch.Describe();
  EXPECT_EQ(Get("/mock/state").j["allocated"], before);

  // The second requested address of one port names a subnet the controller does not have.
  json half = PortDoc("n-3");
  half["fixed_ips"] = json::array(
      {{{"subnet_id", kSubnet}, {"ip_address", "10.77.5.20"}}, {{"subnet_id", "no-such-subnet"}}});
  Http refused = Create(half);
  EXPECT_EQ(refused.status, 400) << refused.Describe();
  EXPECT_TRUE(Contains(refused.j.value("error", ""), "port.fixed_ips[1].subnet_id"))
      << refused.body;
  EXPECT_EQ(Get("/mock/state").j["allocated"], before);
  EXPECT_EQ(server_->Ports().size(), 1u);

  // The addresses are free again.
  half["fixed_ips"].erase(1);
  Http again = Create(half);
  ASSERT_EQ(again.status, 201) << again.Describe();
  EXPECT_EQ(again.j["port"]["fixed_ips"][0]["ip_address"], "10.77.5.20");
}

TEST_P(MockTest, Ipv6Subnet) {
  Options o = Opts();
  o.subnet6_id = "6a6a6a6a-0000-4000-8000-000000000006";
  o.cidr6 = "fd00:77::/64";
  ASSERT_NO_FATAL_FAILURE(Start(o));
  Http r = Create(PortDoc("six"));
  ASSERT_EQ(r.status, 201) << r.Describe();
  const json& ips = r.j["port"]["fixed_ips"];
  ASSERT_EQ(ips.size(), 2u) << ips.dump();
  EXPECT_EQ(ips[0]["subnet_id"], kSubnet);
  EXPECT_EQ(ips[1]["subnet_id"], o.subnet6_id);
  EXPECT_EQ(ips[1]["ip_address"], "fd00:77::2") << "::1 is the gateway";
  Http s = Get(std::string("/project/") + kProject + "/subnets/" + o.subnet6_id);
  ASSERT_EQ(s.status, 200) << s.Describe();
  EXPECT_EQ(s.j["subnet"]["ip_version"], 6);
  EXPECT_EQ(s.j["subnet"]["gateway_ip"], "fd00:77::1");
}

TEST_P(MockTest, ReadyOnlyAfterGetsBeforeReady) {
  Options o = Opts();
  o.gets_before_ready = 3;
  ASSERT_NO_FATAL_FAILURE(Start(o));
  ASSERT_EQ(Create(PortDoc("g")).status, 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 3; ++i) {
    Http r = Get(PortPath("g"));
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.j["port"]["status"], Pending()) << "GET " << i + 1;
  }
  Http r = Get(PortPath("g"));
  EXPECT_EQ(r.j["port"]["status"], Ready()) << r.body;
}

TEST_P(MockTest, ReadyDelayIsAppliedWithoutPolling) {
  Options o = Opts();
  o.ready_delay = std::chrono::milliseconds(200);
  ASSERT_NO_FATAL_FAILURE(Start(o));
  ASSERT_EQ(Create(PortDoc("d")).status, 201);
  EXPECT_EQ(Get(PortPath("d")).j["port"]["status"], Pending());
  // Nobody polls: the background timer makes it ready.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  std::string status;
  while (Clock::now() < deadline) {
    status = server_->Ports().at(0).status;
    if (status == Ready()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(status, Ready());
}

TEST_P(MockTest, CountedFaults) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Create(PortDoc("f-0")).status, 201);

  SetFaults({{"fail_creates", 1}});
  Http r = Create(PortDoc("f-1"));
  EXPECT_EQ(r.status, 500) << r.Describe();
  EXPECT_EQ(server_->Ports().size(), 1u);
  EXPECT_EQ(Create(PortDoc("f-1")).status, 201);

  SetFaults({{"reject_creates", 1}});
  r = Create(PortDoc("f-2"));
  EXPECT_EQ(r.status, 400) << r.Describe();
  EXPECT_EQ(server_->Ports().size(), 2u);
  EXPECT_EQ(Create(PortDoc("f-2")).status, 201);

  SetFaults({{"fail_gets", 2}});
  EXPECT_EQ(Get(PortPath("f-0")).status, 503);
  EXPECT_EQ(Get(PortPath("f-0")).status, 503);
  EXPECT_EQ(Get(PortPath("f-0")).status, 200);

  SetFaults({{"fail_deletes", 1}});
  EXPECT_EQ(Del(PortPath("f-0")).status, 500);
  EXPECT_EQ(server_->Ports().size(), 3u);
  EXPECT_EQ(Del(PortPath("f-0")).status, 200);
  EXPECT_EQ(server_->Ports().size(), 2u);

  SetFaults({{"truncate_json", 1}});
  r = Get(PortPath("f-1"));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.j.is_discarded()) << "not truncated: " << r.body;
  Http whole = Get(PortPath("f-1"));
  EXPECT_FALSE(whole.j.is_discarded()) << whole.body;
  EXPECT_NEAR(static_cast<double>(r.body.size()), whole.body.size() / 2.0, 1.0);

  SetFaults({{"close_connections", 1}});
  r = Get(PortPath("f-1"));
  EXPECT_EQ(r.status, 0) << "expected a connection error, got " << r.Describe();
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(Get(PortPath("f-1")).status, 200);
  // The server keeps serving after dropping connections, on many connections.
  SetFaults({{"close_connections", 5}});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Get(PortPath("f-1")).status, 0);
  EXPECT_EQ(Get(PortPath("f-1")).status, 200);

  SetFaults({{"delay_ms", 300}});
  const auto t0 = Clock::now();
  EXPECT_EQ(Get(PortPath("f-1")).status, 200);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(250));

  SetFaults({{"fail_gets", 1}, {"delay_ms", 0}});
  Http state = Get("/mock/state");
  ASSERT_EQ(state.status, 200) << state.Describe();
  EXPECT_EQ(state.j["faults"]["fail_gets"], 1);
  EXPECT_EQ(state.j["faults"]["delay_ms"], 0);
  EXPECT_EQ(state.j["ports"], 2);
  EXPECT_EQ(state.j["requests"].get<uint64_t>(), server_->requests());
  EXPECT_GT(server_->requests(), 20u);
  // Every REST answer's body is counted, a refused one too (fail_gets answers 503 with a body);
  // the control endpoints are not.
  const uint64_t bytes_before = state.j["response_bytes"].get<uint64_t>();
  Http failed_get = Get(PortPath("f-1"));
  EXPECT_EQ(failed_get.status, 503) << failed_get.Describe();
  Http port = Get(PortPath("f-1"));
  ASSERT_EQ(port.status, 200) << port.Describe();
  Http state_after = Get("/mock/state");
  EXPECT_EQ(state_after.j["response_bytes"].get<uint64_t>() - bytes_before,
            failed_get.body.size() + port.body.size());
  EXPECT_EQ(server_->response_bytes(), state_after.j["response_bytes"].get<uint64_t>());

  Http reset = Post("/mock/reset", json::object());
  EXPECT_EQ(reset.status, 200) << reset.Describe();
  EXPECT_TRUE(server_->Ports().empty());
  EXPECT_EQ(Get("/mock/state").j["faults"]["fail_gets"], 0);
  EXPECT_EQ(Get("/mock/state").j["allocated"].size(), 0u);
}

TEST_P(MockTest, MalformedPortsFaultPutsHolesInTheListOnly) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Create(PortDoc("m-0")).status, 201);
  ASSERT_EQ(Create(PortDoc("m-1")).status, 201);

  SetFaults({{"malformed_ports", 2}});
  // Every list (not only the next) carries the two entries after the real ports.
  for (int round = 0; round < 2; ++round) {
    Http r = Get(Ports());
    ASSERT_EQ(r.status, 200) << r.Describe();
    ASSERT_EQ(r.j["ports"].size(), 4u) << r.body;
    EXPECT_EQ(r.j["ports"][2]["id"], "malformed-1");
    EXPECT_EQ(r.j["ports"][3]["id"], "malformed-2");
    EXPECT_TRUE(r.j["ports"][3]["admin_state_up"].is_string()) << r.body;
    EXPECT_TRUE(r.j["ports"][3]["fixed_ips"].is_object()) << r.body;
  }
  // Our REST client reads the real ports and names the entries it could not read.
  client::ClientConfig cc;
  cc.base_url = server_->base_url();
  cc.project_id = kProject;
  auto mp = client::Client::Create(cc);
  ASSERT_TRUE(mp.ok()) << mp.status().ToString();
  auto list = (*mp)->ListPorts();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->ports.size(), 2u);
  ASSERT_EQ(list->unreadable.size(), 2u);
  EXPECT_TRUE(Contains(list->unreadable[0], "ports[2]")) << list->unreadable[0];
  EXPECT_TRUE(Contains(list->unreadable[1], "ports[3]")) << list->unreadable[1];
  // A single port and the state are unaffected; the fault reads back.
  EXPECT_EQ(Get(PortPath("m-0")).status, 200);
  EXPECT_EQ(Get("/mock/state").j["faults"]["malformed_ports"], 2);
  EXPECT_EQ(server_->Ports().size(), 2u);

  SetFaults(json::object());
  EXPECT_EQ(Get(Ports()).j["ports"].size(), 2u);
  // A bad value is refused, naming the fault.
  Http bad = Post("/mock/faults", json{{"malformed_ports", "two"}});
  EXPECT_EQ(bad.status, 400) << bad.Describe();
  EXPECT_TRUE(Contains(bad.body, "malformed_ports")) << bad.body;
}

// ?fields=NAME, once per member: each port of the list carries only those members, filters still
// apply, a name no port has is ignored; the ignore_fields fault answers whole documents.
TEST_P(MockTest, ListFieldsSelectMembers) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Create(PortDoc("f-0", "node-a")).status, 201);
  ASSERT_EQ(Create(PortDoc("f-1", "node-b")).status, 201);
  const json whole = Get(PortPath("f-0")).j["port"];
  ASSERT_TRUE(whole.contains("name")) << whole.dump();

  Http r = Get(Ports() + "?fields=id&fields=fixed_ips&fields=binding:host_id&fields=no_such");
  ASSERT_EQ(r.status, 200) << r.Describe();
  ASSERT_EQ(r.j["ports"].size(), 2u) << r.body;
  const json& first = r.j["ports"][0];
  EXPECT_EQ(first,
            (json{{"id", "f-0"}, {"fixed_ips", whole["fixed_ips"]}, {"binding:host_id", "node-a"}}))
      << first.dump();
  EXPECT_EQ(r.j["ports"][1]["id"], "f-1");
  EXPECT_FALSE(r.j["ports"][1].contains("name")) << r.body;

  Http filtered = Get(Ports() + "?binding:host_id=node-a&fields=id");
  ASSERT_EQ(filtered.status, 200) << filtered.Describe();
  EXPECT_EQ(filtered.j["ports"], (json::array({{{"id", "f-0"}}}))) << filtered.body;

  // After an update the selection reads the new document: the whole one but admin_state_up as
  // before, and each member where a selection finds it (a fence's PUT changes that one member).
  json expected = Get(PortPath("f-0")).j["port"];
  expected["admin_state_up"] = false;
  Http down = Put(PortPath("f-0"), json{{"port", {{"admin_state_up", false}}}});
  ASSERT_EQ(down.status, 200) << down.Describe();
  EXPECT_EQ(down.j["port"], expected) << down.body;
  EXPECT_EQ(Get(PortPath("f-0")).j["port"], expected);
  EXPECT_EQ(Get(Ports() + "?fields=admin_state_up").j["ports"][0],
            (json{{"admin_state_up", false}}));
  EXPECT_EQ(Get(Ports() + "?fields=id&fields=status&fields=veth_namespace").j["ports"][0],
            (json{{"id", "f-0"},
                  {"status", expected["status"]},
                  {"veth_namespace", expected["veth_namespace"]}}));

  SetFaults({{"ignore_fields", true}});
  Http ignored = Get(Ports() + "?fields=id");
  ASSERT_EQ(ignored.status, 200) << ignored.Describe();
  EXPECT_EQ(ignored.j["ports"][1], Get(PortPath("f-1")).j["port"]) << ignored.body;
  EXPECT_EQ(Get("/mock/state").j["faults"]["ignore_fields"], true);
}

TEST_P(MockTest, UpdateNoContentFaultAnswers204WithoutABody) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Create(PortDoc("u-0")).status, 201);
  SetFaults({{"update_no_content", true}});
  // Every update (not only the next) is made and answered 204 with an empty body.
  for (bool up : {false, true, false}) {
    Http r = Put(PortPath("u-0"), json{{"port", {{"admin_state_up", up}}}});
    EXPECT_EQ(r.status, 204) << r.Describe();
    EXPECT_TRUE(r.body.empty()) << r.body;
    EXPECT_EQ(Get(PortPath("u-0")).j["port"]["admin_state_up"], up);
  }
  // A refused update is still an error with its body; other calls are unaffected.
  Http bad = Put(PortPath("u-0"), json{{"port", "nope"}});
  EXPECT_EQ(bad.status, 400) << bad.Describe();
  EXPECT_EQ(Get("/mock/state").j["faults"]["update_no_content"], true);
  SetFaults(json::object());
  Http r = Put(PortPath("u-0"), json{{"port", {{"admin_state_up", true}}}});
  EXPECT_EQ(r.status, 200) << r.Describe();
  EXPECT_EQ(r.j["port"]["admin_state_up"], true);
}

// GET /mock/requests: every port update in order, with the admin_state_up it asked for, the
// sender's User-Agent and the status answered; POST /mock/reset empties it.
TEST_P(MockTest, RequestJournalRecordsEveryPortUpdate) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_EQ(Create(PortDoc("j-0")).status, 201);
  auto put = [&](const std::string& id, const json& fields, const std::string& agent) {
    return Put(PortPath(id), json{{"port", fields}}, {{"User-Agent", agent}});
  };
  EXPECT_EQ(put("j-0", {{"admin_state_up", false}}, "replica-1").status, 200);
  EXPECT_EQ(put("j-0", {{"admin_state_up", true}}, "replica-2").status, 200);
  EXPECT_EQ(put("j-0", {{"name", "renamed"}}, "replica-2").status, 200);
  EXPECT_EQ(put("j-unknown", {{"admin_state_up", false}}, "replica-1").status, 404);

  Http log = Get("/mock/requests");
  ASSERT_EQ(log.status, 200) << log.Describe();
  const json want = json::parse(R"([
    {"seq":1,"port":"j-0","admin_state_up":false,"user_agent":"replica-1","status":200},
    {"seq":2,"port":"j-0","admin_state_up":true,"user_agent":"replica-2","status":200},
    {"seq":3,"port":"j-0","user_agent":"replica-2","status":200},
    {"seq":4,"port":"j-unknown","admin_state_up":false,"user_agent":"replica-1","status":404}
  ])");
  EXPECT_EQ(log.j["updates"], want) << log.body;
  // Reads, creates and deletes are not updates.
  EXPECT_EQ(Del(PortPath("j-0")).status, 200);
  EXPECT_EQ(Get("/mock/requests").j["updates"].size(), 4u);

  ASSERT_EQ(Post("/mock/reset", json::object()).status, 200);
  EXPECT_EQ(Get("/mock/requests").j, json::parse(R"({"updates":[]})"));
  ASSERT_EQ(Create(PortDoc("j-1")).status, 201);
  EXPECT_EQ(put("j-1", {{"admin_state_up", false}}, "replica-3").status, 200);
  const json after = Get("/mock/requests").j["updates"];
  ASSERT_EQ(after.size(), 1u) << after.dump();
  EXPECT_EQ(after[0]["seq"], 1);
  EXPECT_EQ(after[0]["user_agent"], "replica-3");
}

// --journal-capacity: the journal keeps the newest N updates, numbered as if it kept them all.
TEST_P(MockTest, RequestJournalKeepsTheNewestOfItsCapacity) {
  Options o = Opts();
  o.journal_capacity = 2;
  ASSERT_NO_FATAL_FAILURE(Start(o));
  ASSERT_EQ(Create(PortDoc("c-0")).status, 201);
  for (bool up : {false, true, false}) {
    EXPECT_EQ(Put(PortPath("c-0"), json{{"port", {{"admin_state_up", up}}}}).status, 200);
  }
  const json kept = Get("/mock/requests").j["updates"];
  ASSERT_EQ(kept.size(), 2u) << kept.dump();
  EXPECT_EQ(kept[0]["seq"], 2);
  EXPECT_EQ(kept[0]["admin_state_up"], true);
  EXPECT_EQ(kept[1]["seq"], 3);
  EXPECT_EQ(kept[1]["admin_state_up"], false);
}

// GET /metrics: what the mock served, in Prometheus' text format, moving with the REST requests;
// the control endpoints (/metrics among them) are not counted, and a reset keeps the counters.
TEST_P(MockTest, MetricsCountRequestsPortsUpdatesAndFaults) {
  ASSERT_NO_FATAL_FAILURE(Start());
  const auto scrape = [&] {
    Http m = Get("/metrics");
    EXPECT_EQ(m.status, 200) << m.Describe();
    EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
    return Samples(m.body);
  };
  const std::string updates = "mizarmp_mock_port_updates_total";
  const auto fault = [](const std::string& name) {
    return "mizarmp_mock_fault_active{fault=\"" + name + "\"}";
  };
  const auto before = scrape();
  EXPECT_EQ(Sample(before, "mizarmp_mock_requests_total"), 0);
  EXPECT_EQ(Sample(before, "mizarmp_mock_response_bytes_total"), 0);
  EXPECT_EQ(Sample(before, "mizarmp_mock_ports"), 0);
  EXPECT_EQ(Sample(before, fault("fail_creates")), 0);
  EXPECT_EQ(Sample(before, updates + "{code=\"200\"}"), -1) << "no update yet";

  ASSERT_EQ(Create(PortDoc("m-0")).status, 201);
  EXPECT_EQ(Put(PortPath("m-0"), json{{"port", {{"admin_state_up", false}}}}).status, 200);
  EXPECT_EQ(Put(PortPath("m-unknown"), json{{"port", {{"admin_state_up", false}}}}).status, 404);
  SetFaults({{"close_connections", 1}, {"fail_creates", 2}});
  EXPECT_EQ(Put(PortPath("m-0"), json{{"port", {{"admin_state_up", true}}}}).status, 0);

  // The mock counts an update whose connection it closed after closing it: the client may ask
  // first.
  const std::string closed = updates + "{code=\"closed\"}";
  std::map<std::string, double> after = scrape();
  for (const auto deadline = Clock::now() + std::chrono::seconds(10);
       Sample(after, closed) != 1 && Clock::now() < deadline; after = scrape()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Sample(after, "mizarmp_mock_requests_total"), 4);
  const Http state = Get("/mock/state");
  EXPECT_GT(Sample(after, "mizarmp_mock_response_bytes_total"), 0);
  EXPECT_EQ(Sample(after, "mizarmp_mock_response_bytes_total"),
            state.j["response_bytes"].get<double>());
  EXPECT_EQ(Sample(after, "mizarmp_mock_ports"), 1);
  EXPECT_EQ(Sample(after, updates + "{code=\"200\"}"), 1);
  EXPECT_EQ(Sample(after, updates + "{code=\"404\"}"), 1);
  EXPECT_EQ(Sample(after, closed), 1);
  // The closed connection used up close_connections; fail_creates still has both of its own.
  EXPECT_EQ(Sample(after, fault("close_connections")), 0);
  EXPECT_EQ(Sample(after, fault("fail_creates")), 1);
  EXPECT_EQ(Sample(after, fault("delay_ms")), 0);

  ASSERT_EQ(Post("/mock/reset", json::object()).status, 200);
  const auto reset = scrape();
  EXPECT_EQ(Sample(reset, "mizarmp_mock_ports"), 0);
  EXPECT_EQ(Sample(reset, fault("fail_creates")), 0);
  EXPECT_EQ(Sample(reset, "mizarmp_mock_requests_total"), 4);
  EXPECT_EQ(Sample(reset, updates + "{code=\"200\"}"), 1);
}

TEST_P(MockTest, ReadinessFaults) {
  Options o = Opts();
  o.faults.never_ready = true;  // from the options, as the command line sets it
  ASSERT_NO_FATAL_FAILURE(Start(o));
  ASSERT_EQ(Create(PortDoc("stuck")).status, 201);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(Get(PortPath("stuck")).j["port"]["status"], Pending());
  }
  SetFaults({{"fail_ready", true}});
  ASSERT_EQ(Create(PortDoc("broken")).status, 201);
  EXPECT_EQ(WaitSettled("broken")["status"], Failed());
  // Faults apply to ports created from then on; an earlier port stays as it was.
  EXPECT_EQ(Get(PortPath("stuck")).j["port"]["status"], Pending());
  SetFaults(json::object());
  ASSERT_EQ(Create(PortDoc("fine")).status, 201);
  EXPECT_EQ(WaitSettled("fine")["status"], Ready());
}

TEST_P(MockTest, BearerToken) {
  testing::TempDir dir;
  const std::string file = dir.path() + "/token";
  ASSERT_TRUE(WriteFileAtomic(file, " t0ken-value\n").ok());
  Options o = Opts();
  o.token_file = file;
  ASSERT_NO_FATAL_FAILURE(Start(o));
  Http none = Get(PortPath("x"));
  EXPECT_EQ(none.status, 401) << none.Describe();
  EXPECT_EQ(none.j, json({{"error", "unauthorized"}})) << none.body;
  Http wrong = Get(PortPath("x"), {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(wrong.status, 401) << wrong.Describe();
  Http create =
      Post(Ports(), json{{"port", PortDoc("tok")}}, {{"Authorization", "Bearer t0ken-value"}});
  EXPECT_EQ(create.status, 201) << create.Describe();
  Http right = Get(PortPath("tok"), {{"Authorization", "Bearer t0ken-value"}});
  EXPECT_EQ(right.status, 200) << right.Describe();
  EXPECT_EQ(Get("/healthz").status, 200);

  o.token_file = dir.path() + "/missing";
  EXPECT_FALSE(MockServer::Create(o).ok());
}

// --- the binary -----------------------------------------------------------------------------

TEST(MockBinaryTest, ServesWritesPortFileAndStopsOnSigterm) {
  testing::TempDir dir;
  const std::string port_file = dir.path() + "/port";
  const std::string log = dir.path() + "/log";
  pid_t pid =
      testing::SpawnProcess({testing::BinDir() + "/mizarmp-mock", "--listen", "127.0.0.1:0",
                             "--port-file", port_file, "--dialect", "alcor", "--cidr",
                             "10.88.0.0/24", "--gets-before-ready=1", "--log-level", "debug"},
                            {}, "", log);
  ASSERT_GT(pid, 0);
  std::string port;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    auto text = ReadFile(port_file);
    if (text.ok() && !text->empty()) {
      port = *text;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  while (!port.empty() && (port.back() == '\n')) port.pop_back();
  if (port.empty()) {
    kill(pid, SIGKILL);
    testing::WaitProcess(pid, std::chrono::seconds(5));
    FAIL() << "no port file; log: " << ReadFile(log).value();
  }
  const std::string base = "http://127.0.0.1:" + port;
  Http h = Do(base, "GET", "/healthz");
  EXPECT_EQ(h.status, 200) << h.Describe();
  Http c = Do(base, "POST", Ports(), json{{"port", PortDoc("bin-1")}}.dump());
  EXPECT_EQ(c.status, 201) << c.Describe();
  EXPECT_EQ(c.j["port"]["status"], "created");
  Http g = Do(base, "GET", std::string("/project/") + kProject + "/subnets/" + kSubnet);
  EXPECT_EQ(g.j["subnet"]["cidr"], "10.88.0.0/24");
  EXPECT_EQ(Do(base, "GET", PortPath("missing")).status, 404);

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = testing::WaitProcess(pid, std::chrono::seconds(20));
  ASSERT_NE(status, -1) << "did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string out = ReadFile(log).value();
  EXPECT_TRUE(Contains(out, "mizarmp-mock listening on http://127.0.0.1:" + port)) << out;
}

TEST(MockBinaryTest, UsageErrors) {
  auto r = testing::RunProcess({testing::BinDir() + "/mizarmp-mock", "--no-such-flag"}, {}, "",
                               std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "--no-such-flag")) << r.err;
  r = testing::RunProcess({testing::BinDir() + "/mizarmp-mock", "--dialect", "v9"}, {}, "",
                          std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = testing::RunProcess({testing::BinDir() + "/mizarmp-mock", "--help"}, {}, "",
                          std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.out, "--listen")) << r.out;
  r = testing::RunProcess(
      {testing::BinDir() + "/mizarmp-mock", "--listen", "127.0.0.1:0", "--cidr", "10.1.2.3/24"}, {},
      "", std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(Contains(r.err, "10.1.2.3/24")) << r.err;
}

// --help and the flag errors come from one table: every flag the scripts, tests and benchmarks
// pass is listed, and a refused value names the flag and the accepted range.
TEST(MockBinaryTest, HelpListsEveryFlagAndValuesAreChecked) {
  const std::string bin = testing::BinDir() + "/mizarmp-mock";
  auto r = testing::RunProcess({bin, "--help"}, {}, "", std::chrono::seconds(20));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"--listen HOST:PORT",
                           "--port-file PATH",
                           "--dialect",
                           "--project ID",
                           "--vpc ID",
                           "--subnet ID",
                           "--cidr CIDR",
                           "--gateway IP",
                           "--subnet6 ID",
                           "--cidr6 CIDR",
                           "--ready-delay-ms N",
                           "--gets-before-ready N",
                           "--agent ",
                           "--bridge NAME",
                           "--agent-netns PATH",
                           "--agent-ovsdb PATH",
                           "--mtu N",
                           "--tls-cert FILE",
                           "--tls-key FILE",
                           "--tls-client-ca FILE",
                           "--token-file FILE",
                           "--fail-creates N",
                           "--fail-deletes N",
                           "--fail-gets N",
                           "--reject-creates N",
                           "--close-connections N",
                           "--truncate-json N",
                           "--delay-ms N",
                           "--never-ready",
                           "--fail-ready",
                           "--malformed-ports N",
                           "--update-no-content",
                           "--log-level LEVEL",
                           "--log-file PATH"}) {
    EXPECT_TRUE(Contains(r.out, flag)) << flag << " missing from:\n" << r.out;
  }
  EXPECT_TRUE(Contains(r.out, "default 127.0.0.1:9090")) << r.out;

  r = testing::RunProcess({bin, "--mtu", "10"}, {}, "", std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "--mtu: \"10\" is not an integer in 68..65535")) << r.err;
  r = testing::RunProcess({bin, "--listen", "127.0.0.1:70000"}, {}, "", std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "--listen: port \"70000\" is not in 0..65535")) << r.err;
  r = testing::RunProcess({bin, "--log-level", "loud"}, {}, "", std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "--log-level: ")) << r.err;
  r = testing::RunProcess({bin, "--dialect", "v9"}, {}, "", std::chrono::seconds(20));
  EXPECT_TRUE(Contains(r.err, "--dialect: must be v0.1 or alcor")) << r.err;
  r = testing::RunProcess({bin, "--port-file"}, {}, "", std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "flag --port-file: needs a value")) << r.err;
}

}  // namespace
}  // namespace mizarmp::mock
