// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-store: mizarmp-addons on its two fence stores, SQLite (a file) and etcd (a
// 3-member cluster on loopback, started by run.sh: --etcd), both measured in one run.
//
//   latency    FenceClusterNetwork then UnfenceClusterNetwork of 1 CIDR and of 100 CIDRs over
//              --ports ports at mizarmp-mock, --rounds rounds, the two stores alternating
//   list       ListClusterFence with 1,000 stored fences: calls/s of --clients client threads
//              for --seconds, the two stores alternating over --rounds rounds
//   failover   two etcd replicas (lease --lease-ttl s); a fence stored through the leader and a
//              port added inside it; kill -9 of the leader; from the kill, the time until the
//              other replica logs the first pass of its term and until the new port is down at
//              the mock (polled every 10 ms), --failovers times
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
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

using nlohmann::json;

namespace {

struct Options {
  std::string bin_dir;
  std::string etcd;  // "etcd://127.0.0.1:p,..."
  std::string work_dir = "/tmp/mizarmp-bench-store";
  std::string out = "store-results.json";
  int ports = 1000;
  int rounds = 30;
  int clients = 4;
  int seconds = 2;
  int lease_ttl = 3;
  int failovers = 5;
};

// Flags every replica here gets: short Mizar-MP timeouts so a 3 s lease is accepted.
const std::vector<std::string> kFastFlags = {"--mp-connect-timeout-ms", "500",
                                             "--mp-request-timeout-ms", "1000",
                                             "--reconcile-interval-ms", "3600000"};

class StoreBench {
 public:
  explicit StoreBench(Options o) : o_(std::move(o)) {}

  int Main() {
    fs::create_directories(o_.work_dir);
    fs::permissions(o_.work_dir, fs::perms::owner_all, fs::perm_options::replace);
    results_["config"] = {{"ports", o_.ports},           {"rounds", o_.rounds},
                          {"clients", o_.clients},       {"seconds", o_.seconds},
                          {"lease_ttl_s", o_.lease_ttl}, {"failovers", o_.failovers}};
    mb::Mock mock({o_.bin_dir, o_.work_dir, "10.248.0.0/16"});
    if (!mock.ok()) return Fail("mizarmp-mock did not start");
    ips_ = mock.CreatePorts(o_.ports);
    if (static_cast<int>(ips_.size()) != o_.ports) return Fail("the mock created too few ports");
    mpurl_ = mock.url();
    const bool ok = Stores() && Failover();
    mb::SaveResults(results_, o_.out);
    return ok ? 0 : 1;
  }

 private:
  bool Fail(const std::string& why) {
    mb::RecordFailure(results_, why);
    mb::SaveResults(results_, o_.out);
    return false;
  }

  struct Server {
    std::string name;
    mb::Daemon daemon;
    std::unique_ptr<fence::FenceController::Stub> stub;
    std::vector<double> fence1, unfence1, fence100, unfence100, list_rates;
  };

  bool Start(Server& s, const std::string& store, std::vector<std::string> extra) {
    extra.insert(extra.end(), kFastFlags.begin(), kFastFlags.end());
    const std::string sock = o_.work_dir + "/" + s.name + ".sock";
    fs::remove(sock + ".log");  // the failover reads it: nothing of an earlier run
    if (!mb::StartAddons(s.daemon,
                         {o_.bin_dir, sock, mpurl_, o_.work_dir + "/state", store, extra})) {
      return Fail(s.name + ": mizarmp-addons did not become ready (log " + sock + ".log)");
    }
    s.stub = fence::FenceController::NewStub(mb::NewChannel("unix:" + sock, 0));
    return true;
  }

  template <typename Request>
  static void AddCidrs(Request& r, const std::vector<std::string>& cidrs) {
    for (const auto& c : cidrs) r.add_cidrs()->set_cidr(c);
  }

  // One fence and its unfence; their durations in ms, or false.
  bool FenceUnfence(Server& s, const std::vector<std::string>& cidrs, std::vector<double>& fence,
                    std::vector<double>& unfence) {
    grpc::ClientContext fctx, uctx;
    fence::FenceClusterNetworkRequest freq;
    fence::FenceClusterNetworkResponse fresp;
    AddCidrs(freq, cidrs);
    auto t0 = mb::Clock::now();
    grpc::Status st = s.stub->FenceClusterNetwork(&fctx, freq, &fresp);
    fence.push_back(mb::Ms(mb::Clock::now() - t0));
    if (!st.ok()) return Fail(s.name + ": fence: " + st.error_message());
    fence::UnfenceClusterNetworkRequest ureq;
    fence::UnfenceClusterNetworkResponse uresp;
    AddCidrs(ureq, cidrs);
    t0 = mb::Clock::now();
    st = s.stub->UnfenceClusterNetwork(&uctx, ureq, &uresp);
    unfence.push_back(mb::Ms(mb::Clock::now() - t0));
    if (!st.ok()) return Fail(s.name + ": unfence: " + st.error_message());
    return true;
  }

  // ListClusterFence calls/s of o_.clients threads for o_.seconds.
  double ListRate(const std::string& sock) {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> calls{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < o_.clients; ++c) {
      threads.emplace_back([&, c] {
        auto stub = fence::FenceController::NewStub(mb::NewChannel("unix:" + sock, c + 1));
        while (!stop.load()) {
          grpc::ClientContext ctx;
          fence::ListClusterFenceRequest req;
          fence::ListClusterFenceResponse resp;
          if (stub->ListClusterFence(&ctx, req, &resp).ok() && resp.cidrs_size() == 1000) ++calls;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::seconds(o_.seconds));
    stop = true;
    for (auto& t : threads) t.join();
    return static_cast<double>(calls.load()) / o_.seconds;
  }

  bool Stores() {
    Server sqlite{"sqlite"}, etcd{"etcd"};
    fs::remove(o_.work_dir + "/fence.db");
    if (!Start(sqlite, o_.work_dir + "/fence.db", {})) return false;
    if (!Start(etcd, o_.etcd, {"--etcd-prefix", "/bench/latency/", "--replica-id", "bench"})) {
      return false;
    }
    std::vector<std::string> one = {ips_[0] + "/32"}, hundred;
    for (size_t i = 0; i < 100; ++i) hundred.push_back(ips_[i * ips_.size() / 100] + "/32");
    std::cerr << "== latency (" << o_.rounds << " rounds)\n";
    for (int r = 0; r < o_.rounds; ++r) {
      for (Server* s : {&sqlite, &etcd}) {
        if (!FenceUnfence(*s, one, s->fence1, s->unfence1) ||
            !FenceUnfence(*s, hundred, s->fence100, s->unfence100)) {
          return false;
        }
      }
    }
    std::cerr << "== list\n";
    std::vector<std::string> thousand;
    for (int i = 0; i < 1000; ++i) {
      thousand.push_back("10.250." + std::to_string(i / 250) + "." + std::to_string(i % 250) +
                         "/32");
    }
    for (Server* s : {&sqlite, &etcd}) {
      grpc::ClientContext ctx;
      fence::FenceClusterNetworkRequest req;
      fence::FenceClusterNetworkResponse resp;
      AddCidrs(req, thousand);
      if (!s->stub->FenceClusterNetwork(&ctx, req, &resp).ok()) {
        return Fail(s->name + ": storing 1,000 fences failed");
      }
    }
    for (int r = 0; r < std::min(o_.rounds, 5); ++r) {
      for (Server* s : {&sqlite, &etcd}) {
        s->list_rates.push_back(ListRate(o_.work_dir + "/" + s->name + ".sock"));
      }
    }
    for (Server* s : {&sqlite, &etcd}) {
      std::sort(s->list_rates.begin(), s->list_rates.end());
      results_["stores"][s->name] = {
          {"fence_1", mb::StatsJson(mb::Summarize(s->fence1))},
          {"unfence_1", mb::StatsJson(mb::Summarize(s->unfence1))},
          {"fence_100", mb::StatsJson(mb::Summarize(s->fence100))},
          {"unfence_100", mb::StatsJson(mb::Summarize(s->unfence100))},
          {"list_calls_per_s", s->list_rates},
          {"list_median_calls_per_s", s->list_rates[s->list_rates.size() / 2]}};
      std::cerr << "   " << s->name << ": fence 1 median " << mb::Summarize(s->fence1).median
                << " ms, fence 100 median " << mb::Summarize(s->fence100).median << " ms, list "
                << s->list_rates[s->list_rates.size() / 2] << " calls/s\n";
    }
    return true;
  }

  // Whether `log` holds a line containing `text`.
  static bool LogHas(const std::string& log, const std::string& text) {
    std::ifstream f(log);
    for (std::string line; std::getline(f, line);) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  bool PortDown(const std::string& id) {
    auto port = mb::HttpJson("GET", mpurl_ + "/project/" + mb::kProject + "/ports/" + id);
    if (!port || !port->is_object() || !port->contains("port")) return false;
    const json& p = (*port)["port"];
    return p.is_object() && p.contains("admin_state_up") && p["admin_state_up"] == false;
  }

  // One failover; appends the two durations in ms.
  bool OneFailover(int run, std::vector<double>& to_first_pass, std::vector<double>& to_disabled) {
    const std::string prefix = "/bench/failover" + std::to_string(run) + "/";
    const std::vector<std::string> extra = {"--etcd-prefix",       prefix,
                                            "--lease-ttl-seconds", std::to_string(o_.lease_ttl),
                                            "--log-level",         "info"};
    Server a{"failover-a" + std::to_string(run)}, b{"failover-b" + std::to_string(run)};
    auto with_id = [&](const std::string& id) {
      std::vector<std::string> v = extra;
      v.insert(v.end(), {"--replica-id", id});
      return v;
    };
    if (!Start(a, o_.etcd, with_id(a.name))) return false;
    if (!Start(b, o_.etcd, with_id(b.name))) return false;
    const std::string net =
        "10.248." + std::to_string(200 + run) + ".";  // in the mock's subnet, no port yet
    const std::string cidr = net + "0/24";
    grpc::ClientContext ctx;
    fence::FenceClusterNetworkRequest req;
    fence::FenceClusterNetworkResponse resp;
    AddCidrs(req, {cidr});
    if (!a.stub->FenceClusterNetwork(&ctx, req, &resp).ok()) return Fail("failover: fence failed");
    const std::string b_log = o_.work_dir + "/" + b.name + ".sock.log";
    const std::string a_log = o_.work_dir + "/" + a.name + ".sock.log";
    Server& leader = LogHas(a_log, "leads; first pass") ? a : b;
    const std::string& new_log = &leader == &a ? b_log : a_log;
    // A port inside the fence, created after it: only a reconcile disables it.
    const std::string id = "failover-port-" + std::to_string(run);
    const std::string body = o_.work_dir + "/port.json";
    std::ofstream(body) << json{{"port",
                                 {{"id", id},
                                  {"name", "k8s_" + id},
                                  {"project_id", mb::kProject},
                                  {"network_id", mb::kSubnet},
                                  {"admin_state_up", true},
                                  {"binding:host_id", "node-failover"},
                                  {"fixed_ips",
                                   {{{"subnet_id", mb::kSubnet}, {"ip_address", net + "7"}}}}}}}
                               .dump();
    if (!mb::HttpJson("POST", mpurl_ + "/project/" + mb::kProject + "/ports", body)) {
      return Fail("failover: creating the port failed");
    }
    const auto killed = mb::Clock::now();
    ::kill(leader.daemon.pid(), SIGKILL);
    leader.daemon.Wait(std::chrono::seconds(10));
    double first_pass = -1, disabled = -1;
    while (mb::Clock::now() - killed < std::chrono::seconds(4 * o_.lease_ttl + 10)) {
      const double ms = mb::Ms(mb::Clock::now() - killed);
      if (first_pass < 0 && LogHas(new_log, "leads; first pass")) first_pass = ms;
      if (disabled < 0 && PortDown(id)) disabled = ms;
      if (first_pass >= 0 && disabled >= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (first_pass < 0 || disabled < 0) return Fail("failover: the other replica never took over");
    to_first_pass.push_back(first_pass);
    to_disabled.push_back(disabled);
    std::cerr << "   failover " << run << ": first pass after " << first_pass
              << " ms, port disabled after " << disabled << " ms\n";
    return true;
  }

  bool Failover() {
    std::cerr << "== failover (lease " << o_.lease_ttl << " s, " << o_.failovers << " runs)\n";
    std::vector<double> to_first_pass, to_disabled;
    for (int run = 0; run < o_.failovers; ++run) {
      if (!OneFailover(run, to_first_pass, to_disabled)) return false;
    }
    results_["failover"] = {{"lease_ttl_s", o_.lease_ttl},
                            {"bound_ms", o_.lease_ttl * 4000 / 3 + 200},
                            {"to_first_pass_ms", to_first_pass},
                            {"to_port_disabled_ms", to_disabled},
                            {"first_pass", mb::StatsJson(mb::Summarize(to_first_pass))},
                            {"port_disabled", mb::StatsJson(mb::Summarize(to_disabled))}};
    return true;
  }

  Options o_;
  json results_;
  std::vector<std::string> ips_;
  std::string mpurl_;
};

FlagTable Flags(Options& o) {
  FlagTable t;
  t.String("bin-dir", "DIR", "where mizarmp-mock and mizarmp-addons are (required)", &o.bin_dir);
  t.String("etcd", "LOCATION", "etcd://HOST:PORT,... of a running cluster (required)", &o.etcd);
  t.String("work", "DIR", "scratch directory (default " + o.work_dir + ")", &o.work_dir);
  t.String("out", "FILE", "where the JSON results go (default " + o.out + ")", &o.out);
  t.Int("ports", "N", "ports at the mock (default 1000)", 100, 1000000, &o.ports);
  t.Int("rounds", "N", "latency rounds (default 30)", 1, 10000, &o.rounds);
  t.Int("clients", "N", "ListClusterFence client threads (default 4)", 1, 256, &o.clients);
  t.Int("seconds", "S", "seconds per ListClusterFence round (default 2)", 1, 3600, &o.seconds);
  t.Int("lease-ttl", "S", "the replicas' lease in the failover (default 3)", 3, 60, &o.lease_ttl);
  t.Int("failovers", "N", "failovers measured (default 5)", 1, 100, &o.failovers);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  return mb::DriverMain<StoreBench>(
      "mizarmp-bench-store", "--bin-dir DIR --etcd LOCATION [flags]", argc, argv, Flags,
      [](const Options& o) -> std::string {
        return o.bin_dir.empty() || o.etcd.empty() ? "--bin-dir and --etcd are required" : "";
      });
}
