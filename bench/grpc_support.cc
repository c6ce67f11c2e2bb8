// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "bench/grpc_support.h"

#include <filesystem>
#include <thread>

#include "identity/identity.grpc.pb.h"

namespace mizarmp::bench {

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int id) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("mizarmp.bench.client", id);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

bool WaitReady(const std::string& address, std::chrono::seconds timeout) {
  auto ch = NewChannel(address, -1);
  return ch->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

std::string CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "code " + std::to_string(static_cast<int>(c));
  }
}

bool StartAddons(Daemon& d, const AddonsOptions& o) {
  std::filesystem::remove(o.socket);
  std::filesystem::create_directories(o.state_dir);
  std::vector<std::string> argv = {o.bin_dir + "/mizarmp-addons",
                                   "--endpoint",
                                   "unix://" + o.socket,
                                   "--mpurl",
                                   o.mpurl,
                                   "--state-dir",
                                   o.state_dir,
                                   "--fence-store",
                                   o.fence_store,
                                   "--host-id",
                                   "bench-node",
                                   "--log-level",
                                   "warn"};
  argv.insert(argv.end(), o.extra.begin(), o.extra.end());
  if (!d.Start(argv, o.socket + ".log")) return false;
  if (!WaitReady("unix:" + o.socket, std::chrono::seconds(20))) return false;
  auto stub = identity::Identity::NewStub(NewChannel("unix:" + o.socket, -2));
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < end) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    identity::ProbeRequest req;
    identity::ProbeResponse resp;
    // Unset means ready; false: still initialising.
    if (stub->Probe(&ctx, req, &resp).ok() && (!resp.has_ready() || resp.ready().value())) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace mizarmp::bench
