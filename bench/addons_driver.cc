// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-addons: mizarmp-addons over its unix socket.
//
// Sections (--sections, comma separated; default all):
//   rpc         Identity.Probe and FenceController.ListClusterFence: calls/s and latency with
//               --clients concurrent clients (one channel and connection each), mizarmp-addons vs
//               mizarmp-bench-bare-grpc (empty handlers), interleaved in rounds
//   getclients  GetFenceClients over --records attachment records (records::RecordStore::Write, the
//               plugin's <stateDir>/<network>/<containerId>:<ifname>.json) of --nodes nodes:
//               the whole cluster, and narrowed to one node (parameter hostId)
//   fence       FenceClusterNetwork of --cidrs CIDRs against --ports ports at mizarmp-mock: time,
//               REST calls (the mock counts them), ports fenced afterwards; then
//               UnfenceClusterNetwork of the same CIDRs, the same figures; --fence-rounds such
//               pairs, medians reported, every round checked; on the SQLite fence
//               store, or with --fence-store etcd on the etcd cluster --etcd names (run.sh
//               starts a 3-member one for the store benchmark and runs this section there too)
// A method the server answers UNIMPLEMENTED is reported as not measured, never as a figure.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/grpc_support.h"
#include "bench/support.h"
#include "fence/fence.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "records/records.h"

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Options {
  std::string bin_dir;
  std::string work_dir = "/tmp/mizarmp-bench-addons";
  std::string out = "addons-results.json";
  std::set<std::string> sections = {"rpc", "getclients", "fence"};
  int clients = 8;
  double seconds = 2.0;
  int rounds = 5;
  int records = 10000;
  int nodes = 100;
  int ports = 10000;
  int cidrs = 1000;
  int getclients_calls = 30;
  int fence_rounds = 5;                // fence/unfence pairs; their medians are the figures
  std::string fence_store = "sqlite";  // the fence section's store: sqlite or etcd
  std::string etcd;                    // "etcd://127.0.0.1:p,...": the cluster for etcd
  int update_connections = 0;          // the server's updateConnections; 0: its default
  // When set: during the last round of each method and server, `perf record -a -e cpu-clock -g`
  // writes PERF_DIR/perf.<server>.<method>.data (and the server's share of it as text); during
  // back-to-back GetFenceClients calls, PERF_DIR/perf.GetFenceClients.data.
  std::string perf_dir;
};

// utime + stime of a process (all its threads), from /proc/PID/stat, in ms.
double ProcessCpuMs(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Main() {
    // The sockets live here: mizarmp-addons refuses a socket directory others may write to.
    fs::create_directories(o_.work_dir);
    fs::permissions(o_.work_dir, fs::perms::owner_all, fs::perm_options::replace);
    results_["config"] = {{"clients", o_.clients},
                          {"seconds", o_.seconds},
                          {"rounds", o_.rounds},
                          {"records", o_.records},
                          {"nodes", o_.nodes},
                          {"ports", o_.ports},
                          {"cidrs", o_.cidrs},
                          {"getclients_calls", o_.getclients_calls},
                          {"fence_store", o_.fence_store}};
    if (o_.update_connections > 0) results_["config"]["update_connections"] = o_.update_connections;
    return mb::RunSections({{"rpc", [this] { return Rpc(); }},
                            {"getclients", [this] { return GetClients(); }},
                            {"fence", [this] { return Fence(); }}},
                           o_.sections, results_, o_.out);
  }

 private:
  // ---------------------------------------------------------------------------------- servers
  // mizarmp-addons of this build on `socket`, waited for until ready (see mb::StartAddons).
  bool StartAddons(mb::Daemon& d, const std::string& socket, const std::string& mpurl,
                   const std::string& state_dir, const std::string& fence_store,
                   const std::vector<std::string>& extra = {}) const {
    return mb::StartAddons(d, {o_.bin_dir, socket, mpurl, state_dir, fence_store, extra});
  }

  bool StartBare(mb::Daemon& d, const std::string& socket, bool health = false) {
    fs::remove(socket);
    std::vector<std::string> argv = {o_.bin_dir + "/mizarmp-bench-bare-grpc", "--socket", socket};
    if (health) argv.push_back("--health");
    if (!d.Start(argv, socket + ".log")) return false;
    return mb::WaitReady("unix:" + socket, std::chrono::seconds(20));
  }

  // `perf record -a -e cpu-clock -g` for `seconds` on a thread of its own, into `data`
  // (system-wide, so threads the server starts under load are included; reported for one pid by
  // PerfReport).
  std::thread StartPerf(const std::string& data, int seconds) const {
    mb::Exec e;
    e.argv = {"/usr/bin/perf",
              "record",
              "-q",
              "-a",
              "-e",
              "cpu-clock",
              "-F",
              "1999",
              "-g",
              "-o",
              data,
              "--",
              "sleep",
              std::to_string(std::max(1, seconds))};
    e.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    return std::thread([e] { mb::Run(e); });
  }
  // Where `pid`'s CPU went: by thread name (DATA.comm.txt), by library and symbol (DATA.sym.txt),
  // by library (DATA.dso.txt).
  static void PerfReport(const std::string& data, pid_t pid) {
    const std::string report = "perf report -i " + data + " --pid " + std::to_string(pid) +
                               " --stdio --no-children -g none ";
    mb::Shell(report + "--sort comm > " + data + ".comm.txt 2>/dev/null");
    mb::Shell(report + "--sort dso,sym > " + data + ".sym.txt 2>/dev/null");
    mb::Shell(report + "--sort dso > " + data + ".dso.txt 2>/dev/null");
  }

  // ------------------------------------------------------------------------------------- load
  struct Load {
    uint64_t ok = 0;
    std::map<std::string, uint64_t> errors;
    std::vector<double> latencies_ms;  // successful calls
    double seconds = 0;
  };

  Load RunLoad(const std::string& address, const std::string& method) const {
    Load total;
    std::vector<Load> per(static_cast<size_t>(o_.clients));
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    for (int i = 0; i < o_.clients; ++i) {
      channels.push_back(mb::NewChannel(address, i));
      channels.back()->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5));
    }
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    const auto duration = std::chrono::duration<double>(o_.seconds);
    for (int i = 0; i < o_.clients; ++i) {
      threads.emplace_back([&, i] {
        Load& l = per[static_cast<size_t>(i)];
        auto identity_stub = identity::Identity::NewStub(channels[static_cast<size_t>(i)]);
        auto fence_stub = fence::FenceController::NewStub(channels[static_cast<size_t>(i)]);
        while (!go.load()) std::this_thread::yield();
        const auto end = mb::Clock::now() + duration;
        while (mb::Clock::now() < end) {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
          grpc::Status st;
          const auto t0 = mb::Clock::now();
          if (method == "Probe") {
            identity::ProbeRequest req;
            identity::ProbeResponse resp;
            st = identity_stub->Probe(&ctx, req, &resp);
          } else {
            fence::ListClusterFenceRequest req;
            fence::ListClusterFenceResponse resp;
            st = fence_stub->ListClusterFence(&ctx, req, &resp);
          }
          const double ms = mb::Ms(mb::Clock::now() - t0);
          if (st.ok()) {
            ++l.ok;
            l.latencies_ms.push_back(ms);
          } else {
            ++l.errors[mb::CodeName(st.error_code())];
            if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED) break;
          }
        }
      });
    }
    const auto t0 = mb::Clock::now();
    go = true;
    for (auto& t : threads) t.join();
    total.seconds = mb::Ms(mb::Clock::now() - t0) / 1000;
    for (auto& l : per) {
      total.ok += l.ok;
      for (auto& [k, v] : l.errors) total.errors[k] += v;
      total.latencies_ms.insert(total.latencies_ms.end(), l.latencies_ms.begin(),
                                l.latencies_ms.end());
    }
    return total;
  }

  bool Rpc() {
    mb::Mock mock({o_.bin_dir, o_.work_dir, "10.245.0.0/16"});
    if (!mock.ok()) return Fail("mock did not start");
    mb::Daemon addons, bare, bare_health;
    const std::string addons_sock = o_.work_dir + "/addons.sock";
    const std::string bare_sock = o_.work_dir + "/bare.sock";
    const std::string bare_health_sock = o_.work_dir + "/bare-health.sock";
    if (!StartAddons(addons, addons_sock, mock.url(), o_.work_dir + "/rpc-state",
                     o_.work_dir + "/rpc-fence.db")) {
      return Fail("mizarmp-addons did not come up on " + addons_sock + " (log " + addons_sock +
                  ".log)");
    }
    if (!StartBare(bare, bare_sock)) return Fail("bare gRPC server did not come up");
    if (!StartBare(bare_health, bare_health_sock, /*health=*/true)) {
      return Fail("bare gRPC server with the health service did not come up");
    }
    // 0 mizarmp-addons, 1 the bare server, 2 the bare server with gRPC's default health service.
    constexpr int kN = 3;
    const std::string targets[kN] = {"unix:" + addons_sock, "unix:" + bare_sock,
                                     "unix:" + bare_health_sock};
    const pid_t pids[kN] = {addons.pid(), bare.pid(), bare_health.pid()};
    const char* names[kN] = {"mizarmp-addons", "bare", "bare+health"};
    json out;
    bool ok = true;
    for (const std::string method : {"Probe", "ListClusterFence"}) {
      std::vector<double> rate[kN];
      std::vector<double> lat[kN];
      std::map<std::string, uint64_t> errors[kN];
      std::vector<double> cpu_per_call[kN];  // server CPU (user+sys) per successful call, in us
      for (int r = 0; r < o_.rounds; ++r) {
        for (int step = 0; step < kN; ++step) {
          const int k = (r + step) % kN;
          std::thread perf;
          const std::string data = o_.perf_dir + "/perf." + names[k] + "." + method + ".data";
          if (!o_.perf_dir.empty() && r == o_.rounds - 1) {
            perf = StartPerf(data, static_cast<int>(o_.seconds) - 1);
          }
          const double cpu0 = ProcessCpuMs(pids[k]);
          Load l = RunLoad(targets[k], method);
          const double cpu1 = ProcessCpuMs(pids[k]);
          if (l.ok > 0)
            cpu_per_call[k].push_back((cpu1 - cpu0) * 1000.0 / static_cast<double>(l.ok));
          if (perf.joinable()) {
            perf.join();
            PerfReport(data, pids[k]);
          }
          rate[k].push_back(static_cast<double>(l.ok) / l.seconds);
          lat[k].insert(lat[k].end(), l.latencies_ms.begin(), l.latencies_ms.end());
          for (auto& [c, n] : l.errors) errors[k][c] += n;
        }
      }
      json m;
      for (int k = 0; k < kN; ++k) {
        mb::Stats rs = mb::Summarize(rate[k]);
        m[names[k]] = {{"calls_per_s_median", rs.median},
                       {"calls_per_s_rounds", rate[k]},
                       {"latency", mb::StatsJson(mb::Summarize(lat[k]))},
                       {"server_cpu_us_per_call_median", mb::Summarize(cpu_per_call[k]).median},
                       {"errors", errors[k]}};
      }
      const bool unimplemented =
          errors[0].count("UNIMPLEMENTED") > 0 && rate[0].size() && mb::Summarize(rate[0]).max == 0;
      if (unimplemented) {
        m["measured"] = false;
        m["why"] = "mizarmp-addons answers " + method + " with UNIMPLEMENTED";
      } else {
        m["measured"] = true;
        m["ratio_calls_per_s"] = m[names[0]]["calls_per_s_median"].get<double>() /
                                 m[names[1]]["calls_per_s_median"].get<double>();
        if (!errors[0].empty()) ok = false;
      }
      out[method] = m;
      for (int k = 0; k < kN; ++k) {
        std::cerr << "   " << method << " " << names[k] << ": " << m[names[k]]["calls_per_s_median"]
                  << " calls/s, p99 " << m[names[k]]["latency"]["p99_ms"] << " ms, server CPU "
                  << m[names[k]]["server_cpu_us_per_call_median"] << " us/call, errors "
                  << json(errors[k]).dump() << "\n";
      }
    }
    auto st = mock.State();
    out["mock_requests_during_rpc"] = st ? (*st)["requests"] : json(nullptr);
    results_["rpc"] = out;
    return ok;
  }

  // ------------------------------------------------------------------------------- getclients
  bool GetClients() {
    const std::string state = o_.work_dir + "/gc-state";
    fs::remove_all(state);
    mizarmp::records::RecordStore store(state);
    const auto t0 = mb::Clock::now();
    for (int i = 0; i < o_.records; ++i) {
      mizarmp::records::Record r;
      r.state = mizarmp::records::Record::State::kComplete;
      r.network = "mzbench";
      char buf[64];
      std::snprintf(buf, sizeof(buf), "c%06d", i);
      r.container_id = buf;
      r.ifname = "eth0";
      r.netns = "/var/run/netns/pod" + std::to_string(i);
      std::snprintf(buf, sizeof(buf), "00000000-0000-5000-8000-%012d", i);
      r.port_id = buf;
      r.project_id = mb::kProject;
      r.subnet_id = mb::kSubnet;
      std::snprintf(buf, sizeof(buf), "node-%03d", i % o_.nodes);
      r.host_id = buf;
      r.mpurl = "http://127.0.0.1:1";
      std::snprintf(buf, sizeof(buf), "02:00:00:%02x:%02x:%02x", (i >> 16) & 0xff, (i >> 8) & 0xff,
                    i & 0xff);
      r.mac = buf;
      std::snprintf(buf, sizeof(buf), "10.246.%d.%d/16", (i + 2) / 256, (i + 2) % 256);
      r.ips.push_back({buf, "10.246.0.1"});
      r.created_at = mizarmp::records::NowRfc3339();
      if (auto s = store.Write(r); !s.ok()) return Fail("RecordStore::Write: " + s.ToString());
    }
    json out = {{"records", o_.records},
                {"nodes", o_.nodes},
                {"write_records_s", mb::Ms(mb::Clock::now() - t0) / 1000}};

    mb::Mock mock({o_.bin_dir, o_.work_dir, "10.246.0.0/16"});
    if (!mock.ok()) return Fail("mock did not start");
    mb::Daemon addons;
    const std::string sock = o_.work_dir + "/gc.sock";
    if (!StartAddons(addons, sock, mock.url(), state, o_.work_dir + "/gc-fence.db")) {
      return Fail("mizarmp-addons did not come up on " + sock);
    }
    auto stub = fence::FenceController::NewStub(mb::NewChannel("unix:" + sock, 0));
    // The whole cluster, and one node (parameter hostId), calls interleaved.
    char one_node[32];
    std::snprintf(one_node, sizeof(one_node), "node-%03d", o_.nodes / 2);
    std::vector<double> ms, ms_node;
    size_t clients = 0, addresses = 0, node_clients = 0, node_addresses = 0;
    std::string error;
    for (int i = -3; i < o_.getclients_calls && error.empty(); ++i) {
      for (const bool narrowed : {false, true}) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        fence::GetFenceClientsRequest req;
        if (narrowed) (*req.mutable_parameters())["hostId"] = one_node;
        fence::GetFenceClientsResponse resp;
        const auto c0 = mb::Clock::now();
        grpc::Status st = stub->GetFenceClients(&ctx, req, &resp);
        const double t = mb::Ms(mb::Clock::now() - c0);
        if (!st.ok()) {
          error = mb::CodeName(st.error_code()) +
                  (st.error_message().empty() ? std::string() : ": " + st.error_message());
          break;
        }
        if (i >= 0) (narrowed ? ms_node : ms).push_back(t);
        size_t n = 0;
        for (const auto& c : resp.clients()) n += static_cast<size_t>(c.addresses_size());
        (narrowed ? node_clients : clients) = static_cast<size_t>(resp.clients_size());
        (narrowed ? node_addresses : addresses) = n;
      }
    }
    if (!error.empty()) {
      out["measured"] = false;
      out["why"] = "GetFenceClients answered " + error;
      results_["getclients"] = out;
      std::cerr << "   not measured: " << out["why"] << "\n";
      return error.rfind("UNIMPLEMENTED", 0) == 0;
    }
    out["measured"] = true;
    out["latency"] = mb::StatsJson(mb::Summarize(ms));
    out["clients_returned"] = clients;
    out["addresses_returned"] = addresses;
    out["one_node"] = {{"host_id", one_node},
                       {"latency", mb::StatsJson(mb::Summarize(ms_node))},
                       {"clients_returned", node_clients},
                       {"addresses_returned", node_addresses}};
    auto st = mock.State();
    out["mock_requests"] = st ? (*st)["requests"] : json(nullptr);
    // The server's CPU during back-to-back whole-cluster calls (one client).
    if (!o_.perf_dir.empty()) {
      const std::string data = o_.perf_dir + "/perf.GetFenceClients.data";
      const double cpu0 = ProcessCpuMs(addons.pid());
      std::thread perf = StartPerf(data, 3);
      const auto end = mb::Clock::now() + std::chrono::milliseconds(3200);
      int calls = 0;
      while (mb::Clock::now() < end) {
        grpc::ClientContext ctx;
        fence::GetFenceClientsRequest req;
        fence::GetFenceClientsResponse resp;
        if (stub->GetFenceClients(&ctx, req, &resp).ok()) ++calls;
      }
      perf.join();
      out["profiled_calls"] = calls;
      if (calls > 0) out["server_cpu_ms_per_call"] = (ProcessCpuMs(addons.pid()) - cpu0) / calls;
      PerfReport(data, addons.pid());
    }
    results_["getclients"] = out;
    std::cerr << "   GetFenceClients median " << out["latency"]["median_ms"] << " ms, p99 "
              << out["latency"]["p99_ms"] << " ms (" << clients << " clients, " << addresses
              << " addresses); hostId " << one_node << ": "
              << out["one_node"]["latency"]["median_ms"] << " ms (" << node_clients << " clients, "
              << node_addresses << " addresses)\n";
    // Every record is one address of its node; none may be lost or merged away.
    return clients == static_cast<size_t>(o_.nodes) &&
           addresses == static_cast<size_t>(o_.records) && node_clients == 1;
  }

  // ------------------------------------------------------------------------------------ fence
  bool Fence() {
    mb::Mock mock({o_.bin_dir, o_.work_dir, "10.247.0.0/16"});
    if (!mock.ok()) return Fail("mock did not start");
    const auto t0 = mb::Clock::now();
    const std::vector<std::string> ips = mock.CreatePorts(o_.ports);
    json out = {{"ports", o_.ports}, {"create_ports_s", mb::Ms(mb::Clock::now() - t0) / 1000}};
    if (static_cast<int>(ips.size()) != o_.ports) {
      return Fail("the mock returned " + std::to_string(ips.size()) + " port addresses for " +
                  std::to_string(o_.ports) + " ports");
    }
    // The reconcile loop is pushed out of the way (1 h) so the REST calls counted are the RPC's.
    std::vector<std::string> flags = {"--reconcile-interval-ms", "3600000"};
    if (o_.update_connections > 0) {
      flags.insert(flags.end(), {"--update-connections", std::to_string(o_.update_connections)});
    }
    std::string store = o_.work_dir + "/fence-fence.db";
    if (o_.fence_store == "etcd") {
      // A prefix of its own, fresh per run, so nothing of the store benchmark's state is read.
      store = o_.etcd;
      flags.insert(flags.end(),
                   {"--etcd-prefix", "/mizarmp-bench-fence/" + std::to_string(::getpid()) + "/"});
    }
    out["store"] = o_.fence_store;
    mb::Daemon addons;
    const std::string sock = o_.work_dir + "/fence.sock";
    if (!StartAddons(addons, sock, mock.url(), o_.work_dir + "/fence-state", store, flags)) {
      return Fail("mizarmp-addons did not come up on " + sock);
    }
    // One CIDR per fenced port (/32 of every (ports/cidrs)-th port): what a failed node's clients
    // look like to the fencing controller.
    fence::FenceClusterNetworkRequest req;
    fence::UnfenceClusterNetworkRequest unreq;
    const int stride = std::max(1, o_.ports / o_.cidrs);
    std::set<std::string> fenced_ips;
    for (int i = 0; i < o_.cidrs && i * stride < o_.ports; ++i) {
      const std::string& ip = ips[static_cast<size_t>(i * stride)];
      req.add_cidrs()->set_cidr(ip + "/32");
      unreq.add_cidrs()->set_cidr(ip + "/32");
      fenced_ips.insert(ip);
    }
    out["cidrs"] = req.cidrs_size();
    auto stub = fence::FenceController::NewStub(mb::NewChannel("unix:" + sock, 0));
    // On etcd the replica first has to win the election: a fence of an address no port has
    // returns once a leader enforced it, so the figures below do not include the election.
    if (o_.fence_store == "etcd" && !WarmUp(*stub)) return Fail("no leader on the etcd store");
    // What a user would check: exactly the ports behind the CIDRs are administratively down.
    auto check = [&](bool expect_fenced, int* down, int* wrong) {
      *down = 0;
      *wrong = 0;
      auto list = mb::HttpJson("GET", mock.url() + "/project/" + mb::kProject + "/ports");
      if (!list || !list->contains("ports")) return false;
      for (const auto& p : (*list)["ports"]) {
        const bool is_down = p.value("admin_state_up", true) == false;
        const std::string ip = p.contains("fixed_ips") && !p["fixed_ips"].empty()
                                   ? p["fixed_ips"][0].value("ip_address", "")
                                   : "";
        if (is_down) ++*down;
        if (is_down != (expect_fenced && fenced_ips.count(ip) > 0)) ++*wrong;
      }
      return true;
    };
    auto requests = [&]() -> int64_t {
      auto st = mock.State();
      return st ? (*st)["requests"].get<int64_t>() : -1;
    };
    // One RPC: its time, REST calls and CPU, then what a user would check.
    auto measure = [&](bool unfence) -> json {
      const char* rpc = unfence ? "UnfenceClusterNetwork" : "FenceClusterNetwork";
      const int64_t before = requests();
      // CPU of both processes: on a shared machine the wall time also holds others' work.
      const double addons_cpu0 = ProcessCpuMs(addons.pid()), mock_cpu0 = ProcessCpuMs(mock.pid());
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
      grpc::Status st;
      const auto c0 = mb::Clock::now();
      if (unfence) {
        fence::UnfenceClusterNetworkResponse resp;
        st = stub->UnfenceClusterNetwork(&ctx, unreq, &resp);
      } else {
        fence::FenceClusterNetworkResponse resp;
        st = stub->FenceClusterNetwork(&ctx, req, &resp);
      }
      const double took = mb::Ms(mb::Clock::now() - c0);
      json r;
      if (!st.ok()) {
        r["measured"] = false;
        r["why"] = std::string(rpc) + " answered " + mb::CodeName(st.error_code()) +
                   (st.error_message().empty() ? std::string() : ": " + st.error_message());
        r["unimplemented"] = st.error_code() == grpc::StatusCode::UNIMPLEMENTED;
        return r;
      }
      r["measured"] = true;
      r["ms"] = took;
      r["addons_cpu_ms"] = ProcessCpuMs(addons.pid()) - addons_cpu0;
      r["mock_cpu_ms"] = ProcessCpuMs(mock.pid()) - mock_cpu0;
      const int64_t after = requests();
      if (before >= 0 && after >= 0) r["rest_requests"] = after - before;
      int down = 0, wrong = 0;
      if (!check(!unfence, &down, &wrong)) {
        r["measured"] = false;
        r["why"] = "cannot list the ports at the mock";
        return r;
      }
      r["ports_down_after"] = down;
      r["ports_wrong"] = wrong;
      if (!unfence) {
        grpc::ClientContext lctx;
        fence::ListClusterFenceRequest lreq;
        fence::ListClusterFenceResponse lresp;
        if (stub->ListClusterFence(&lctx, lreq, &lresp).ok()) {
          r["list_cluster_fence_cidrs"] = lresp.cidrs_size();
        }
      }
      std::cerr << "   " << rpc << " " << took << " ms, " << r.value("rest_requests", -1)
                << " REST calls, " << down << " ports down (" << wrong << " wrong); CPU "
                << r["addons_cpu_ms"] << " ms mizarmp-addons, " << r["mock_cpu_ms"] << " ms mock\n";
      return r;
    };
    // --fence-rounds fence/unfence pairs; the medians are the figures, every round is checked.
    out["rounds"] = o_.fence_rounds;
    std::map<std::string, std::vector<json>> taken;
    for (int round = 0; round < o_.fence_rounds; ++round) {
      for (const bool unfence : {false, true}) {
        json r = measure(unfence);
        if (!r["measured"].get<bool>()) {
          out[unfence ? "unfence" : "fence"] = r;
          std::cerr << "   not measured: " << r["why"] << "\n";
          results_["fence"] = out;
          return r.value("unimplemented", false) || Fail(r["why"].get<std::string>());
        }
        taken[unfence ? "unfence" : "fence"].push_back(std::move(r));
      }
    }
    bool ok = true;
    for (auto& [key, rounds] : taken) {
      json summary = rounds.back();  // the last round's counts and checks
      for (const char* figure : {"ms", "addons_cpu_ms", "mock_cpu_ms"}) {
        std::vector<double> values;
        for (const json& r : rounds) values.push_back(r[figure].get<double>());
        summary[figure] = mb::Summarize(values).median;
        if (std::string(figure) == "ms") summary["ms_rounds"] = values;
      }
      int wrong = 0;
      for (const json& r : rounds) wrong = std::max(wrong, r["ports_wrong"].get<int>());
      summary["ports_wrong"] = wrong;  // the worst round
      if (wrong != 0) ok = false;
      out[key] = summary;
    }
    results_["fence"] = out;
    return ok;
  }

  // A fence and an unfence of 192.0.2.1/32 (TEST-NET-1: no port), each retried while the
  // replica is not yet the leader.
  static bool WarmUp(fence::FenceController::Stub& stub) {
    const auto end = mb::Clock::now() + std::chrono::seconds(60);
    for (const bool unfence : {false, true}) {
      grpc::Status st;
      do {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        if (unfence) {
          fence::UnfenceClusterNetworkRequest req;
          fence::UnfenceClusterNetworkResponse resp;
          req.add_cidrs()->set_cidr("192.0.2.1/32");
          st = stub.UnfenceClusterNetwork(&ctx, req, &resp);
        } else {
          fence::FenceClusterNetworkRequest req;
          fence::FenceClusterNetworkResponse resp;
          req.add_cidrs()->set_cidr("192.0.2.1/32");
          st = stub.FenceClusterNetwork(&ctx, req, &resp);
        }
      } while (!st.ok() && mb::Clock::now() < end);
      if (!st.ok()) return false;
    }
    return true;
  }

  bool Fail(const std::string& why) { return mb::RecordFailure(results_, why); }

  Options o_;
  json results_;
};

int Usage(const std::string& why) {
  std::cerr << "mizarmp-bench-addons: " << why << "\n"
            << "usage: mizarmp-bench-addons --bin-dir DIR [--work DIR] [--out FILE]\n"
               "         [--sections rpc,getclients,fence] [--clients N] [--seconds S]\n"
               "         [--rounds N] [--records N] [--nodes N] [--ports N] [--cidrs N]\n"
               "         [--fence-store sqlite|etcd] [--etcd etcd://HOST:PORT,...]\n"
               "         [--update-connections N] [--fence-rounds N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--bin-dir") {
      o.bin_dir = next();
    } else if (a == "--work") {
      o.work_dir = next();
    } else if (a == "--out") {
      o.out = next();
    } else if (a == "--sections") {
      auto v = mb::Split(next(), ',');
      o.sections = std::set<std::string>(v.begin(), v.end());
    } else if (a == "--clients") {
      o.clients = std::atoi(next().c_str());
    } else if (a == "--seconds") {
      o.seconds = std::atof(next().c_str());
    } else if (a == "--rounds") {
      o.rounds = std::atoi(next().c_str());
    } else if (a == "--records") {
      o.records = std::atoi(next().c_str());
    } else if (a == "--nodes") {
      o.nodes = std::atoi(next().c_str());
    } else if (a == "--ports") {
      o.ports = std::atoi(next().c_str());
    } else if (a == "--cidrs") {
      o.cidrs = std::atoi(next().c_str());
    } else if (a == "--getclients-calls") {
      o.getclients_calls = std::atoi(next().c_str());
    } else if (a == "--fence-rounds") {
      o.fence_rounds = std::atoi(next().c_str());
    } else if (a == "--fence-store") {
      o.fence_store = next();
    } else if (a == "--etcd") {
      o.etcd = next();
    } else if (a == "--update-connections") {
      o.update_connections = std::atoi(next().c_str());
    } else if (a == "--perf-dir") {
      o.perf_dir = next();
    } else {
      return Usage("unknown argument " + a);
    }
  }
  if (o.bin_dir.empty()) return Usage("--bin-dir is required");
  if (o.fence_rounds < 1) return Usage("--fence-rounds: want at least 1");
  if (o.fence_store != "sqlite" && o.fence_store != "etcd") {
    return Usage("--fence-store: want sqlite or etcd, got " + o.fence_store);
  }
  if (o.fence_store == "etcd" && o.etcd.empty()) return Usage("--fence-store etcd needs --etcd");
  return Bench(std::move(o)).Main();
}
