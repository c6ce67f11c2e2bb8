// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Mizar-MP REST client against the in-process mock controller over loopback, for both
// controller generations, including every fault the mock can inject, bearer tokens and TLS.
// The mock's host agent is disabled, so no root is needed.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::client {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The dialect as a test name's suffix (letters and digits only).
const char* TestNameOf(mock::Dialect d) { return d == mock::Dialect::kV01 ? "V01" : "Alcor"; }

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Copies the Status: `status_expr` is often `Make().status()`, a reference into a temporary
// Result that is gone at the end of this declaration (ASan: stack-use-after-scope).
#define EXPECT_CODE(status_expr, want_code)                               \
  do {                                                                    \
    const ::mizarmp::Status mz_st_ = (status_expr);                       \
    EXPECT_EQ(mz_st_.code(), (want_code)) << "got " << mz_st_.ToString(); \
  } while (0)

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

class ClientMockTest : public ::testing::TestWithParam<mock::Dialect> {
 protected:
  mock::Options MockOptions() const {
    mock::Options o;
    o.dialect = GetParam();
    o.agent = false;
    return o;
  }

  // Starts a mock; failures are fatal for the test (check with ASSERT_NO_FATAL_FAILURE).
  void StartMock(mock::Options o) { ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &server_)); }

  ClientConfig Config() const {
    ClientConfig c;
    c.base_url = server_->base_url();
    c.dialect = Dialect::kAuto;
    c.connect_timeout = milliseconds(1000);
    c.request_timeout = milliseconds(3000);
    c.max_attempts = 3;
    c.retry_backoff = milliseconds(5);
    return c;
  }

  std::unique_ptr<Client> MakeClient(const ClientConfig& c) {
    auto r = Client::Create(c);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return nullptr;
    return std::move(r).value();
  }

  void StartDefault() {
    ASSERT_NO_FATAL_FAILURE(StartMock(MockOptions()));
    client_ = MakeClient(Config());
    ASSERT_NE(client_, nullptr);
  }

  PortSpec Spec(const std::string& id, const std::string& host = "node-a") const {
    PortSpec s = testing::PortSpecFor(id, "/var/run/netns/none-" + id, host);
    s.description = "cni test, host:" + host;
    return s;
  }

  bool ServerHasPort(const std::string& id) const {
    for (const auto& p : server_->Ports()) {
      if (p.id == id) return true;
    }
    return false;
  }

  static PollOptions Poll(milliseconds deadline) {
    PollOptions o;
    o.deadline = deadline;
    return o;
  }

  std::unique_ptr<mock::MockServer> server_;
  std::unique_ptr<Client> client_;
};

INSTANTIATE_TEST_SUITE_P(Dialects, ClientMockTest,
                         ::testing::Values(mock::Dialect::kV01, mock::Dialect::kAlcor),
                         [](const auto& param_info) {
                           return std::string(TestNameOf(param_info.param));
                         });

TEST_P(ClientMockTest, CreateGetListUpdateDelete) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  auto a = client_->CreatePort(Spec("port-a", "node-a"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->id, "port-a");
  auto b = client_->CreatePort(Spec("port-b", "node b/2"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(ServerHasPort("port-a"));
  EXPECT_TRUE(ServerHasPort("port-b"));

  auto got = client_->GetPort("port-a");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, "port-a");
  EXPECT_EQ(got->host_id, "node-a");
  EXPECT_EQ(got->network_ns, "/var/run/netns/none-port-a");
  EXPECT_EQ(got->veth_name, "eth0");

  auto all = client_->ListPorts();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->ports.size(), 2u);

  auto on_a = client_->ListPorts({{"binding:host_id", "node-a"}});
  ASSERT_TRUE(on_a.ok()) << on_a.status().ToString();
  ASSERT_EQ(on_a->ports.size(), 1u);
  EXPECT_EQ(on_a->ports[0].id, "port-a");

  // A value that needs URL encoding (space, slash).
  auto on_b = client_->ListPorts({{"binding:host_id", "node b/2"}});
  ASSERT_TRUE(on_b.ok()) << on_b.status().ToString();
  ASSERT_EQ(on_b->ports.size(), 1u);
  EXPECT_EQ(on_b->ports[0].id, "port-b");

  auto none = client_->ListPorts({{"binding:host_id", "node-nobody"}});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->ports.empty());
  EXPECT_TRUE(none->unreadable.empty());

  // Only the fields asked for come back (the rest at their defaults); from a controller without
  // field selection the whole ports, which read the same.
  const std::vector<std::string> fields = {"id", "fixed_ips", "binding:host_id"};
  for (const bool ignored : {false, true}) {
    mock::Faults f;
    f.ignore_fields = ignored;
    server_->SetFaults(f);
    auto selected = client_->ListPorts({{"binding:host_id", "node-a"}}, fields);
    ASSERT_TRUE(selected.ok()) << selected.status().ToString();
    ASSERT_EQ(selected->ports.size(), 1u);
    const Port& p = selected->ports[0];
    EXPECT_EQ(p.id, "port-a");
    EXPECT_EQ(p.host_id, "node-a");
    EXPECT_EQ(p.fixed_ips, a->fixed_ips);
    EXPECT_EQ(p.veth_name.empty(), !ignored) << p.veth_name;
    EXPECT_EQ(p.network_ns.empty(), !ignored) << p.network_ns;
  }
  server_->SetFaults(mock::Faults{});

  auto updated = client_->UpdatePort("port-a", json{{"admin_state_up", false}});
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_FALSE(updated->admin_state_up);
  auto reread = client_->GetPort("port-a");
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_FALSE(reread->admin_state_up);
  for (const auto& p : server_->Ports()) {
    if (p.id == "port-a") {
      EXPECT_FALSE(p.admin_state_up);
    }
    if (p.id == "port-b") {
      EXPECT_TRUE(p.admin_state_up);
    }
  }

  Status del = client_->DeletePort("port-a");
  EXPECT_TRUE(del.ok()) << del.ToString();
  EXPECT_FALSE(ServerHasPort("port-a"));
  EXPECT_TRUE(ServerHasPort("port-b"));
  auto gone = client_->GetPort("port-a");
  ASSERT_FALSE(gone.ok());
  EXPECT_CODE(gone.status(), Code::kNotFound);
  EXPECT_TRUE(Contains(gone.status().message(), "port-a")) << gone.status().message();

  // Deleting what is already gone succeeds (404 on Alcor, 200 on v0.1).
  Status again = client_->DeletePort("port-a");
  EXPECT_TRUE(again.ok()) << again.ToString();
}

TEST_P(ClientMockTest, UnknownPortIsNotFoundAndDuplicateIsAlreadyExists) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  auto missing = client_->GetPort("no-such-port");
  ASSERT_FALSE(missing.ok());
  EXPECT_CODE(missing.status(), Code::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), "GET /project/")) << missing.status().message();

  auto upd = client_->UpdatePort("no-such-port", json{{"admin_state_up", false}});
  ASSERT_FALSE(upd.ok());
  EXPECT_CODE(upd.status(), Code::kNotFound);

  Status del = client_->DeletePort("no-such-port");
  EXPECT_TRUE(del.ok()) << del.ToString();

  ASSERT_TRUE(client_->CreatePort(Spec("dup")).ok());
  const uint64_t before = client_->requests_sent();
  auto dup = client_->CreatePort(Spec("dup"));
  ASSERT_FALSE(dup.ok());
  EXPECT_CODE(dup.status(), Code::kAlreadyExists);
  EXPECT_TRUE(Contains(dup.status().message(), "HTTP 409")) << dup.status().message();
  EXPECT_EQ(client_->requests_sent() - before, 1u) << "a first-attempt 409 is not retried";
}

TEST_P(ClientMockTest, GetSubnet) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  auto s = client_->GetSubnet(kDefaultSubnetId);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->id, kDefaultSubnetId);
  EXPECT_EQ(s->cidr, "10.240.0.0/16");
  EXPECT_EQ(s->gateway_ip, "10.240.0.1");
  EXPECT_EQ(s->ip_version, 4);

  auto missing = client_->GetSubnet("no-such-subnet");
  ASSERT_FALSE(missing.ok());
  EXPECT_CODE(missing.status(), Code::kNotFound);
}

// The observer (metrics) sees each call once, after its retries, named by its method and the
// path's shape (never an id) with its outcome.
TEST_P(ClientMockTest, TheObserverSeesEachCallOnceByShapeAndOutcome) {
  ASSERT_NO_FATAL_FAILURE(StartMock(MockOptions()));
  std::vector<CallObservation> seen;  // the observer runs on the calling thread
  ClientConfig c = Config();
  c.observer = [&seen](const CallObservation& o) { seen.push_back(o); };
  client_ = MakeClient(c);
  ASSERT_NE(client_, nullptr);
  const auto count = [&seen](const std::string& call, const std::string& outcome, int attempts) {
    return std::count_if(seen.begin(), seen.end(), [&](const CallObservation& o) {
      return o.call == call && o.outcome == outcome && o.attempts == attempts;
    });
  };
  const std::string id = "5d1b0c2a-7e3f-4a9b-8c6d-1e2f3a4b5c6d";
  ASSERT_TRUE(client_->CreatePort(Spec(id)).ok());
  ASSERT_TRUE(client_->UpdatePort(id, {{"admin_state_up", false}}).ok());
  ASSERT_TRUE(client_->ListPorts().ok());
  ASSERT_TRUE(client_->GetSubnet(kDefaultSubnetId).ok());
  EXPECT_FALSE(client_->GetSubnet("9f0e8d7c-6b5a-4938-8271-605f4e3d2c1b").ok());
  EXPECT_EQ(count("PUT /ports/{id}", "ok", 1), 1);
  // UpdatePort's Generation() lists nothing to tell the generation, then ListPorts lists.
  EXPECT_EQ(count("GET /ports", "ok", 1), 2);
  EXPECT_EQ(count("GET /subnets/{id}", "ok", 1), 1);
  EXPECT_EQ(count("GET /subnets/{id}", "http_404", 1), 1);  // an answer, not retried

  mock::Faults f;
  f.fail_gets = 10;
  server_->SetFaults(f);
  EXPECT_FALSE(client_->GetPort(id).ok());
  EXPECT_EQ(count("GET /ports/{id}", "http_503", 3), 1);  // once, after its three attempts
  server_->Stop();
  EXPECT_FALSE(client_->GetPort(id).ok());
  EXPECT_EQ(count("GET /ports/{id}", "unavailable", 3), 1);
  for (const CallObservation& o : seen) {
    EXPECT_EQ(o.call.find(id), std::string::npos) << o.call;
    EXPECT_EQ(o.call.find(kDefaultSubnetId), std::string::npos) << o.call;
    EXPECT_EQ(o.call.find("/project"), std::string::npos) << o.call;
  }
}

TEST_P(ClientMockTest, ReadyPortCarriesAddressAndMac) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  ASSERT_TRUE(client_->CreatePort(Spec("addr")).ok());
  auto p = client_->WaitPortReady("addr", Poll(milliseconds(5000)));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->state(), PortState::kReady);
  EXPECT_FALSE(p->status.empty());
  EXPECT_FALSE(p->mac_address.empty());
  ASSERT_FALSE(p->fixed_ips.empty());
  EXPECT_EQ(p->fixed_ips[0].subnet_id, kDefaultSubnetId);
  EXPECT_EQ(p->fixed_ips[0].ip_address.rfind("10.240.", 0), 0u) << p->fixed_ips[0].ip_address;
}

TEST_P(ClientMockTest, BulkCreateRemembersTheForm) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  auto first = client_->CreatePorts({Spec("bulk-1"), Spec("bulk-2"), Spec("bulk-3", "node-c")});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0].id, "bulk-1");
  EXPECT_EQ((*first)[2].id, "bulk-3");
  EXPECT_TRUE(ServerHasPort("bulk-1"));
  EXPECT_TRUE(ServerHasPort("bulk-2"));
  EXPECT_TRUE(ServerHasPort("bulk-3"));

  // The second bulk create goes straight to the form that worked.
  const uint64_t before = client_->requests_sent();
  auto second = client_->CreatePorts({Spec("bulk-4"), Spec("bulk-5")});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->size(), 2u);
  EXPECT_EQ(client_->requests_sent() - before, 1u);

  auto on_c = client_->ListPorts({{"binding:host_id", "node-c"}});
  ASSERT_TRUE(on_c.ok()) << on_c.status().ToString();
  ASSERT_EQ(on_c->ports.size(), 1u);
  EXPECT_EQ(on_c->ports[0].id, "bulk-3");
}

TEST_P(ClientMockTest, BulkCreateWithExplicitDialect) {
  ASSERT_NO_FATAL_FAILURE(StartMock(MockOptions()));
  ClientConfig c = Config();
  c.dialect = GetParam() == mock::Dialect::kV01 ? Dialect::kV01 : Dialect::kAlcor;
  auto client = MakeClient(c);
  ASSERT_NE(client, nullptr);
  auto ports = client->CreatePorts({Spec("x-1"), Spec("x-2")});
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  EXPECT_EQ(ports->size(), 2u);
  // v0.1 gets one POST per port: its /portgroup answers 500 as shipped.
  EXPECT_EQ(client->requests_sent(), GetParam() == mock::Dialect::kV01 ? 2u : 1u);
  EXPECT_TRUE(ServerHasPort("x-1"));
  EXPECT_TRUE(ServerHasPort("x-2"));
}

TEST_P(ClientMockTest, PollNoticesReadySoonAfterReadyDelay) {
  mock::Options o = MockOptions();
  o.ready_delay = milliseconds(50);
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  const auto start = Clock::now();
  ASSERT_TRUE(client_->CreatePort(Spec("slow")).ok());
  auto p = client_->WaitPortReady("slow", Poll(milliseconds(10000)));
  const int64_t elapsed = MsSince(start);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->state(), PortState::kReady);
  // Sanity bound only: a 1 s poll interval (the upstream plugin's) would take over a second.
  EXPECT_LT(elapsed, 900) << "ready after 50 ms but noticed after " << elapsed << " ms";
}

// A sign (the plugin: the NIC arriving in the pod) brings the next poll forward from the end of
// its interval: at once for a sign that came before the wait began, `after_sign` later for one
// that came during it (the agent may still be finishing).
TEST_P(ClientMockTest, ASignBringsThePollForward) {
  for (const ReadinessSign sign : {ReadinessSign::kEarlier, ReadinessSign::kJustNow}) {
    SCOPED_TRACE(sign == ReadinessSign::kEarlier ? "earlier" : "just now");
    mock::Options o = MockOptions();
    o.gets_before_ready = 1;  // the first GET finds it pending, the second ready
    ASSERT_NO_FATAL_FAILURE(StartMock(o));
    client_ = MakeClient(Config());
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(client_->CreatePort(Spec("signalled")).ok());
    PollOptions po = Poll(milliseconds(60000));
    po.initial = po.max = milliseconds(30000);
    po.after_sign = milliseconds(400);
    int waits = 0;
    po.wait_until = [&waits, sign](Clock::time_point) {
      ++waits;
      return sign;
    };
    const auto start = Clock::now();
    auto p = client_->WaitPortReady("signalled", po);
    const int64_t took = MsSince(start);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->state(), PortState::kReady);
    EXPECT_EQ(waits, 1);
    EXPECT_LT(took, 20000) << "the poll waited out its 30 s interval";
    if (sign == ReadinessSign::kJustNow) {
      EXPECT_GE(took, 400) << "a sign that came during the wait was polled at once";
    } else {
      EXPECT_LT(took, 400) << "a sign that came before the wait waited for after_sign";
    }
    server_->Stop();
  }
}

// A link that keeps changing signs without end: only max_signs signs are followed, then the
// polls keep their interval (the waiter is not asked again).
TEST_P(ClientMockTest, OnlyMaxSignsAreFollowed) {
  mock::Options o = MockOptions();
  o.faults.never_ready = true;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(client_->CreatePort(Spec("flapping")).ok());
  const uint64_t before = client_->requests_sent();
  PollOptions po = Poll(milliseconds(500));
  po.initial = po.max = po.after_sign = milliseconds(100);
  int waits = 0;
  po.wait_until = [&waits](Clock::time_point) {
    ++waits;
    return ReadinessSign::kJustNow;
  };
  auto p = client_->WaitPortReady("flapping", po);
  EXPECT_CODE(p.status(), Code::kDeadlineExceeded);
  EXPECT_EQ(waits, po.max_signs);
  // The first GET, one 100 ms after each sign, then one per 100 ms of the 200 ms left at most.
  EXPECT_LE(client_->requests_sent() - before, static_cast<uint64_t>(1 + po.max_signs + 2));
}

TEST_P(ClientMockTest, PollCountsGetsBeforeReady) {
  mock::Options o = MockOptions();
  o.gets_before_ready = 3;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(client_->CreatePort(Spec("counted")).ok());
  auto first = client_->GetPort("counted");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->state(), PortState::kPending) << first->status;
  const uint64_t before = client_->requests_sent();
  auto p = client_->WaitPortReady("counted", Poll(milliseconds(5000)));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->state(), PortState::kReady);
  EXPECT_GE(client_->requests_sent() - before, 2u);
}

TEST_P(ClientMockTest, NeverReadyHitsTheDeadline) {
  mock::Options o = MockOptions();
  o.faults.never_ready = true;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(client_->CreatePort(Spec("stuck")).ok());
  const auto start = Clock::now();
  auto p = client_->WaitPortReady("stuck", Poll(milliseconds(300)));
  const int64_t elapsed = MsSince(start);
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kDeadlineExceeded);
  const std::string& msg = p.status().message();
  EXPECT_TRUE(Contains(msg, "stuck")) << msg;
  EXPECT_TRUE(Contains(msg, "last status")) << msg;
  EXPECT_TRUE(Contains(msg, " ms")) << msg;
  EXPECT_GE(elapsed, 250);
  EXPECT_LT(elapsed, 3000);
}

TEST_P(ClientMockTest, FailedPortFailsFast) {
  mock::Options o = MockOptions();
  o.faults.fail_ready = true;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(client_->CreatePort(Spec("broken")).ok());
  const auto start = Clock::now();
  auto p = client_->WaitPortReady("broken", Poll(milliseconds(20000)));
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kFailedPrecondition);
  const std::string& msg = p.status().message();
  EXPECT_TRUE(Contains(msg, "broken")) << msg;
  EXPECT_TRUE(Contains(msg, "failed") || Contains(msg, "ERROR")) << msg;
  EXPECT_LT(MsSince(start), 5000);
}

TEST_P(ClientMockTest, PollIsCancellable) {
  mock::Options o = MockOptions();
  o.faults.never_ready = true;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(client_->CreatePort(Spec("waiting")).ok());
  std::atomic<int> calls{0};
  PollOptions po = Poll(milliseconds(20000));
  po.cancelled = [&calls] { return ++calls > 5; };
  const auto start = Clock::now();
  auto p = client_->WaitPortReady("waiting", po);
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kCancelled);
  EXPECT_TRUE(Contains(p.status().message(), "waiting")) << p.status().message();
  EXPECT_LT(MsSince(start), 5000);
}

TEST_P(ClientMockTest, PollOfDeletedPortIsNotFound) {
  mock::Options o = MockOptions();
  o.faults.never_ready = true;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  client_ = MakeClient(Config());
  ASSERT_NE(client_, nullptr);
  ASSERT_TRUE(client_->CreatePort(Spec("vanishing")).ok());
  ASSERT_TRUE(client_->DeletePort("vanishing").ok());
  auto p = client_->WaitPortReady("vanishing", Poll(milliseconds(5000)));
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kNotFound);
}

TEST_P(ClientMockTest, SlowServerDoesNotStretchThePollDeadline) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  mock::Faults f;
  f.never_ready = true;
  server_->SetFaults(f);
  ASSERT_TRUE(client_->CreatePort(Spec("sluggish")).ok());
  f.delay_ms = 1500;  // longer than the poll deadline, shorter than the request timeout
  server_->SetFaults(f);
  const auto start = Clock::now();
  auto p = client_->WaitPortReady("sluggish", Poll(milliseconds(300)));
  const int64_t elapsed = MsSince(start);
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kDeadlineExceeded);
  EXPECT_TRUE(Contains(p.status().message(), "sluggish")) << p.status().message();
  EXPECT_LT(elapsed, 1200) << "the GET was not clipped to the poll deadline";
}

TEST_P(ClientMockTest, FailedCreateIsRetried) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  mock::Faults f;
  f.fail_creates = 1;
  server_->SetFaults(f);
  auto p = client_->CreatePort(Spec("retried"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // The POST, the look-up that finds no port (the 500 was not a lost answer), the POST again.
  EXPECT_EQ(client_->requests_sent(), 3u);
  EXPECT_TRUE(ServerHasPort("retried"));
}

TEST_P(ClientMockTest, PersistentCreateFailureIsUnavailable) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  mock::Faults f;
  f.fail_creates = 4;  // more than max_attempts (3)
  server_->SetFaults(f);
  auto p = client_->CreatePort(Spec("doomed"));
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kUnavailable);
  const std::string& msg = p.status().message();
  EXPECT_TRUE(Contains(msg, "POST /project/" + std::string(kDefaultProjectId) + "/ports")) << msg;
  EXPECT_TRUE(Contains(msg, "HTTP 500")) << msg;
  EXPECT_EQ(client_->requests_sent(), 6u);  // each of the 3 POSTs followed by a look-up
  EXPECT_FALSE(ServerHasPort("doomed"));
}

TEST_P(ClientMockTest, FailedBulkCreateIsRetried) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  // Learn the bulk form first so the fault hits the retry path, not the dialect probe.
  ASSERT_TRUE(client_->CreatePorts({Spec("warm-1")}).ok());
  mock::Faults f;
  f.fail_creates = 1;
  server_->SetFaults(f);
  auto ports = client_->CreatePorts({Spec("rb-1"), Spec("rb-2")});
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  EXPECT_EQ(ports->size(), 2u);
  EXPECT_TRUE(ServerHasPort("rb-1"));
  EXPECT_TRUE(ServerHasPort("rb-2"));
}

TEST_P(ClientMockTest, FailedDeleteIsRetried) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  ASSERT_TRUE(client_->CreatePort(Spec("del-1")).ok());
  ASSERT_TRUE(client_->CreatePort(Spec("del-2")).ok());
  mock::Faults f;
  f.fail_deletes = 1;
  server_->SetFaults(f);
  Status st = client_->DeletePort("del-1");
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(ServerHasPort("del-1"));

  f.fail_deletes = 10;
  server_->SetFaults(f);
  st = client_->DeletePort("del-2");
  EXPECT_CODE(st, Code::kUnavailable);
  EXPECT_TRUE(Contains(st.message(), "DELETE /project/")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "del-2")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "HTTP 500")) << st.message();
  EXPECT_TRUE(ServerHasPort("del-2"));
}

TEST_P(ClientMockTest, FailedGetIsRetried) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  ASSERT_TRUE(client_->CreatePort(Spec("g")).ok());
  mock::Faults f;
  f.fail_gets = 2;
  server_->SetFaults(f);
  auto p = client_->GetPort("g");
  ASSERT_TRUE(p.ok()) << p.status().ToString();

  f.fail_gets = 10;
  server_->SetFaults(f);
  const uint64_t before = client_->requests_sent();
  p = client_->GetPort("g");
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kUnavailable);
  const std::string& msg = p.status().message();
  EXPECT_TRUE(Contains(msg, "GET /project/" + std::string(kDefaultProjectId) + "/ports/g")) << msg;
  EXPECT_TRUE(Contains(msg, "HTTP 503")) << msg;
  EXPECT_EQ(client_->requests_sent() - before, 3u);
}

TEST_P(ClientMockTest, SlowResponsesTimeOutNamingTheCall) {
  ASSERT_NO_FATAL_FAILURE(StartMock(MockOptions()));
  ClientConfig c = Config();
  c.request_timeout = milliseconds(100);
  c.max_attempts = 2;
  client_ = MakeClient(c);
  ASSERT_NE(client_, nullptr);
  mock::Faults f;
  f.delay_ms = 400;
  server_->SetFaults(f);
  const auto start = Clock::now();
  auto p = client_->GetPort("late");
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kUnavailable);
  EXPECT_TRUE(Contains(p.status().message(), "GET /project/")) << p.status().message();
  EXPECT_TRUE(Contains(p.status().message(), "late")) << p.status().message();
  EXPECT_EQ(client_->requests_sent(), 2u);
  EXPECT_LT(MsSince(start), 2000);
}

TEST_P(ClientMockTest, ClosedConnectionsAreRetried) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  ASSERT_TRUE(client_->CreatePort(Spec("c1")).ok());
  mock::Faults f;
  f.close_connections = 1;
  server_->SetFaults(f);
  auto p = client_->GetPort("c1");
  ASSERT_TRUE(p.ok()) << p.status().ToString();

  // A create whose connection is closed is retried as well (the id is client-chosen).
  f.close_connections = 1;
  server_->SetFaults(f);
  auto created = client_->CreatePort(Spec("c2"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_TRUE(ServerHasPort("c2"));

  f.close_connections = 100;
  server_->SetFaults(f);
  p = client_->GetPort("c1");
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kUnavailable);
  EXPECT_TRUE(Contains(p.status().message(), "GET /project/")) << p.status().message();
}

TEST_P(ClientMockTest, TruncatedJsonIsRetriedThenInternal) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  ASSERT_TRUE(client_->CreatePort(Spec("t1")).ok());
  mock::Faults f;
  f.truncate_json = 1;
  server_->SetFaults(f);
  auto p = client_->GetPort("t1");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->id, "t1");

  f.truncate_json = 100;
  server_->SetFaults(f);
  p = client_->GetPort("t1");
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kInternal);
  EXPECT_TRUE(Contains(p.status().message(), "GET /project/")) << p.status().message();

  auto list = client_->ListPorts();
  ASSERT_FALSE(list.ok());
  EXPECT_CODE(list.status(), Code::kInternal);
}

TEST_P(ClientMockTest, GarbledCreateAnswerIsLookedUpNotSentAgain) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  // The POST creates the port but its answer is garbled: the client looks the id up and takes
  // the port it finds, rather than sending the POST again (which a real controller would take
  // as an overwrite, with new addresses).
  mock::Faults f;
  f.truncate_json = 1;
  server_->SetFaults(f);
  auto p = client_->CreatePort(Spec("twice"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->id, "twice");
  EXPECT_TRUE(ServerHasPort("twice"));
  EXPECT_EQ(client_->requests_sent(), 2u);  // POST (garbled), GET
}

TEST_P(ClientMockTest, RejectedCreateIsNotRetried) {
  ASSERT_NO_FATAL_FAILURE(StartDefault());
  mock::Faults f;
  f.reject_creates = 1;
  server_->SetFaults(f);
  auto p = client_->CreatePort(Spec("rejected"));
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(p.status().message(), "HTTP 400")) << p.status().message();
  EXPECT_EQ(client_->requests_sent(), 1u);
  EXPECT_FALSE(ServerHasPort("rejected"));
}

TEST_P(ClientMockTest, BearerToken) {
  testing::TempDir dir;
  const std::string good = dir.path() + "/token";
  const std::string wrong = dir.path() + "/wrong";
  const std::string empty = dir.path() + "/empty";
  WriteText(good, "  s3cret-token-value\n");
  WriteText(wrong, "not-the-token\n");
  WriteText(empty, " \n");
  mock::Options o = MockOptions();
  o.token_file = good;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));

  ClientConfig c = Config();
  c.token_file = good;
  auto with = MakeClient(c);
  ASSERT_NE(with, nullptr);
  auto p = with->CreatePort(Spec("authed"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();

  c.token_file = wrong;
  auto bad = MakeClient(c);
  ASSERT_NE(bad, nullptr);
  auto denied = bad->GetPort("authed");
  ASSERT_FALSE(denied.ok());
  EXPECT_CODE(denied.status(), Code::kUnauthenticated);
  EXPECT_TRUE(Contains(denied.status().message(), "HTTP 401")) << denied.status().message();
  EXPECT_FALSE(Contains(denied.status().message(), "not-the-token"));
  EXPECT_EQ(bad->requests_sent(), 1u);

  c.token_file.clear();
  auto anon = MakeClient(c);
  ASSERT_NE(anon, nullptr);
  EXPECT_CODE(anon->GetPort("authed").status(), Code::kUnauthenticated);

  c.token_file = empty;
  auto r = Client::Create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_CODE(r.status(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status().message(), empty)) << r.status().message();

  c.token_file = dir.path() + "/missing";
  r = Client::Create(c);
  ASSERT_FALSE(r.ok());
  EXPECT_CODE(r.status(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status().message(), c.token_file)) << r.status().message();
}

// A long-lived Client (the server's) keeps working after the token file is rotated: the file
// is read again when it changes.
TEST_P(ClientMockTest, TokenFileIsReadAgainWhenItChanges) {
  testing::TempDir dir;
  const std::string server_token = dir.path() + "/server-token";
  const std::string client_token = dir.path() + "/client-token";
  WriteText(server_token, "the-new-token\n");
  WriteText(client_token, "the-old-token\n");
  mock::Options o = MockOptions();
  o.token_file = server_token;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));

  ClientConfig c = Config();
  c.token_file = client_token;
  auto client = MakeClient(c);
  ASSERT_NE(client, nullptr);
  EXPECT_CODE(client->CreatePort(Spec("rotated")).status(), Code::kUnauthenticated);

  // The rotation: the file is replaced (as a Secret volume does) with the token the controller
  // now wants; the same Client uses it from its next call.
  WriteText(client_token + ".tmp", "the-new-token\n");
  ASSERT_EQ(::rename((client_token + ".tmp").c_str(), client_token.c_str()), 0);
  auto p = client->CreatePort(Spec("rotated"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();

  // A rotation caught half-way (an empty file) keeps the last good token rather than failing.
  WriteText(client_token, "");
  EXPECT_TRUE(client->GetPort("rotated").ok());
  // Rewritten in place with another token: used too (the controller refuses it).
  WriteText(client_token, "yet-another-token\n");
  EXPECT_CODE(client->GetPort("rotated").status(), Code::kUnauthenticated);
}

TEST_P(ClientMockTest, TlsVerifiesTheServerAgainstTheCa) {
  testing::Pki pki;
  ASSERT_TRUE(pki.error.empty()) << pki.error;
  mock::Options o = MockOptions();
  o.tls_cert_file = pki.server_cert;
  o.tls_key_file = pki.server_key;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));
  ASSERT_EQ(server_->base_url().rfind("https://", 0), 0u) << server_->base_url();

  ClientConfig c = Config();
  c.tls.ca_file = pki.ca;
  auto verified = MakeClient(c);
  ASSERT_NE(verified, nullptr);
  auto p = verified->CreatePort(Spec("tls-port"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto got = verified->GetPort("tls-port");
  ASSERT_TRUE(got.ok()) << got.status().ToString();

  // Without the CA the system store cannot vouch for the throwaway CA.
  c.tls.ca_file.clear();
  auto unverified = MakeClient(c);
  ASSERT_NE(unverified, nullptr);
  auto denied = unverified->GetPort("tls-port");
  ASSERT_FALSE(denied.ok());
  EXPECT_CODE(denied.status(), Code::kUnavailable);
  EXPECT_TRUE(Contains(denied.status().message(), "GET /project/")) << denied.status().message();
  EXPECT_TRUE(Contains(denied.status().message(), "TLS")) << denied.status().message();
  EXPECT_TRUE(Contains(denied.status().message(), "certificate")) << denied.status().message();
  EXPECT_EQ(unverified->requests_sent(), 1u) << "a certificate problem is not retried";

  c.tls.insecure_skip_verify = true;
  auto insecure = MakeClient(c);
  ASSERT_NE(insecure, nullptr);
  EXPECT_TRUE(insecure->GetPort("tls-port").ok());

  c.tls.insecure_skip_verify = false;
  c.tls.ca_file = pki.dir.path() + "/no-such-ca.crt";
  auto bad = Client::Create(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_CODE(bad.status(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status().message(), c.tls.ca_file)) << bad.status().message();
}

TEST_P(ClientMockTest, TlsChecksTheHostName) {
  // Signed by the CA the client trusts, but for another name: the host check must refuse it.
  testing::Pki pki("DNS:other.example");
  ASSERT_TRUE(pki.error.empty()) << pki.error;
  mock::Options o = MockOptions();
  o.tls_cert_file = pki.server_cert;
  o.tls_key_file = pki.server_key;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));

  ClientConfig c = Config();
  c.tls.ca_file = pki.ca;
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    c.base_url = "https://" + host + ":" + std::to_string(server_->port());
    auto client = MakeClient(c);
    ASSERT_NE(client, nullptr);
    auto denied = client->GetPort("any");
    ASSERT_FALSE(denied.ok()) << host;
    EXPECT_CODE(denied.status(), Code::kUnavailable);
    EXPECT_TRUE(Contains(denied.status().message(), "TLS")) << denied.status().message();
    EXPECT_TRUE(Contains(denied.status().message(), host)) << denied.status().message();
    EXPECT_EQ(client->requests_sent(), 1u) << "a certificate problem is not retried";
  }
  EXPECT_EQ(server_->requests(), 0u);
}

TEST_P(ClientMockTest, MutualTls) {
  testing::Pki pki;
  ASSERT_TRUE(pki.error.empty()) << pki.error;
  mock::Options o = MockOptions();
  o.tls_cert_file = pki.server_cert;
  o.tls_key_file = pki.server_key;
  o.tls_client_ca_file = pki.ca;
  ASSERT_NO_FATAL_FAILURE(StartMock(o));

  ClientConfig c = Config();
  c.tls.ca_file = pki.ca;
  c.tls.cert_file = pki.client_cert;
  c.tls.key_file = pki.client_key;
  auto with_cert = MakeClient(c);
  ASSERT_NE(with_cert, nullptr);
  auto p = with_cert->CreatePort(Spec("mtls-port"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(ServerHasPort("mtls-port"));

  c.tls.cert_file.clear();
  c.tls.key_file.clear();
  auto without = MakeClient(c);
  ASSERT_NE(without, nullptr);
  auto denied = without->GetPort("mtls-port");
  ASSERT_FALSE(denied.ok());
  EXPECT_CODE(denied.status(), Code::kUnavailable);
  EXPECT_TRUE(Contains(denied.status().message(), "GET /project/")) << denied.status().message();
}

// A loopback port nobody listens on.
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);  // bound but never listening: connections are refused
  return port;
}

TEST(ClientUnreachable, ConnectionRefusedIsUnavailableAfterRetries) {
  const int port = ClosedPort();
  ASSERT_NE(port, 0);
  ClientConfig c;
  c.base_url = "http://127.0.0.1:" + std::to_string(port) + "/";
  c.connect_timeout = milliseconds(500);
  c.request_timeout = milliseconds(1000);
  c.max_attempts = 3;
  c.retry_backoff = milliseconds(1);
  auto client = Client::Create(c);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto p = (*client)->GetPort("p");
  ASSERT_FALSE(p.ok());
  EXPECT_CODE(p.status(), Code::kUnavailable);
  EXPECT_TRUE(
      Contains(p.status().message(), "GET /project/" + std::string(kDefaultProjectId) + "/ports/p"))
      << p.status().message();
  EXPECT_EQ((*client)->requests_sent(), 3u);

  Status del = (*client)->DeletePort("p");
  EXPECT_CODE(del, Code::kUnavailable);
}

// A tiny raw HTTP server on loopback answering every request with `handler`, for answers the
// mock does not give.
class RawServer {
 public:
  explicit RawServer(httplib::Server::Handler handler) {
    server_.Get(".*", handler);
    server_.Put(".*", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound and listening already: connections wait in the backlog until the loop accepts.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~RawServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

ClientConfig RawConfig(const std::string& url) {
  ClientConfig c;
  c.base_url = url;
  c.dialect = Dialect::kAlcor;  // the port list and the partial update these servers answer
  c.connect_timeout = milliseconds(1000);
  c.request_timeout = milliseconds(3000);
  c.max_attempts = 3;
  c.retry_backoff = milliseconds(1);
  return c;
}

const char* kRawPort =
    R"({"port":{"id":"p1","project_id":"p","network_id":"n","admin_state_up":false,)"
    R"("mac_address":"0a:58:0a:00:00:05","status":"ACTIVE",)"
    R"("fixed_ips":[{"ip_address":"10.0.0.5","subnet_id":"s"}]}})";

// The fence updates ports with UpdatePort: a controller that answers the PUT with 204, or 200
// with no body, has done the update; that is a success, with the port read back.
TEST(ClientUpdate, NoContentOrEmptyBodyIsASuccess) {
  for (int status : {204, 200}) {
    SCOPED_TRACE(status);
    std::atomic<int> puts{0};
    std::atomic<int> gets{0};
    RawServer server([&](const httplib::Request& req, httplib::Response& res) {
      if (req.method == "PUT") {
        ++puts;
        res.status = status;  // no body
      } else {
        ++gets;
        res.status = 200;
        res.set_content(kRawPort, "application/json");
      }
    });
    auto client = Client::Create(RawConfig(server.url()));
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    auto updated = (*client)->UpdatePort("p1", json{{"admin_state_up", false}});
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->id, "p1");
    EXPECT_FALSE(updated->admin_state_up);
    EXPECT_EQ(puts.load(), 1) << "a success is not retried";
    EXPECT_EQ(gets.load(), 1);
  }
}

TEST(ClientUpdate, ABodyThatIsNotJsonIsStillAnError) {
  RawServer server([](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content("<html>ok</html>", "text/html");
  });
  auto client = Client::Create(RawConfig(server.url()));
  ASSERT_TRUE(client.ok());
  auto updated = (*client)->UpdatePort("p1", json{{"admin_state_up", false}});
  ASSERT_FALSE(updated.ok());
  EXPECT_CODE(updated.status(), Code::kInternal);
}

// ListPorts reads the list entry by entry as it is parsed (the fence lists 10,000 ports): what
// it returns must be what a whole-tree reading would give, whatever else the answer holds.
TEST(ClientList, EntriesAreReadOneByOneAsFromTheWholeAnswer) {
  std::atomic<int> answer{0};
  const std::vector<std::string> answers = {
      // Other members with arrays of objects, a bad entry of each kind, an entry nesting lists.
      R"({"links":[{"id":"not-a-port"}],"ports":[{"id":"p1","fixed_ips":[{"ip_address":)"
      R"("10.0.0.5"}]},7,{"id":""},[{"id":"p9"}],{"port":{"id":"p2"}}],"next":[{"id":"p8"}]})",
      // A bare array.
      R"([{"id":"p3"},null])",
      // A second "ports" member replaces the first, as in a tree.
      R"({"ports":[{"id":"p4"}],"ports":[{"id":"p5"}]})",
      // "ports" that is not an array.
      R"({"ports":{"a":{"id":"p6"}}})",
      // Cut short after two entries (retried), then whole: only the whole answer's ports count.
      R"({"ports":[{"id":"p7"},{"id":"p8"},{"id")",
      R"({"ports":[{"id":"p9"}]})",
  };
  RawServer server([&](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(answers[std::min<size_t>(answer++, answers.size() - 1)], "application/json");
  });
  auto client = Client::Create(RawConfig(server.url()));
  ASSERT_TRUE(client.ok());
  auto ids = [](const PortList& l) {
    std::vector<std::string> out;
    for (const Port& p : l.ports) out.push_back(p.id);
    return out;
  };

  auto mixed = (*client)->ListPorts();
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(ids(*mixed), (std::vector<std::string>{"p1", "p2"}));
  ASSERT_EQ(mixed->ports[0].fixed_ips.size(), 1u);
  EXPECT_EQ(mixed->ports[0].fixed_ips[0].ip_address, "10.0.0.5");
  EXPECT_EQ(mixed->unreadable,
            (std::vector<std::string>{"ports[1]: port is not an object (got number)",
                                      "ports[2]: port.id is empty",
                                      "ports[3]: port is not an object (got array)"}));

  auto bare = (*client)->ListPorts();
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(ids(*bare), (std::vector<std::string>{"p3"}));
  EXPECT_EQ(bare->unreadable,
            (std::vector<std::string>{"ports[1]: port is not an object (got null)"}));

  auto twice = (*client)->ListPorts();
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  EXPECT_EQ(ids(*twice), (std::vector<std::string>{"p5"}));

  auto not_a_list = (*client)->ListPorts();
  ASSERT_FALSE(not_a_list.ok());
  EXPECT_CODE(not_a_list.status(), Code::kInternal);
  EXPECT_TRUE(Contains(not_a_list.status().message(), "ports is not an array (got object)"))
      << not_a_list.status().message();

  const uint64_t sent = (*client)->requests_sent();
  auto retried = (*client)->ListPorts();
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ((*client)->requests_sent(), sent + 2) << "the cut-short answer is retried";
  EXPECT_EQ(ids(*retried), (std::vector<std::string>{"p9"}));
  EXPECT_TRUE(retried->unreadable.empty());
}

// A controller answering with more than max_response_bytes (or JSON nested deeper than the
// bound) gets a clear error, not the process's memory or stack.
TEST(ClientResponses, OversizedAndDeeplyNestedAnswersAreRefused) {
  const std::string huge = "{\"port\":{\"id\":\"" + std::string(8 << 20, 'x') + "\"}}";
  const std::string deep = "{\"port\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::atomic<bool> send_deep{false};
  RawServer server([&](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(send_deep ? deep : huge, "application/json");
  });
  ClientConfig c = RawConfig(server.url());
  c.max_response_bytes = 1 << 20;
  auto client = Client::Create(c);
  ASSERT_TRUE(client.ok());
  auto big = (*client)->GetPort("p1");
  ASSERT_FALSE(big.ok());
  EXPECT_CODE(big.status(), Code::kInternal);
  EXPECT_TRUE(Contains(big.status().message(), "larger than 1048576 bytes"))
      << big.status().message();
  EXPECT_EQ((*client)->requests_sent(), 1u) << "not retried: it would be as large again";

  // The same without a Content-Length (chunked): bounded as it arrives.
  RawServer chunked([&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider(
        "application/json", [&](size_t offset, httplib::DataSink& sink) {
          if (offset >= huge.size()) {
            sink.done();
            return true;
          }
          const size_t n = std::min<size_t>(65536, huge.size() - offset);
          return sink.write(huge.data() + offset, n);
        });
  });
  auto via_chunks = Client::Create([&] {
    ClientConfig cc = RawConfig(chunked.url());
    cc.max_response_bytes = 1 << 20;
    return cc;
  }());
  ASSERT_TRUE(via_chunks.ok());
  auto chunked_big = (*via_chunks)->GetPort("p1");
  ASSERT_FALSE(chunked_big.ok());
  EXPECT_CODE(chunked_big.status(), Code::kInternal);
  EXPECT_TRUE(Contains(chunked_big.status().message(), "larger than 1048576 bytes"))
      << chunked_big.status().message();

  send_deep = true;
  auto nested = (*client)->GetPort("p1");
  ASSERT_FALSE(nested.ok());
  EXPECT_CODE(nested.status(), Code::kInternal);
  EXPECT_TRUE(Contains(nested.status().message(), "deeper than 64")) << nested.status().message();
}

TEST(ClientCreate, RejectsBadConfig) {
  ClientConfig c;
  c.base_url = "ftp://example";
  EXPECT_CODE(Client::Create(c).status(), Code::kInvalidArgument);
  c.base_url = "127.0.0.1:9090";
  EXPECT_CODE(Client::Create(c).status(), Code::kInvalidArgument);
  c.base_url = "http://";
  EXPECT_CODE(Client::Create(c).status(), Code::kInvalidArgument);
  c.base_url = "http://127.0.0.1:1";
  c.max_attempts = 0;
  EXPECT_CODE(Client::Create(c).status(), Code::kInvalidArgument);
  c.max_attempts = 1;
  EXPECT_TRUE(Client::Create(c).ok());
}

}  // namespace
}  // namespace mizarmp::client
