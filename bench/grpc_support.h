// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// gRPC helpers of the mizarmp-addons benchmarks: channels, status names, and mizarmp-addons
// started on a unix socket and waited for until it is ready.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/support.h"

namespace mizarmp::bench {

// A channel of its own (no subchannel sharing between channels), so N clients are N connections.
// `id` only tells the channels apart.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int id);

// True once a connection to `address` is up, false after `timeout`.
bool WaitReady(const std::string& address, std::chrono::seconds timeout);

// "OK", "UNAVAILABLE", ... ("code N" for the rest).
std::string CodeName(grpc::StatusCode c);

struct AddonsOptions {
  std::string bin_dir;             // holds mizarmp-addons
  std::string socket;              // a unix socket path in a directory only the owner may write to
  std::string mpurl;               // the controller
  std::string state_dir;           // the plugin's records (created when missing)
  std::string fence_store;         // the fence store file
  std::vector<std::string> extra;  // more flags, appended
};

// Starts mizarmp-addons in controller mode (log: socket + ".log") and waits until its Probe says
// ready (the fence store is open). False when it did not get there within 20 s.
bool StartAddons(Daemon& d, const AddonsOptions& o);

}  // namespace mizarmp::bench
