// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/ovs_sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace mizarmp::testing {

namespace {

// The daemons die with the thread that started them (as EtcdCluster's members do), so a test
// that crashes or hits ctest's timeout leaves no OVS behind.
constexpr const char* kSetpriv = "/usr/bin/setpriv";

std::string Tail(const std::string& path, size_t bytes = 1500) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

// Whether a socket file appears at `path` before `timeout`: polled like WaitForFile, which
// cannot open a socket to read it.
bool WaitForSocket(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::string OvsUnavailableReason() {
  for (const char* binary :
       {kOvsdbServerBinary, kOvsVswitchdBinary, kOvsVsctlBinary, kOvsdbToolBinary}) {
    if (::access(binary, X_OK) != 0) {
      return std::string(binary) + " is not installed (Debian: openvswitch-switch)";
    }
  }
  if (::access(kOvsSchema, R_OK) != 0) {
    return std::string(kOvsSchema) + " is not there (Debian: openvswitch-common)";
  }
  return "";
}

OvsSandbox::OvsSandbox(OvsSandboxOptions options)
    : options_(std::move(options)), netns_(UniqueName("mzovs")) {
  if (std::string why = OvsUnavailableReason(); !why.empty()) {
    error_ = why;
    return;
  }
  if (!netns_.ok()) {
    error_ = "ip netns add " + netns_.name() + " failed";
    return;
  }
  std::string out;
  // The node's loopback, where what runs on the node (a controller mock, say) is reached.
  if (netns_.Exec("ip link set lo up", &out) != 0) {
    error_ = "bringing lo up in " + netns_.name() + ": " + out;
    return;
  }
  const std::string& d = dir_.path();
  socket_ = d + "/db.sock";
  if (Shell(std::string(kOvsdbToolBinary) + " create " + d + "/conf.db " + kOvsSchema, &out) != 0) {
    error_ = Fail("ovsdb-tool create: " + out);
    return;
  }
  // OVS_RUNDIR and friends keep every file a daemon makes (bridge management sockets
  // included) in this directory.
  const std::map<std::string, std::string> env = {
      {"OVS_RUNDIR", d}, {"OVS_DBDIR", d}, {"OVS_LOGDIR", d}, {"OVS_SYSCONFDIR", d}};
  auto in_netns = [&](std::vector<std::string> argv) {
    std::vector<std::string> full = {kSetpriv, "--pdeathsig", "KILL",       "ip",
                                     "netns",  "exec",        netns_.name()};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
  };
  if (!ovsdb_server_.Start(
          in_netns({kOvsdbServerBinary, d + "/conf.db", "--remote=punix:" + socket_,
                    "--pidfile=" + d + "/ovsdb-server.pid", "--unixctl=" + d + "/ovsdb-server.ctl",
                    "--log-file=" + d + "/ovsdb-server.log", "-vconsole:off"}),
          d + "/ovsdb-server.out", env)) {
    error_ = Fail("ovsdb-server could not be started");
    return;
  }
  if (!WaitForSocket(socket_, std::chrono::seconds(10))) {
    error_ = Fail("ovsdb-server did not create " + socket_ + " within 10 s");
    return;
  }
  // --retry covers the moment between the socket's bind and its listen (bounded by --timeout).
  if (Shell(std::string(kOvsVsctlBinary) + " --db=" + db_target() +
                " --timeout=10 --retry --no-wait init",
            &out) != 0) {
    error_ = Fail("ovs-vsctl init: " + out);
    return;
  }
  const std::string& br = options_.bridge;
  if (!options_.vswitchd) {
    if (Vsctl("--no-wait add-br " + br + " -- set bridge " + br + " datapath_type=netdev", &out) !=
        0) {
      error_ = Fail("ovs-vsctl add-br " + br + ": " + out);
    }
    return;
  }
  if (!vswitchd_.Start(
          in_netns({kOvsVswitchdBinary, db_target(), "--pidfile=" + d + "/ovs-vswitchd.pid",
                    "--unixctl=" + d + "/ovs-vswitchd.ctl", "--log-file=" + d + "/ovs-vswitchd.log",
                    "-vconsole:off"}),
          d + "/ovs-vswitchd.out", env)) {
    error_ = Fail("ovs-vswitchd could not be started");
    return;
  }
  // Without --no-wait ovs-vsctl returns once ovs-vswitchd has applied the change: the bridge
  // (and its internal device in the namespace) exists.
  if (Vsctl("add-br " + br + " -- set bridge " + br + " datapath_type=netdev", &out) != 0) {
    error_ = Fail("ovs-vsctl add-br " + br + ": " + out);
    return;
  }
}

OvsSandbox::~OvsSandbox() {
  vswitchd_.Stop();
  ovsdb_server_.Stop();
  netns_.Remove();
}

int OvsSandbox::Vsctl(const std::string& args, std::string* out) const {
  return Shell(std::string(kOvsVsctlBinary) + " --db=" + db_target() + " --timeout=10 " + args,
               out);
}

std::vector<std::string> OvsSandbox::Ports() const {
  std::string out;
  if (Vsctl("list-ports " + options_.bridge, &out) != 0)
    return {"(list-ports failed: " + out + ")"};
  std::vector<std::string> ports;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) ports.push_back(line);
  }
  return ports;
}

std::string OvsSandbox::Fail(const std::string& what) { return what + LogTails(); }

std::string OvsSandbox::LogTails() const {
  std::string s;
  for (const char* name :
       {"ovsdb-server.log", "ovsdb-server.out", "ovs-vswitchd.log", "ovs-vswitchd.out"}) {
    const std::string tail = Tail(dir_.path() + "/" + name);
    if (!tail.empty()) s += std::string("\n--- ") + name + ":\n" + tail;
  }
  return s;
}

}  // namespace mizarmp::testing
