// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The calling thread moved into a network namespace for a scope (setns(2)), with its loopback up.
// Threads and processes the thread starts meanwhile are born there: a test that enters a node's
// namespace first runs its in-process mock, its plugin execs and its clients on that node, where
// the node's Open vSwitch and the pods' veth host ends are. Header-only.
#pragma once

#include <fcntl.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/fd.h"
#include "netns/netns.h"

namespace mizarmp::testing {

class EnteredNetns {
 public:
  explicit EnteredNetns(const std::string& path) {
    home_.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    UniqueFd target(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!home_.valid() || !target.valid() || ::setns(target.get(), CLONE_NEWNET) != 0) {
      error_ = "entering " + path + ": " + std::strerror(errno);
      home_.reset();
      return;
    }
    auto here = netns::Netns::Current();
    auto nl = here.ok() ? netns::Netlink::OpenIn(*here) : Result<netns::Netlink>(here.status());
    const Status lo = nl.ok() ? nl->SetUp("lo") : nl.status();
    if (!lo.ok()) error_ = "bringing lo up in " + path + ": " + lo.ToString();
  }
  ~EnteredNetns() {
    if (home_.valid()) (void)::setns(home_.get(), CLONE_NEWNET);
  }
  EnteredNetns(const EnteredNetns&) = delete;
  EnteredNetns& operator=(const EnteredNetns&) = delete;

  const std::string& error() const { return error_; }

 private:
  UniqueFd home_;  // the namespace the thread came from
  std::string error_;
};

}  // namespace mizarmp::testing
