// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Identity service over a real gRPC unix socket (in-process server, generated C++ stub),
// the server's socket handling, health service and service lifecycle, and the mizarmp-addons
// binary's shutdown.
#include <arpa/inet.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <set>
#include <thread>

#include "addons/identity.h"
#include "addons/server.h"
#include "common/fd.h"
#include "common/fileutil.h"
#include "common/version.h"
#include "encryptionkeyrotation/encryptionkeyrotation.grpc.pb.h"
#include "fence/fence.grpc.pb.h"
#include "health.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "mizarmp-client/mizarmp_check.h"
#include "mock-server/mock.h"
#include "tests/integration/fake_addons_service.h"
#include "tests/support/support.h"

namespace mizarmp::addons {
namespace {

using mizarmp::testing::TempDir;
using testing::FakeComponent;
using testing::FakeService;
using testing::NetworkFenceCapabilities;
using FakeFence = FakeService<::fence::FenceController>;
using FakeKeyRotation = FakeService<encryptionkeyrotation::EncryptionKeyRotationController>;
using namespace std::chrono_literals;

// A TCP port on loopback that nothing listens on (bound, then closed).
int ClosedPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 1;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

std::shared_ptr<grpc::Channel> Dial(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

std::unique_ptr<identity::Identity::Stub> IdentityStub(const std::string& address) {
  return identity::Identity::NewStub(Dial(address));
}

// The options of a mock that plays a real controller generation (strict, mock-server/strict.h);
// by default Alcor's, the generation whose port list the addons server fences from.
mock::Options StrictMock(mock::Dialect dialect = mock::Dialect::kAlcor) {
  mock::Options o;
  o.strict = true;
  o.dialect = dialect;
  return o;
}

std::unique_ptr<mock::MockServer> StartMock(mock::Options options = StrictMock()) {
  auto m = mock::MockServer::Create(std::move(options));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  Status s = (*m)->Start();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::move(m).value();
}

IdentityOptions OptionsFor(const std::string& url) {
  IdentityOptions o;
  o.mizarmp_url = url;
  return o;
}

// The Mizar-MP check of the mock at `url`, as the FenceController owns it.
client::MizarMpCheckOptions CheckOptionsFor(const std::string& url) {
  client::MizarMpCheckOptions o;
  o.mizarmp.base_url = url;
  o.mizarmp.project_id = mock::Options().project_id;
  o.subnet_id = mock::Options().subnet_id;
  return o;
}

// How the services that call Mizar-MP report their check (fence/service/fence_service.cc).
ReadinessCheck MizarMpReadiness(client::MizarMpCheck& check) {
  return {client::kMizarMpDependency, [&check] { return Readiness::Of(check.Check()); },
          /*message_names_dependency=*/true};
}

// One raw call: serialized request bytes in, serialized response bytes out (for services whose
// generated stubs the project does not build: health, reflection). It runs on the calling
// thread's own completion queue, not the callback API: gRPC's callback thread would hand the
// call objects over through synchronisation ThreadSanitizer cannot see (the tsan pass).
Result<std::string> RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel,
                                 const std::string& method, const std::string& request_bytes) {
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&ctx, method, request, &cq);
  call->StartCall();
  grpc::Status s;
  int finished = 0;
  call->Finish(&response, &s, &finished);
  void* tag = nullptr;
  bool ok = false;
  if (!cq.Next(&tag, &ok) || tag != &finished || !ok) return InternalError(method + ": call lost");
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (!s.ok()) return Status(static_cast<Code>(s.error_code()), s.error_message());
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return InternalError(method + ": unreadable response");
  std::string bytes;
  for (const auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  return bytes;
}

// grpc.health.v1.Health/Check for `service`: the request is {string service = 1}, the response
// {ServingStatus status = 1} (SERVING = 1, NOT_SERVING = 2).
Result<int> HealthCheck(const std::shared_ptr<grpc::Channel>& channel, const std::string& service) {
  std::string req;
  if (!service.empty()) {
    req.push_back(0x0a);
    req.push_back(static_cast<char>(service.size()));
    req += service;
  }
  MZ_ASSIGN_OR_RETURN(std::string bytes,
                      RawUnaryCall(channel, "/grpc.health.v1.Health/Check", req));
  if (bytes.empty()) return 0;  // UNKNOWN
  if (bytes.size() != 2 || bytes[0] != 0x08) return InternalError("health: unexpected response");
  return static_cast<int>(bytes[1]);
}

class IdentityServerTest : public ::testing::Test {
 protected:
  // The controller generation the mock plays.
  virtual mock::Dialect dialect() const { return mock::Dialect::kAlcor; }

  void SetUp() override {
    mock_ = StartMock(StrictMock(dialect()));
    ASSERT_NE(mock_, nullptr);
    socket_path_ = dir_.path() + "/run/addons/csi-addons.sock";
    endpoint_ = "unix://" + socket_path_;
    mizarmp_check_options_ = CheckOptionsFor(mock_->base_url());
  }

  // Starts Identity on the unix socket, over a service standing in for the FenceController
  // (its capabilities, `checks`, then its Mizar-MP check of mizarmp_check_options_) unless
  // `with_fence` is false.
  void StartServer(IdentityOptions options, bool with_fence = true,
                   std::vector<ReadinessCheck> checks = {}) {
    std::vector<AddonsService*> services;
    if (with_fence) {
      mizarmp_check_ = std::make_unique<client::MizarMpCheck>(mizarmp_check_options_);
      checks.push_back(MizarMpReadiness(*mizarmp_check_));
      fence_ = std::make_unique<FakeFence>(NetworkFenceCapabilities(), std::move(checks));
      services.push_back(fence_.get());
    }
    identity_ = std::make_unique<IdentityService>(std::move(options), services);
    ServerOptions so;
    so.endpoint = endpoint_;
    so.shutdown_grace = 2s;
    server_ = std::make_unique<Server>(so);
    server_->Register(*identity_);
    for (AddonsService* service : services) server_->Register(*service);
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    stub_ = IdentityStub(server_->address());
  }

  void TearDown() override {
    if (server_) server_->Shutdown(2s);
  }

  TempDir dir_;
  std::unique_ptr<mock::MockServer> mock_;
  std::string socket_path_;
  std::string endpoint_;
  client::MizarMpCheckOptions mizarmp_check_options_;
  std::unique_ptr<client::MizarMpCheck> mizarmp_check_;  // the fence's, before the fence
  std::unique_ptr<FakeFence> fence_;
  std::unique_ptr<IdentityService> identity_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<identity::Identity::Stub> stub_;
};

// The tests of Probe's Mizar-MP check (a GET of the subnet), against each real generation.
class IdentityProbeTest : public IdentityServerTest,
                          public ::testing::WithParamInterface<mock::Dialect> {
 protected:
  mock::Dialect dialect() const override { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Generations, IdentityProbeTest,
                         ::testing::Values(mock::Dialect::kV01, mock::Dialect::kAlcor),
                         [](const auto& param_info) {
                           return std::string(param_info.param == mock::Dialect::kV01 ? "V01"
                                                                                      : "Alcor");
                         });

TEST_F(IdentityServerTest, GetIdentity) {
  StartServer(OptionsFor(mock_->base_url()));
  grpc::ClientContext ctx;
  identity::GetIdentityResponse resp;
  grpc::Status s = stub_->GetIdentity(&ctx, identity::GetIdentityRequest(), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.name(), "mizarmp.csi-addons.mizar.io");
  EXPECT_EQ(resp.vendor_version(), Version());
  EXPECT_EQ(resp.manifest().at("mizarmp-url"), mock_->base_url());
  EXPECT_EQ(resp.manifest().at("commit"), GitCommit());
  EXPECT_FALSE(resp.manifest().at("commit").empty());
  EXPECT_EQ(resp.manifest().at("mode"), "controller");
  EXPECT_EQ(resp.manifest().size(), 3u);
}

TEST_F(IdentityServerTest, CapabilitiesInControllerMode) {
  StartServer(OptionsFor(mock_->base_url()));
  grpc::ClientContext ctx;
  identity::GetCapabilitiesResponse resp;
  ASSERT_TRUE(stub_->GetCapabilities(&ctx, {}, &resp).ok());
  std::set<std::string> got;
  for (const auto& c : resp.capabilities()) {
    if (c.has_service()) {
      got.insert("service:" + identity::Capability::Service::Type_Name(c.service().type()));
    } else if (c.has_network_fence()) {
      got.insert("fence:" +
                 identity::Capability::NetworkFence::Type_Name(c.network_fence().type()));
    } else {
      got.insert("other:" + c.ShortDebugString());
    }
  }
  EXPECT_EQ(got, (std::set<std::string>{"service:CONTROLLER_SERVICE", "fence:NETWORK_FENCE"}));
  EXPECT_EQ(resp.capabilities_size(), 2);  // no duplicates
}

TEST_F(IdentityServerTest, NodeModeAdvertisesNodeService) {
  IdentityOptions o = OptionsFor(mock_->base_url());
  o.mode = Mode::kNode;
  StartServer(o, /*with_fence=*/false);
  grpc::ClientContext ctx;
  identity::GetCapabilitiesResponse resp;
  ASSERT_TRUE(stub_->GetCapabilities(&ctx, {}, &resp).ok());
  ASSERT_EQ(resp.capabilities_size(), 1);
  EXPECT_EQ(resp.capabilities(0).service().type(), identity::Capability::Service::NODE_SERVICE);
  grpc::ClientContext ctx2;
  identity::GetIdentityResponse id;
  ASSERT_TRUE(stub_->GetIdentity(&ctx2, {}, &id).ok());
  EXPECT_EQ(id.manifest().at("mode"), "node");
}

TEST_P(IdentityProbeTest, ProbeReadyWithMizarMp) {
  StartServer(OptionsFor(mock_->base_url()));
  grpc::ClientContext ctx;
  identity::ProbeResponse resp;
  grpc::Status s = stub_->Probe(&ctx, {}, &resp);
  ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  ASSERT_TRUE(resp.has_ready());
  EXPECT_TRUE(resp.ready().value());
}

// Probe over the wire: its status, whether it said ready and why not (its trailing metadata).
struct Probed {
  grpc::Status status;
  bool has_ready = false;
  bool ready = false;
  std::string why;
};

Probed ProbeOnce(identity::Identity::Stub& stub) {
  grpc::ClientContext ctx;
  identity::ProbeResponse resp;
  Probed p;
  p.status = stub.Probe(&ctx, {}, &resp);
  p.has_ready = resp.has_ready();
  p.ready = resp.ready().value();
  const auto& trailing = ctx.GetServerTrailingMetadata();
  if (auto it = trailing.find("mizarmp-not-ready"); it != trailing.end()) {
    p.why.assign(it->second.data(), it->second.size());
  }
  return p;
}

// An unusable dependency makes Probe answer ready=false, never an error: the CSI-Addons sidecar
// exits on any Probe error but DEADLINE_EXCEEDED and retries every second on ready=false
// (kubernetes-csi-addons sidecar/internal/client/client.go).
TEST_F(IdentityServerTest, ProbeNotReadyWhenMizarMpUnreachable) {
  const std::string unreachable = "http://127.0.0.1:" + std::to_string(ClosedPort());
  mizarmp_check_options_ = CheckOptionsFor(unreachable);
  StartServer(OptionsFor(unreachable));
  const Probed p = ProbeOnce(*stub_);
  ASSERT_TRUE(p.status.ok()) << p.status.error_code() << " " << p.status.error_message();
  ASSERT_TRUE(p.has_ready);
  EXPECT_FALSE(p.ready);
  EXPECT_EQ(p.why.rfind("Mizar-MP at ", 0), 0u) << p.why;
}

TEST_P(IdentityProbeTest, ProbeNotReadyWhenSubnetMissing) {
  mizarmp_check_options_.subnet_id = "00000000-0000-0000-0000-000000000000";
  StartServer(OptionsFor(mock_->base_url()));
  const Probed p = ProbeOnce(*stub_);
  ASSERT_TRUE(p.status.ok()) << p.status.error_message();
  EXPECT_FALSE(p.ready);
  EXPECT_NE(p.why.find("subnet"), std::string::npos) << p.why;
}

TEST_F(IdentityServerTest, ProbeFollowsReadinessChecks) {
  std::atomic<int> state{0};  // 0 opening, 1 open, 2 broken
  StartServer(OptionsFor(mock_->base_url()), /*with_fence=*/true,
              {{"fence store", [&state] {
                  switch (state.load()) {
                    case 0:
                      return Readiness::Initializing();
                    case 1:
                      return Readiness::Ready();
                    default:
                      return Readiness::Failed(DataLossError("database disk image is malformed"));
                  }
                }}});
  auto probe = [&](identity::ProbeResponse* resp) {
    grpc::ClientContext ctx;
    return stub_->Probe(&ctx, {}, resp);
  };
  identity::ProbeResponse r0;
  ASSERT_TRUE(probe(&r0).ok());
  ASSERT_TRUE(r0.has_ready());
  EXPECT_FALSE(r0.ready().value());

  state = 1;
  identity::ProbeResponse r1;
  ASSERT_TRUE(probe(&r1).ok());
  EXPECT_TRUE(r1.ready().value());

  state = 2;
  const Probed p = ProbeOnce(*stub_);
  ASSERT_TRUE(p.status.ok()) << p.status.error_message();
  EXPECT_FALSE(p.ready);
  EXPECT_EQ(p.why, "fence store: database disk image is malformed");

  state = 1;
  const Probed back = ProbeOnce(*stub_);
  ASSERT_TRUE(back.status.ok());
  EXPECT_TRUE(back.ready);
  EXPECT_EQ(back.why, "");
}

TEST_P(IdentityProbeTest, ProbeStormMakesOneRestCallPerCacheWindow) {
  mizarmp_check_options_.cache_ttl = std::chrono::hours(1);  // the test is inside one window
  IdentityOptions o = OptionsFor(mock_->base_url());
  o.readiness_interval = 0ms;  // no background check: only the storm counts
  StartServer(o);
  const uint64_t before = mock_->requests();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto stub = IdentityStub(server_->address());
      for (int i = 0; i < 25; ++i) {
        grpc::ClientContext ctx;
        identity::ProbeResponse resp;
        if (stub->Probe(&ctx, {}, &resp).ok() && resp.ready().value()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_EQ(mizarmp_check_->calls(), 1u);
  EXPECT_EQ(mock_->requests() - before, 1u);
}

TEST_F(IdentityServerTest, UnservedServiceIsUnimplemented) {
  StartServer(OptionsFor(mock_->base_url()));
  auto stub =
      encryptionkeyrotation::EncryptionKeyRotationController::NewStub(Dial(server_->address()));
  grpc::ClientContext ctx;
  encryptionkeyrotation::EncryptionKeyRotateRequest req;
  req.set_volume_id("v1");
  encryptionkeyrotation::EncryptionKeyRotateResponse resp;
  EXPECT_EQ(stub->EncryptionKeyRotate(&ctx, req, &resp).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(IdentityServerTest, SocketIsPrivate) {
  StartServer(OptionsFor(mock_->base_url()));
  struct stat st {};
  ASSERT_EQ(::lstat(socket_path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  struct stat dst {};
  ASSERT_EQ(::stat(DirName(socket_path_).c_str(), &dst), 0);
  EXPECT_EQ(dst.st_mode & 07777, 0700u);  // created by the server
}

TEST_F(IdentityServerTest, HealthServing) {
  StartServer(OptionsFor(mock_->base_url()));
  auto channel = Dial(server_->address());
  auto overall = HealthCheck(channel, "");
  ASSERT_TRUE(overall.ok()) << overall.status().ToString();
  EXPECT_EQ(*overall, 1);  // SERVING
  auto svc = HealthCheck(channel, "identity.Identity");
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  EXPECT_EQ(*svc, 1);
  auto unknown = HealthCheck(channel, "no.Such");
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);

  server_->SetServing(false);
  auto down = HealthCheck(channel, "");
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(*down, 2);  // NOT_SERVING
  // What a livenessProbe asks stays SERVING: not ready is no reason to restart.
  auto alive = HealthCheck(channel, kLivenessHealthName);
  ASSERT_TRUE(alive.ok()) << alive.status().ToString();
  EXPECT_EQ(*alive, 1);
}

// Wired as main() wires it, grpc.health.v1 follows readiness: NOT_SERVING until the first
// evaluation and while a dependency is not ready, found by the background evaluation without
// any Probe; "liveness" SERVING throughout. The metrics say which dependency.
TEST_F(IdentityServerTest, HealthFollowsReadinessWithoutProbes) {
  std::atomic<bool> store_ok{true};
  mizarmp_check_ = std::make_unique<client::MizarMpCheck>(mizarmp_check_options_);
  fence_ = std::make_unique<FakeFence>(
      NetworkFenceCapabilities(),
      std::vector<ReadinessCheck>{{"fence store",
                                   [&store_ok] {
                                     return store_ok ? Readiness::Ready()
                                                     : Readiness::Failed(
                                                           UnavailableError("etcd at x: down"));
                                   }},
                                  MizarMpReadiness(*mizarmp_check_)});
  IdentityOptions o = OptionsFor(mock_->base_url());
  o.readiness_interval = 50ms;
  identity_ = std::make_unique<IdentityService>(o, std::vector<AddonsService*>{fence_.get()});
  ServerOptions so;
  so.endpoint = endpoint_;
  so.metrics_address = "127.0.0.1:0";
  server_ = std::make_unique<Server>(so);
  server_->SetServing(false);
  identity_->OnReadinessChange([this](bool ready) { server_->SetServing(ready); });
  server_->Register(*identity_);
  server_->Register(*fence_);
  ASSERT_TRUE(server_->Start().ok());
  auto channel = Dial(server_->address());
  auto status_of = [&](const std::string& name) {
    auto r = HealthCheck(channel, name);
    return r.ok() ? *r : -1;
  };
  // Waits on the health service's own Watch stream for `want` (the event a probe would see),
  // bounded only by a deadline far beyond any evaluation, so a loaded machine cannot fail it.
  auto eventually = [&](const std::string& name, int want) {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(name);
    auto stream = stub->Watch(&ctx, req);
    grpc::health::v1::HealthCheckResponse update;
    int seen = -1;
    while (seen != want && stream->Read(&update)) seen = update.status();
    ctx.TryCancel();
    return seen;
  };
  EXPECT_EQ(eventually("", 1), 1);
  EXPECT_EQ(status_of("fence.FenceController"), 1);

  store_ok = false;
  EXPECT_EQ(eventually("", 2), 2);
  EXPECT_EQ(status_of("identity.Identity"), 2);
  EXPECT_EQ(status_of(kLivenessHealthName), 1);
  std::string metrics;
  EXPECT_EQ(mizarmp::testing::Shell("curl -sS --fail --max-time 10 http://127.0.0.1:" +
                                        std::to_string(server_->metrics_port()) + "/metrics",
                                    &metrics),
            0)
      << metrics;
  EXPECT_NE(metrics.find("mizarmp_addons_ready 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("mizarmp_addons_dependency_ready{dependency=\"fence store\"} 0"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("mizarmp_addons_dependency_ready{dependency=\"Mizar-MP\"} 1"),
            std::string::npos)
      << metrics;

  store_ok = true;
  EXPECT_EQ(eventually("", 1), 1);
  EXPECT_EQ(status_of(kLivenessHealthName), 1);
}

TEST_F(IdentityServerTest, StaleSocketIsReplaced) {
  // A socket file that nothing listens on, as a crashed server leaves behind.
  ASSERT_TRUE(MakeDirs(DirName(socket_path_), 0700).ok());
  {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_path_.c_str(), sizeof(a.sun_path) - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  }
  // Left world-accessible, so the replacement is visible in the mode (inode numbers may be
  // reused at once, so they prove nothing).
  ASSERT_EQ(::chmod(socket_path_.c_str(), 0666), 0);

  StartServer(OptionsFor(mock_->base_url()));
  grpc::ClientContext ctx;
  identity::GetIdentityResponse resp;
  EXPECT_TRUE(stub_->GetIdentity(&ctx, {}, &resp).ok());
  struct stat st2 {};
  ASSERT_EQ(::lstat(socket_path_.c_str(), &st2), 0);
  EXPECT_TRUE(S_ISSOCK(st2.st_mode));
  EXPECT_EQ(st2.st_mode & 07777, 0600u);
}

TEST_F(IdentityServerTest, RefusesNonSocketPath) {
  ASSERT_TRUE(MakeDirs(DirName(socket_path_), 0700).ok());
  ASSERT_TRUE(WriteFileAtomic(socket_path_, "precious data").ok());
  IdentityService id(OptionsFor(mock_->base_url()), {});  // outlives the Server
  ServerOptions so;
  so.endpoint = endpoint_;
  Server server(so);
  server.Register(id);
  Status s = server.Start();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find(socket_path_), std::string::npos) << s.ToString();
  auto still = ReadFile(socket_path_);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(*still, "precious data");
}

// Start() of a fresh server (Identity only) on `endpoint`: the status it returned.
Status StartOn(const std::string& endpoint, const std::string& mpurl) {
  ServerOptions so;
  so.endpoint = endpoint;
  // Declared first: a registered service must outlive the Server, whose destructor stops it.
  IdentityService id(OptionsFor(mpurl), {});
  Server server(so);
  server.Register(id);
  return server.Start();
}

// The refusal names the path and the problem.
void ExpectUnsafe(const Status& s, const std::string& path, const std::string& problem) {
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("\"" + path + "\""), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(problem), std::string::npos) << s.ToString();
}

// A socket directory that is a symlink (to a directory that would pass every other check) is
// refused, and no socket appears behind it.
TEST_F(IdentityServerTest, RefusesSymlinkedSocketDirectory) {
  const std::string real = dir_.path() + "/real";
  ASSERT_TRUE(MakeDirs(real, 0700).ok());
  const std::string link = dir_.path() + "/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ExpectUnsafe(StartOn("unix://" + link + "/csi-addons.sock", mock_->base_url()), link, "symlink");
  EXPECT_NE(::access((real + "/csi-addons.sock").c_str(), F_OK), 0) << "socket made through it";
}

// A socket path that is a symlink is neither followed nor replaced, even when it points at a
// stale socket that would otherwise be swept.
TEST_F(IdentityServerTest, RefusesSymlinkAsSocketPath) {
  ASSERT_TRUE(MakeDirs(DirName(socket_path_), 0700).ok());
  const std::string target = dir_.path() + "/elsewhere.sock";
  {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, target.c_str(), sizeof(a.sun_path) - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  }
  ASSERT_EQ(::symlink(target.c_str(), socket_path_.c_str()), 0);
  ExpectUnsafe(StartOn(endpoint_, mock_->base_url()), socket_path_, "symlink");
  struct stat st {};
  ASSERT_EQ(::lstat(socket_path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink was replaced";
  ASSERT_EQ(::lstat(target.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode)) << "the symlink's target was removed";
}

// A directory others may write to (or only its group) is refused and left as it was: the
// server does not chmod what it did not create.
TEST_F(IdentityServerTest, RefusesSocketDirectoryWritableByOthers) {
  const std::string dir = DirName(socket_path_);
  ASSERT_TRUE(MakeDirs(dir, 0700).ok());
  for (mode_t mode : {0770, 0707, 01777}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    ExpectUnsafe(StartOn(endpoint_, mock_->base_url()), dir, "writable by group or others");
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, mode);
    EXPECT_NE(::access(socket_path_.c_str(), F_OK), 0) << "socket made in it";
  }
  // Read and search for others is fine: only writing lets them swap the socket.
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_TRUE(StartOn(endpoint_, mock_->base_url()).ok());
}

// A directory owned by another user is refused (needs root to make one).
TEST_F(IdentityServerTest, RefusesSocketDirectoryOwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown the directory";
  const std::string dir = DirName(socket_path_);
  ASSERT_TRUE(MakeDirs(dir, 0700).ok());
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  ExpectUnsafe(StartOn(endpoint_, mock_->base_url()), dir, "owned by uid 65534");
  EXPECT_NE(::access(socket_path_.c_str(), F_OK), 0) << "socket made in it";
}

// A missing directory is created 0700 and owned by us.
TEST_F(IdentityServerTest, MissingSocketDirectoryIsCreatedPrivate) {
  StartServer(OptionsFor(mock_->base_url()));
  struct stat st {};
  ASSERT_EQ(::lstat(DirName(socket_path_).c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST_F(IdentityServerTest, SecondServerOnLiveSocketRefuses) {
  StartServer(OptionsFor(mock_->base_url()));
  ServerOptions so;
  so.endpoint = endpoint_;
  Server second(so);
  IdentityService id(OptionsFor(mock_->base_url()), {});
  second.Register(id);
  Status s = second.Start();
  EXPECT_EQ(s.code(), Code::kAlreadyExists) << s.ToString();
  // The first server still owns the socket and answers.
  grpc::ClientContext ctx;
  identity::GetIdentityResponse resp;
  EXPECT_TRUE(stub_->GetIdentity(&ctx, {}, &resp).ok());
}

TEST_F(IdentityServerTest, ReflectionListsServices) {
  StartServer(OptionsFor(mock_->base_url()));
  // ServerReflectionRequest{list_services: ""} (field 7, length-delimited, empty), sent on the
  // bidi stream as a single message; the response lists the service names.
  auto resp = RawUnaryCall(Dial(server_->address()),
                           "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                           std::string("\x3a\x00", 2));
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_NE(resp->find("identity.Identity"), std::string::npos);
  EXPECT_NE(resp->find("grpc.health.v1.Health"), std::string::npos);
}

// The FileDescriptorProtos a reflection answer for `symbol` carries, the file defining it first
// and then its dependencies. ServerReflectionRequest{file_containing_symbol = 4}; the answer's
// file_descriptor_response (4) holds repeated bytes file_descriptor_proto (1). Parsed as unknown
// fields: the reflection protos' generated code is not in Debian's packages.
Result<std::vector<google::protobuf::FileDescriptorProto>> ReflectedFiles(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& symbol) {
  std::string request = {0x22, static_cast<char>(symbol.size())};  // symbols under 128 bytes
  request += symbol;
  MZ_ASSIGN_OR_RETURN(
      std::string bytes,
      RawUnaryCall(channel, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                   request));
  google::protobuf::UnknownFieldSet answer;
  if (!answer.ParseFromString(bytes)) return InternalError("reflection: unparsable answer");
  std::vector<google::protobuf::FileDescriptorProto> files;
  for (int i = 0; i < answer.field_count(); ++i) {
    const google::protobuf::UnknownField& field = answer.field(i);
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
    if (field.number() == 7) return NotFoundError("reflection: error response for " + symbol);
    if (field.number() != 4) continue;
    google::protobuf::UnknownFieldSet response;
    if (!response.ParseFromString(field.length_delimited())) {
      return InternalError("reflection: unparsable file_descriptor_response");
    }
    for (int j = 0; j < response.field_count(); ++j) {
      if (response.field(j).number() != 1) continue;
      google::protobuf::FileDescriptorProto file;
      if (!file.ParseFromString(response.field(j).length_delimited())) {
        return InternalError("reflection: unparsable FileDescriptorProto");
      }
      files.push_back(std::move(file));
    }
  }
  return files;
}

// proto/ is the include root, so the CSI-Addons descriptors carry the file names, packages and
// go_package options of csi-addons/spec (which protoc compiles from its repository root): what a
// client sees through gRPC reflection, and the generated pool.
TEST_F(IdentityServerTest, ReflectionNamesTheProtoFilesAsTheSpecDoes) {
  StartServer(OptionsFor(mock_->base_url()));
  struct Expected {
    const char* symbol;
    const google::protobuf::FileDescriptor* generated;
    const char* file;
    const char* package;
    const char* go_package;
    const char* first_dependency;
  };
  const Expected expected[] = {
      {"identity.Identity", identity::ProbeRequest::descriptor()->file(), "identity/identity.proto",
       "identity", ".;identity", "google/protobuf/wrappers.proto"},
      {"fence.FenceController", ::fence::CIDR::descriptor()->file(), "fence/fence.proto", "fence",
       "github.com/csi-addons/spec/lib/go/fence",
       "github.com/container-storage-interface/spec/lib/go/csi/csi.proto"},
      {"encryptionkeyrotation.EncryptionKeyRotationController",
       encryptionkeyrotation::EncryptionKeyRotateRequest::descriptor()->file(),
       "encryptionkeyrotation/encryptionkeyrotation.proto", "encryptionkeyrotation",
       "github.com/csi-addons/spec/lib/go/encryptionkeyrotation",
       "github.com/container-storage-interface/spec/lib/go/csi/csi.proto"},
  };
  auto channel = Dial(server_->address());
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.symbol);
    EXPECT_EQ(e.generated->name(), e.file);
    auto files = ReflectedFiles(channel, e.symbol);
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    ASSERT_FALSE(files->empty());
    const google::protobuf::FileDescriptorProto& file = files->front();
    EXPECT_EQ(file.name(), e.file);
    EXPECT_EQ(file.package(), e.package);
    EXPECT_EQ(file.options().go_package(), e.go_package);
    ASSERT_GE(file.dependency_size(), 1);
    EXPECT_EQ(file.dependency(0), e.first_dependency);
  }
  // Capability.VolumeReplication.Type as the spec has it now.
  EXPECT_EQ(identity::Capability::VolumeReplication::GET_REPLICATION_DESTINATION_INFO, 2);
}

TEST_F(IdentityServerTest, ShutdownRemovesSocket) {
  StartServer(OptionsFor(mock_->base_url()));
  ASSERT_EQ(::access(socket_path_.c_str(), F_OK), 0);
  server_->Shutdown(2s);
  EXPECT_NE(::access(socket_path_.c_str(), F_OK), 0);
  server_->Shutdown(2s);  // idempotent
}

// Plaintext tcp:// only when asked (insecure_tcp, tests only), and even then only when the
// services authenticate every request by its secrets.
TEST(AddonsTcpServer, InsecureTcpOnlyWhenAsked) {
  IdentityService id(IdentityOptions{}, {});
  {
    ServerOptions so;
    so.endpoint = "tcp://127.0.0.1:0";
    so.requests_need_secrets = true;
    Server server(so);
    server.Register(id);
    EXPECT_EQ(server.Start().code(), Code::kInvalidArgument);
  }
  ServerOptions so;
  so.endpoint = "tcp://127.0.0.1:0";
  so.insecure_tcp = true;
  so.requests_need_secrets = true;
  Server server(so);
  server.Register(id);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_GT(server.port(), 0);
  auto stub = IdentityStub(server.address());
  grpc::ClientContext ctx;
  identity::GetIdentityResponse resp;
  EXPECT_TRUE(stub->GetIdentity(&ctx, {}, &resp).ok());
  // A second server cannot share the port (no SO_REUSEPORT).
  ServerOptions so2 = so;
  so2.endpoint = "tcp://127.0.0.1:" + std::to_string(server.port());
  Server second(so2);
  second.Register(id);
  EXPECT_FALSE(second.Start().ok());
}

// The framework itself refuses a tcp:// endpoint nobody authenticates on (neither client
// certificates nor request secrets), whoever composed its options: nothing listens afterwards.
TEST(AddonsTcpServer, TcpWithoutClientAuthenticationRefused) {
  IdentityService id(IdentityOptions{}, {});
  const int port = ClosedPort();
  ServerOptions so;
  so.endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  so.insecure_tcp = true;
  Server server(so);
  server.Register(id);
  const Status s = server.Start();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("tlsClientCaFile"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("secretsFile"), std::string::npos) << s.message();
  EXPECT_FALSE(server.running());
  auto stub = IdentityStub("127.0.0.1:" + std::to_string(port));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 2s);
  identity::GetIdentityResponse resp;
  EXPECT_EQ(stub->GetIdentity(&ctx, {}, &resp).error_code(), grpc::StatusCode::UNAVAILABLE);
}

// What the services advertise, Identity advertises: the service type first, then each
// service's capabilities in order, each once.
TEST(AddonsIdentity, CapabilitiesAreTheUnionOfTheServices) {
  identity::Capability rotation;
  rotation.mutable_encryption_key_rotation()->set_type(
      identity::Capability::EncryptionKeyRotation::ENCRYPTIONKEYROTATION);
  FakeFence fence(NetworkFenceCapabilities());
  FakeKeyRotation keyrot({rotation, NetworkFenceCapabilities()[0]});
  IdentityService id(IdentityOptions{}, {&fence, &keyrot});
  identity::GetCapabilitiesRequest req;
  identity::GetCapabilitiesResponse resp;
  ASSERT_TRUE(id.GetCapabilities(nullptr, &req, &resp).ok());
  std::vector<std::string> got;
  for (const auto& c : resp.capabilities()) got.push_back(c.ShortDebugString());
  EXPECT_EQ(got,
            (std::vector<std::string>{"service { type: CONTROLLER_SERVICE }",
                                      "network_fence { type: NETWORK_FENCE }",
                                      "encryption_key_rotation { type: ENCRYPTIONKEYROTATION }"}));
  EXPECT_EQ(id.health_name(), "identity.Identity");
}

// Probe asks every service's checks in order, then the other components': the first failing one
// names itself, any one still initialising makes it not ready.
TEST(AddonsIdentity, ProbeAsksEveryServicesChecks) {
  Readiness first = Readiness::Ready();
  Readiness second = Readiness::Ready();
  Readiness third = Readiness::Ready();
  FakeFence fence({}, {{"fence store", [&first] { return first; }}});
  FakeKeyRotation keyrot({}, {{"key store", [&second] { return second; }}});
  FakeComponent relay("relay", {{"relay", [&third] { return third; }}});
  // Nothing but the given checks: the framework knows no Mizar-MP.
  IdentityService id(IdentityOptions{}, {&fence, &keyrot}, {&relay});
  std::vector<bool> heard;  // what the listener was told
  id.OnReadinessChange([&heard](bool ready) { heard.push_back(ready); });
  ReadinessReport ready = id.CheckReady();
  EXPECT_TRUE(ready.ready);
  EXPECT_EQ(ready.Reason(), "");
  std::vector<std::string> names;
  for (const auto& d : ready.dependencies) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fence store", "key store", "relay"}));

  third = Readiness::Failed(FailedPreconditionError("socket gone"));
  ready = id.CheckReady();
  EXPECT_FALSE(ready.ready);
  EXPECT_EQ(ready.Reason(), "relay: socket gone");
  EXPECT_EQ(ready.dependencies[2].state, DependencyReadiness::State::kFailed);
  third = Readiness::Ready();
  ready = id.CheckReady();
  EXPECT_TRUE(ready.ready) << ready.Reason();

  second = Readiness::Initializing();
  ready = id.CheckReady();
  EXPECT_FALSE(ready.ready);
  EXPECT_EQ(ready.Reason(), "key store: initialising");
  EXPECT_EQ(ready.dependencies[1].state, DependencyReadiness::State::kInitializing);

  // A failure is named before an initialisation, whatever their order.
  third = Readiness::Failed(UnavailableError("disk gone"));
  ready = id.CheckReady();
  EXPECT_EQ(ready.Reason(), "relay: disk gone");

  first = Readiness::Failed(DataLossError("malformed"));
  ready = id.CheckReady();
  EXPECT_EQ(ready.Reason(), "fence store: malformed");
  EXPECT_FALSE(ready.ready);
  // Told once at the first evaluation and once per change, not per evaluation.
  EXPECT_EQ(heard, (std::vector<bool>{true, false, true, false}));
}

// The server starts the registered services once it serves, and stops them, last first, once
// it no longer does.
TEST(AddonsServerLifecycle, StartsServicesAfterBindingAndStopsThemInReverse) {
  TempDir dir;
  const std::string sock = dir.path() + "/csi-addons.sock";
  std::vector<std::string> events;
  FakeFence fence({}, {}, &events);
  FakeComponent relay("relay", {}, &events);
  FakeKeyRotation keyrot({}, {}, &events);
  IdentityService id(IdentityOptions{}, {&fence, &keyrot}, {&relay});
  ServerOptions so;
  so.endpoint = "unix://" + sock;
  Server server(so);
  server.Register(id);
  server.Register(fence);
  server.Attach(relay);
  server.Register(keyrot);
  EXPECT_TRUE(events.empty());
  ASSERT_TRUE(server.Start().ok());
  const std::vector<std::string> started = {
      "start fence.FenceController", "start relay",
      "start encryptionkeyrotation.EncryptionKeyRotationController"};
  EXPECT_EQ(events, started);
  EXPECT_EQ(::access(sock.c_str(), F_OK), 0);
  server.Shutdown(2s);
  EXPECT_NE(::access(sock.c_str(), F_OK), 0);
  std::vector<std::string> all = started;
  all.insert(all.end(), {"stop encryptionkeyrotation.EncryptionKeyRotationController", "stop relay",
                         "stop fence.FenceController"});
  EXPECT_EQ(events, all);
  server.Shutdown(2s);  // idempotent: nothing is stopped twice
  EXPECT_EQ(events.size(), 6u);
}

TEST(AddonsServerLifecycle, FailedStartStartsNoService) {
  TempDir dir;
  const std::string path = dir.path() + "/not-a-socket";
  ASSERT_TRUE(WriteFileAtomic(path, "data").ok());
  std::vector<std::string> events;
  FakeFence fence({}, {}, &events);
  {
    ServerOptions so;
    so.endpoint = "unix://" + path;
    Server server(so);
    server.Register(fence);
    EXPECT_EQ(server.Start().code(), Code::kFailedPrecondition);
    EXPECT_FALSE(server.running());
  }  // destroyed without having served: nothing to stop either
  EXPECT_TRUE(events.empty()) << mizarmp::Joined(events, ", ");
}

// The binary: SIGTERM lets an in-flight call finish, removes the socket, exits 0.
TEST(AddonsBinary, SigtermDrainsAndRemovesSocket) {
  mock::Options mo = StrictMock();
  mo.faults.delay_ms = 1500;  // every REST answer takes 1.5 s: Probe stays in flight that long
  auto mock = StartMock(mo);
  ASSERT_NE(mock, nullptr);
  TempDir dir;
  const std::string sock = dir.path() + "/csi-addons.sock";
  mizarmp::testing::Daemon server;
  ASSERT_TRUE(server.Start(
      {mizarmp::testing::BinDir() + "/mizarmp-addons", "--endpoint", "unix://" + sock, "--mpurl",
       mock->base_url(), "--probe-timeout-ms", "10000", "--log-level", "debug", "--fence-store",
       dir.path() + "/fence.db", "--state-dir", dir.path() + "/cni",
       // One background readiness evaluation at the start, none while the test runs.
       "--readiness-interval-ms", "3600000"},
      dir.path() + "/addons.log"));
  const pid_t pid = server.pid();

  auto channel = Dial("unix:" + sock);
  ASSERT_TRUE(channel->WaitForConnected(std::chrono::system_clock::now() + 20s))
      << "server did not come up; log: " << ReadFile(dir.path() + "/addons.log").value();
  auto stub = identity::Identity::NewStub(channel);
  // Health turns SERVING once the background evaluation found everything ready (its Mizar-MP
  // check took 1.5 s).
  for (int i = 0; i < 400; ++i) {
    auto serving = HealthCheck(channel, "");
    if (serving.ok() && *serving == 1) break;
    std::this_thread::sleep_for(50ms);
  }
  auto serving = HealthCheck(channel, "");
  ASSERT_TRUE(serving.ok() && *serving == 1)
      << "health never SERVING; log: " << ReadFile(dir.path() + "/addons.log").value();

  // Probes until one is inside the server making its own REST call: while the Mizar-MP check's
  // 1 s cache holds the evaluation above, a Probe answers from it at once, and another is sent.
  auto start_probe = [&] {
    return std::async(std::launch::async, [&] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 30s);
      identity::ProbeResponse resp;
      grpc::Status s = stub->Probe(&ctx, {}, &resp);
      return std::make_pair(s, resp);
    });
  };
  uint64_t before = 0;
  std::future<std::pair<grpc::Status, identity::ProbeResponse>> probe;
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  do {
    before = mock->requests();
    probe = start_probe();
    while (mock->requests() == before && probe.wait_for(5ms) != std::future_status::ready) {
    }
  } while (mock->requests() == before && std::chrono::steady_clock::now() < give_up);
  ASSERT_GT(mock->requests(), before);

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  auto [status, resp] = probe.get();
  EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_TRUE(resp.ready().value());

  const int raw = server.Wait(30s);
  ASSERT_NE(raw, -1) << "mizarmp-addons did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(raw)) << raw;
  EXPECT_EQ(WEXITSTATUS(raw), 0);
  EXPECT_NE(::access(sock.c_str(), F_OK), 0) << "socket left behind";
}

// deploy/: the csi-addons sidecar reaches the server's socket (0600, in the server's own 0700
// directory) by running as the server's uid, not through CAP_DAC_OVERRIDE, which it drops with
// every other capability. mizarmpctl probe stands in for the sidecar, both processes started by
// setpriv as the manifests start them: the controller's pair as 65534 (an emptyDir, 0777, holds
// the server's directory), the node's as root; a client of another uid, or root without
// capabilities next to a 65534 server, is refused.
TEST(AddonsBinary, TheSidecarReachesTheSocketByOwnershipWithoutCapabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run processes as other users";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux)";
  auto mock = StartMock();
  ASSERT_NE(mock, nullptr);
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const std::vector<std::string> no_caps = {"--inh-caps=-all", "--bounding-set=-all"};
  auto as = [&](int uid, std::vector<std::string> argv) {
    std::vector<std::string> out = {"/usr/bin/setpriv"};
    if (uid != 0) {
      out.insert(out.end(), {"--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid),
                             "--clear-groups"});
    }
    out.insert(out.end(), no_caps.begin(), no_caps.end());
    out.push_back("--");
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  };
  struct Case {
    const char* what;
    int server_uid;
    int sidecar_uid;
    int stranger_uid;
  };
  for (const Case& c : {Case{"controller", 65534, 65534, 0}, Case{"node", 0, 0, 65534}}) {
    SCOPED_TRACE(c.what);
    const std::string base = dir.path() + "/" + c.what;
    ASSERT_TRUE(MakeDirs(base + "/csi", 0755).ok());
    ASSERT_EQ(::chmod((base + "/csi").c_str(), 0777), 0);  // as an emptyDir is
    ASSERT_TRUE(MakeDirs(base + "/lib", 0700).ok());
    ASSERT_EQ(::chown((base + "/lib").c_str(), c.server_uid, c.server_uid), 0);
    const std::string endpoint = "unix://" + base + "/csi/mizarmp/csi-addons.sock";
    std::vector<std::string> server_argv = {mizarmp::testing::BinDir() + "/mizarmp-addons"};
    server_argv.insert(server_argv.end(),
                       {"--endpoint", endpoint, "--mpurl", mock->base_url(), "--fence-store",
                        base + "/lib/fence.db", "--state-dir", base + "/cni"});
    // The node's server is privileged: every capability.
    if (c.server_uid != 0) server_argv = as(c.server_uid, server_argv);
    mizarmp::testing::Daemon server;
    ASSERT_TRUE(server.Start(server_argv, base + "/addons.log"));
    const std::vector<std::string> probe = {
        mizarmp::testing::BinDir() + "/mizarmpctl", "probe", "--endpoint", endpoint, "-o", "json"};
    mizarmp::testing::ProcessResult sidecar;
    for (int i = 0; i < 200; ++i) {
      sidecar = mizarmp::testing::RunProcess(as(c.sidecar_uid, probe), {}, "", 30s);
      if (sidecar.ok()) break;
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(sidecar.ok()) << sidecar.Describe()
                              << "\nlog: " << ReadFile(base + "/addons.log").value();
    EXPECT_NE(sidecar.out.find("\"ready\": true"), std::string::npos) << sidecar.out;
    const auto stranger = mizarmp::testing::RunProcess(as(c.stranger_uid, probe), {}, "", 30s);
    EXPECT_FALSE(stranger.ok()) << stranger.Describe();
    EXPECT_NE((stranger.out + stranger.err).find("ermission denied"), std::string::npos)
        << stranger.Describe();
    ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
    EXPECT_NE(server.Wait(30s), -1);
  }
}

TEST(AddonsBinary, BadConfigExitsTwo) {
  auto r = mizarmp::testing::RunProcess({mizarmp::testing::BinDir() + "/mizarmp-addons", "--mpurl",
                                         "http://127.0.0.1:1", "--drivername", "not_valid"},
                                        {}, "", 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("drivername"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// The binary on a tcp:// endpoint without client authentication: exit 2 before listening, and
// stderr says why and which keys fix it.
TEST(AddonsBinary, TcpWithoutClientAuthenticationExitsTwo) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(ClosedPort());
  auto r =
      mizarmp::testing::RunProcess({mizarmp::testing::BinDir() + "/mizarmp-addons", "--mpurl",
                                    "http://127.0.0.1:1", "--endpoint", endpoint, "--insecure-tcp"},
                                   {}, "", 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(endpoint), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("authenticated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tlsClientCaFile"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("secretsFile"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace mizarmp::addons
