// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// grpc.health.v1.Health as mizarmp-addons serves it (addons/health.h): Check and Watch over a
// real gRPC unix socket with stubs generated from proto/health.proto, Watch ending on cancel
// and on shutdown (never holding the drain up), and no callback-queue ("nexting") threads in
// the server, in process and in the mizarmp-addons binary.
#include <dirent.h>
#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "addons/health.h"
#include "addons/server.h"
#include "common/fileutil.h"
#include "encryptionkeyrotation/encryptionkeyrotation.grpc.pb.h"
#include "fence/fence.grpc.pb.h"
#include "health.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "mock-server/mock.h"
#include "tests/integration/fake_addons_service.h"
#include "tests/support/support.h"

namespace mizarmp::addons {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using mizarmp::testing::TempDir;
using testing::FakeService;
using namespace std::chrono_literals;

constexpr const char* kIdentityName = "identity.Identity";
constexpr const char* kFenceName = "fence.FenceController";
constexpr const char* kKeyRotationName = "encryptionkeyrotation.EncryptionKeyRotationController";

std::chrono::system_clock::time_point In(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

std::shared_ptr<grpc::Channel> Dial(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

// Check for `service`: the status, or the gRPC error code as a negative number.
int Check(Health::Stub& stub, const std::string& service) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10s));
  HealthCheckRequest req;
  req.set_service(service);
  HealthCheckResponse resp;
  grpc::Status s = stub.Check(&ctx, req, &resp);
  if (!s.ok()) return -static_cast<int>(s.error_code());
  return resp.status();
}

// An open Watch call.
struct WatchCall {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader;

  WatchCall(Health::Stub& stub, const std::string& service,
            std::chrono::milliseconds deadline = 60s) {
    ctx.set_deadline(In(deadline));
    HealthCheckRequest req;
    req.set_service(service);
    reader = stub.Watch(&ctx, req);
  }
  // The next status, or -1 when the stream ended.
  int Next() {
    HealthCheckResponse resp;
    if (!reader->Read(&resp)) return -1;
    return resp.status();
  }
};

// The names of the threads of process `pid` ("self" for this one).
std::vector<std::string> ThreadNames(const std::string& pid) {
  std::vector<std::string> names;
  const std::string dir = "/proc/" + pid + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    auto comm = ReadFile(dir + "/" + e->d_name + "/comm");
    if (comm.ok()) {
      std::string n = *comm;
      while (!n.empty() && n.back() == '\n') n.pop_back();
      names.push_back(n);
    }
  }
  ::closedir(d);
  return names;
}

bool HasNextingThread(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n.find("nexting") != std::string::npos) return true;
  }
  return false;
}

// The CSI-Addons services as mizarmp-addons registers them (the generated bases: every method
// UNIMPLEMENTED, which is all the health service needs), behind addons::Server.
class AddonsHealthServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.endpoint = "unix://" + dir_.path() + "/run/csi-addons.sock";
    so.shutdown_grace = 20s;  // long: Shutdown must not wait for open Watch calls
    so.health_watch_poll = 100ms;
    server_ = std::make_unique<Server>(so);
    server_->Register(identity_);
    server_->Register(fence_);
    server_->Register(keyrot_);
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    stub_ = Health::NewStub(Dial(server_->address()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown(2s);
  }

  TempDir dir_;
  FakeService<identity::Identity> identity_;
  FakeService<::fence::FenceController> fence_;
  FakeService<encryptionkeyrotation::EncryptionKeyRotationController> keyrot_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(AddonsHealthServerTest, RegisteredNamesAreTheGeneratedFullNames) {
  EXPECT_EQ(identity::Identity::service_full_name(), std::string(kIdentityName));
  EXPECT_EQ(::fence::FenceController::service_full_name(), std::string(kFenceName));
  EXPECT_EQ(encryptionkeyrotation::EncryptionKeyRotationController::service_full_name(),
            std::string(kKeyRotationName));
  EXPECT_EQ(Health::service_full_name(), std::string("grpc.health.v1.Health"));
}

TEST_F(AddonsHealthServerTest, CheckServingForOverallAndEveryService) {
  for (const char* name : {"", kIdentityName, kFenceName, kKeyRotationName}) {
    EXPECT_EQ(Check(*stub_, name), HealthCheckResponse::SERVING) << "\"" << name << "\"";
  }
}

TEST_F(AddonsHealthServerTest, CheckUnknownServiceIsNotFound) {
  for (const char* name : {"no.Such", "identity", "grpc.health.v1.Health", "identity.identity"}) {
    EXPECT_EQ(Check(*stub_, name), -static_cast<int>(grpc::StatusCode::NOT_FOUND)) << name;
  }
}

TEST_F(AddonsHealthServerTest, CheckFollowsSetServing) {
  server_->SetServing(false);
  for (const char* name : {"", kIdentityName, kFenceName, kKeyRotationName}) {
    EXPECT_EQ(Check(*stub_, name), HealthCheckResponse::NOT_SERVING) << "\"" << name << "\"";
  }
  server_->SetServing(true);
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub_, kFenceName), HealthCheckResponse::SERVING);
}

TEST_F(AddonsHealthServerTest, WatchSendsCurrentStatusThenEachChange) {
  WatchCall overall(*stub_, "");
  WatchCall identity(*stub_, kIdentityName);
  EXPECT_EQ(overall.Next(), HealthCheckResponse::SERVING);
  EXPECT_EQ(identity.Next(), HealthCheckResponse::SERVING);
  server_->SetServing(false);
  EXPECT_EQ(overall.Next(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(identity.Next(), HealthCheckResponse::NOT_SERVING);
  server_->SetServing(false);  // no change, no message
  server_->SetServing(true);
  EXPECT_EQ(overall.Next(), HealthCheckResponse::SERVING);
  EXPECT_EQ(identity.Next(), HealthCheckResponse::SERVING);
  overall.ctx.TryCancel();
  identity.ctx.TryCancel();
  EXPECT_EQ(overall.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(identity.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(AddonsHealthServerTest, WatchUnknownServiceStaysOpen) {
  WatchCall w(*stub_, "no.Such", /*deadline=*/1500ms);
  EXPECT_EQ(w.Next(), HealthCheckResponse::SERVICE_UNKNOWN);
  // Not ended by the server: only the client's deadline ends it.
  EXPECT_EQ(w.Next(), -1);
  EXPECT_EQ(w.reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST_F(AddonsHealthServerTest, ShutdownEndsWatchesAtOnceWithNotServing) {
  WatchCall overall(*stub_, "");
  WatchCall fence(*stub_, kFenceName);
  WatchCall unknown(*stub_, "no.Such");
  ASSERT_EQ(overall.Next(), HealthCheckResponse::SERVING);
  ASSERT_EQ(fence.Next(), HealthCheckResponse::SERVING);
  ASSERT_EQ(unknown.Next(), HealthCheckResponse::SERVICE_UNKNOWN);

  const auto start = std::chrono::steady_clock::now();
  auto shutdown = std::async(std::launch::async, [this] { server_->Shutdown(20s); });
  EXPECT_EQ(overall.Next(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(fence.Next(), HealthCheckResponse::NOT_SERVING);
  for (WatchCall* w : {&overall, &fence, &unknown}) {
    EXPECT_EQ(w->Next(), -1);  // the stream ends cleanly
    grpc::Status s = w->reader->Finish();
    EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  }
  ASSERT_EQ(shutdown.wait_for(10s), std::future_status::ready);
  // Well inside the 20 s grace: nothing waited for the open Watch calls.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(server_->running());
}

TEST_F(AddonsHealthServerTest, NoCallbackQueueThreads) {
  WatchCall w(*stub_, "");
  ASSERT_EQ(w.Next(), HealthCheckResponse::SERVING);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Check(*stub_, kIdentityName), 1);
  const auto names = ThreadNames("self");
  EXPECT_FALSE(HasNextingThread(names)) << mizarmp::Joined(names, ", ");
  w.ctx.TryCancel();
  w.reader->Finish();
}

// HealthService behind a plain grpc::Server: what addons::Server does not expose.
class AddonsHealthServiceTest : public ::testing::Test {
 protected:
  void Start(HealthOptions options) {
    health_ = std::make_unique<HealthService>(options);
    health_->AddServiceName(kIdentityName);
    grpc::ServerBuilder builder;
    address_ = "unix:" + dir_.path() + "/h.sock";
    builder.AddListeningPort(address_, grpc::InsecureServerCredentials());
    builder.RegisterService(health_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = Health::NewStub(Dial(address_));
  }
  bool WaitForWatches(int n) {
    for (int i = 0; i < 500; ++i) {
      if (health_->watches() == n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  void TearDown() override {
    if (server_) server_->Shutdown(In(2s));
  }

  TempDir dir_;
  std::string address_;
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(AddonsHealthServiceTest, NotServingUntilSetAndAfterShutdown) {
  Start({});
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check(*stub_, kIdentityName), HealthCheckResponse::NOT_SERVING);
  health_->SetServingStatus(true);
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::SERVING);
  health_->Shutdown();
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check(*stub_, kIdentityName), HealthCheckResponse::NOT_SERVING);
  health_->SetServingStatus(true);  // ignored after Shutdown
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::NOT_SERVING);
  // A Watch opened after Shutdown gets the status and ends at once.
  WatchCall w(*stub_, "");
  EXPECT_EQ(w.Next(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(w.Next(), -1);
  EXPECT_TRUE(w.reader->Finish().ok());
}

// A liveness name stays SERVING whatever SetServingStatus() says, until Shutdown().
TEST_F(AddonsHealthServiceTest, LivenessNameServesUntilShutdown) {
  Start({});
  health_->AddLivenessName("liveness");
  EXPECT_EQ(Check(*stub_, "liveness"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::NOT_SERVING);
  health_->SetServingStatus(true);
  health_->SetServingStatus(false);
  EXPECT_EQ(Check(*stub_, ""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check(*stub_, "liveness"), HealthCheckResponse::SERVING);
  health_->Shutdown();
  EXPECT_EQ(Check(*stub_, "liveness"), HealthCheckResponse::NOT_SERVING);
}

TEST_F(AddonsHealthServiceTest, CancelledWatchReturns) {
  Start({.cancel_poll = 50ms, .max_watches = 100});
  health_->SetServingStatus(true);
  WatchCall w(*stub_, kIdentityName);
  ASSERT_EQ(w.Next(), HealthCheckResponse::SERVING);
  EXPECT_EQ(health_->watches(), 1);
  w.ctx.TryCancel();
  EXPECT_EQ(w.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitForWatches(0)) << health_->watches();
}

TEST_F(AddonsHealthServiceTest, WatchesAreLimited) {
  Start({.cancel_poll = 50ms, .max_watches = 1});
  health_->SetServingStatus(true);
  WatchCall first(*stub_, "");
  ASSERT_EQ(first.Next(), HealthCheckResponse::SERVING);
  WatchCall second(*stub_, "");
  EXPECT_EQ(second.Next(), -1);
  EXPECT_EQ(second.reader->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  first.ctx.TryCancel();
  first.reader->Finish();
  ASSERT_TRUE(WaitForWatches(0));
  WatchCall third(*stub_, "");
  EXPECT_EQ(third.Next(), HealthCheckResponse::SERVING);
  third.ctx.TryCancel();
  third.reader->Finish();
}

// The binary: health for every service it serves, no nexting threads, and SIGTERM with a Watch
// open ends the Watch with NOT_SERVING and exits well before the drain's grace period.
TEST(AddonsBinaryHealth, ServesHealthWithoutCallbackThreadsAndSigtermEndsWatch) {
  mock::Options mo;
  mo.strict = true;  // the real Alcor controller's behaviour (mock-server/strict.h)
  mo.dialect = mock::Dialect::kAlcor;
  auto mock = mock::MockServer::Create(mo);
  ASSERT_TRUE(mock.ok()) << mock.status().ToString();
  ASSERT_TRUE((*mock)->Start().ok());
  TempDir dir;
  const std::string sock = dir.path() + "/csi-addons.sock";
  mizarmp::testing::Daemon server;
  ASSERT_TRUE(
      server.Start({mizarmp::testing::BinDir() + "/mizarmp-addons", "--endpoint", "unix://" + sock,
                    "--mpurl", (*mock)->base_url(), "--log-level", "debug", "--fence-store",
                    dir.path() + "/fence.db", "--state-dir", dir.path() + "/cni"},
                   dir.path() + "/addons.log"));
  const pid_t pid = server.pid();

  auto channel = Dial("unix:" + sock);
  ASSERT_TRUE(channel->WaitForConnected(In(20s)))
      << "server did not come up; log: " << ReadFile(dir.path() + "/addons.log").value();
  auto stub = Health::NewStub(channel);
  // Alive from the start; "" follows readiness, so it serves once the fence store has opened
  // (Identity's background evaluation runs every second while not ready).
  EXPECT_EQ(Check(*stub, "liveness"), HealthCheckResponse::SERVING);
  for (int i = 0; i < 200 && Check(*stub, "") != HealthCheckResponse::SERVING; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  // Controller mode (the default) serves Identity and the FenceController.
  EXPECT_EQ(Check(*stub, ""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, kIdentityName), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, kFenceName), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, kKeyRotationName), -static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(Check(*stub, "no.Such"), -static_cast<int>(grpc::StatusCode::NOT_FOUND));

  auto w = std::make_unique<WatchCall>(*stub, "");
  ASSERT_EQ(w->Next(), HealthCheckResponse::SERVING);
  auto identity = identity::Identity::NewStub(channel);
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext ctx;
    identity::GetIdentityResponse resp;
    ASSERT_TRUE(identity->GetIdentity(&ctx, {}, &resp).ok());
  }
  const auto names = ThreadNames(std::to_string(pid));
  ASSERT_FALSE(names.empty());
  EXPECT_FALSE(HasNextingThread(names)) << mizarmp::Joined(names, ", ");

  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(w->Next(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(w->Next(), -1);
  grpc::Status s = w->reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  // The drain also waits for clients to close their connections after the server's GOAWAY; a
  // client keeping an idle channel holds it for seconds (with or without a health service), so
  // let go of ours as any client would.
  w.reset();
  identity.reset();
  stub.reset();
  channel.reset();
  const int raw = server.Wait(30s);
  ASSERT_NE(raw, -1) << "mizarmp-addons did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(raw)) << raw;
  EXPECT_EQ(WEXITSTATUS(raw), 0);
  // The default grace is 10 s; an open Watch must not have held the drain up to it.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(::access(sock.c_str(), F_OK), 0) << "socket left behind";
}

}  // namespace
}  // namespace mizarmp::addons
