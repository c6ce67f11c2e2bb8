// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-bare-grpc: the baseline for mizarmp-addons' RPC figures. A plain gRPC C++ sync
// server (default ServerBuilder settings) on a unix socket whose Identity.Probe and
// FenceController.ListClusterFence answer an empty response at once.
//   mizarmp-bench-bare-grpc --socket /abs/path.sock [--health]   (serves until SIGTERM/SIGINT)
// --health turns on gRPC's default health service (grpc::EnableDefaultHealthCheckService), as
// mizarmp-addons does, to show what that alone costs.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "fence/fence.grpc.pb.h"
#include "identity/identity.grpc.pb.h"

namespace {

class BareIdentity final : public identity::Identity::Service {
 public:
  grpc::Status Probe(grpc::ServerContext*, const identity::ProbeRequest*,
                     identity::ProbeResponse*) override {
    return grpc::Status::OK;
  }
};

class BareFence final : public fence::FenceController::Service {
 public:
  grpc::Status ListClusterFence(grpc::ServerContext*, const fence::ListClusterFenceRequest*,
                                fence::ListClusterFenceResponse*) override {
    return grpc::Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string socket_path;
  bool health = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) socket_path = argv[++i];
    if (a == "--health") health = true;
  }
  if (socket_path.empty() || socket_path[0] != '/') {
    std::fprintf(stderr, "usage: mizarmp-bench-bare-grpc --socket /abs/path.sock [--health]\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before gRPC starts threads

  ::unlink(socket_path.c_str());
  if (health) grpc::EnableDefaultHealthCheckService(true);
  BareIdentity identity_service;
  BareFence fence_service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(&identity_service);
  builder.RegisterService(&fence_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "mizarmp-bench-bare-grpc: cannot listen on unix:%s\n",
                 socket_path.c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown();
  ::unlink(socket_path.c_str());
  return 0;
}
