// mizarmp-bench-addons: mizarmp-addons over its unix socket.
//
// Sections (--sections, comma separated; default all):
//   rpc         Identity.Probe and FenceController.ListClusterFence: calls/s and latency with
//               --clients concurrent clients (one channel and connection each), mizarmp-addons vs
//               mizarmp-bench-bare-grpc (empty handlers), interleaved in rounds
//   getclients  GetFenceClients over --records attachment records (cni::RecordStore::Write) of
//               --nodes nodes
//   fence       FenceClusterNetwork of --cidrs CIDRs against --ports ports at mizarmp-mock: time,
//               REST calls (the mock counts them), ports fenced afterwards
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

#include "bench/support.h"
#include "cni/records.h"
#include "fence.grpc.pb.h"
#include "identity.grpc.pb.h"

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

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
  std::string mock_preload = "libmizarmp_bench_nodelay.so";
  // When set: during the last Probe round of each server, `perf record -e cpu-clock -g` attached
  // to that server writes PERF_DIR/perf.<server>.Probe.data.
  std::string perf_dir;
};

json StatsJson(const mb::Stats& s) {
  return json{{"n", s.n},        {"min_ms", s.min}, {"median_ms", s.median}, {"p90_ms", s.p90},
              {"p99_ms", s.p99}, {"max_ms", s.max}, {"mean_ms", s.mean}};
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

std::string CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "code " + std::to_string(static_cast<int>(c));
  }
}

// A channel of its own (no subchannel sharing between channels), so N clients are N connections.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int id) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("mizarmp.bench.client", id);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

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

bool WaitReady(const std::string& address, std::chrono::seconds timeout) {
  auto ch = NewChannel(address, -1);
  return ch->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

// curl(1) for the mock's REST and control endpoints (outside every timed window).
std::optional<json> HttpJson(const std::string& method, const std::string& url,
                             const std::string& body_file = {}) {
  std::string cmd = "curl -sS --max-time 120 -X " + method + " -H 'Content-Type: application/json'";
  if (!body_file.empty()) cmd += " --data-binary @" + body_file;
  cmd += " '" + url + "'";
  std::string out;
  if (mb::Shell(cmd, &out) != 0) return std::nullopt;
  json j = json::parse(out, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Main() {
    fs::create_directories(o_.work_dir);
    results_["config"] = {{"clients", o_.clients}, {"seconds", o_.seconds},
                          {"rounds", o_.rounds},   {"records", o_.records},
                          {"nodes", o_.nodes},     {"ports", o_.ports},
                          {"cidrs", o_.cidrs},     {"getclients_calls", o_.getclients_calls}};
    int rc = 0;
    for (const char* s : {"rpc", "getclients", "fence"}) {
      if (!o_.sections.count(s)) continue;
      std::cerr << "== " << s << "\n";
      const auto t0 = mb::Clock::now();
      bool ok = true;
      if (std::string(s) == "rpc") ok = Rpc();
      if (std::string(s) == "getclients") ok = GetClients();
      if (std::string(s) == "fence") ok = Fence();
      std::cerr << "   " << s << (ok ? " done" : " FAILED") << " in "
                << mb::Ms(mb::Clock::now() - t0) / 1000 << " s\n";
      if (!ok) rc = 1;
      Save();
    }
    return rc;
  }

 private:
  // ---------------------------------------------------------------------------------- servers
  struct MockProc {
    mb::Daemon daemon;
    int port = 0;
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  };
  bool StartMock(MockProc& m, const std::string& cidr) {
    const std::string tag = mb::UniqueName("am");
    const std::string port_file = o_.work_dir + "/" + tag + ".port";
    fs::remove(port_file);
    std::map<std::string, std::string> env;
    if (!o_.mock_preload.empty()) env["LD_PRELOAD"] = o_.bin_dir + "/" + o_.mock_preload;
    if (!m.daemon.Start({o_.bin_dir + "/mizarmp-mock", "--listen", "127.0.0.1:0", "--port-file",
                         port_file, "--cidr", cidr, "--log-level", "warn"},
                        o_.work_dir + "/" + tag + ".log", env)) {
      return false;
    }
    m.port = std::atoi(mb::WaitForFile(port_file, std::chrono::seconds(10)).c_str());
    return m.port > 0;
  }

  // mizarmp-addons in controller mode on a unix socket of the work dir.
  bool StartAddons(mb::Daemon& d, const std::string& socket, const std::string& mpurl,
                   const std::string& state_dir, const std::string& fence_store) {
    fs::remove(socket);
    fs::create_directories(state_dir);
    if (!d.Start({o_.bin_dir + "/mizarmp-addons", "--endpoint", "unix://" + socket, "--mpurl",
                  mpurl, "--state-dir", state_dir, "--fence-store", fence_store, "--host-id",
                  "bench-node", "--log-level", "warn"},
                 socket + ".log")) {
      return false;
    }
    return WaitReady("unix:" + socket, std::chrono::seconds(20));
  }

  bool StartBare(mb::Daemon& d, const std::string& socket, bool health = false) {
    fs::remove(socket);
    std::vector<std::string> argv = {o_.bin_dir + "/mizarmp-bench-bare-grpc", "--socket", socket};
    if (health) argv.push_back("--health");
    if (!d.Start(argv, socket + ".log")) return false;
    return WaitReady("unix:" + socket, std::chrono::seconds(20));
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
      channels.push_back(NewChannel(address, i));
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
            ++l.errors[CodeName(st.error_code())];
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
    MockProc mock;
    if (!StartMock(mock, "10.245.0.0/16")) return Fail("mock did not start");
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
          if (!o_.perf_dir.empty() && method == "Probe" && r == o_.rounds - 1) {
            mb::Exec e;
            // System-wide (threads the server starts under load are included), reported for the
            // server's pid only.
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
                      o_.perf_dir + "/perf." + names[k] + "." + method + ".data",
                      "--",
                      "sleep",
                      std::to_string(std::max(1, static_cast<int>(o_.seconds) - 1))};
            e.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
            perf = std::thread([e] { mb::Run(e); });
          }
          const double cpu0 = ProcessCpuMs(pids[k]);
          Load l = RunLoad(targets[k], method);
          const double cpu1 = ProcessCpuMs(pids[k]);
          if (l.ok > 0)
            cpu_per_call[k].push_back((cpu1 - cpu0) * 1000.0 / static_cast<double>(l.ok));
          if (perf.joinable()) {
            perf.join();
            const std::string data = o_.perf_dir + "/perf." + names[k] + "." + method + ".data";
            // Where the server's CPU went: by thread name, then by library and symbol.
            const std::string report = "perf report -i " + data + " --pid " +
                                       std::to_string(pids[k]) + " --stdio --no-children -g none ";
            mb::Shell(report + "--sort comm > " + data + ".comm.txt 2>/dev/null");
            mb::Shell(report + "--sort dso,sym --percent-limit 0.5 > " + data +
                      ".sym.txt 2>/dev/null");
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
                       {"latency", StatsJson(mb::Summarize(lat[k]))},
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
    auto st = HttpJson("GET", mock.url() + "/mock/state");
    out["mock_requests_during_rpc"] = st ? (*st)["requests"] : json(nullptr);
    results_["rpc"] = out;
    return ok;
  }

  // ------------------------------------------------------------------------------- getclients
  bool GetClients() {
    const std::string state = o_.work_dir + "/gc-state";
    fs::remove_all(state);
    mizarmp::cni::RecordStore store(state);
    const auto t0 = mb::Clock::now();
    for (int i = 0; i < o_.records; ++i) {
      mizarmp::cni::Record r;
      r.state = mizarmp::cni::Record::State::kComplete;
      r.network = "mzbench";
      char buf[64];
      std::snprintf(buf, sizeof(buf), "c%06d", i);
      r.container_id = buf;
      r.ifname = "eth0";
      r.netns = "/var/run/netns/pod" + std::to_string(i);
      std::snprintf(buf, sizeof(buf), "00000000-0000-5000-8000-%012d", i);
      r.port_id = buf;
      r.project_id = kProject;
      r.subnet_id = kSubnet;
      std::snprintf(buf, sizeof(buf), "node-%03d", i % o_.nodes);
      r.host_id = buf;
      r.mpurl = "http://127.0.0.1:1";
      std::snprintf(buf, sizeof(buf), "02:00:00:%02x:%02x:%02x", (i >> 16) & 0xff, (i >> 8) & 0xff,
                    i & 0xff);
      r.mac = buf;
      std::snprintf(buf, sizeof(buf), "10.246.%d.%d/16", (i + 2) / 256, (i + 2) % 256);
      r.ips.push_back({buf, "10.246.0.1"});
      r.created_at = mizarmp::cni::NowRfc3339();
      if (auto s = store.Write(r); !s.ok()) return Fail("RecordStore::Write: " + s.ToString());
    }
    json out = {{"records", o_.records},
                {"nodes", o_.nodes},
                {"write_records_s", mb::Ms(mb::Clock::now() - t0) / 1000}};

    MockProc mock;
    if (!StartMock(mock, "10.246.0.0/16")) return Fail("mock did not start");
    mb::Daemon addons;
    const std::string sock = o_.work_dir + "/gc.sock";
    if (!StartAddons(addons, sock, mock.url(), state, o_.work_dir + "/gc-fence.db")) {
      return Fail("mizarmp-addons did not come up on " + sock);
    }
    auto stub = fence::FenceController::NewStub(NewChannel("unix:" + sock, 0));
    std::vector<double> ms;
    size_t clients = 0, addresses = 0;
    std::string error;
    for (int i = -3; i < o_.getclients_calls; ++i) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      fence::GetFenceClientsRequest req;
      fence::GetFenceClientsResponse resp;
      const auto c0 = mb::Clock::now();
      grpc::Status st = stub->GetFenceClients(&ctx, req, &resp);
      const double t = mb::Ms(mb::Clock::now() - c0);
      if (!st.ok()) {
        error = CodeName(st.error_code()) +
                (st.error_message().empty() ? std::string() : ": " + st.error_message());
        break;
      }
      if (i >= 0) ms.push_back(t);
      clients = static_cast<size_t>(resp.clients_size());
      addresses = 0;
      for (const auto& c : resp.clients()) addresses += static_cast<size_t>(c.addresses_size());
    }
    if (!error.empty()) {
      out["measured"] = false;
      out["why"] = "GetFenceClients answered " + error;
      results_["getclients"] = out;
      std::cerr << "   not measured: " << out["why"] << "\n";
      return error.rfind("UNIMPLEMENTED", 0) == 0;
    }
    out["measured"] = true;
    out["latency"] = StatsJson(mb::Summarize(ms));
    out["clients_returned"] = clients;
    out["addresses_returned"] = addresses;
    results_["getclients"] = out;
    std::cerr << "   GetFenceClients median " << out["latency"]["median_ms"] << " ms, p99 "
              << out["latency"]["p99_ms"] << " ms (" << clients << " clients, " << addresses
              << " addresses)\n";
    return true;
  }

  // ------------------------------------------------------------------------------------ fence
  bool Fence() {
    MockProc mock;
    if (!StartMock(mock, "10.247.0.0/16")) return Fail("mock did not start");
    // The ports, in bulk creates of 500.
    const auto t0 = mb::Clock::now();
    std::vector<std::string> ips;
    const std::string body = o_.work_dir + "/bulk.json";
    for (int base = 0; base < o_.ports; base += 500) {
      json ports = json::array();
      for (int i = base; i < std::min(o_.ports, base + 500); ++i) {
        char id[64], host[32];
        std::snprintf(id, sizeof(id), "00000000-0000-5000-9000-%012d", i);
        std::snprintf(host, sizeof(host), "node-%03d", i % 100);
        ports.push_back({{"project_id", kProject},
                         {"id", id},
                         {"name", std::string("k8s_") + id},
                         {"admin_state_up", true},
                         {"network_id", kSubnet},
                         {"veth_name", "eth0"},
                         {"network_ns", "/var/run/netns/pod" + std::to_string(i)},
                         {"binding:host_id", host}});
      }
      std::ofstream(body) << json{{"ports", ports}}.dump();
      auto r = HttpJson("POST", mock.url() + "/project/" + kProject + "/ports", body);
      if (!r || !r->contains("ports")) return Fail("bulk create at the mock failed");
      for (const auto& p : (*r)["ports"]) {
        if (p.contains("fixed_ips") && !p["fixed_ips"].empty()) {
          ips.push_back(p["fixed_ips"][0]["ip_address"]);
        }
      }
    }
    json out = {{"ports", o_.ports}, {"create_ports_s", mb::Ms(mb::Clock::now() - t0) / 1000}};
    if (static_cast<int>(ips.size()) != o_.ports) {
      return Fail("the mock returned " + std::to_string(ips.size()) + " port addresses for " +
                  std::to_string(o_.ports) + " ports");
    }
    mb::Daemon addons;
    const std::string sock = o_.work_dir + "/fence.sock";
    if (!StartAddons(addons, sock, mock.url(), o_.work_dir + "/fence-state",
                     o_.work_dir + "/fence-fence.db")) {
      return Fail("mizarmp-addons did not come up on " + sock);
    }
    // One CIDR per fenced port (/32 of every (ports/cidrs)-th port): what a failed node's clients
    // look like to the fencing controller.
    fence::FenceClusterNetworkRequest req;
    const int stride = std::max(1, o_.ports / o_.cidrs);
    std::set<std::string> fenced_ips;
    for (int i = 0; i < o_.cidrs && i * stride < o_.ports; ++i) {
      req.add_cidrs()->set_cidr(ips[static_cast<size_t>(i * stride)] + "/32");
      fenced_ips.insert(ips[static_cast<size_t>(i * stride)]);
    }
    auto before = HttpJson("GET", mock.url() + "/mock/state");
    auto stub = fence::FenceController::NewStub(NewChannel("unix:" + sock, 0));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
    fence::FenceClusterNetworkResponse resp;
    const auto c0 = mb::Clock::now();
    grpc::Status st = stub->FenceClusterNetwork(&ctx, req, &resp);
    const double took = mb::Ms(mb::Clock::now() - c0);
    auto after = HttpJson("GET", mock.url() + "/mock/state");
    out["cidrs"] = req.cidrs_size();
    if (!st.ok()) {
      out["measured"] = false;
      out["why"] = "FenceClusterNetwork answered " + CodeName(st.error_code()) +
                   (st.error_message().empty() ? std::string() : ": " + st.error_message());
      results_["fence"] = out;
      std::cerr << "   not measured: " << out["why"] << "\n";
      return st.error_code() == grpc::StatusCode::UNIMPLEMENTED;
    }
    out["measured"] = true;
    out["fence_ms"] = took;
    if (before && after) {
      out["rest_requests"] =
          (*after)["requests"].get<int64_t>() - (*before)["requests"].get<int64_t>();
    }
    // What a user would check: exactly the ports behind the CIDRs are administratively down.
    auto list = HttpJson("GET", mock.url() + "/project/" + kProject + "/ports");
    int down = 0, wrong = 0;
    if (list && list->contains("ports")) {
      for (const auto& p : (*list)["ports"]) {
        const bool is_down = p.value("admin_state_up", true) == false;
        const std::string ip = p.contains("fixed_ips") && !p["fixed_ips"].empty()
                                   ? p["fixed_ips"][0].value("ip_address", "")
                                   : "";
        if (is_down) ++down;
        if (is_down != (fenced_ips.count(ip) > 0)) ++wrong;
      }
    }
    out["ports_down_after"] = down;
    out["ports_wrongly_fenced_or_missed"] = wrong;
    results_["fence"] = out;
    std::cerr << "   FenceClusterNetwork " << took << " ms, " << out.value("rest_requests", -1)
              << " REST calls, " << down << " ports down (" << wrong << " wrong)\n";
    return wrong == 0;
  }

  bool Fail(const std::string& why) {
    std::cerr << "   " << why << "\n";
    results_["errors"].push_back(why);
    return false;
  }

  void Save() const { std::ofstream(o_.out) << results_.dump(2) << "\n"; }

  Options o_;
  json results_;
};

int Usage(const std::string& why) {
  std::cerr << "mizarmp-bench-addons: " << why << "\n"
            << "usage: mizarmp-bench-addons --bin-dir DIR [--work DIR] [--out FILE]\n"
               "         [--sections rpc,getclients,fence] [--clients N] [--seconds S]\n"
               "         [--rounds N] [--records N] [--nodes N] [--ports N] [--cidrs N]\n";
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
      auto v = Split(next(), ',');
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
    } else if (a == "--perf-dir") {
      o.perf_dir = next();
    } else if (a == "--mock-preload") {
      o.mock_preload = next();
    } else {
      return Usage("unknown argument " + a);
    }
  }
  if (o.bin_dir.empty()) return Usage("--bin-dir is required");
  return Bench(std::move(o)).Main();
}
