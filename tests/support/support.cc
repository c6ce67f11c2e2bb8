// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/support.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#ifndef MIZARMP_BIN_DIR
#error "MIZARMP_BIN_DIR must be defined by the build"
#endif

namespace mizarmp::testing {

std::string BinDir() { return MIZARMP_BIN_DIR; }
std::string SourceDir() { return MIZARMP_SOURCE_DIR; }

std::string NetnsUnavailableReason() {
  if (::geteuid() != 0) return "not running as root";
  // Try it for real in a throwaway thread-free child: unshare a netns and create a dummy link.
  std::string out;
  const std::string name = UniqueName("mzprobe");
  if (Shell("ip netns add " + name, &out) != 0) return "ip netns add failed: " + out;
  int rc = Shell(
      "ip netns exec " + name + " ip link add " + name + "a type veth peer name " + name + "b",
      &out);
  Shell("ip netns del " + name);
  if (rc != 0) return "cannot create veth pairs: " + out;
  return "";
}

}  // namespace mizarmp::testing
