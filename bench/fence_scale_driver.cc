// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-fence-scale: fencing as the cluster grows to a million ports (issue 35).
//
// For each of --sizes N: mizarmp-mock answering as Alcor really does (--strict --dialect alcor,
// refusing port lists of --row-limit rows or more) is filled with N ports over
// N / --ports-per-node simulated nodes (binding:host_id = the node's name) by Alcor's bulk create
// over one kept-alive connection. Then controller-mode mizarmp-addons is measured two ways, one
// after the other on the same ports:
//   index       "portIndex": the simulated node agents publish every node's ports with the
//               Publish RPC (timed), and a pass reads back only the indexed ports in its CIDRs
//   whole_list  no index: every pass lists every port (only below the row limit)
// Each way: fence + unfence of one /32 (--rounds pairs, medians), fence of --cidrs /32s
// (--many-rounds, medians), the server's peak RSS (VmHWM), and the idle reconcile per pass with
// the --cidrs fences in place (a second server on the same store, passes every
// --idle-interval-ms for --idle-seconds: its CPU per pass and the requests it made of the mock and
// the bytes of their answers per pass, as the mock counts them). At the largest size, when it is
// at or above the row limit, a fence without the index is tried to show that it is refused.
// With --etcd, a third way on the same ports:
//   etcd        two replicas on the etcd fence store and the etcd port index (a cluster run.sh
//               starts), the agents' publications spread over both, the RPCs through the
//               leader; the peak RSS of each replica, the idle passes' CPU of both replicas (and
//               of etcd's members, given --etcd-pids). At the largest size, the failover: kill -9
//               of the leader while a FenceClusterNetwork of a port's /32 goes to the other
//               replica at once: the time until that replica leads (its leader gauge) and until
//               the RPC answers OK (a standby's answer waits for a leader's pass), --failovers
//               times, the killed replica started again as the next standby. Each size's keys
//               are deleted and compacted away afterwards.
// Last at each size, a new port's cut-off: how long after its creation a port inside a fence is
// down, on a published node (its publication wakes a pass) and on a node that never published
// (the next pass at the default reconcile interval lists it), with the --cidrs fences in place.
// Every RPC's effect is checked at the mock.
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

#include "bench/grpc_support.h"
#include "bench/simulated_agents.h"
#include "bench/support.h"
#include "etcd/rpc.grpc.pb.h"
#include "fence/fence.grpc.pb.h"
#include "mizarmp/port_index.grpc.pb.h"

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
using mizarmp::FlagTable;
using nlohmann::json;

namespace {

// The mock's VPC (Alcor's network_id) and subnet, passed to it so both sides agree.
constexpr const char* kVpc = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038";
// Room for a million ports and more: a /10 holds 4,194,302 addresses.
constexpr const char* kCidr = "10.64.0.0/10";

struct Options {
  std::string bin_dir;
  std::string work_dir = "/tmp/mizarmp-bench-fence-scale";
  std::string out = "fence-scale.json";
  std::string sizes = "10000,50000,100000,300000,1000000";
  int ports_per_node = 250;
  int batch = 5000;  // ports per bulk create
  int row_limit = 100000;
  int rounds = 9;       // fence/unfence pairs of one /32
  int many_rounds = 3;  // fences of --cidrs /32s (each but the last followed by its unfence)
  int cidrs = 1000;
  int publishers = 4;  // simulated node agents publishing at once
  int idle_interval_ms = 1000;
  int idle_seconds = 10;
  // How long a node's publication counts at the server: longer than the whole run, so the
  // figures are those of live agents and not of the controller covering lapsed nodes.
  int lease_seconds = 3600;  // the server's maximum
  std::string etcd;          // etcd://HOST:PORT,...: the etcd way too
  std::string etcd_pids;     // PID,PID,...: etcd's members, whose CPU and RSS are reported
  int lease_ttl = 7;         // the etcd replicas' leader lease
  int failovers = 3;
};

// ------------------------------------------------------------------------------ processes
// A value in kB of /proc/PID/status (VmRSS, VmHWM); -1 when it cannot be read.
int64_t StatusKib(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
  }
  return -1;
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

// A TCP port nobody listens on now, for the server's metrics listener.
int FreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// ------------------------------------------------------------------------------- the cluster
struct SimulatedPort {
  std::string id;
  std::string ip;
};

// The simulated cluster: the mock and its ports, node by node.
struct Cluster {
  int size = 0;
  std::vector<std::string> nodes;                   // node-000001, ...
  std::vector<std::vector<SimulatedPort>> by_node;  // the ports of nodes[i]
  std::vector<SimulatedPort> all;                   // in creation order
};

std::string NodeName(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "node-%06d", i);
  return name;
}

std::string PortId(int i) {
  char id[64];
  std::snprintf(id, sizeof(id), "00000000-0000-5000-9000-%012d", i);
  return id;
}

// One bulk create's body: ports [first, last) of the cluster, each on its node.
std::string BulkBody(int first, int last, int ports_per_node) {
  json ports = json::array();
  for (int i = first; i < last; ++i) {
    ports.push_back({{"id", PortId(i)},
                     {"name", "k8s_" + PortId(i)},
                     {"network_id", kVpc},
                     {"fixed_ips", json::array({{{"subnet_id", mb::kSubnet}}})},
                     {"binding:host_id", NodeName(i / ports_per_node)}});
  }
  return json{{"ports", std::move(ports)}}.dump();
}

std::string PortsPath() { return std::string("/project/") + mb::kProject + "/ports"; }

// A node agent's publication: every port of `node` in one request, naming the fence set it
// enforces (`enforced`, a digest).
mizarmp::v1::PublishRequest Publication(const std::string& node,
                                        const std::vector<SimulatedPort>& ports,
                                        const std::string& enforced) {
  mizarmp::v1::PublishRequest req;
  req.set_node(node);
  req.set_fence_set_digest(enforced);
  for (const SimulatedPort& p : ports) {
    auto* a = req.add_attachments();
    a->set_port_id(p.id);
    a->add_ips(p.ip);
  }
  return req;
}

// --------------------------------------------------------------------------------- the bench
class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Main() {
    fs::create_directories(o_.work_dir);
    fs::permissions(o_.work_dir, fs::perms::owner_all, fs::perm_options::replace);
    results_["config"] = {{"sizes", o_.sizes},
                          {"etcd", !o_.etcd.empty()},
                          {"etcd_lease_ttl_s", o_.lease_ttl},
                          {"etcd_mp_timeouts_ms", {kEtcdConnectTimeoutMs, EtcdRequestTimeoutMs()}},
                          {"failovers", o_.failovers},
                          {"ports_per_node", o_.ports_per_node},
                          {"batch", o_.batch},
                          {"row_limit", o_.row_limit},
                          {"rounds", o_.rounds},
                          {"many_rounds", o_.many_rounds},
                          {"cidrs", o_.cidrs},
                          {"publishers", o_.publishers},
                          {"idle_interval_ms", o_.idle_interval_ms},
                          {"idle_seconds", o_.idle_seconds},
                          {"lease_seconds", o_.lease_seconds}};
    results_["sizes"] = json::array();
    int rc = 0;
    const std::vector<std::string> sizes = mb::Split(o_.sizes, ',');
    for (const std::string& text : sizes) {
      const int size = std::atoi(text.c_str());
      std::cerr << "== " << size << " ports\n";
      const auto t0 = mb::Clock::now();
      json row = MeasureSize(size, /*largest=*/&text == &sizes.back());
      row["section_s"] = mb::Ms(mb::Clock::now() - t0) / 1000;
      if (!row.value("ok", false)) rc = 1;
      results_["sizes"].push_back(std::move(row));
      mb::SaveResults(results_, o_.out);
      std::cerr << "   " << size << " ports done in " << mb::Ms(mb::Clock::now() - t0) / 1000
                << " s\n";
    }
    return rc;
  }

 private:
  // ------------------------------------------------------------------------------ one size
  // `largest`: the last size, where a fence without the index is tried (refused at or above the
  // row limit; the mock then copies every port, so once is enough).
  json MeasureSize(int size, bool largest) {
    json row = {{"ports", size}, {"ok", false}};
    mb::MockOptions mo{o_.bin_dir, o_.work_dir, kCidr};
    mo.strict_alcor = true;
    mo.row_limit = o_.row_limit;
    mo.journal_capacity = 0;  // the journal is the checks' convenience, not Alcor's memory
    mb::Mock mock(mo);
    if (!mock.ok()) return Failed(row, "the mock did not start");
    Cluster cluster;
    const auto t0 = mb::Clock::now();
    if (!Populate(mock, size, cluster)) return Failed(row, "the mock did not take every port");
    const double create_s = mb::Ms(mb::Clock::now() - t0) / 1000;
    row["nodes"] = cluster.nodes.size();
    row["create_s"] = create_s;
    row["create_ports_per_s"] = size / create_s;
    row["mock_rss_kib"] = StatusKib(mock.pid(), "VmRSS");
    std::cerr << "   created " << size << " ports on " << cluster.nodes.size() << " nodes in "
              << create_s << " s; mock RSS " << row["mock_rss_kib"] << " KiB\n";
    bool ok = true;
    row["index"] = MeasureWay(mock, cluster, /*index=*/true, "index-" + std::to_string(size));
    ok = ok && row["index"].value("measured", false);
    if (size < o_.row_limit) {
      row["whole_list"] = MeasureWay(mock, cluster, false, "whole-" + std::to_string(size));
      ok = ok && row["whole_list"].value("measured", false);
    } else {
      row["whole_list"] = {{"measured", false},
                           {"why", "at or above the row limit (" + std::to_string(o_.row_limit) +
                                       "): Alcor refuses the list"}};
      if (largest) {
        row["whole_list_refused"] = TryWholeList(mock, cluster, "refused-" + std::to_string(size));
        ok = ok && row["whole_list_refused"].value("refused", false);
      }
    }
    if (!o_.etcd.empty()) {
      row["etcd"] = MeasureEtcdWay(mock, cluster, largest);
      ok = ok && row["etcd"].value("measured", false);
    }
    row["cutoff"] = MeasureCutOff(mock, cluster);
    ok = ok && row["cutoff"].value("measured", false);
    row["mock_hwm_kib"] = StatusKib(mock.pid(), "VmHWM");
    row["ok"] = ok;
    return row;
  }

  json Failed(json row, const std::string& why) {
    mb::RecordFailure(results_, why);
    row["why"] = why;
    return row;
  }

  // Bulk creates of --batch ports over one kept-alive connection; the answers give each port's
  // address. False when the mock refused a batch.
  bool Populate(const mb::Mock& mock, int size, Cluster& c) const {
    httplib::Client http("127.0.0.1", mock.port());
    http.set_keep_alive(true);
    http.set_read_timeout(std::chrono::minutes(5));
    c.size = size;
    const int node_count = (size + o_.ports_per_node - 1) / o_.ports_per_node;
    for (int i = 0; i < node_count; ++i) c.nodes.push_back(NodeName(i));
    c.by_node.resize(c.nodes.size());
    c.all.reserve(static_cast<size_t>(size));
    for (int first = 0; first < size; first += o_.batch) {
      const int last = std::min(size, first + o_.batch);
      auto answer = http.Post((PortsPath() + "/bulk").c_str(),
                              BulkBody(first, last, o_.ports_per_node), "application/json");
      if (!answer || answer->status != 201) return false;
      const json made = json::parse(answer->body, nullptr, false);
      if (!made.contains("ports") || made["ports"].size() != static_cast<size_t>(last - first)) {
        return false;
      }
      int i = first;
      for (const json& p : made["ports"]) {
        SimulatedPort port{p.value("id", ""), p["fixed_ips"].at(0).value("ip_address", "")};
        c.by_node[static_cast<size_t>(i / o_.ports_per_node)].push_back(port);
        c.all.push_back(std::move(port));
        ++i;
      }
    }
    return true;
  }

  // ------------------------------------------------------------------------- one way, measured
  struct Server {
    mb::Daemon daemon;
    std::string socket;
    int metrics_port = 0;
    std::unique_ptr<::fence::FenceController::Stub> fencing;
  };

  static constexpr int kEtcdConnectTimeoutMs = 1000;
  int EtcdRequestTimeoutMs() const { return o_.lease_ttl * 500 - kEtcdConnectTimeoutMs; }

  // One replica of several on the etcd fence store (and index) under `prefix`.
  struct EtcdReplica {
    std::string prefix;
    std::string id;
  };

  // mizarmp-addons in controller mode against the mock, its fence store (and index) under
  // `tag`, or in etcd as `replica`; passes every `interval_ms`.
  bool StartServer(Server& s, const mb::Mock& mock, bool index, const std::string& tag,
                   int interval_ms, const EtcdReplica* replica = nullptr) const {
    s.socket = o_.work_dir + "/" + tag + ".sock";
    s.metrics_port = FreeTcpPort();
    std::vector<std::string> flags = {"--dialect",
                                      "alcor",
                                      "--project",
                                      mb::kProject,
                                      "--reconcile-interval-ms",
                                      std::to_string(interval_ms),
                                      "--metrics-address",
                                      "127.0.0.1:" + std::to_string(s.metrics_port)};
    if (index) {
      flags.insert(flags.end(), {"--port-index", "--publication-lease-seconds",
                                 std::to_string(o_.lease_seconds)});
    }
    // A directory per way and size: the index lives beside the fence store, so each server
    // pair sees only the publications made to it.
    const std::string dir = o_.work_dir + "/" + tag;
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
    std::string store = dir + "/fence.db";
    if (replica != nullptr) {
      store = o_.etcd;
      // The server refuses a lease shorter than twice Mizar-MP's connect + request timeouts (a
      // leader finishes a port update within its lease): they are cut to fit it.
      flags.insert(flags.end(),
                   {"--etcd-prefix", replica->prefix, "--replica-id", replica->id,
                    "--lease-ttl-seconds", std::to_string(o_.lease_ttl), "--mp-connect-timeout-ms",
                    std::to_string(kEtcdConnectTimeoutMs), "--mp-request-timeout-ms",
                    std::to_string(EtcdRequestTimeoutMs())});
    }
    const bool up =
        mb::StartAddons(s.daemon, {o_.bin_dir, s.socket, mock.url(), dir + "/state", store, flags});
    if (up) {
      s.fencing = ::fence::FenceController::NewStub(mb::NewChannel("unix:" + s.socket, 0));
    }
    return up;
  }

  json MeasureWay(const mb::Mock& mock, const Cluster& c, bool index, const std::string& tag) {
    const AgentsEnd agents_end{agents_};
    json way = {{"measured", false}};
    const std::vector<std::string> many = SpreadAddresses(c, o_.cidrs);
    // From an empty store and index: an earlier run's (its cut-off leaves fences standing, and
    // its publications would be lapsed leases) would add their passes' work to this one's.
    std::error_code ignored;
    fs::remove_all(o_.work_dir + "/" + tag, ignored);
    {
      Server s;
      if (!StartServer(s, mock, index, tag, 3600000)) {
        return Failed(way, "mizarmp-addons did not come up (" + s.socket + ".log)");
      }
      if (index && !Publish({&s}, c, way)) return way;
      const SimulatedPort& one = c.all[c.all.size() / 2];
      if (!FenceOne(s, mock, one, way)) return way;
      if (!FenceMany(s, mock, c, many, way)) return way;
      way["peak_rss_kib"] = StatusKib(s.daemon.pid(), "VmHWM");
      way["rss_kib"] = StatusKib(s.daemon.pid(), "VmRSS");
    }
    // The idle reconcile, the --cidrs fences in place: a server on the same store (and index)
    // whose passes come every --idle-interval-ms.
    Server idle;
    if (!StartServer(idle, mock, index, tag, o_.idle_interval_ms)) {
      return Failed(way, "mizarmp-addons did not come up again (" + idle.socket + ".log)");
    }
    if (!MeasureIdle({&idle}, mock, way)) return way;
    way["idle_peak_rss_kib"] = StatusKib(idle.daemon.pid(), "VmHWM");
    // Every port up again, so the next way (or check) starts from the same ports.
    json lift = OneRpc(idle, mock, many, /*unfence=*/true, std::chrono::minutes(10));
    if (lift.contains("why"))
      return Failed(way, "the last unfence: " + lift["why"].get<std::string>());
    const std::optional<std::set<std::string>> down = DownPorts(mock);
    if (!down || !down->empty()) return Failed(way, "ports left down after the last unfence");
    way["measured"] = true;
    return way;
  }

  // ------------------------------------------------------------- a new port's cut-off
  // How long after its creation a port inside a fence is down, at this size: a server on the
  // index way's store (whose publications still stand) passing at the default reconcile interval,
  // with the --cidrs fences in place as in the idle window. Each port gets a free address at the
  // top of the mock's range, fenced before the port exists:
  //   published    on a node whose agent publishes it at once (its agent's next look, every
  //                publishIntervalMs, comes on top): the publication wakes a pass
  //   unpublished  on a node whose agent never published, which Alcor's node list names (a port
  //                registered it before the server started): the next interval's pass lists that
  //                node's ports by binding:host_id
  json MeasureCutOff(const mb::Mock& mock, const Cluster& c) {
    const AgentsEnd agents_end{agents_};
    json out = {{"measured", false}, {"reconcile_interval_ms", kDefaultReconcileMs}};
    const std::string silent_node = "node-never-published";
    const SimulatedPort on_published{PortId(c.size), "10.127.255.201"};
    const SimulatedPort on_silent{PortId(c.size + 1), "10.127.255.202"};
    const SimulatedPort registers{PortId(c.size + 2), "10.127.255.203"};  // outside every fence
    if (!CreatePort(mock, registers, silent_node)) return Failed(out, "cut-off: a port refused");
    Server s;
    if (!StartServer(s, mock, /*index=*/true, "index-" + std::to_string(c.size),
                     kDefaultReconcileMs)) {
      return Failed(out, "cut-off: mizarmp-addons did not come up (" + s.socket + ".log)");
    }
    ConnectAgents({&s}, c);  // the index way's nodes, whose publications still stand
    std::vector<std::string> fenced = SpreadAddresses(c, o_.cidrs);
    fenced.insert(fenced.end(), {on_published.ip, on_silent.ip});
    const json fence = OneRpc(s, mock, fenced, /*unfence=*/false, std::chrono::minutes(10));
    if (fence.contains("why")) return Failed(out, "cut-off: " + fence["why"].get<std::string>());

    const auto made = mb::Clock::now();
    if (!CreatePort(mock, on_published, c.nodes.front())) {
      return Failed(out, "cut-off: a port refused");
    }
    std::vector<SimulatedPort> node_ports = c.by_node.front();
    node_ports.push_back(on_published);
    const std::string refused = PublishOne(s, c.nodes.front(), node_ports);
    if (!refused.empty()) return Failed(out, "cut-off: Publish answered " + refused);
    out["published"] = {{"publish_ms", mb::Ms(mb::Clock::now() - made)},
                        {"down_ms", MsUntilDown(mock, on_published.id, made)}};

    const auto made_silent = mb::Clock::now();
    if (!CreatePort(mock, on_silent, silent_node)) return Failed(out, "cut-off: a port refused");
    out["unpublished"] = {{"down_ms", MsUntilDown(mock, on_silent.id, made_silent)}};
    std::cerr << "   cut-off after creation: published " << out["published"]["down_ms"]
              << " ms, never published " << out["unpublished"]["down_ms"] << " ms\n";
    if (out["published"]["down_ms"].is_null() || out["unpublished"]["down_ms"].is_null()) {
      return Failed(out, "cut-off: a new port inside a fence stayed up for 2 minutes");
    }
    out["measured"] = true;
    return out;
  }

  static constexpr int kDefaultReconcileMs = 10000;  // reconcileIntervalMs' default

  // One port on `node` at the port's address, as a runtime's ADD makes it.
  static bool CreatePort(const mb::Mock& mock, const SimulatedPort& port, const std::string& node) {
    const json body = {{"ports",
                        {{{"id", port.id},
                          {"name", "k8s_" + port.id},
                          {"network_id", kVpc},
                          {"fixed_ips", {{{"subnet_id", mb::kSubnet}, {"ip_address", port.ip}}}},
                          {"binding:host_id", node}}}}};
    httplib::Client http("127.0.0.1", mock.port());
    auto answer = http.Post((PortsPath() + "/bulk").c_str(), body.dump(), "application/json");
    return answer && answer->status == 201;
  }

  // The publication of `node`'s ports to `s`; what it answered when it failed, else empty.
  static std::string PublishOne(const Server& s, const std::string& node,
                                const std::vector<SimulatedPort>& ports) {
    auto stub = mizarmp::v1::PortIndex::NewStub(mb::NewChannel("unix:" + s.socket, 99));
    mizarmp::v1::PublishResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
    const grpc::Status st = stub->Publish(&ctx, Publication(node, ports, ""), &resp);
    return st.ok() ? "" : mb::CodeName(st.error_code()) + ": " + st.error_message();
  }

  // Milliseconds from `since` until the mock has the port down (looked at every 5 ms); null
  // when it is still up after two minutes.
  static json MsUntilDown(const mb::Mock& mock, const std::string& id,
                          mb::Clock::time_point since) {
    while (mb::Clock::now() - since < std::chrono::minutes(2)) {
      if (AdminStateUp(mock, id) == std::optional<bool>(false)) {
        return mb::Ms(mb::Clock::now() - since);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return nullptr;
  }

  // ------------------------------------------------------------------------- the etcd way
  // Two replicas, so that one leads and the other stands by, as a deployment runs them.
  using Replicas = std::array<std::unique_ptr<Server>, 2>;

  // Each size's keys under a prefix of their own, deleted after the size.
  static std::string EtcdPrefix(int size) {
    return "/bench/fence-scale/n" + std::to_string(size) + "/";
  }

  bool StartReplicas(Replicas& r, const mb::Mock& mock, const std::string& tag, int interval_ms,
                     const std::string& prefix) const {
    for (size_t i = 0; i < r.size(); ++i) {
      const std::string name = tag + "-" + static_cast<char>('a' + i);
      r[i] = std::make_unique<Server>();
      const EtcdReplica replica{prefix, name};
      if (!StartServer(*r[i], mock, /*index=*/true, name, interval_ms, &replica)) return false;
    }
    return true;
  }

  // Whether the server's leader gauge says it leads; nullopt when its metrics cannot be read.
  std::optional<bool> Leads(const Server& s) const {
    httplib::Client http("127.0.0.1", s.metrics_port);
    auto answer = http.Get("/metrics");
    if (!answer || answer->status != 200) return std::nullopt;
    std::istringstream in(answer->body);
    for (std::string line; std::getline(in, line);) {
      const std::string gauge = "mizarmp_addons_leader";
      if (line.rfind(gauge, 0) == 0 && (line[gauge.size()] == ' ' || line[gauge.size()] == '{')) {
        return std::atof(line.substr(line.rfind(' ') + 1).c_str()) == 1;
      }
    }
    return false;
  }

  // Which replica leads, once one does (its gauge is set by its store poll, every 200 ms).
  std::optional<size_t> AwaitLeader(const Replicas& r, std::chrono::seconds timeout) const {
    const auto end = mb::Clock::now() + timeout;
    while (mb::Clock::now() < end) {
      for (size_t i = 0; i < r.size(); ++i) {
        if (Leads(*r[i]) == std::optional<bool>(true)) return i;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

  static std::vector<Server*> Both(const Replicas& r) { return {r[0].get(), r[1].get()}; }

  json MeasureEtcdWay(const mb::Mock& mock, const Cluster& c, bool largest) {
    const AgentsEnd agents_end{agents_};
    json way = {{"measured", false}, {"replicas", 2}, {"lease_ttl_s", o_.lease_ttl}};
    const std::string tag = "etcd-" + std::to_string(c.size);
    const std::string prefix = EtcdPrefix(c.size);
    const std::vector<std::string> many = SpreadAddresses(c, o_.cidrs);
    const auto lead_timeout = std::chrono::seconds(4 * o_.lease_ttl + 30);
    {
      Replicas r;
      if (!StartReplicas(r, mock, tag, 3600000, prefix)) {
        return Failed(way,
                      "an etcd replica did not come up (" + o_.work_dir + "/" + tag + "-*.log)");
      }
      const std::optional<size_t> leader = AwaitLeader(r, lead_timeout);
      if (!leader) return Failed(way, "no etcd replica leads");
      Server& lead = *r[*leader];
      Server& standby = *r[1 - *leader];
      if (!Publish(Both(r), c, way)) return way;
      const SimulatedPort& one = c.all[c.all.size() / 2];
      if (!FenceOne(lead, mock, one, way)) return way;
      if (!FenceMany(lead, mock, c, many, way)) return way;
      way["peak_rss_kib"] = StatusKib(lead.daemon.pid(), "VmHWM");
      way["rss_kib"] = StatusKib(lead.daemon.pid(), "VmRSS");
      way["standby_peak_rss_kib"] = StatusKib(standby.daemon.pid(), "VmHWM");
      way["etcd_rss_kib"] = EtcdRssKib();
    }
    // The idle reconcile on a pair whose passes come every --idle-interval-ms: the leader's
    // passes, and the standby's polls of the store meanwhile.
    Replicas idle;
    if (!StartReplicas(idle, mock, tag + "-idle", o_.idle_interval_ms, prefix)) {
      return Failed(way, "an etcd replica did not come up again");
    }
    std::optional<size_t> leader = AwaitLeader(idle, lead_timeout);
    if (!leader) return Failed(way, "no etcd replica leads the idle pair");
    if (!MeasureIdle(Both(idle), mock, way)) return way;
    way["idle_peak_rss_kib"] = StatusKib(idle[*leader]->daemon.pid(), "VmHWM");
    way["idle_standby_peak_rss_kib"] = StatusKib(idle[1 - *leader]->daemon.pid(), "VmHWM");
    if (largest && !MeasureFailover(idle, *leader, mock, c, tag, prefix, way)) return way;
    json lift = OneRpc(*idle[*leader], mock, many, /*unfence=*/true, std::chrono::minutes(10));
    if (lift.contains("why")) {
      return Failed(way, "the last unfence: " + lift["why"].get<std::string>());
    }
    const std::optional<std::set<std::string>> down = DownPorts(mock);
    if (!down || !down->empty()) return Failed(way, "ports left down after the last unfence");
    for (auto& replica : idle) replica.reset();
    way["etcd_cleanup"] = ForgetEtcdKeys(prefix);
    way["measured"] = true;
    return way;
  }

  // A port whose address is none of the large fence's (SpreadAddresses takes every stride-th
  // port from the first): its fence is a change to make. Another one each run.
  const SimulatedPort& UnfencedPort(const Cluster& c, int run) const {
    const size_t stride = std::max<size_t>(1, c.all.size() / static_cast<size_t>(o_.cidrs));
    const size_t at = (c.all.size() / 5 + static_cast<size_t>(run) * 997 * stride) % c.all.size();
    return c.all[stride > 1 ? (at - at % stride + 1) % c.all.size() : at];
  }

  // --failovers times: kill -9 of the leader, and at once a fence of one port's /32 through the
  // other replica; the times from the kill until that replica leads and until the fence
  // answered OK and the port is down. The killed replica comes back as the next standby.
  bool MeasureFailover(Replicas& r, size_t& leader, const mb::Mock& mock, const Cluster& c,
                       const std::string& tag, const std::string& prefix, json& way) {
    std::vector<double> to_leads, to_fenced;
    for (int run = 0; run < o_.failovers; ++run) {
      const SimulatedPort& port = UnfencedPort(c, run);
      const size_t survivor = 1 - leader;
      const auto killed = mb::Clock::now();
      ::kill(r[leader]->daemon.pid(), SIGKILL);
      std::atomic<double> fenced_ms{-1};
      json answer;
      std::thread fence([&] {
        answer = OneRpc(*r[survivor], mock, {port.ip}, /*unfence=*/false,
                        std::chrono::seconds(4 * o_.lease_ttl + 120));
        fenced_ms = mb::Ms(mb::Clock::now() - killed);
      });
      r[leader]->daemon.Wait(std::chrono::seconds(10));
      double leads_ms = -1;
      while (leads_ms < 0 &&
             mb::Clock::now() - killed < std::chrono::seconds(4 * o_.lease_ttl + 120)) {
        if (Leads(*r[survivor]) == std::optional<bool>(true))
          leads_ms = mb::Ms(mb::Clock::now() - killed);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      fence.join();
      if (leads_ms < 0) return Fail(way, "failover: the other replica never led");
      if (answer.contains("why")) {
        return Fail(way, "failover: the fence through the other replica: " +
                             answer["why"].get<std::string>());
      }
      if (AdminStateUp(mock, port.id) != std::optional<bool>(false)) {
        return Fail(way, "failover: the port is not down after the fence");
      }
      to_leads.push_back(leads_ms);
      to_fenced.push_back(fenced_ms.load());
      std::cerr << "   failover " << run << ": leads after " << leads_ms << " ms, fence OK after "
                << fenced_ms.load() << " ms\n";
      json lift = OneRpc(*r[survivor], mock, {port.ip}, /*unfence=*/true, std::chrono::minutes(5));
      if (lift.contains("why")) return Fail(way, "failover: the unfence after it failed");
      const std::string name = tag + "-r" + std::to_string(run);
      r[leader] = std::make_unique<Server>();
      const EtcdReplica replica{prefix, name};
      if (!StartServer(*r[leader], mock, true, name, o_.idle_interval_ms, &replica)) {
        return Fail(way, "failover: the killed replica did not come back");
      }
      leader = survivor;
    }
    way["failover"] = {{"runs", o_.failovers},
                       {"to_leads_ms", to_leads},
                       {"to_fence_ok_ms", to_fenced},
                       {"leads", mb::StatsJson(mb::Summarize(to_leads))},
                       {"fence_ok", mb::StatsJson(mb::Summarize(to_fenced))}};
    return true;
  }

  // Deletes the size's fence store and index keys and compacts etcd's history past them, so
  // the next size starts from a cluster no bigger than at the start. What was done, as JSON.
  json ForgetEtcdKeys(const std::string& prefix) const {
    const std::vector<std::string> endpoints = EtcdEndpoints();
    auto kv = etcdserverpb::KV::NewStub(
        grpc::CreateChannel(endpoints.front(), grpc::InsecureChannelCredentials()));
    int64_t deleted = 0, revision = 0;
    // The store under the prefix, the index beside it (fence::PortIndexPrefix).
    const std::string base = prefix.substr(0, prefix.size() - 1);
    for (const std::string& range : {prefix, base + "-index/"}) {
      etcdserverpb::DeleteRangeRequest req;
      req.set_key(range);
      std::string end = range;
      end.back() = static_cast<char>(end.back() + 1);
      req.set_range_end(end);
      etcdserverpb::DeleteRangeResponse resp;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
      if (!kv->DeleteRange(&ctx, req, &resp).ok()) return {{"deleted", deleted}, {"ok", false}};
      deleted += resp.deleted();
      revision = resp.header().revision();
    }
    // etcdctl: the trimmed etcd proto here has no Compact.
    std::string joined;
    for (const std::string& e : endpoints) joined += (joined.empty() ? "" : ",") + e;
    const std::string command = "ETCDCTL_API=3 etcdctl --endpoints=" + joined + " compact " +
                                std::to_string(revision) + " >/dev/null 2>&1";
    const bool compacted = std::system(command.c_str()) == 0;
    return {{"deleted", deleted}, {"compacted_at", revision}, {"ok", compacted}};
  }

  std::vector<std::string> EtcdEndpoints() const {
    std::string list = o_.etcd;
    if (list.rfind("etcd://", 0) == 0) list = list.substr(7);
    return mb::Split(list, ',');
  }

  std::vector<pid_t> EtcdPids() const {
    std::vector<pid_t> pids;
    for (const std::string& p : mb::Split(o_.etcd_pids, ',')) pids.push_back(std::atoi(p.c_str()));
    return pids;
  }

  double EtcdCpuMs() const {
    double ms = 0;
    for (const pid_t pid : EtcdPids()) ms += ProcessCpuMs(pid);
    return ms;
  }

  // The members' RSS together; 0 without --etcd-pids.
  int64_t EtcdRssKib() const {
    int64_t kib = 0;
    for (const pid_t pid : EtcdPids()) kib += std::max<int64_t>(0, StatusKib(pid, "VmRSS"));
    return kib;
  }

  static double CpuMs(const std::vector<Server*>& servers) {
    double ms = 0;
    for (const Server* s : servers) ms += ProcessCpuMs(s->daemon.pid());
    return ms;
  }

  // --cidrs addresses spread evenly over the cluster (so over its nodes).
  static std::vector<std::string> SpreadAddresses(const Cluster& c, int count) {
    std::vector<std::string> out;
    const size_t stride = std::max<size_t>(1, c.all.size() / static_cast<size_t>(count));
    for (size_t i = 0; i < c.all.size() && out.size() < static_cast<size_t>(count); i += stride) {
      out.push_back(c.all[i].ip);
    }
    return out;
  }

  // The simulated node agents: --publishers at a time, each node's ports in one Publish, agent
  // w publishing to servers[w % servers.size()] (agents spread over the replicas).
  bool Publish(const std::vector<Server*>& servers, const Cluster& c, json& way) {
    std::atomic<size_t> next{0};
    std::atomic<int> failed{0};
    std::vector<std::vector<double>> took(static_cast<size_t>(o_.publishers));
    std::string error;
    std::mutex error_mu;
    auto agent = [&](size_t worker) {
      const Server& s = *servers[worker % servers.size()];
      auto stub = mizarmp::v1::PortIndex::NewStub(
          mb::NewChannel("unix:" + s.socket, 100 + static_cast<int>(worker)));
      for (size_t n = next++; n < c.nodes.size(); n = next++) {
        const mizarmp::v1::PublishRequest req = Publication(c.nodes[n], c.by_node[n], "");
        mizarmp::v1::PublishResponse resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
        const auto t0 = mb::Clock::now();
        const grpc::Status st = stub->Publish(&ctx, req, &resp);
        took[worker].push_back(mb::Ms(mb::Clock::now() - t0));
        if (!st.ok()) {
          ++failed;
          std::lock_guard<std::mutex> lk(error_mu);
          error = mb::CodeName(st.error_code()) + ": " + st.error_message();
        }
      }
    };
    const double cpu0 = CpuMs(servers);
    const double etcd_cpu0 = EtcdCpuMs();
    const auto t0 = mb::Clock::now();
    std::vector<std::thread> agents;
    for (size_t w = 0; w < static_cast<size_t>(o_.publishers); ++w) agents.emplace_back(agent, w);
    for (std::thread& t : agents) t.join();
    const double seconds = mb::Ms(mb::Clock::now() - t0) / 1000;
    std::vector<double> all;
    for (const auto& v : took) all.insert(all.end(), v.begin(), v.end());
    way["publish"] = {{"nodes", c.nodes.size()},
                      {"s", seconds},
                      {"addons_cpu_ms", CpuMs(servers) - cpu0},
                      {"etcd_cpu_ms", EtcdCpuMs() - etcd_cpu0},
                      {"per_node", mb::StatsJson(mb::Summarize(all))},
                      {"failed", failed.load()}};
    std::cerr << "   published " << c.nodes.size() << " nodes in " << seconds << " s\n";
    // The bulk publication leaves the index's pages (some 100 MB at a million ports) for the
    // kernel to write back; a fence's fsync on the same file system would wait behind that
    // one-off flush. Flushed here, so the rounds measure the fence, not the bulk load.
    const auto flush0 = mb::Clock::now();
    ::sync();
    way["publish"]["writeback_flush_ms"] = mb::Ms(mb::Clock::now() - flush0);
    if (failed > 0) {
      return Fail(way,
                  "Publish answered " + error + " (" + std::to_string(failed.load()) + " nodes)");
    }
    ConnectAgents(servers, c);
    return true;
  }

  // Every node of `c` keeps a fence set stream to one of `servers` from now on (opened again
  // when that server restarts on its socket), as live agents do: a fence answers once each
  // acknowledged it. Until the way ends (AgentsEnd).
  void ConnectAgents(const std::vector<Server*>& servers, const Cluster& c) {
    std::vector<std::string> sockets;
    for (const Server* s : servers) sockets.push_back(s->socket);
    agents_.reset();
    agents_ = std::make_unique<mb::SimulatedAgents>(sockets, c.nodes);
  }
  struct AgentsEnd {
    std::unique_ptr<mb::SimulatedAgents>& agents;
    ~AgentsEnd() { agents.reset(); }
  };

  // One FenceClusterNetwork or UnfenceClusterNetwork of `addresses` as /32s: its time, the
  // server's and the mock's CPU, and the REST requests it made; "why" when it failed.
  json OneRpc(Server& s, const mb::Mock& mock, const std::vector<std::string>& addresses,
              bool unfence, std::chrono::seconds deadline) {
    const MockCounters before = Counters(mock);
    const double addons_cpu0 = ProcessCpuMs(s.daemon.pid()), mock_cpu0 = ProcessCpuMs(mock.pid());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    grpc::Status st;
    const uint64_t acks0 = agents_ != nullptr ? agents_->acknowledged() : 0;
    const double node_wait0 = NodeWaitSeconds(s);
    const auto t0 = mb::Clock::now();
    if (unfence) {
      ::fence::UnfenceClusterNetworkRequest req;
      for (const std::string& ip : addresses) req.add_cidrs()->set_cidr(ip + "/32");
      ::fence::UnfenceClusterNetworkResponse resp;
      st = s.fencing->UnfenceClusterNetwork(&ctx, req, &resp);
    } else {
      ::fence::FenceClusterNetworkRequest req;
      for (const std::string& ip : addresses) req.add_cidrs()->set_cidr(ip + "/32");
      ::fence::FenceClusterNetworkResponse resp;
      st = s.fencing->FenceClusterNetwork(&ctx, req, &resp);
    }
    const double took = mb::Ms(mb::Clock::now() - t0);
    const uint64_t acks = agents_ != nullptr ? agents_->acknowledged() - acks0 : 0;
    if (!st.ok()) {
      return {{"why", mb::CodeName(st.error_code()) + ": " + st.error_message()},
              {"code", mb::CodeName(st.error_code())},
              {"ms", took}};
    }
    const double addons_cpu = ProcessCpuMs(s.daemon.pid()) - addons_cpu0;
    const double mock_cpu = ProcessCpuMs(mock.pid()) - mock_cpu0;
    const MockCounters after = Counters(mock);
    return {{"ms", took},
            {"addons_cpu_ms", addons_cpu},
            {"mock_cpu_ms", mock_cpu},
            {"rest_requests", after.requests - before.requests},
            {"response_bytes", after.response_bytes - before.response_bytes},
            {"acknowledgements", acks},
            {"node_wait_ms", (NodeWaitSeconds(s) - node_wait0) * 1000}};
  }

  // Rounds of one kind of RPC, summarised: medians of time and CPU, the last round's requests.
  static json Summary(const std::vector<json>& rounds) {
    json out = rounds.back();
    for (const char* figure : {"ms", "addons_cpu_ms", "mock_cpu_ms", "node_wait_ms"}) {
      std::vector<double> values;
      for (const json& r : rounds) values.push_back(r.at(figure).get<double>());
      out[figure] = mb::Summarize(values).median;
      if (std::string(figure) == "ms") out["ms_rounds"] = values;
    }
    return out;
  }

  bool FenceOne(Server& s, const mb::Mock& mock, const SimulatedPort& port, json& way) {
    std::vector<json> fences, unfences;
    for (int round = 0; round < o_.rounds; ++round) {
      for (const bool unfence : {false, true}) {
        json r = OneRpc(s, mock, {port.ip}, unfence, std::chrono::minutes(5));
        if (r.contains("why")) return Fail(way, "one /32: " + r["why"].get<std::string>());
        if (AdminStateUp(mock, port.id) != std::optional<bool>(unfence)) {
          return Fail(way, std::string("one /32: the port is not ") +
                               (unfence ? "up after the unfence" : "down after the fence"));
        }
        (unfence ? unfences : fences).push_back(std::move(r));
      }
    }
    way["fence_one"] = Summary(fences);
    way["unfence_one"] = Summary(unfences);
    std::cerr << "   one /32: fence " << way["fence_one"]["ms"] << " ms (nodes "
              << way["fence_one"]["node_wait_ms"] << " ms), unfence " << way["unfence_one"]["ms"]
              << " ms (nodes " << way["unfence_one"]["node_wait_ms"] << " ms)\n";
    return true;
  }

  // --many-rounds fences of the addresses, each but the last followed by its unfence, so the
  // fences stay in place for the idle reconcile.
  bool FenceMany(Server& s, const mb::Mock& mock, const Cluster& c,
                 const std::vector<std::string>& addresses, json& way) {
    const std::set<std::string> wanted_down = IdsOf(c, addresses);
    std::vector<json> fences, unfences;
    for (int round = 0; round < o_.many_rounds; ++round) {
      for (const bool unfence : {false, true}) {
        if (unfence && round == o_.many_rounds - 1) break;
        json r = OneRpc(s, mock, addresses, unfence, std::chrono::minutes(10));
        if (r.contains("why")) return Fail(way, "many /32s: " + r["why"].get<std::string>());
        const std::optional<std::set<std::string>> down = DownPorts(mock);
        if (!down) return Fail(way, "many /32s: cannot list the ports that are down");
        if (*down != (unfence ? std::set<std::string>() : wanted_down)) {
          return Fail(way, "many /32s: " + std::to_string(down->size()) + " ports down, want " +
                               std::to_string(unfence ? 0 : wanted_down.size()));
        }
        (unfence ? unfences : fences).push_back(std::move(r));
      }
    }
    way["fence_many"] = Summary(fences);
    way["fence_many"]["cidrs"] = addresses.size();
    if (!unfences.empty()) way["unfence_many"] = Summary(unfences);
    std::cerr << "   " << addresses.size() << " /32s: fence " << way["fence_many"]["ms"]
              << " ms (nodes " << way["fence_many"]["node_wait_ms"] << " ms)\n";
    return true;
  }

  static std::set<std::string> IdsOf(const Cluster& c, const std::vector<std::string>& addresses) {
    const std::set<std::string> wanted(addresses.begin(), addresses.end());
    std::set<std::string> ids;
    for (const SimulatedPort& p : c.all) {
      if (wanted.count(p.ip) > 0) ids.insert(p.id);
    }
    return ids;
  }

  // Passes of the servers (one, or the replicas of which one leads) for --idle-seconds: per
  // pass, the servers' CPU (and etcd's, given its pids) and what was asked of the mock.
  bool MeasureIdle(const std::vector<Server*>& servers, const mb::Mock& mock, json& way) {
    // The first pass runs at start-up, before the window; the window starts after one.
    const auto first = WaitForPasses(servers, 1, std::chrono::minutes(5));
    if (!first) return Fail(way, "idle: no enforcement pass within 5 minutes (metrics)");
    const MockCounters mock0 = Counters(mock);
    const double addons_cpu0 = CpuMs(servers), mock_cpu0 = ProcessCpuMs(mock.pid());
    const double etcd_cpu0 = EtcdCpuMs();
    const auto passes0 = Passes(servers);
    const auto t0 = mb::Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(o_.idle_seconds));
    const auto passes1 = Passes(servers);
    const double window_s = mb::Ms(mb::Clock::now() - t0) / 1000;
    const double addons_cpu = CpuMs(servers) - addons_cpu0;
    const double mock_cpu = ProcessCpuMs(mock.pid()) - mock_cpu0;
    const double etcd_cpu = EtcdCpuMs() - etcd_cpu0;
    const MockCounters mock1 = Counters(mock);
    const double requests = static_cast<double>(mock1.requests - mock0.requests);
    const double bytes = static_cast<double>(mock1.response_bytes - mock0.response_bytes);
    if (!passes0 || !passes1) return Fail(way, "idle: cannot read the server's metrics");
    const double ok_passes = passes1->first - passes0->first;
    const double failed_passes = passes1->second - passes0->second;
    const double passes = ok_passes + failed_passes;
    if (passes < 1) return Fail(way, "idle: no pass in the window");
    way["idle"] = {{"window_s", window_s},
                   {"passes", passes},
                   {"failed_passes", failed_passes},
                   {"addons_cpu_ms_per_pass", addons_cpu / passes},
                   {"mock_cpu_ms_per_pass", mock_cpu / passes},
                   {"etcd_cpu_ms_per_pass", etcd_cpu / passes},
                   {"requests_per_pass", requests / passes},
                   {"bytes_per_pass", bytes / passes},
                   {"addons_core_share", addons_cpu / (window_s * 1000)}};
    std::cerr << "   idle: " << passes << " passes, " << way["idle"]["addons_cpu_ms_per_pass"]
              << " ms CPU, " << way["idle"]["requests_per_pass"] << " requests, "
              << way["idle"]["bytes_per_pass"] << " bytes per pass\n";
    if (failed_passes > 0) return Fail(way, "idle: some passes failed");
    return true;
  }

  // (ok, failed) passes so far of all `servers`, from their metrics.
  std::optional<std::pair<double, double>> Passes(const std::vector<Server*>& servers) const {
    std::pair<double, double> total{0, 0};
    for (const Server* s : servers) {
      const auto counts = Passes(*s);
      if (!counts) return std::nullopt;
      total.first += counts->first;
      total.second += counts->second;
    }
    return total;
  }

  // (ok, failed) passes so far, from the server's metrics.
  // How long the server's fence RPCs waited for the nodes' acknowledgements so far, in seconds
  // (mizarmp_addons_fence_node_wait_seconds); 0 when its metrics do not answer.
  static double NodeWaitSeconds(const Server& s) {
    httplib::Client http("127.0.0.1", s.metrics_port);
    auto answer = http.Get("/metrics");
    if (!answer || answer->status != 200) return 0;
    std::istringstream in(answer->body);
    std::string line;
    const std::string name = "mizarmp_addons_fence_node_wait_seconds_sum ";
    while (std::getline(in, line)) {
      if (line.rfind(name, 0) == 0) return std::atof(line.substr(name.size()).c_str());
    }
    return 0;
  }

  std::optional<std::pair<double, double>> Passes(const Server& s) const {
    httplib::Client http("127.0.0.1", s.metrics_port);
    auto answer = http.Get("/metrics");
    if (!answer || answer->status != 200) return std::nullopt;
    std::pair<double, double> counts{0, 0};
    std::istringstream in(answer->body);
    std::string line;
    const std::string name = "mizarmp_addons_enforcement_passes_total{";
    while (std::getline(in, line)) {
      if (line.rfind(name, 0) != 0) continue;
      const double value = std::atof(line.substr(line.rfind(' ') + 1).c_str());
      (line.find("\"ok\"") != std::string::npos ? counts.first : counts.second) += value;
    }
    return counts;
  }

  std::optional<std::pair<double, double>> WaitForPasses(const std::vector<Server*>& servers,
                                                         double at_least,
                                                         std::chrono::minutes timeout) const {
    const auto end = mb::Clock::now() + timeout;
    while (mb::Clock::now() < end) {
      auto p = Passes(servers);
      if (p && p->first + p->second >= at_least) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }

  // At or above the row limit: a fence of one /32 without the index, which must be refused
  // (the port stays up), and the same fence with the index's server, which must work.
  json TryWholeList(const mb::Mock& mock, const Cluster& c, const std::string& tag) {
    json out = {{"refused", false}};
    Server s;
    if (!StartServer(s, mock, false, tag, 3600000)) {
      return Failed(out, "mizarmp-addons did not come up (" + s.socket + ".log)");
    }
    const SimulatedPort& one = c.all[c.all.size() / 3];
    json r = OneRpc(s, mock, {one.ip}, false, std::chrono::minutes(5));
    out["rpc"] = r;
    const std::optional<bool> up = AdminStateUp(mock, one.id);
    out["port_up_after"] = up ? json(*up) : json();
    out["refused"] = r.contains("why") && up == std::optional<bool>(true);
    std::cerr << "   whole list at " << c.size << " ports: "
              << (r.contains("why") ? r["why"].get<std::string>() : std::string("answered OK"))
              << "\n";
    if (!out["refused"].get<bool>()) Failed(out, "the whole-list fence was not refused");
    return out;
  }

  // ----------------------------------------------------------------------- at the mock
  // What the mock counted of its REST traffic: requests, and the bytes of their answers' bodies.
  struct MockCounters {
    int64_t requests = 0;
    int64_t response_bytes = 0;
  };
  static MockCounters Counters(const mb::Mock& mock) {
    auto st = mock.State();
    if (!st) return {};
    return {st->value("requests", int64_t{0}), st->value("response_bytes", int64_t{0})};
  }

  static std::optional<bool> AdminStateUp(const mb::Mock& mock, const std::string& id) {
    httplib::Client http("127.0.0.1", mock.port());
    auto answer = http.Get((PortsPath() + "/" + id).c_str());
    if (!answer || answer->status != 200) return std::nullopt;
    const json doc = json::parse(answer->body, nullptr, false);
    const json port = doc.contains("port") ? doc["port"] : doc;
    if (!port.contains("admin_state_up") || !port["admin_state_up"].is_boolean()) {
      return std::nullopt;
    }
    return port["admin_state_up"].get<bool>();
  }

  // The ids of the ports that are administratively down (a filtered list: few rows).
  static std::optional<std::set<std::string>> DownPorts(const mb::Mock& mock) {
    httplib::Client http("127.0.0.1", mock.port());
    http.set_read_timeout(std::chrono::minutes(2));
    auto answer = http.Get((PortsPath() + "?admin_state_up=false&fields=id").c_str());
    if (!answer || answer->status != 200) return std::nullopt;
    const json doc = json::parse(answer->body, nullptr, false);
    if (!doc.contains("ports")) return std::nullopt;
    std::set<std::string> ids;
    for (const json& p : doc["ports"]) ids.insert(p.value("id", ""));
    return ids;
  }

  bool Fail(json& way, const std::string& why) {
    way["why"] = why;
    return mb::RecordFailure(results_, why);
  }

  Options o_;
  // The simulated agents of the last Publish: a stream each, acknowledging every set.
  std::unique_ptr<mb::SimulatedAgents> agents_;
  json results_;
};

FlagTable Flags(Options& o) {
  FlagTable t;
  t.String("bin-dir", "DIR", "where mizarmp-mock and mizarmp-addons are (required)", &o.bin_dir);
  t.String("work", "DIR", "scratch directory (default " + o.work_dir + ")", &o.work_dir);
  t.String("out", "FILE", "where the JSON results go (default " + o.out + ")", &o.out);
  t.String("sizes", "N,N,...", "port counts, in order (default " + o.sizes + ")", &o.sizes);
  t.Int("ports-per-node", "N", "ports on each simulated node (default 250)", 1, 100000,
        &o.ports_per_node);
  t.Int("batch", "N", "ports per bulk create (default 5000)", 1, 100000, &o.batch);
  t.Int("row-limit", "N", "the mock refuses port lists this long (default 100000, Alcor's)", 1,
        100000000, &o.row_limit);
  t.Int("rounds", "N", "fence/unfence pairs of one /32 (default 9)", 1, 1000, &o.rounds);
  t.Int("many-rounds", "N", "fences of --cidrs /32s (default 3)", 1, 100, &o.many_rounds);
  t.Int("cidrs", "N", "the /32s of the large fence (default 1000)", 1, 100000, &o.cidrs);
  t.Int("publishers", "N", "node agents publishing at once (default 4)", 1, 64, &o.publishers);
  t.Int("idle-interval-ms", "MS", "the idle server's pass interval (default 1000)", 100, 600000,
        &o.idle_interval_ms);
  t.Int("idle-seconds", "S", "how long the idle passes are watched (default 10)", 1, 3600,
        &o.idle_seconds);
  t.Int("lease-seconds", "S", "the server's publication lease (default 3600, its maximum)", 3, 3600,
        &o.lease_seconds);
  t.String("etcd", "LOCATION",
           "etcd://HOST:PORT,... of a running cluster: measure two replicas on it too", &o.etcd);
  t.String("etcd-pids", "PID,...", "etcd's members, whose CPU and RSS are reported", &o.etcd_pids);
  t.Int("lease-ttl", "S",
        "the etcd replicas' leader lease (default 7; Mizar-MP's timeouts are cut to half of it)", 4,
        60, &o.lease_ttl);
  t.Int("failovers", "N", "kills of the etcd leader at the largest size (default 3)", 1, 20,
        &o.failovers);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  return mb::DriverMain<Bench>("mizarmp-bench-fence-scale", "--bin-dir DIR [flags]", argc, argv,
                               Flags, [](const Options& o) -> std::string {
                                 if (o.bin_dir.empty()) return "--bin-dir is required";
                                 for (const std::string& s : mb::Split(o.sizes, ',')) {
                                   if (std::atoi(s.c_str()) < o.cidrs)
                                     return "--sizes: each must be at least --cidrs";
                                 }
                                 return "";
                               });
}
