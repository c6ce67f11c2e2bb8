// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// An Open vSwitch of its own for one test or benchmark: ovsdb-server and ovs-vswitchd
// (userspace datapath) in a fresh network namespace (its loopback up, as a node's), with their
// database, sockets, pidfiles and logs in a temporary directory, and one bridge
// (datapath_type=netdev). Several sandboxes run side by side (ctest -j): each has its own
// namespace, so their bridges' devices never meet, and its own directory, so nothing touches
// the host's /var/run/openvswitch.
#pragma once

#include <string>
#include <vector>

#include "tests/support/pki.h"
#include "tests/support/process.h"

namespace mizarmp::testing {

// Where Debian's openvswitch-switch and openvswitch-common put OVS.
inline constexpr const char* kOvsdbServerBinary = "/usr/sbin/ovsdb-server";
inline constexpr const char* kOvsVswitchdBinary = "/usr/sbin/ovs-vswitchd";
inline constexpr const char* kOvsVsctlBinary = "/usr/bin/ovs-vsctl";
inline constexpr const char* kOvsdbToolBinary = "/usr/bin/ovsdb-tool";
inline constexpr const char* kOvsSchema = "/usr/share/openvswitch/vswitch.ovsschema";
// Empty when those programs and the schema are installed, else the reason OVS cannot be run.
std::string OvsUnavailableReason();

struct OvsSandboxOptions {
  std::string bridge = "br-int";
  // Without ovs-vswitchd only the database runs: enough for the ovsdb library, which never
  // needs a datapath, and half the start-up.
  bool vswitchd = true;
};

class OvsSandbox {
 public:
  // Starts both daemons and adds the bridge, waiting on each step's own completion (ovs-vsctl
  // --retry for the socket, and without --no-wait for ovs-vswitchd to have applied the
  // bridge), never on a fixed sleep. error() says what failed.
  explicit OvsSandbox(OvsSandboxOptions options = {});
  // Stops ovs-vswitchd, then ovsdb-server (SIGTERM, SIGKILL after 10 s), removes the namespace
  // and the directory.
  ~OvsSandbox();
  OvsSandbox(const OvsSandbox&) = delete;
  OvsSandbox& operator=(const OvsSandbox&) = delete;

  // Empty when everything started, else the cause with the tail of the daemons' logs.
  const std::string& error() const { return error_; }

  const std::string& socket_path() const { return socket_; }
  std::string db_target() const { return "unix:" + socket_; }  // for ovs-vsctl --db
  const std::string& netns_name() const { return netns_.name(); }
  std::string netns_path() const { return netns_.path(); }
  const ScopedNetns& netns() const { return netns_; }
  const std::string& bridge() const { return options_.bridge; }
  const std::string& dir() const { return dir_.path(); }

  // Runs `ovs-vsctl --db=unix:SOCKET --timeout=10 ARGS` (ARGS as a shell string) against this
  // sandbox's database; returns its exit code, output (stdout and stderr) in *out.
  int Vsctl(const std::string& args, std::string* out = nullptr) const;
  // The ports on the bridge (ovs-vsctl list-ports), one per element; when ovs-vsctl fails, one
  // element saying so, so that a comparison with the expected ports shows why.
  std::vector<std::string> Ports() const;

 private:
  std::string Fail(const std::string& what);
  std::string LogTails() const;

  OvsSandboxOptions options_;
  TempDir dir_;
  ScopedNetns netns_;
  std::string socket_;
  Daemon ovsdb_server_;
  Daemon vswitchd_;
  std::string error_;
};

}  // namespace mizarmp::testing
