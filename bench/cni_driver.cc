// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-cni: times CNI plugins exec'd exactly as a container runtime execs them
// (fork/execve, CNI_* environment only, network config on stdin, stdout read to EOF, reaped with
// wait4 for the child's rusage). Both sides of every comparison run in the same process, in turn.
//
// Sections (--sections, comma separated; default all):
//   latency    mizarmp (against mizarmp-mock + its agent, ports ready at once) vs Debian's ptp +
//              host-local: ADD and DEL, interleaved A,B / B,A per iteration; plug mode (Alcor's
//              agent on a sandboxed Open vSwitch, the plugin plugging the pod) among the sides
//   ready      mock ready delay d = 0, 50, 500 ms: ADD with the default poll, the previous default
//              (1 ms doubling to a 50 ms cap) and a poll fixed at 1 s (the upstream plugin's),
//              interleaved; REST requests per ADD from the mock's counter
//   burst      50 ADDs released at once, then 50 DELs; failures and leaks afterwards (ports at the
//              mock, records, veths); mizarmp and ptp rounds interleaved
//   footprint  peak RSS of ADD (from the latency runs), binary sizes, VERSION start-up vs ptp and
//              vs exec'ing /bin/true
//   ovsdb      plug mode's database work: one port added and removed through the ovsdb library
//              (one connection each, as ADD and DEL open one) against ovs-vsctl --no-wait,
//              interleaved
//   profile    one ADD (and DEL) run under --profile-wrap (e.g. valgrind --tool=callgrind ...)
//
// Writes every figure as JSON (--out); bench/report.py renders bench/RESULTS.md from it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/support.h"
#include "ovsdb/ovsdb.h"
#include "tests/support/ovs_sandbox.h"
#include "tests/support/pki.h"

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kMizarCidr = "10.242.0.0/16";
constexpr const char* kPtpCidr = "10.243.0.0/16";
constexpr const char* kLaterCidr = "10.244.0.0/16";
constexpr const char* kTlsCidr = "10.245.0.0/16";
constexpr const char* kOvsCidr = "10.246.0.0/16";
// Alcor's VPC, which its ports name as network_id (mizarmp-client/types.h kDefaultVpcId).
constexpr const char* kVpc = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038";
constexpr const char* kPath = "/usr/sbin:/usr/bin:/sbin:/bin";

struct Options {
  std::string bin_dir;                   // mizarmp, mizarmp-mock
  std::string ref_dir = "/usr/lib/cni";  // ptp, host-local
  std::string work_dir = "/tmp/mizarmp-bench";
  std::string out = "cni-results.json";
  std::set<std::string> sections = {"latency", "ready", "burst", "footprint", "kernel", "ovsdb"};
  int iterations = 100;
  int warmup = 5;
  int ready_iterations = 20;
  int burst = 50;
  int burst_rounds = 3;
  int version_iterations = 200;
  std::vector<std::string> profile_wrap;
};

// A TcpExt counter of this netns (/proc/net/netstat), e.g. ListenOverflows; -1 if absent.
long TcpExt(const std::string& name) {
  std::ifstream f("/proc/net/netstat");
  std::string keys, values;
  while (std::getline(f, keys) && std::getline(f, values)) {
    if (keys.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream k(keys), v(values);
    std::string key, value;
    while (k >> key && v >> value) {
      if (key == name) return std::atol(value.c_str());
    }
  }
  return -1;
}

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Main() {
    fs::create_directories(o_.work_dir);
    state_dir_ = o_.work_dir + "/state";
    ipam_dir_ = o_.work_dir + "/ipam";
    fs::remove_all(state_dir_);
    fs::remove_all(state_dir_ + "-full-handshake");
    fs::remove_all(ipam_dir_);
    host_ = std::make_unique<mb::Netns>(mb::UniqueName("mzbh"));
    ptp_host_ = std::make_unique<mb::Netns>(mb::UniqueName("mzbq"));
    if (!host_->ok() || !ptp_host_->ok()) {
      std::cerr << "cannot create network namespaces (needs root)\n";
      return 1;
    }
    results_["config"] = {{"iterations", o_.iterations},
                          {"warmup", o_.warmup},
                          {"ready_iterations", o_.ready_iterations},
                          {"burst", o_.burst},
                          {"burst_rounds", o_.burst_rounds},
                          {"version_iterations", o_.version_iterations},
                          {"mizarmp", o_.bin_dir + "/mizarmp"},
                          {"ptp", o_.ref_dir + "/ptp"},
                          {"mizarmp_config_example", MizarConfig("http://127.0.0.1:PORT")},
                          {"ptp_config_example", PtpConfig()}};
    return mb::RunSections({{"latency", [this] { return Latency(); }},
                            {"ready", [this] { return Ready(); }},
                            {"burst", [this] { return Burst(); }},
                            {"footprint", [this] { return Footprint(); }},
                            {"kernel", [this] { return Kernel(); }},
                            {"ovsdb", [this] { return Ovsdb(); }},
                            {"profile", [this] { return Profile(); }}},
                           o_.sections, results_, o_.out);
  }

 private:
  // ----------------------------------------------------------------------------- plugin runs
  json MizarConfig(const std::string& url) const { return mb::MizarmpConfig(url, state_dir_); }

  // mizarmp-mock with its host agent in the "host" netns, new ports ready after `ready_delay_ms`,
  // their addresses from `cidr` (mocks running at once need their own: each agent's bridge holds
  // its gateway).
  mb::MockOptions MockAt(int ready_delay_ms, const char* cidr = kMizarCidr) const {
    mb::MockOptions m;
    m.bin_dir = o_.bin_dir;
    m.work_dir = o_.work_dir;
    m.cidr = cidr;
    m.agent_netns = host_->path();
    m.ready_delay_ms = ready_delay_ms;
    return m;
  }

  // The same over https, its server certificate from `pki`.
  mb::MockOptions TlsMockAt(const mizarmp::testing::Pki& pki) const {
    mb::MockOptions m = MockAt(0, kTlsCidr);
    m.tls_cert = pki.server_cert;
    m.tls_key = pki.server_key;
    m.tls_ca = pki.ca;
    return m;
  }

  // Alcor's controller and its agent on `ovs`, run in the sandbox's namespace (the node).
  mb::MockOptions OvsMockAt(const mizarmp::testing::OvsSandbox& ovs) const {
    mb::MockOptions m = MockAt(0, kOvsCidr);
    m.agent_netns.clear();  // no veth agent: Alcor's places no NIC
    m.ovs_socket = ovs.socket_path();
    m.ovs_bridge = ovs.bridge();
    m.netns_name = ovs.netns_name();
    return m;
  }

  // The plugin on an Alcor node: plug mode into `ovs`. `plug_explicitly`: "plug": "ovs" and
  // "dialect": "alcor", as an Alcor node's configuration would say; else both "auto" (the
  // bridge looked up and the controller's generation asked on each ADD).
  json OvsConfig(const std::string& url, const mizarmp::testing::OvsSandbox& ovs,
                 bool plug_explicitly) const {
    json config = MizarConfig(url);
    config["networkId"] = kVpc;
    config["ovsdbSocket"] = ovs.socket_path();
    config["ovsBridge"] = ovs.bridge();
    if (plug_explicitly) {
      config["plug"] = "ovs";
      config["dialect"] = "alcor";
    }
    return config;
  }

  static json WithCaFile(json config, const mizarmp::testing::Pki& pki) {
    config["tls"] = {{"caFile", pki.ca}};
    return config;
  }

  // mizarmp-addons in node mode as the node's relay to `url` (README "The node's relay"), its
  // CA from `pki`; the relay's socket is relay_socket_. False when it did not come up.
  bool StartRelay(mb::Daemon& relay, const std::string& url, const mizarmp::testing::Pki& pki) {
    const std::string dir = o_.work_dir + "/relay";
    fs::remove_all(dir);
    fs::create_directories(dir + "/run");
    fs::permissions(dir + "/run", fs::perms::owner_all);
    const std::vector<std::string> argv = {o_.bin_dir + "/mizarmp-addons",
                                           "--mode=node",
                                           "--endpoint=unix://" + dir + "/run/addons.sock",
                                           "--mpurl=" + url,
                                           "--mp-ca-file=" + pki.ca,
                                           "--relay-socket=" + RelaySocket(),
                                           "--state-dir=" + state_dir_,
                                           "--key-store-dir=" + dir + "/keys",
                                           "--host-id=bench-node",
                                           "--log-level=warn"};
    if (!relay.Start(argv, dir + "/addons.log")) return false;
    for (int i = 0; i < 500; ++i) {
      if (fs::is_socket(RelaySocket())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  std::string RelaySocket() const { return o_.work_dir + "/relay/run/relay.sock"; }

  json PtpConfig() const {
    return {{"cniVersion", "1.0.0"},
            {"name", "ptpbench"},
            {"type", "ptp"},
            {"ipMasq", false},
            {"mtu", 1400},
            {"ipam",
             {{"type", "host-local"},
              {"ranges", json::array({json::array({{{"subnet", kPtpCidr}}})})},
              {"routes", json::array({{{"dst", "0.0.0.0/0"}}})},
              {"dataDir", ipam_dir_}}}};
  }

  mb::Exec CniExec(const std::string& plugin, const std::string& command,
                   const std::string& container, const std::string& netns,
                   const json& config) const {
    const bool ptp = plugin == "ptp";
    const std::string& dir = ptp ? o_.ref_dir : o_.bin_dir;
    mb::Exec e = mb::PluginExec(dir + "/" + plugin, dir, command, container, netns, config);
    // ptp puts the host end of its veth (and a route) in the netns it runs in: give it one of
    // its own, as the mock's agent has, so the benchmark never touches the machine's own netns.
    if (ptp) e.netns_path = ptp_host_->path();
    return e;
  }

  mb::ExecResult RunCni(const std::string& plugin, const std::string& command,
                        const std::string& container, const std::string& netns,
                        const json& config) {
    return RunSide({plugin, plugin, config, {}, "", false}, command, container, netns);
  }

  // -------------------------------------------------------------------------------- latency
  // One side of the latency comparison: a plugin file and how a runtime execs it.
  struct Side {
    std::string name;    // its key in the results
    std::string plugin;  // a file in bin_dir ("ptp": ref_dir)
    json config;
    std::map<std::string, std::string> env;  // added to the runtime's environment
    std::string mountns;                     // run in this mount namespace when set
    bool full_handshake = false;  // its kept TLS sessions removed before each exec (untimed)
    std::string netns;            // run in this network namespace (an OVS node) when set
  };

  mb::ExecResult RunSide(const Side& side, const std::string& command, const std::string& container,
                         const std::string& netns) {
    if (side.full_handshake) {
      fs::remove_all(side.config["stateDir"].get<std::string>() + "/.tls-sessions");
    }
    mb::Exec e = CniExec(side.plugin, command, container, netns, side.config);
    e.env.insert(side.env.begin(), side.env.end());
    e.mountns_path = side.mountns;
    if (!side.netns.empty()) e.netns_path = side.netns;
    auto r = mb::Run(e);
    if (!r.ok()) {
      ++failures_;
      std::cerr << "   " << side.name << " " << command << " " << container
                << " failed: " << r.Describe() << "\n";
    }
    return r;
  }

  // The sides, in turn, the order rotating per iteration: mizarmp (the product: static) over
  // http against mizarmp-mock; ptp + host-local; the same plugin linked dynamically (bench
  // variant); mizarmp against a mock whose agent removes a deleted port's NIC after answering;
  // mizarmp over https with the CA from tls.caFile, from the system trust store (a hash
  // directory, in a mount namespace where the test CA is one of the system's), and from the
  // whole system bundle (SSL_CERT_FILE: every CA parsed, as the plugin did before), each
  // resuming the TLS session the plugin keeps in its state dir as a node's plugin does after its
  // first https call; and tls.caFile again with no kept session, so every ADD and DEL makes a
  // full handshake (a node's first call, or the first after a CA rotation).
  bool Latency() {
    mizarmp::testing::Pki pki;
    if (!pki.error.empty()) return Fail("making the TLS certificates failed: " + pki.error);
    mb::Mock mock(MockAt(0));
    mb::MockOptions later_opts = MockAt(0, kLaterCidr);
    later_opts.agent_unplugs_later = true;
    mb::Mock later(later_opts);
    mb::Mock tls(TlsMockAt(pki));
    mizarmp::testing::OvsSandbox ovs;
    if (!ovs.error().empty()) return Fail("Open vSwitch sandbox: " + ovs.error());
    mb::Mock alcor(OvsMockAt(ovs));
    for (const mb::Mock* m : {&mock, &later, &tls, &alcor}) {
      if (!m->ok()) return Fail("mock did not start (log " + m->log() + ")");
    }
    mb::TrustStoreWith trust(pki.ca, o_.work_dir);
    if (!trust.ok()) return Fail("system trust store with the bench CA: " + trust.error());
    mb::Daemon relay;
    if (!StartRelay(relay, tls.url(), pki)) {
      return Fail("the node's relay did not come up (log " + o_.work_dir + "/relay/addons.log)");
    }
    const json with_ca_file = WithCaFile(MizarConfig(tls.url()), pki);
    json relayed = with_ca_file;
    relayed["relaySocket"] = RelaySocket();
    json full_handshakes = with_ca_file;
    full_handshakes["stateDir"] = state_dir_ + "-full-handshake";
    const std::vector<Side> sides = {
        {"mizarmp", "mizarmp", MizarConfig(mock.url()), {}, "", false},
        {"ptp", "ptp", PtpConfig(), {}, "", false},
        {"mizarmp_dynamic",
         "mizarmp-bench-variant-dynamic",
         MizarConfig(mock.url()),
         {},
         "",
         false},
        {"agent_unplugs_later", "mizarmp", MizarConfig(later.url()), {}, "", false},
        {"https_ca_file", "mizarmp", with_ca_file, {}, "", false},
        {"https_system_store", "mizarmp", MizarConfig(tls.url()), {}, trust.mountns_path(), false},
        {"https_system_bundle",
         "mizarmp",
         MizarConfig(tls.url()),
         {{"SSL_CERT_FILE", trust.bundle()}},
         "",
         false},
        {"https_full_handshake", "mizarmp", full_handshakes, {}, "", true},
        {"https_relay", "mizarmp", relayed, {}, "", false},
        {"ovs_plug", "mizarmp", OvsConfig(alcor.url(), ovs, true), {}, "", false, ovs.netns_path()},
        {"ovs_plug_auto",
         "mizarmp",
         OvsConfig(alcor.url(), ovs, false),
         {},
         "",
         false,
         ovs.netns_path()},
    };
    const size_t n = sides.size();
    std::vector<std::vector<double>> add(n), del(n), rss(n), cpu(n);
    int fails = 0;
    for (int i = -o_.warmup; i < o_.iterations; ++i) {
      std::vector<std::unique_ptr<mb::Netns>> pods;
      for (size_t k = 0; k < n; ++k)
        pods.push_back(std::make_unique<mb::Netns>(mb::UniqueName("mzbp")));
      const std::string cid = "lat" + std::to_string(i + o_.warmup) + "s";
      const size_t rot = static_cast<size_t>(i + o_.warmup) % n;
      std::vector<mb::ExecResult> a(n), d(n);
      for (size_t step = 0; step < n; ++step) {
        const size_t k = (rot + step) % n;
        a[k] = RunSide(sides[k], "ADD", cid + std::to_string(k), pods[k]->path());
      }
      for (size_t step = 0; step < n; ++step) {
        const size_t k = (rot + step) % n;
        d[k] = RunSide(sides[k], "DEL", cid + std::to_string(k), pods[k]->path());
      }
      for (size_t k = 0; k < n; ++k) {
        if (!a[k].ok() || !d[k].ok()) ++fails;
        if (i < 0) continue;  // warm-up
        if (a[k].ok()) {
          add[k].push_back(a[k].wall_ms);
          rss[k].push_back(static_cast<double>(a[k].maxrss_kib));
          cpu[k].push_back(a[k].user_ms + a[k].sys_ms);
        }
        if (d[k].ok()) del[k].push_back(d[k].wall_ms);
      }
    }
    json j = {{"failures", fails}, {"sides", json::array()}};
    for (size_t k = 0; k < n; ++k) {
      mb::Stats rs = mb::Summarize(rss[k]);
      j[sides[k].name] = {{"add", mb::StatsJson(mb::Summarize(add[k]))},
                          {"del", mb::StatsJson(mb::Summarize(del[k]))},
                          {"add_cpu", mb::StatsJson(mb::Summarize(cpu[k]))},
                          {"add_maxrss_kib", {{"median", rs.median}, {"max", rs.max}}}};
      j["sides"].push_back(sides[k].name);
    }
    // A over B, of the medians (or p99s) of one operation.
    auto ratio = [&j](const char* a, const char* b, const char* op, const char* stat) {
      return j[a][op][stat].get<double>() / j[b][op][stat].get<double>();
    };
    j["add_ratio_median"] = ratio("mizarmp", "ptp", "add", "median_ms");
    j["del_ratio_median"] = ratio("mizarmp", "ptp", "del", "median_ms");
    j["add_ratio_p99"] = ratio("mizarmp", "ptp", "add", "p99_ms");
    j["del_ratio_p99"] = ratio("mizarmp", "ptp", "del", "p99_ms");
    j["unplug_later_del_ratio_median"] = ratio("agent_unplugs_later", "ptp", "del", "median_ms");
    for (const char* op : {"add", "del"}) {
      j[std::string("ovs_plug_") + op + "_ratio_median"] =
          ratio("ovs_plug", "ptp", op, "median_ms");
    }
    for (const char* https : {"https_ca_file", "https_system_store", "https_system_bundle",
                              "https_full_handshake", "https_relay"}) {
      j[std::string(https) + "_add_ratio_median"] = ratio(https, "mizarmp", "add", "median_ms");
    }
    auto st = mock.State();
    auto later_st = later.State();
    j["mock_ports_left"] = st ? (*st)["ports"] : json(nullptr);
    j["mock_requests"] = st ? (*st)["requests"] : json(nullptr);
    j["unplug_later_backlog_at_end"] = later_st ? (*later_st)["agent_backlog"] : json(nullptr);
    results_["latency"] = j;
    std::cerr << "   ADD median: mizarmp " << j["mizarmp"]["add"]["median_ms"] << " ms, ptp "
              << j["ptp"]["add"]["median_ms"] << " ms; DEL " << j["mizarmp"]["del"]["median_ms"]
              << " / " << j["ptp"]["del"]["median_ms"] << " ms (agent unplugging later "
              << j["agent_unplugs_later"]["del"]["median_ms"] << " ms); https ADD: CA file "
              << j["https_ca_file"]["add"]["median_ms"] << ", system store "
              << j["https_system_store"]["add"]["median_ms"] << ", system bundle "
              << j["https_system_bundle"]["add"]["median_ms"] << ", full handshake "
              << j["https_full_handshake"]["add"]["median_ms"] << ", through the node's relay "
              << j["https_relay"]["add"]["median_ms"] << " ms\n";
    return fails == 0;
  }

  // ---------------------------------------------------------------------------------- ready
  // Poll variants, interleaved: the default (no "poll" key: every 5 ms, past that 1% of the time
  // already waited, and at once when the NIC arrives in the pod), the previous default's interval
  // (1 ms doubling to a 5 ms cap), and a fixed 1 s poll (the upstream plugin's).
  bool Ready() {
    struct Variant {
      const char* name;
      std::optional<std::pair<int, int>> poll;  // initialMs, maxMs
    };
    const std::vector<Variant> variants = {{"default", std::nullopt},
                                           {"previous_1ms_doubling", std::make_pair(1, 5)},
                                           {"fixed_1s", std::make_pair(1000, 1000)}};
    json out = json::array();
    int fails = 0;
    for (int d : {0, 50, 500}) {
      mb::Mock mock(MockAt(d));
      if (!mock.ok()) return Fail("mock did not start (log " + mock.log() + ")");
      const size_t nv = variants.size();
      std::vector<json> cfg;
      for (const auto& v : variants) {
        json c = MizarConfig(mock.url());
        if (v.poll) c["poll"] = {{"initialMs", v.poll->first}, {"maxMs", v.poll->second}};
        cfg.push_back(c);
      }
      std::vector<std::vector<double>> add(nv), reqs(nv);
      const int iters = d >= 500 ? std::max(5, o_.ready_iterations / 2) : o_.ready_iterations;
      for (int i = -2; i < iters; ++i) {
        for (size_t step = 0; step < nv; ++step) {
          const size_t k = (step + static_cast<size_t>(i + 2)) % nv;
          mb::Netns pod(mb::UniqueName("mzbr"));
          const std::string cid =
              "rdy" + std::to_string(d) + "k" + std::to_string(k) + "i" + std::to_string(i + 2);
          auto before = mock.State();
          auto a = RunCni("mizarmp", "ADD", cid, pod.path(), cfg[k]);
          auto after = mock.State();
          auto del = RunCni("mizarmp", "DEL", cid, pod.path(), cfg[k]);
          if (!a.ok() || !del.ok()) ++fails;
          if (i >= 0 && a.ok()) {
            add[k].push_back(a.wall_ms);
            if (before && after) {
              reqs[k].push_back((*after)["requests"].get<double>() -
                                (*before)["requests"].get<double>());
            }
          }
        }
      }
      json row = {{"ready_delay_ms", d}};
      std::cerr << "   d=" << d << ":";
      for (size_t k = 0; k < nv; ++k) {
        row[variants[k].name] = mb::StatsJson(mb::Summarize(add[k]));
        row[variants[k].name]["rest_requests_per_add_median"] = mb::Summarize(reqs[k]).median;
        std::cerr << " " << variants[k].name << " " << row[variants[k].name]["median_ms"] << " ms ("
                  << mb::Summarize(reqs[k]).median << " requests)";
      }
      std::cerr << "\n";
      out.push_back(row);
    }
    results_["ready"] = {{"rows", out}, {"failures", fails}};
    return fails == 0;
  }

  // ---------------------------------------------------------------------------------- burst
  // Runs `execs` all at once (one thread each, released together); wall time of each and the
  // time from release to the last one reaped.
  struct BurstOutcome {
    std::vector<mb::ExecResult> results;
    double total_ms = 0;
  };
  static BurstOutcome RunTogether(const std::vector<mb::Exec>& execs) {
    BurstOutcome b;
    b.results.resize(execs.size());
    std::mutex mu;
    std::condition_variable cv;
    bool go = false;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < execs.size(); ++i) {
      threads.emplace_back([&, i] {
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return go; });
        }
        b.results[i] = mb::Run(execs[i]);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // every thread parked
    const auto t0 = mb::Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu);
      go = true;
    }
    cv.notify_all();
    for (auto& t : threads) t.join();
    b.total_ms = mb::Ms(mb::Clock::now() - t0);
    return b;
  }

  bool Burst() {
    mb::Mock mock(MockAt(0));
    if (!mock.ok()) return Fail("mock did not start (log " + mock.log() + ")");
    const json mz = MizarConfig(mock.url());
    const json pt = PtpConfig();
    json rounds = json::array();
    bool all_ok = true;
    for (int round = 0; round < o_.burst_rounds; ++round) {
      for (int step = 0; step < 2; ++step) {
        const int k = (round % 2 == 0) ? step : 1 - step;
        const std::string plugin = k == 0 ? "mizarmp" : "ptp";
        std::vector<std::unique_ptr<mb::Netns>> pods;
        std::vector<mb::Exec> adds, dels;
        for (int i = 0; i < o_.burst; ++i) {
          pods.push_back(std::make_unique<mb::Netns>(mb::UniqueName("mzbb")));
          const std::string cid = "burst" + std::to_string(round) + "p" + std::to_string(i);
          adds.push_back(CniExec(plugin, "ADD", cid, pods.back()->path(), k == 0 ? mz : pt));
          dels.push_back(CniExec(plugin, "DEL", cid, pods.back()->path(), k == 0 ? mz : pt));
        }
        const long overflows0 = TcpExt("ListenOverflows");
        BurstOutcome a = RunTogether(adds);
        BurstOutcome d = RunTogether(dels);
        const long overflows = TcpExt("ListenOverflows") - overflows0;
        auto summarize = [](const BurstOutcome& b, int* failed) {
          std::vector<double> ms;
          for (const auto& r : b.results) {
            if (r.ok()) {
              ms.push_back(r.wall_ms);
            } else {
              ++*failed;
              std::cerr << "   burst failure: " << r.Describe() << "\n";
            }
          }
          return ms;
        };
        int add_failed = 0, del_failed = 0;
        auto add_ms = summarize(a, &add_failed);
        auto del_ms = summarize(d, &del_failed);
        // Leaks, as a user would look for them.
        json leaks;
        int pods_with_links = 0;
        for (const auto& p : pods) {
          if (p->CountLinks("") != 0) ++pods_with_links;
        }
        leaks["pod_netns_with_interfaces"] = pods_with_links;
        if (k == 0) {
          auto st = mock.State();
          leaks["ports_at_mock"] = st ? (*st)["ports"] : json(-1);
          leaks["host_veths"] = host_->CountLinks("veth");
          int recs = 0, locks = 0;
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(state_dir_ + "/mzbench", ec)) {
            const std::string n = e.path().filename().string();
            if (n.size() > 5 && n.substr(n.size() - 5) == ".json") ++recs;
            if (n.size() > 5 && n.substr(n.size() - 5) == ".lock") ++locks;
          }
          leaks["records"] = recs;
          leaks["lock_files"] = locks;
        } else {
          leaks["host_veths"] = ptp_host_->CountLinks("veth");
          int ips = 0;
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(ipam_dir_ + "/ptpbench", ec)) {
            const std::string n = e.path().filename().string();
            if (n.find('.') != std::string::npos && n.find("lock") == std::string::npos &&
                n.find("last_reserved") == std::string::npos) {
              ++ips;
            }
          }
          leaks["ipam_reservations"] = ips;
        }
        bool leaked = false;
        for (auto& [key, v] : leaks.items()) {
          if (key != "lock_files" && v.is_number() && v.get<int>() != 0) leaked = true;
        }
        if (add_failed || del_failed || leaked) all_ok = false;
        mb::Stats as = mb::Summarize(add_ms), ds = mb::Summarize(del_ms);
        json row = {{"plugin", plugin},
                    {"round", round},
                    {"n", o_.burst},
                    {"add_total_ms", a.total_ms},
                    {"add", mb::StatsJson(as)},
                    {"add_failures", add_failed},
                    {"del_total_ms", d.total_ms},
                    {"del", mb::StatsJson(ds)},
                    {"del_failures", del_failed},
                    {"tcp_listen_overflows", overflows},
                    {"leaks", leaks}};
        rounds.push_back(row);
        std::cerr << "   " << plugin << " round " << round << ": ADD total " << a.total_ms
                  << " ms p99 " << as.p99 << " (" << add_failed << " failed), DEL total "
                  << d.total_ms << " ms p99 " << ds.p99 << " (" << del_failed
                  << " failed), listen overflows " << overflows << ", leaks " << leaks.dump()
                  << "\n";
      }
    }
    results_["burst"] = {{"rounds", rounds}};
    return all_ok;
  }

  // ------------------------------------------------------------------------------ footprint
  static long FileSize(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
  }

  json Sizes(const std::string& path) const {
    const std::string stripped = o_.work_dir + "/stripped-" + fs::path(path).filename().string();
    long s = -1;
    if (mb::Shell("strip -o " + stripped + " " + path) == 0) s = FileSize(stripped);
    std::string libs;
    mb::Shell("ldd " + path + " | grep -c '=>'", &libs);
    return {{"path", path},
            {"bytes", FileSize(path)},
            {"stripped_bytes", s},
            {"shared_libraries", std::atoi(libs.c_str())}};
  }

  bool Footprint() {
    json j;
    j["mizarmp_binary"] = Sizes(o_.bin_dir + "/mizarmp");
    j["mizarmp_dynamic_binary"] = Sizes(o_.bin_dir + "/mizarmp-bench-variant-dynamic");
    j["ptp_binary"] = Sizes(o_.ref_dir + "/ptp");
    j["host_local_binary"] = Sizes(o_.ref_dir + "/host-local");
    // Process start-up, every program in turn: VERSION of each plugin (start-up alone), the
    // fork+exec floor (/bin/true), empty programs linked against subsets of mizarmp's libraries,
    // and the library initialisations the plugin does before its first request.
    struct Prog {
      std::string name;
      mb::Exec exec;
    };
    std::vector<Prog> progs;
    const json vcfg = {{"cniVersion", "1.0.0"}, {"name", "v"}, {"type", "x"}};
    auto version = [&](const std::string& plugin, const std::string& path) {
      mb::Exec e = CniExec(plugin, "VERSION", "", "", vcfg);
      e.netns_path.clear();
      e.argv = {path};
      return e;
    };
    auto plain = [](std::vector<std::string> argv) {
      mb::Exec e;
      e.argv = std::move(argv);
      return e;
    };
    progs.push_back({"version_mizarmp", version("mizarmp", o_.bin_dir + "/mizarmp")});
    progs.push_back({"version_ptp", version("ptp", o_.ref_dir + "/ptp")});
    progs.push_back({"exec_bin_true", plain({"/bin/true"})});
    progs.push_back({"version_mizarmp_dynamic",
                     version("mizarmp", o_.bin_dir + "/mizarmp-bench-variant-dynamic")});
    for (const char* p : {"libc", "libstdcxx", "nl", "nl-ssl", "all"}) {
      progs.push_back(
          {std::string("startup_") + p, plain({o_.bin_dir + "/mizarmp-bench-startup-" + p})});
    }
    for (const char* m : {"none", "ssl-init", "ssl-noconf", "ssl-ctx"}) {
      progs.push_back(
          {std::string("init_") + m, plain({o_.bin_dir + "/mizarmp-bench-openssl-init", m})});
    }
    std::vector<std::vector<double>> t(progs.size());
    std::vector<double> rss(progs.size(), 0);
    int fails = 0;
    for (int i = -5; i < o_.version_iterations; ++i) {
      for (size_t step = 0; step < progs.size(); ++step) {
        const size_t k = (step + static_cast<size_t>(i + 5)) % progs.size();
        auto r = mb::Run(progs[k].exec);
        if (!r.ok()) {
          ++fails;
          std::cerr << "   " << progs[k].name << " failed: " << r.Describe() << "\n";
          continue;
        }
        if (i >= 0) t[k].push_back(r.wall_ms);
        rss[k] = std::max(rss[k], static_cast<double>(r.maxrss_kib));
      }
    }
    for (size_t k = 0; k < progs.size(); ++k) {
      j["startup"][progs[k].name] = mb::StatsJson(mb::Summarize(t[k]));
      j["startup"][progs[k].name]["maxrss_kib"] = rss[k];
    }
    if (results_.contains("latency")) {
      j["add_maxrss_kib"] = results_["latency"]["mizarmp"]["add_maxrss_kib"];
      j["ptp_add_maxrss_kib"] = results_["latency"]["ptp"]["add_maxrss_kib"];
      j["dynamic_add_maxrss_kib"] = results_["latency"]["mizarmp_dynamic"]["add_maxrss_kib"];
    }
    j["failures"] = fails;
    results_["footprint"] = j;
    std::cerr << "   VERSION mizarmp " << j["startup"]["version_mizarmp"]["median_ms"]
              << " ms, ptp " << j["startup"]["version_ptp"]["median_ms"] << " ms, /bin/true "
              << j["startup"]["exec_bin_true"]["median_ms"] << " ms\n";
    return fails == 0;
  }

  // ----------------------------------------------------------------------------------- kernel
  // What the kernel alone takes to create and to delete a veth pair across two namespaces, as
  // `ip` does it, against `ip` doing a netlink query of the same cost otherwise: the floor under
  // both plugins' ADD and DEL.
  bool Kernel() {
    mb::Netns a(mb::UniqueName("mzbka")), b(mb::UniqueName("mzbkb"));
    if (!a.ok() || !b.ok()) return Fail("cannot create namespaces");
    auto ip = [](std::vector<std::string> args) {
      mb::Exec e;
      e.argv = {mb::IpBinary()};
      e.argv.insert(e.argv.end(), args.begin(), args.end());
      e.env = {{"PATH", kPath}};
      return mb::Run(e);
    };
    std::vector<double> add, del, query;
    for (int i = 0; i < 25; ++i) {
      const std::string v = "kv" + std::to_string(i);
      auto q = ip({"-n", a.name(), "link", "show", "lo"});
      auto c = ip({"-n", a.name(), "link", "add", v, "type", "veth", "peer", "name", v + "p",
                   "netns", b.name()});
      auto d = ip({"-n", a.name(), "link", "del", v});
      if (!q.ok() || !c.ok() || !d.ok()) return Fail("ip failed: " + c.Describe() + d.Describe());
      if (i < 3) continue;
      query.push_back(q.wall_ms);
      add.push_back(c.wall_ms);
      del.push_back(d.wall_ms);
    }
    results_["kernel"] = {{"ip_link_show", mb::StatsJson(mb::Summarize(query))},
                          {"ip_veth_add", mb::StatsJson(mb::Summarize(add))},
                          {"ip_veth_del", mb::StatsJson(mb::Summarize(del))}};
    std::cerr << "   ip link show " << mb::Summarize(query).median << " ms, veth add "
              << mb::Summarize(add).median << " ms, veth del " << mb::Summarize(del).median
              << " ms\n";
    return true;
  }

  // ------------------------------------------------------------------------------------ ovsdb
  // What plug mode's two database changes cost the plugin's way (RFC 7047 over the socket, a
  // connection per change as ADD and DEL each open one) and ovs-vsctl's (a process per change,
  // --no-wait as the plugin does not wait for ovs-vswitchd either), in turn per iteration.
  bool Ovsdb() {
    mizarmp::testing::OvsSandbox ovs(mizarmp::testing::OvsSandboxOptions{.vswitchd = false});
    if (!ovs.error().empty()) return Fail("Open vSwitch sandbox: " + ovs.error());
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) {
      return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    };
    auto library = [&](const std::function<mizarmp::Status(mizarmp::ovsdb::Connection&)>& change) {
      const auto start = Clock::now();
      auto db = mizarmp::ovsdb::Connection::Open(ovs.socket_path(), std::chrono::seconds(5));
      mizarmp::Status s = db.ok() ? change(*db) : db.status();
      return s.ok() ? since(start) : -1.0;
    };
    auto vsctl = [&](const std::vector<std::string>& args) {
      mb::Exec e;
      e.argv = {mizarmp::testing::kOvsVsctlBinary, "--db=" + ovs.db_target(), "--no-wait"};
      e.argv.insert(e.argv.end(), args.begin(), args.end());
      e.env = {{"PATH", kPath}};
      mb::ExecResult r = mb::Run(e);
      return r.ok() ? r.wall_ms : -1.0;
    };
    std::vector<double> lib_add, lib_del, cli_add, cli_del;
    for (int i = -o_.warmup; i < o_.iterations; ++i) {
      const std::string a = "tapl" + std::to_string(i + o_.warmup);
      const std::string b = "tapv" + std::to_string(i + o_.warmup);
      const double la = library([&](auto& db) {
        return mizarmp::ovsdb::AddPort(db, ovs.bridge(), a, {{"iface-id", a}});
      });
      const double ca = vsctl(
          {"add-port", ovs.bridge(), b, "--", "set", "interface", b, "external_ids:iface-id=" + b});
      const double ld = library([&](auto& db) { return mizarmp::ovsdb::DeletePort(db, a); });
      const double cd = vsctl({"del-port", ovs.bridge(), b});
      if (la < 0 || ca < 0 || ld < 0 || cd < 0)
        return Fail("adding or removing an OVS port failed");
      if (i < 0) continue;
      lib_add.push_back(la);
      lib_del.push_back(ld);
      cli_add.push_back(ca);
      cli_del.push_back(cd);
    }
    results_["ovsdb"] = {{"library_add", mb::StatsJson(mb::Summarize(lib_add))},
                         {"library_del", mb::StatsJson(mb::Summarize(lib_del))},
                         {"vsctl_add", mb::StatsJson(mb::Summarize(cli_add))},
                         {"vsctl_del", mb::StatsJson(mb::Summarize(cli_del))}};
    std::cerr << "   add-port: library " << mb::Summarize(lib_add).median << " ms, ovs-vsctl "
              << mb::Summarize(cli_add).median << " ms; del-port: library "
              << mb::Summarize(lib_del).median << " ms, ovs-vsctl " << mb::Summarize(cli_del).median
              << " ms\n";
    return true;
  }

  // -------------------------------------------------------------------------------- profile
  // One ADD and one DEL over http://, and two ADDs over https:// (tls.caFile), each run under
  // --profile-wrap ("%c" in it becomes the case's name: ADD, DEL, ADD-https-full, ADD-https):
  // the first https ADD makes a full handshake and keeps its session, the second resumes it.
  bool Profile() {
    if (o_.profile_wrap.empty()) return Fail("--profile-wrap not given");
    mizarmp::testing::Pki pki;
    if (!pki.error.empty()) return Fail("making the TLS certificates failed: " + pki.error);
    mb::Mock mock(MockAt(0));
    mb::Mock tls(TlsMockAt(pki));
    if (!mock.ok() || !tls.ok()) return Fail("mock did not start");
    struct Case {
      std::string name, command;
      json config;
    };
    const json http = MizarConfig(mock.url());
    const json https = WithCaFile(MizarConfig(tls.url()), pki);
    const std::vector<Case> cases = {{"ADD", "ADD", http},
                                     {"DEL", "DEL", http},
                                     {"ADD-https-full", "ADD", https},
                                     {"ADD-https", "ADD", https}};
    bool ok = true;
    for (const Case& profiled : cases) {
      mb::Netns pod(mb::UniqueName("mzbf"));
      const std::string cid = "prof" + profiled.name;
      for (const std::string command : {"ADD", "DEL"}) {
        mb::Exec e = CniExec("mizarmp", command, cid, pod.path(), profiled.config);
        const bool wrapped = command == profiled.command;
        if (wrapped) {
          std::vector<std::string> argv;
          for (auto a : o_.profile_wrap) {
            if (const size_t at = a.find("%c"); at != std::string::npos)
              a.replace(at, 2, profiled.name);
            argv.push_back(a);
          }
          argv.insert(argv.end(), e.argv.begin(), e.argv.end());
          e.argv = argv;
          e.timeout = std::chrono::minutes(5);
        }
        auto r = mb::Run(e);
        if (!r.ok()) {
          ok = false;
          std::cerr << "   profile " << profiled.name << " (" << command
                    << ") failed: " << r.Describe() << "\n";
        }
        if (wrapped) {
          results_["profile"][profiled.name] = {
              {"exit", r.exit_code},
              {"wall_ms", r.wall_ms},
              {"stderr_tail", r.err.size() > 4000 ? r.err.substr(r.err.size() - 4000) : r.err}};
        }
      }
    }
    return ok;
  }

  bool Fail(const std::string& why) { return mb::RecordFailure(results_, why); }

  Options o_;
  std::string state_dir_, ipam_dir_;
  std::unique_ptr<mb::Netns> host_, ptp_host_;
  json results_;
  int failures_ = 0;
};

int Usage(const char* why) {
  std::cerr
      << "mizarmp-bench-cni: " << why << "\n"
      << "usage: mizarmp-bench-cni --bin-dir DIR [--ref-dir /usr/lib/cni] [--work DIR]\n"
         "         [--out FILE] [--sections latency,ready,burst,footprint,kernel,ovsdb,profile]\n"
         "         [--iterations N] [--warmup N] [--ready-iterations N] [--burst N]\n"
         "         [--burst-rounds N] [--version-iterations N]\n"
         "         [--profile-wrap 'valgrind --tool=callgrind --callgrind-out-file=X.%c']\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    auto num = [&]() { return std::atoi(next().c_str()); };
    if (a == "--bin-dir") {
      o.bin_dir = next();
    } else if (a == "--ref-dir") {
      o.ref_dir = next();
    } else if (a == "--work") {
      o.work_dir = next();
    } else if (a == "--out") {
      o.out = next();
    } else if (a == "--sections") {
      auto v = mb::Split(next(), ',');
      o.sections = std::set<std::string>(v.begin(), v.end());
    } else if (a == "--iterations") {
      o.iterations = num();
    } else if (a == "--warmup") {
      o.warmup = num();
    } else if (a == "--ready-iterations") {
      o.ready_iterations = num();
    } else if (a == "--burst") {
      o.burst = num();
    } else if (a == "--burst-rounds") {
      o.burst_rounds = num();
    } else if (a == "--version-iterations") {
      o.version_iterations = num();
    } else if (a == "--profile-wrap") {
      o.profile_wrap = mb::Split(next(), ' ');
    } else {
      return Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.bin_dir.empty()) return Usage("--bin-dir is required");
  if (::geteuid() != 0) return Usage("must run as root (network namespaces)");
  return Bench(std::move(o)).Main();
}
