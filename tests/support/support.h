// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// GoogleTest helpers on top of tests/support/process.h (running programs, netns): where the
// build put the binaries, temporary directories, and the rule for tests that need root.
#pragma once

#include <cstdlib>
#include <string>

#include "tests/support/pki.h"
#include "tests/support/process.h"

namespace mizarmp::testing {

// Where CMake put the binaries (mizarmp, mizarmp-mock, ...).
std::string BinDir();
std::string SourceDir();

// Whether this process can create network namespaces and links (root with CAP_NET_ADMIN).
// Returns an empty string when it can, else the reason it cannot.
std::string NetnsUnavailableReason();

// Where the Debian etcd-server and etcd-client packages put etcd and etcdctl (EtcdCluster).
inline constexpr const char* kEtcdBinary = "/usr/bin/etcd";
inline constexpr const char* kEtcdctlBinary = "/usr/bin/etcdctl";
// Empty when both are installed (executable), else the reason they cannot be run.
std::string EtcdUnavailableReason();


}  // namespace mizarmp::testing

// In a test body: skip with the printed reason where a capability `what` is truly unavailable
// (`reason_expr` evaluates to a non-empty reason); fail instead when running in CI (CI=true),
// where these tests must never be skipped.
#define MZ_REQUIRE_CAPABILITY_(reason_expr, what)                         \
  do {                                                                    \
    std::string mz_reason_ = (reason_expr);                               \
    if (!mz_reason_.empty()) {                                            \
      const char* mz_ci_ = std::getenv("CI");                             \
      if (mz_ci_ != nullptr && std::string(mz_ci_) == "true") {           \
        FAIL() << what " required in CI but unavailable: " << mz_reason_; \
      }                                                                   \
      GTEST_SKIP() << "needs " what ": " << mz_reason_;                   \
    }                                                                     \
  } while (0)

// Network namespaces and links (root with CAP_NET_ADMIN).
#define MZ_REQUIRE_NETNS() \
  MZ_REQUIRE_CAPABILITY_(::mizarmp::testing::NetnsUnavailableReason(), "network namespaces")
// etcd and etcdctl (install-deps.sh installs them).
#define MZ_REQUIRE_ETCD() \
  MZ_REQUIRE_CAPABILITY_(::mizarmp::testing::EtcdUnavailableReason(), "etcd")
// Open vSwitch's programs (install-deps.sh installs openvswitch-switch).
// With tests/support/ovs_sandbox.h.
#define MZ_REQUIRE_OVS() \
  MZ_REQUIRE_CAPABILITY_(::mizarmp::testing::OvsUnavailableReason(), "Open vSwitch")
