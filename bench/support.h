// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Benchmark helpers: order statistics and durations, mizarmp-mock (with or without its host
// agent) and the plugin's network config for it. Running programs (a CNI plugin exec'd as a
// runtime does, servers, netns) is the tests' own support code (tests/support/process.h), named
// here so the drivers read as before.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/flags.h"
#include "tests/support/process.h"

namespace mizarmp::bench {

using Clock = std::chrono::steady_clock;

using testing::Daemon;
using testing::Exec;
using testing::ExecResult;
using testing::Run;
using testing::Shell;
using testing::UniqueName;
using testing::WaitForFile;
using Netns = testing::ScopedNetns;

// The project and subnet every benchmark's ports live in.
inline constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
inline constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

struct Stats {
  size_t n = 0;
  double min = 0, median = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles of the samples.
Stats Summarize(std::vector<double> samples);
// The same as {"n", "min_ms", "median_ms", ...}.
nlohmann::json StatsJson(const Stats& s);

double Ms(Clock::duration d);

// A driver's record of an error: printed, and appended to results["errors"]. Returns false, so a
// step can `return RecordFailure(results_, "why")`.
bool RecordFailure(nlohmann::json& results, const std::string& why);
// A driver's command line, parsed with `flags`: --help prints "usage: <program> <synopsis>" and
// the flags (exit code 0); a bad flag, or what `check` finds wrong ("" when nothing), is printed
// with them (exit code 2). nullopt when the driver should run.
std::optional<int> ParseDriverFlags(const std::string& program, const std::string& synopsis,
                                    const FlagTable& flags, int argc, char** argv,
                                    const std::function<std::string()>& check);

// A driver's main(): SIGPIPE ignored (a server gone mid-write is a result, not a crash), the
// command line parsed into `Options` with the table `flags` makes and checked with `check` (see
// ParseDriverFlags), then Bench(options).Main().
template <typename Bench, typename Options>
int DriverMain(const std::string& program, const std::string& synopsis, int argc, char** argv,
               FlagTable (*flags)(Options&),
               const std::function<std::string(const std::type_identity_t<Options>&)>& check =
                   nullptr) {
  ::signal(SIGPIPE, SIG_IGN);
  Options options;
  const FlagTable table = flags(options);
  const std::optional<int> exit_code = ParseDriverFlags(
      program, synopsis, table, argc, argv, [&] { return check ? check(options) : std::string(); });
  if (exit_code) return *exit_code;
  return Bench(std::move(options)).Main();
}

// Writes a driver's results to `path` as indented JSON.
void SaveResults(const nlohmann::json& results, const std::string& path);

// One section of a driver: its name (as --sections names it) and its run (false: it failed).
struct Section {
  const char* name;
  std::function<bool()> run;
};
// Runs those of `sections` that `wanted` names, in order, each announced and timed on stderr;
// saves `results` to `path` after each, so a run cut short keeps what finished. 1 when any failed.
int RunSections(const std::vector<Section>& sections, const std::set<std::string>& wanted,
                const nlohmann::json& results, const std::string& path);

// `s` cut at every `sep`, empty pieces dropped.
std::vector<std::string> Split(const std::string& s, char sep);

// An HTTP request through curl(1) (outside every timed window; keeps an HTTP client out of the
// drivers' own footprint), `body_file` sent as a JSON body when given. The parsed JSON answer,
// nullopt when curl failed or the answer is not JSON.
std::optional<nlohmann::json> HttpJson(const std::string& method, const std::string& url,
                                       const std::string& body_file = {},
                                       const std::string& ca_file = {});

struct MockOptions {
  std::string bin_dir;      // holds mizarmp-mock
  std::string work_dir;     // its port file and log go here
  std::string cidr;         // the subnet's addresses
  std::string agent_netns;  // when set, the mock is also the host agent, its bridge in this netns
  int ready_delay_ms = 0;   // how long a new port stays not ready
  // The agent removes a deleted port's veth after answering (mizarmp-mock --agent-unplugs-later).
  bool agent_unplugs_later = false;
  int journal_capacity = 100000;  // port updates the mock keeps for GET /mock/requests
  // Alcor's controller with its host agent on the Open vSwitch at this ovsdb socket (--strict
  // --dialect alcor --agent-ovsdb), tagging ports on `ovs_bridge`; the mock runs in the netns
  // `netns_name` (that OVS's node: it serves on that namespace's loopback).
  std::string ovs_socket, ovs_bridge, netns_name;
  // HTTPS with this certificate and key when set; `tls_ca` is what curl checks it against.
  std::string tls_cert, tls_key, tls_ca;
  // Alcor's controller as it really answers (--strict --dialect alcor) without a host agent;
  // implied by ovs_socket.
  bool strict_alcor = false;
  int row_limit = 0;  // strict Alcor's refusal of port lists this long (0: the mock's default)
};

// iproute2's ip, where Debian puts it (/usr/sbin/ip; /sbin/ip before the merged /usr).
std::string IpBinary();

// mizarmp-mock on 127.0.0.1 (an ephemeral port), stopped on destruction.
class Mock {
 public:
  explicit Mock(const MockOptions& o);
  bool ok() const { return ok_; }
  int port() const { return port_; }
  pid_t pid() const { return daemon_.pid(); }
  std::string url() const {
    return (tls_ca_.empty() ? "http://" : "https://") + std::string("127.0.0.1:") +
           std::to_string(port_);
  }
  const std::string& log() const { return log_; }
  // GET /mock/state ({"ports": N, "requests": N, ...}); nullopt when it cannot be read.
  std::optional<nlohmann::json> State() const;
  // Creates `n` ports (bulk creates of 500, node-NNN host ids, no agent work) and returns their
  // addresses in creation order; fewer than `n` when the mock refused some.
  std::vector<std::string> CreatePorts(int n) const;

 private:
  Daemon daemon_;
  std::string work_dir_, log_, tls_ca_;
  int port_ = 0;
  bool ok_ = false;
};

// The machine's trust store with one more CA, seen only by programs run in this mount namespace
// (Exec::mountns_path): /etc/ssl/certs is a copy holding the CA as Debian's tools would add it,
// a hash link and a line in the bundle, so a plugin there finds it exactly where and how it
// finds the system's own CAs.
class TrustStoreWith {
 public:
  TrustStoreWith(const std::string& ca_file, const std::string& work_dir);
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string mountns_path() const { return "/proc/" + std::to_string(holder_.pid()) + "/ns/mnt"; }
  // The copied bundle (all the system's CAs and this one), for SSL_CERT_FILE.
  const std::string& bundle() const { return bundle_; }

 private:
  Daemon holder_;  // keeps the namespace: unshare'd, bind-mounted, then asleep
  std::string bundle_, error_;
  bool ok_ = false;
};

// mizarmp's network config ("mzbench") for the controller at `url`, records under `state_dir`.
nlohmann::json MizarmpConfig(const std::string& url, const std::string& state_dir);

// A CNI plugin invocation as a runtime makes it: only CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME
// (eth0), CNI_PATH, PATH and (when `netns` is set) CNI_NETNS; `config` on stdin.
Exec PluginExec(const std::string& plugin_path, const std::string& cni_path,
                const std::string& command, const std::string& container, const std::string& netns,
                const nlohmann::json& config);

}  // namespace mizarmp::bench
