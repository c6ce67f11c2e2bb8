// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-soak: does anything grow under sustained use?
//
// Sections (--sections, comma separated; default both):
//   cni     --cycles ADD/DEL cycles of mizarmp, exec'd as a runtime execs it, each in a fresh pod
//           netns, against mizarmp-mock and its host agent. Every --sample-every cycles: the
//           mock's RSS (VmRSS, VmHWM) and open fds, and what the plugin left behind (records,
//           lock files, temp files in its state dir; veths in the host netns; ports at the mock).
//           The plugin's own peak RSS per invocation comes from wait4's rusage.
//   server  mizarmp-addons against the mock with --ports ports; --clients threads each call
//           FenceClusterNetwork, ListClusterFence, GetFenceClients, UnfenceClusterNetwork,
//           ListClusterFence in a loop for --seconds, fencing and unfencing its own few /32s so
//           the fence state does not grow. Every --sample-seconds: RSS and fds of mizarmp-addons
//           and of the mock, the fence store's size; RPC counts and errors by method; afterwards
//           what is still fenced (the server's list, ports down at the mock).
//
// Writes the samples as JSON (--out); bench/report.py turns them into the verdicts.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/grpc_support.h"
#include "bench/support.h"
#include "common/flags.h"
#include "fence/fence.grpc.pb.h"

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
using mizarmp::FlagTable;
using mizarmp::Status;
using nlohmann::json;

namespace {

struct Options {
  std::string bin_dir;
  std::string work_dir = "/tmp/mizarmp-bench-soak";
  std::string out = "soak-results.json";
  std::set<std::string> sections = {"cni", "server"};
  int cycles = 1000;
  int sample_every = 50;
  double seconds = 120;
  double sample_seconds = 2;
  int clients = 4;
  int ports = 1000;
  int cidrs_per_client = 4;
};

// ------------------------------------------------------------------------------ measurements
// What /proc says about a process; -1 where it could not be read.
struct Usage {
  long rss_kib = -1;  // VmRSS
  long hwm_kib = -1;  // VmHWM, the peak RSS so far
  long threads = -1;
  long fds = -1;  // entries of /proc/PID/fd
};

Usage ReadUsage(pid_t pid) {
  Usage u;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream status(proc + "/status");
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string key;
    long value = -1;
    fields >> key >> value;
    if (key == "VmRSS:") u.rss_kib = value;
    if (key == "VmHWM:") u.hwm_kib = value;
    if (key == "Threads:") u.threads = value;
  }
  std::error_code ec;
  long fds = 0;
  for (fs::directory_iterator it(proc + "/fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
  if (!ec) u.fds = fds;
  return u;
}

json UsageJson(const Usage& u) {
  return {{"rss_kib", u.rss_kib}, {"hwm_kib", u.hwm_kib}, {"threads", u.threads}, {"fds", u.fds}};
}

// The plugin's state dir by kind of file: records (<name>.json), lock files (<name>.lock), temp
// files of atomic writes (.<name>.tmp.<pid>.<random>) and anything else.
json StateDirContents(const std::string& dir) {
  long records = 0, locks = 0, temps = 0, other = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    const std::string name = it->path().filename().string();
    if (name.front() == '.' && name.find(".tmp.") != std::string::npos) {
      ++temps;
    } else if (it->path().extension() == ".lock") {
      ++locks;
    } else if (it->path().extension() == ".json") {
      ++records;
    } else {
      ++other;
    }
  }
  return {
      {"records", records}, {"lock_files", locks}, {"temp_files", temps}, {"other_files", other}};
}

// The ports at the mock, -1 when its state cannot be read.
long MockPorts(const mb::Mock& mock) {
  auto st = mock.State();
  return st && (*st)["ports"].is_number() ? (*st)["ports"].get<long>() : -1;
}

// Bytes of an SQLite database with its -wal and -shm files.
long DatabaseBytes(const std::string& path) {
  long total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    const auto n = fs::file_size(path + suffix, ec);
    if (!ec) total += static_cast<long>(n);
  }
  return total;
}

// Successful calls and failures by status of one RPC method.
struct RpcCount {
  uint64_t ok = 0;
  std::map<std::string, uint64_t> errors;
  std::string first_error;

  void Merge(const RpcCount& other) {
    ok += other.ok;
    for (const auto& [code, n] : other.errors) errors[code] += n;
    if (first_error.empty()) first_error = other.first_error;
  }
};

class Soak {
 public:
  explicit Soak(Options o) : o_(std::move(o)) {}

  int Main() {
    // mizarmp-addons refuses a socket directory others may write to.
    fs::create_directories(o_.work_dir);
    fs::permissions(o_.work_dir, fs::perms::owner_all, fs::perm_options::replace);
    results_["config"] = {{"cycles", o_.cycles},
                          {"sample_every", o_.sample_every},
                          {"seconds", o_.seconds},
                          {"sample_seconds", o_.sample_seconds},
                          {"clients", o_.clients},
                          {"ports", o_.ports},
                          {"cidrs_per_client", o_.cidrs_per_client}};
    return mb::RunSections(
        {{"cni", [this] { return CniSoak(); }}, {"server", [this] { return ServerSoak(); }}},
        o_.sections, results_, o_.out);
  }

 private:
  // -------------------------------------------------------------------------------------- cni
  // Per command: the plugin's peak RSS and wall time of each successful run, and the failures.
  struct PluginTally {
    std::map<std::string, std::vector<double>> maxrss_kib, wall_ms;
    int failures = 0;
    std::string first_failure;

    void Add(const std::string& command, const mb::ExecResult& r) {
      if (r.ok()) {
        maxrss_kib[command].push_back(static_cast<double>(r.maxrss_kib));
        wall_ms[command].push_back(r.wall_ms);
        return;
      }
      if (failures++ == 0) first_failure = command + ": " + r.Describe();
    }
  };

  // One pod's life: a fresh netns, ADD, DEL, the netns deleted.
  void Cycle(int i, const json& config, PluginTally& tally) const {
    mb::Netns pod(mb::UniqueName("mzsp"));
    const std::string cid = "soak" + std::to_string(i);
    for (const std::string command : {"ADD", "DEL"}) {
      tally.Add(command, mb::Run(mb::PluginExec(o_.bin_dir + "/mizarmp", o_.bin_dir, command, cid,
                                                pod.path(), config)));
    }
  }

  bool CniSoak() {
    mb::Netns host(mb::UniqueName("mzsh"));
    if (!host.ok()) return Fail("cannot create network namespaces (needs root)");
    const std::string state = o_.work_dir + "/cni-state";
    fs::remove_all(state);
    mb::Mock mock({o_.bin_dir, o_.work_dir, "10.249.0.0/16", host.path()});
    if (!mock.ok()) return Fail("mock did not start (log " + mock.log() + ")");
    const json config = mb::MizarmpConfig(mock.url(), state);
    const auto t0 = mb::Clock::now();
    json samples = json::array();
    // /proc first, so the curl connection of the port count is not among the mock's fds.
    auto sample = [&](int cycle) {
      const Usage u = ReadUsage(mock.pid());
      json left = StateDirContents(state);
      left["host_veths"] = host.CountLinks("veth");
      left["mock_ports"] = MockPorts(mock);
      samples.push_back({{"cycle", cycle},
                         {"seconds", mb::Ms(mb::Clock::now() - t0) / 1000},
                         {"mock", UsageJson(u)},
                         {"leftover", left}});
      std::cerr << "   cycle " << cycle << ": mock RSS " << u.rss_kib << " KiB, fds " << u.fds
                << ", left " << left.dump() << "\n";
    };
    PluginTally tally;
    sample(0);
    for (int i = 1; i <= o_.cycles; ++i) {
      Cycle(i, config, tally);
      if (i % o_.sample_every == 0 || i == o_.cycles) sample(i);
    }
    json plugin;
    for (const auto& [command, rss] : tally.maxrss_kib) {
      const mb::Stats r = mb::Summarize(rss);
      plugin[command] = {{"n", r.n},
                         {"maxrss_kib", {{"min", r.min}, {"median", r.median}, {"max", r.max}}},
                         {"wall", mb::StatsJson(mb::Summarize(tally.wall_ms[command]))}};
    }
    results_["cni"] = {{"cycles", o_.cycles},
                       {"samples", samples},
                       {"plugin", plugin},
                       {"failures", tally.failures},
                       {"first_failure", tally.first_failure},
                       {"mock_log", mock.log()}};
    if (tally.failures) std::cerr << "   first failure: " << tally.first_failure << "\n";
    return tally.failures == 0;
  }

  // ----------------------------------------------------------------------------------- server
  // One client's loop until `stop`: fence its CIDRs, list, get the clients, unfence, list.
  void ClientLoop(const std::string& address, int id, const std::vector<std::string>& cidrs,
                  const std::atomic<bool>& stop, std::atomic<uint64_t>& calls,
                  std::map<std::string, RpcCount>& counts) const {
    auto stub = fence::FenceController::NewStub(mb::NewChannel(address, id));
    fence::FenceClusterNetworkRequest fence_req;
    fence::UnfenceClusterNetworkRequest unfence_req;
    for (const auto& c : cidrs) {
      fence_req.add_cidrs()->set_cidr(c);
      unfence_req.add_cidrs()->set_cidr(c);
    }
    auto call = [&](const char* method, auto&& rpc) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      const grpc::Status st = rpc(&ctx);
      RpcCount& c = counts[method];
      ++calls;
      if (st.ok()) {
        ++c.ok;
        return;
      }
      ++c.errors[mb::CodeName(st.error_code())];
      if (c.first_error.empty()) c.first_error = st.error_message();
    };
    auto list = [&](grpc::ClientContext* ctx) {
      fence::ListClusterFenceResponse resp;
      return stub->ListClusterFence(ctx, fence::ListClusterFenceRequest(), &resp);
    };
    while (!stop.load()) {
      call("FenceClusterNetwork", [&](grpc::ClientContext* ctx) {
        fence::FenceClusterNetworkResponse resp;
        return stub->FenceClusterNetwork(ctx, fence_req, &resp);
      });
      call("ListClusterFence", list);
      call("GetFenceClients", [&](grpc::ClientContext* ctx) {
        fence::GetFenceClientsResponse resp;
        return stub->GetFenceClients(ctx, fence::GetFenceClientsRequest(), &resp);
      });
      call("UnfenceClusterNetwork", [&](grpc::ClientContext* ctx) {
        fence::UnfenceClusterNetworkResponse resp;
        return stub->UnfenceClusterNetwork(ctx, unfence_req, &resp);
      });
      call("ListClusterFence", list);
    }
  }

  // What is still fenced once the clients stopped: CIDRs the server lists, ports down at the mock.
  static json FenceLeftovers(const std::string& address, const mb::Mock& mock) {
    auto stub = fence::FenceController::NewStub(mb::NewChannel(address, -3));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    fence::ListClusterFenceResponse resp;
    const bool listed = stub->ListClusterFence(&ctx, fence::ListClusterFenceRequest(), &resp).ok();
    long down = -1;
    if (auto ports = mb::HttpJson("GET", mock.url() + "/project/" + mb::kProject + "/ports");
        ports && ports->contains("ports")) {
      down = 0;
      for (const auto& p : (*ports)["ports"]) down += p.value("admin_state_up", true) ? 0 : 1;
    }
    return {{"fenced_cidrs", listed ? resp.cidrs_size() : -1}, {"ports_down", down}};
  }

  bool ServerSoak() {
    mb::MockOptions mock_options{o_.bin_dir, o_.work_dir, "10.250.0.0/16"};
    // The mock's journal of port updates (GET /mock/requests, for the tests) fills within the
    // warm-up, so what the mock's memory does after it is the mock's own, not the journal's.
    mock_options.journal_capacity = 1000;
    mb::Mock mock(mock_options);
    if (!mock.ok()) return Fail("mock did not start (log " + mock.log() + ")");
    const std::vector<std::string> ips = mock.CreatePorts(o_.ports);
    const size_t per = static_cast<size_t>(o_.cidrs_per_client);
    if (ips.size() < per * static_cast<size_t>(o_.clients)) {
      return Fail("the mock created " + std::to_string(ips.size()) + " of " +
                  std::to_string(o_.ports) + " ports");
    }
    mb::Daemon addons;
    const std::string sock = o_.work_dir + "/soak.sock";
    const std::string store = o_.work_dir + "/soak-fence.db";
    fs::remove(store);
    if (!mb::StartAddons(
            addons, {o_.bin_dir, sock, mock.url(), o_.work_dir + "/server-state", store, {}})) {
      return Fail("mizarmp-addons did not come up on " + sock + " (log " + sock + ".log)");
    }
    const std::string address = "unix:" + sock;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> calls{0};
    std::vector<std::map<std::string, RpcCount>> counts(static_cast<size_t>(o_.clients));
    std::vector<std::thread> threads;
    // Client c's own /32s: every stride-th port, so they spread over the whole list.
    const size_t stride = ips.size() / (per * static_cast<size_t>(o_.clients));
    for (int c = 0; c < o_.clients; ++c) {
      std::vector<std::string> cidrs;
      for (size_t k = 0; k < per; ++k) {
        cidrs.push_back(ips[(static_cast<size_t>(c) * per + k) * stride] + "/32");
      }
      threads.emplace_back([&, c, cidrs] {
        ClientLoop(address, c, cidrs, stop, calls, counts[static_cast<size_t>(c)]);
      });
    }
    const auto t0 = mb::Clock::now();
    json samples = json::array();
    auto sample = [&](const char* phase) {
      const Usage a = ReadUsage(addons.pid()), m = ReadUsage(mock.pid());
      const double at = mb::Ms(mb::Clock::now() - t0) / 1000;
      samples.push_back({{"seconds", at},
                         {"phase", phase},
                         {"rpcs", calls.load()},
                         {"addons", UsageJson(a)},
                         {"mock", UsageJson(m)},
                         {"store_bytes", DatabaseBytes(store)}});
      std::cerr << "   " << at << " s: " << calls.load() << " RPCs; addons RSS " << a.rss_kib
                << " KiB, fds " << a.fds << "; mock RSS " << m.rss_kib << " KiB, fds " << m.fds
                << "\n";
    };
    sample("load");
    const auto step = std::chrono::duration<double>(o_.sample_seconds);
    for (auto next = t0 + step; next <= t0 + std::chrono::duration<double>(o_.seconds);
         next += step) {
      std::this_thread::sleep_until(next);
      sample("load");
    }
    stop = true;
    for (auto& t : threads) t.join();
    const double seconds = mb::Ms(mb::Clock::now() - t0) / 1000;
    std::this_thread::sleep_for(std::chrono::seconds(1));  // connections closed, calls drained
    sample("idle");
    std::map<std::string, RpcCount> total;
    for (const auto& per_client : counts) {
      for (const auto& [method, c] : per_client) total[method].Merge(c);
    }
    json rpcs = json::object();
    bool ok = true;
    for (const auto& [method, c] : total) {
      rpcs[method] = {{"ok", c.ok}, {"errors", c.errors}, {"first_error", c.first_error}};
      if (!c.errors.empty()) ok = false;
    }
    const json left = FenceLeftovers(address, mock);
    results_["server"] = {{"seconds", seconds},
                          {"clients", o_.clients},
                          {"ports", ips.size()},
                          {"cidrs_per_client", per},
                          {"samples", samples},
                          {"rpcs", rpcs},
                          {"rpcs_total", calls.load()},
                          {"leftover", left},
                          {"addons_log", sock + ".log"},
                          {"mock_log", mock.log()},
                          {"mock_journal_capacity", mock_options.journal_capacity}};
    std::cerr << "   RPCs " << rpcs.dump() << "; left " << left.dump() << "\n";
    return ok;
  }

  bool Fail(const std::string& why) { return mb::RecordFailure(results_, why); }

  Options o_;
  json results_;
};

// The command line as one table (common/flags.h), so parsing and --help cannot drift.
FlagTable Flags(Options& o) {
  FlagTable t;
  t.String("bin-dir", "DIR", "where mizarmp, mizarmp-mock and mizarmp-addons are (required)",
           &o.bin_dir);
  t.String("work", "DIR", "scratch directory (default " + o.work_dir + ")", &o.work_dir);
  t.String("out", "FILE", "where the JSON results go (default " + o.out + ")", &o.out);
  t.Add({"sections", "LIST", "cni,server (default both)", [&o](std::string_view v) {
           auto names = mb::Split(std::string(v), ',');
           o.sections = std::set<std::string>(names.begin(), names.end());
           return Status::Ok();
         }});
  t.Int("cycles", "N", "ADD/DEL cycles (default 1000)", 1, 1000000, &o.cycles);
  t.Int("sample-every", "N", "cycles between samples (default 50)", 1, 1000000, &o.sample_every);
  t.Int("seconds", "S", "server soak duration (default 120)", 1, 86400,
        [&o](int64_t v) { o.seconds = static_cast<double>(v); });
  t.Int("sample-seconds", "S", "seconds between server samples (default 2)", 1, 3600,
        [&o](int64_t v) { o.sample_seconds = static_cast<double>(v); });
  t.Int("clients", "N", "client threads (default 4)", 1, 256, &o.clients);
  t.Int("ports", "N", "ports at the mock (default 1000)", 1, 1000000, &o.ports);
  t.Int("cidrs-per-client", "N", "each client's own /32s (default 4)", 1, 4096,
        &o.cidrs_per_client);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  return mb::DriverMain<Soak>(
      "mizarmp-bench-soak", "--bin-dir DIR [flags]", argc, argv, Flags,
      [](const Options& o) -> std::string {
        if (o.bin_dir.empty()) return "--bin-dir is required";
        if (o.ports < o.clients * o.cidrs_per_client) {
          return "--ports must be at least --clients x --cidrs-per-client";
        }
        if (::geteuid() != 0) return "must run as root (network namespaces)";
        return "";
      });
}
