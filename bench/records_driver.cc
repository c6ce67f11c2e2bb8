// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-records: the CNI side of a node that holds many attachment records (issue 35,
// target 7). Each --sizes count N (default 10, the baseline, and 10,000) gets a node of its own:
// a host netns with mizarmp-mock and its agent, and a state dir holding N attachments exactly as
// a successful ADD leaves them (the complete record, its lock file, its port at the mock). The
// sizes are measured side by side, in turn:
//
// Sections (--sections, comma separated; default all):
//   adddel       ADD then DEL of a new pod by the real plugin, each iteration over every size
//   attachments  `mizarmpctl attachments -o json` (each record joined with its port and its
//                pod's interface): time, and that it lists every record
//   getclients   GetFenceClients of a node-mode mizarmp-addons over the records: its first
//                call, calls on an unchanged state dir, then calls each right after one record
//                was rewritten; every answer checked to cover exactly the records' addresses
//   gc           CNI GC naming every record valid (nothing to delete: the cost of looking), in
//                rounds; then one GC with one record in --stale-every no longer valid, checked:
//                those records, locks and ports gone, every other kept
//
// The records' ports are created in bulk while the mock's never_ready fault is on, so its agent
// makes no veth for them (a Linux bridge takes at most 1,024 ports); a record's pod netns is a
// path of its own, a symlink to one of a few real namespaces with an eth0 (a veth), so that
// `mizarmpctl attachments` inspects an interface for every record as on a real node.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/grpc_support.h"
#include "bench/support.h"
#include "cni/attachment.h"
#include "common/ipaddr.h"
#include "common/strings.h"
#include "fence/fence.grpc.pb.h"
#include "records/records.h"

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
namespace records = mizarmp::records;
using mizarmp::FlagTable;
using nlohmann::json;

namespace {

constexpr const char* kNetwork = "mzbench";
constexpr const char* kHostId = "bench-node";
constexpr const char* kPath = "/usr/sbin:/usr/bin:/sbin:/bin";
constexpr int kBulkCreate = 500;
constexpr int kPodNamespaces = 8;  // real namespaces the records' netns paths lead to

struct Options {
  std::string bin_dir;
  std::string work_dir = "/tmp/mizarmp-bench-records";
  std::string out = "records-results.json";
  std::string sections = "adddel,attachments,getclients,gc";
  std::string sizes = "10,10000";
  int iterations = 50;
  int warmup = 3;
  int ctl_rounds = 3;
  int getclients_calls = 20;
  int gc_rounds = 3;
  int stale_every = 10;
};

// One pod as the runtime names it to the plugin.
struct Pod {
  std::string container_id;  // 64 hex digits, as containerd's
  std::string netns;
  std::string pod_namespace, pod_name;
};

std::string Hex(std::mt19937_64& rng, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < digits; ++i) s += kDigits[rng() % 16];
  return s;
}

// What kubelet passes in CNI_ARGS for a pod.
std::string CniArgs(const Pod& p) {
  return "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + p.pod_namespace + ";K8S_POD_NAME=" + p.pod_name +
         ";K8S_POD_INFRA_CONTAINER_ID=" + p.container_id;
}

// How many addresses the CIDRs of a GetFenceClients answer cover (IPv4: the records' own).
uint64_t AddressesCovered(const fence::GetFenceClientsResponse& r) {
  uint64_t n = 0;
  for (const auto& c : r.clients()) {
    for (const auto& a : c.addresses()) {
      auto cidr = mizarmp::Cidr::Parse(a.cidr());
      if (cidr.ok() && cidr->address().is_v4()) n += uint64_t{1} << (32 - cidr->prefix_len());
    }
  }
  return n;
}

// A node with `records` attachments: its host netns, mock, state dir and the pods it knows.
struct Node {
  int records = 0;
  std::string dir, state_dir, conflist;
  std::unique_ptr<mb::Netns> host;
  std::unique_ptr<mb::Mock> mock;
  std::vector<std::unique_ptr<mb::Netns>> pod_namespaces;
  std::vector<Pod> pods;
  json config;  // the plugin's network config (cniVersion 1.1.0, so GC is allowed)

  std::string Key() const { return std::to_string(records); }
  std::string PortsUrl() const { return mock->url() + "/project/" + mb::kProject + "/ports"; }
  int RecordFiles(const char* suffix) const {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_dir + "/" + kNetwork, ec)) {
      if (e.path().filename().string().ends_with(suffix)) ++n;
    }
    return n;
  }
};

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Main() {
    fs::create_directories(o_.work_dir);
    fs::permissions(o_.work_dir, fs::perms::owner_all, fs::perm_options::replace);
    std::vector<int> sizes;
    for (const std::string& s : mb::Split(o_.sizes, ',')) sizes.push_back(std::atoi(s.c_str()));
    results_["config"] = {{"sizes", sizes},         {"iterations", o_.iterations},
                          {"warmup", o_.warmup},     {"ctl_rounds", o_.ctl_rounds},
                          {"gc_rounds", o_.gc_rounds}, {"getclients_calls", o_.getclients_calls},
                          {"stale_every", o_.stale_every}};
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (!Fill(sizes[k], k)) {
        mb::SaveResults(results_, o_.out);
        return 1;
      }
    }
    const auto wanted = mb::Split(o_.sections, ',');
    return mb::RunSections({{"adddel", [this] { return AddDel(); }},
                            {"attachments", [this] { return Attachments(); }},
                            {"getclients", [this] { return GetClients(); }},
                            {"gc", [this] { return Gc(); }}},
                           std::set<std::string>(wanted.begin(), wanted.end()), results_, o_.out);
  }

 private:
  // ------------------------------------------------------------------------------------ fill
  bool Fill(int records, size_t k) {
    auto node = std::make_unique<Node>();
    node->records = records;
    node->dir = o_.work_dir + "/node" + std::to_string(records);
    node->state_dir = node->dir + "/state";
    fs::remove_all(node->dir);
    fs::create_directories(node->dir + "/netns");
    std::cerr << "== fill: " << records << " attachments\n";
    node->host = std::make_unique<mb::Netns>(mb::UniqueName("mzrh"));
    if (!node->host->ok()) return Fail("cannot create a network namespace (needs root)");
    mb::MockOptions m;
    m.bin_dir = o_.bin_dir;
    m.work_dir = node->dir;
    m.cidr = "10." + std::to_string(250 + k) + ".0.0/16";
    m.agent_netns = node->host->path();
    node->mock = std::make_unique<mb::Mock>(m);
    if (!node->mock->ok()) return Fail("mock did not start (log " + node->mock->log() + ")");
    node->config = mb::MizarmpConfig(node->mock->url(), node->state_dir);
    node->config["cniVersion"] = "1.1.0";
    node->conflist = node->dir + "/10-mizarmp.conflist";
    std::ofstream(node->conflist) << json{{"cniVersion", "1.1.0"},
                                          {"name", kNetwork},
                                          {"plugins", json::array({node->config})}}
                                         .dump(2);
    if (!MakePodNamespaces(*node)) return false;
    const auto t0 = mb::Clock::now();
    std::vector<json> ports;
    if (!CreatePorts(*node, &ports)) return false;
    const double ports_s = mb::Ms(mb::Clock::now() - t0) / 1000;
    if (!WriteRecords(*node, ports)) return false;
    results_["fill"][node->Key()] = {{"ports_s", ports_s},
                                     {"records_s", mb::Ms(mb::Clock::now() - t0) / 1000 - ports_s},
                                     {"record_files", node->RecordFiles(".json")},
                                     {"lock_files", node->RecordFiles(".lock")}};
    std::cerr << "   " << results_["fill"][node->Key()].dump() << "\n";
    nodes_.push_back(std::move(node));
    return true;
  }

  // A few pod namespaces, each with an eth0, and one netns path per pod leading to one of them.
  bool MakePodNamespaces(Node& node) {
    for (int i = 0; i < std::min(node.records, kPodNamespaces); ++i) {
      auto ns = std::make_unique<mb::Netns>(mb::UniqueName("mzrp"));
      if (!ns->ok() || mb::Shell(mb::IpBinary() + " -n " + ns->name() +
                                 " link add eth0 type veth peer name eth0p && " + mb::IpBinary() +
                                 " -n " + ns->name() + " link set eth0 up") != 0) {
        return Fail("cannot make a pod namespace with an eth0");
      }
      node.pod_namespaces.push_back(std::move(ns));
    }
    std::mt19937_64 rng(static_cast<uint64_t>(node.records));
    for (int i = 0; i < node.records; ++i) {
      Pod p;
      p.container_id = Hex(rng, 64);
      p.netns = node.dir + "/netns/cni-" + Hex(rng, 8) + "-" + Hex(rng, 4) + "-" + Hex(rng, 4) +
                "-" + Hex(rng, 4) + "-" + Hex(rng, 12);
      p.pod_namespace = "team-" + std::to_string(i % 20);
      p.pod_name = "app-" + std::to_string(i % 300) + "-" + Hex(rng, 10) + "-" + Hex(rng, 5);
      std::error_code ec;
      fs::create_symlink(node.pod_namespaces[static_cast<size_t>(i) % node.pod_namespaces.size()]
                             ->path(),
                         p.netns, ec);
      if (ec) return Fail("symlink " + p.netns + ": " + ec.message());
      node.pods.push_back(std::move(p));
    }
    return true;
  }

  // The port the plugin's ADD would create for `p`, as one member of a bulk create.
  static json PortFor(const Pod& p) {
    const std::string id = mizarmp::cni::PortIdFor(kNetwork, p.container_id, "eth0");
    return {{"project_id", mb::kProject},
            {"id", id},
            {"name", "k8s_" + id},
            {"description", mizarmp::cni::PortDescription(p.container_id, p.netns, kHostId,
                                                          kNetwork, "eth0", p.pod_namespace,
                                                          p.pod_name)},
            {"admin_state_up", true},
            {"network_id", mb::kSubnet},
            {"fixed_ips", json::array({{{"subnet_id", mb::kSubnet}}})},
            {"veth_name", "eth0"},
            {"network_ns", p.netns},
            {"binding:host_id", kHostId}};
  }

  bool SetFaults(const Node& node, const json& faults) {
    const std::string body = node.dir + "/faults.json";
    std::ofstream(body) << faults.dump();
    return mb::HttpJson("POST", node.mock->url() + "/mock/faults", body).has_value();
  }

  // Every pod's port at the mock (the answers, in the pods' order), no agent work for them.
  bool CreatePorts(Node& node, std::vector<json>* answers) {
    if (!SetFaults(node, {{"never_ready", true}})) return Fail("cannot set the mock's faults");
    const std::string body = node.dir + "/bulk.json";
    for (size_t base = 0; base < node.pods.size(); base += kBulkCreate) {
      json batch = json::array();
      for (size_t i = base; i < std::min(node.pods.size(), base + kBulkCreate); ++i) {
        batch.push_back(PortFor(node.pods[i]));
      }
      std::ofstream(body) << json{{"ports", batch}}.dump();
      auto r = mb::HttpJson("POST", node.PortsUrl(), body);
      if (!r || !r->contains("ports") || (*r)["ports"].size() != batch.size()) {
        return Fail("bulk create of " + std::to_string(batch.size()) + " ports failed");
      }
      for (auto& p : (*r)["ports"]) answers->push_back(std::move(p));
    }
    if (!SetFaults(node, json::object())) return Fail("cannot clear the mock's faults");
    return true;
  }

  // The complete record (and the lock file) a successful ADD leaves for each pod.
  bool WriteRecords(const Node& node, const std::vector<json>& ports) {
    auto subnet = mb::HttpJson(
        "GET", node.mock->url() + "/project/" + mb::kProject + "/subnets/" + mb::kSubnet);
    if (!subnet || !subnet->contains("subnet")) return Fail("cannot read the mock's subnet");
    const std::string cidr = (*subnet)["subnet"]["cidr"];
    const std::string gateway = (*subnet)["subnet"].value("gateway_ip", "");
    const std::string prefix = cidr.substr(cidr.find('/'));
    records::RecordStore store(node.state_dir);
    for (size_t i = 0; i < node.pods.size(); ++i) {
      const Pod& p = node.pods[i];
      records::Record r;
      r.state = records::Record::State::kComplete;
      r.network = kNetwork;
      r.container_id = p.container_id;
      r.ifname = "eth0";
      r.netns = p.netns;
      r.port_id = ports[i]["id"];
      r.project_id = mb::kProject;
      r.subnet_id = mb::kSubnet;
      r.host_id = kHostId;
      r.mpurl = node.mock->url();
      r.mac = mizarmp::AsciiLower(ports[i]["mac_address"].get<std::string>());
      r.ips.push_back({ports[i]["fixed_ips"][0]["ip_address"].get<std::string>() + prefix, gateway});
      r.pod_namespace = p.pod_namespace;
      r.pod_name = p.pod_name;
      r.created_at = records::NowRfc3339();
      // ADD holds the lock throughout and leaves its file beside the record.
      auto lock = store.Lock(kNetwork, r.container_id, r.ifname);
      if (!lock.ok()) return Fail("RecordStore::Lock: " + lock.status().ToString());
      if (auto s = store.Write(r); !s.ok()) return Fail("RecordStore::Write: " + s.ToString());
    }
    return true;
  }

  // ---------------------------------------------------------------------------------- adddel
  mb::ExecResult RunPlugin(const Node& node, const std::string& command, const Pod& pod) {
    mb::Exec e = mb::PluginExec(o_.bin_dir + "/mizarmp", o_.bin_dir, command, pod.container_id,
                                pod.netns, node.config);
    e.env["CNI_ARGS"] = CniArgs(pod);
    mb::ExecResult r = mb::Run(e);
    if (!r.ok()) std::cerr << "   " << node.records << ": " << command << " failed: " << r.Describe() << "\n";
    return r;
  }

  bool AddDel() {
    const size_t n = nodes_.size();
    std::vector<std::vector<double>> add(n), del(n);
    int failures = 0;
    std::mt19937_64 rng(7);
    for (int i = -o_.warmup; i < o_.iterations; ++i) {
      const size_t rot = static_cast<size_t>(i + o_.warmup) % n;
      for (size_t step = 0; step < n; ++step) {
        const size_t k = (rot + step) % n;
        mb::Netns netns(mb::UniqueName("mzrl"));
        const Pod pod{Hex(rng, 64), netns.path(), "bench", "lat-" + std::to_string(i + o_.warmup)};
        const mb::ExecResult a = RunPlugin(*nodes_[k], "ADD", pod);
        const mb::ExecResult d = RunPlugin(*nodes_[k], "DEL", pod);
        if (!a.ok() || !d.ok()) ++failures;
        if (i < 0) continue;
        if (a.ok()) add[k].push_back(a.wall_ms);
        if (d.ok()) del[k].push_back(d.wall_ms);
      }
    }
    json out = {{"failures", failures}, {"by_size", json::array()}};
    bool left_as_found = true;
    for (size_t k = 0; k < n; ++k) {
      const Node& node = *nodes_[k];
      auto st = node.mock->State();
      const json row = {{"records", node.records},
                        {"add", mb::StatsJson(mb::Summarize(add[k]))},
                        {"del", mb::StatsJson(mb::Summarize(del[k]))},
                        {"record_files_after", node.RecordFiles(".json")},
                        {"mock_ports_after", st ? (*st)["ports"] : json(nullptr)}};
      left_as_found = left_as_found && row["record_files_after"] == node.records &&
                      row["mock_ports_after"] == node.records;
      std::cerr << "   " << node.records << " records: ADD median " << row["add"]["median_ms"]
                << " p99 " << row["add"]["p99_ms"] << " ms, DEL median " << row["del"]["median_ms"]
                << " p99 " << row["del"]["p99_ms"] << " ms\n";
      out["by_size"].push_back(row);
    }
    out["left_as_found"] = left_as_found;
    results_["adddel"] = out;
    return failures == 0 && left_as_found;
  }

  // ----------------------------------------------------------------------------- attachments
  bool Attachments() {
    const size_t n = nodes_.size();
    std::vector<std::vector<double>> ms(n);
    std::vector<json> last(n);
    bool ok = true;
    for (int round = 0; round < o_.ctl_rounds; ++round) {
      for (size_t step = 0; step < n; ++step) {
        const size_t k = (static_cast<size_t>(round) + step) % n;
        mb::Exec e;
        e.argv = {o_.bin_dir + "/mizarmpctl", "attachments", "--conflist", nodes_[k]->conflist,
                  "-o", "json"};
        e.env = {{"PATH", kPath}};
        e.timeout = std::chrono::minutes(10);
        const mb::ExecResult r = mb::Run(e);
        json doc = json::parse(r.out, nullptr, false);
        if (!r.ok() || !doc.is_array()) {
          ok = false;
          std::cerr << "   mizarmpctl attachments failed: " << r.Describe() << "\n";
          continue;
        }
        ms[k].push_back(r.wall_ms);
        last[k] = std::move(doc);
      }
    }
    json out = {{"by_size", json::array()}};
    for (size_t k = 0; k < n; ++k) {
      int ports_found = 0, interfaces_seen = 0;
      for (const json& a : last[k].is_array() ? last[k] : json::array()) {
        if (a.value("portStatus", "") != "missing" && a.value("portStatus", "") != "unknown") {
          ++ports_found;
        }
        if (a.value("netnsPresent", false) && a.value("interface", "") != "missing") {
          ++interfaces_seen;
        }
      }
      const int listed = last[k].is_array() ? static_cast<int>(last[k].size()) : -1;
      const json row = {{"records", nodes_[k]->records},
                        {"latency", mb::StatsJson(mb::Summarize(ms[k]))},
                        {"listed", listed},
                        {"ports_found", ports_found},
                        {"interfaces_seen", interfaces_seen}};
      ok = ok && listed == nodes_[k]->records && ports_found == listed && interfaces_seen == listed;
      std::cerr << "   " << row.dump() << "\n";
      out["by_size"].push_back(row);
    }
    results_["attachments"] = out;
    return ok;
  }

  // ------------------------------------------------------------------------------ getclients
  bool StartNodeAddons(mb::Daemon& d, const Node& node, const std::string& socket) {
    const std::string run = node.dir + "/run";
    fs::create_directories(run);
    fs::permissions(run, fs::perms::owner_all, fs::perm_options::replace);
    if (!d.Start({o_.bin_dir + "/mizarmp-addons", "--mode=node", "--endpoint=unix://" + socket,
                  "--mpurl=" + node.mock->url(), "--state-dir=" + node.state_dir,
                  "--key-store-dir=" + node.dir + "/keys", std::string("--host-id=") + kHostId,
                  "--log-level=warn"},
                 node.dir + "/addons.log")) {
      return false;
    }
    return mb::WaitReady("unix:" + socket, std::chrono::seconds(20));
  }

  // One call: its time, and whether it answered this node alone with every record's address.
  struct Call {
    double ms = -1;
    bool exact = false;
  };
  static Call AskClients(fence::FenceController::Stub& stub, const Node& node) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    fence::GetFenceClientsRequest req;
    fence::GetFenceClientsResponse resp;
    const auto t0 = mb::Clock::now();
    const grpc::Status st = stub.GetFenceClients(&ctx, req, &resp);
    Call c;
    if (!st.ok()) return c;
    c.ms = mb::Ms(mb::Clock::now() - t0);
    c.exact = resp.clients_size() == 1 && resp.clients(0).id() == kHostId &&
              AddressesCovered(resp) == static_cast<uint64_t>(node.records);
    return c;
  }

  // Rewrites one record as it is (an atomic rename, as the plugin writes): the directory changed.
  static bool TouchOneRecord(const Node& node) {
    records::RecordStore store(node.state_dir);
    auto r = store.Read(kNetwork, node.pods.front().container_id, "eth0");
    return r.ok() && store.Write(*r).ok();
  }

  bool GetClients() {
    const size_t n = nodes_.size();
    std::vector<std::unique_ptr<mb::Daemon>> servers;
    std::vector<std::unique_ptr<fence::FenceController::Stub>> stubs;
    json out = {{"by_size", json::array()}};
    std::vector<double> first(n);
    bool ok = true;
    for (size_t k = 0; k < n; ++k) {
      const std::string socket = nodes_[k]->dir + "/run/addons.sock";
      servers.push_back(std::make_unique<mb::Daemon>());
      if (!StartNodeAddons(*servers.back(), *nodes_[k], socket)) {
        return Fail("node-mode mizarmp-addons did not come up (log " + nodes_[k]->dir +
                    "/addons.log)");
      }
      stubs.push_back(fence::FenceController::NewStub(mb::NewChannel("unix:" + socket, 0)));
      const Call c = AskClients(*stubs.back(), *nodes_[k]);
      first[k] = c.ms;
      ok = ok && c.exact;
    }
    // The server caches a directory once its mtime is RecordCache::kSettle (2 s) old: the calls
    // on an unchanged state dir come after that, and before any record is rewritten.
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    std::vector<std::vector<double>> unchanged(n), changed(n);
    for (const bool touch : {false, true}) {
      for (int i = 0; i < o_.getclients_calls; ++i) {
        for (size_t step = 0; step < n; ++step) {
          const size_t k = (static_cast<size_t>(i) + step) % n;
          if (touch && !TouchOneRecord(*nodes_[k])) return Fail("cannot rewrite a record");
          const Call c = AskClients(*stubs[k], *nodes_[k]);
          ok = ok && c.exact;
          (touch ? changed : unchanged)[k].push_back(c.ms);
        }
      }
    }
    for (size_t k = 0; k < n; ++k) {
      const json row = {{"records", nodes_[k]->records},
                        {"first_ms", first[k]},
                        {"unchanged", mb::StatsJson(mb::Summarize(unchanged[k]))},
                        {"after_change", mb::StatsJson(mb::Summarize(changed[k]))}};
      std::cerr << "   " << nodes_[k]->records << " records: first " << first[k]
                << " ms, unchanged median " << row["unchanged"]["median_ms"]
                << " ms, after a change median " << row["after_change"]["median_ms"] << " ms\n";
      out["by_size"].push_back(row);
    }
    out["every_answer_exact"] = ok;
    results_["getclients"] = out;
    return ok;
  }

  // -------------------------------------------------------------------------------------- gc
  mb::ExecResult RunGc(const Node& node, const std::vector<const Pod*>& valid) {
    json config = node.config;
    json attachments = json::array();
    for (const Pod* p : valid) attachments.push_back({{"containerID", p->container_id}, {"ifname", "eth0"}});
    config["cni.dev/valid-attachments"] = std::move(attachments);
    mb::Exec e = mb::PluginExec(o_.bin_dir + "/mizarmp", o_.bin_dir, "GC", "", "", config);
    // A runtime's GC names no attachment of its own.
    e.env.erase("CNI_CONTAINERID");
    e.env.erase("CNI_IFNAME");
    e.timeout = std::chrono::minutes(10);
    mb::ExecResult r = mb::Run(e);
    if (!r.ok()) std::cerr << "   " << node.records << ": GC failed: " << r.Describe() << "\n";
    return r;
  }

  // The port ids the mock holds for this node.
  static std::set<std::string> PortIdsAt(const Node& node) {
    std::set<std::string> ids;
    auto r = mb::HttpJson("GET", node.PortsUrl() + "?binding:host_id=" + kHostId + "&fields=id");
    if (r && r->contains("ports")) {
      for (const json& p : (*r)["ports"]) ids.insert(p.value("id", ""));
    }
    return ids;
  }

  // After a GC that was told `stale` are gone: whether exactly they lost record, lock and port.
  json CheckCollected(const Node& node, const std::set<size_t>& stale) {
    records::RecordStore store(node.state_dir);
    const std::set<std::string> ports = PortIdsAt(node);
    int wrong = 0;
    for (size_t i = 0; i < node.pods.size(); ++i) {
      const std::string& cid = node.pods[i].container_id;
      const bool gone = stale.contains(i);
      const bool record = fs::exists(store.RecordPath(kNetwork, cid, "eth0"));
      const bool lock = fs::exists(store.LockPath(kNetwork, cid, "eth0"));
      const bool port = ports.contains(mizarmp::cni::PortIdFor(kNetwork, cid, "eth0"));
      if (record == gone || lock == gone || port == gone) ++wrong;
    }
    return {{"stale", stale.size()},
            {"record_files_after", node.RecordFiles(".json")},
            {"lock_files_after", node.RecordFiles(".lock")},
            {"mock_ports_after", ports.size()},
            {"attachments_wrong", wrong}};
  }

  bool Gc() {
    const size_t n = nodes_.size();
    std::vector<std::vector<double>> keep_all(n);
    bool ok = true;
    for (int round = 0; round < o_.gc_rounds; ++round) {
      for (size_t step = 0; step < n; ++step) {
        const size_t k = (static_cast<size_t>(round) + step) % n;
        std::vector<const Pod*> valid;
        for (const Pod& p : nodes_[k]->pods) valid.push_back(&p);
        const mb::ExecResult r = RunGc(*nodes_[k], valid);
        ok = ok && r.ok();
        if (r.ok()) keep_all[k].push_back(r.wall_ms);
      }
    }
    json out = {{"by_size", json::array()}};
    for (size_t k = 0; k < n; ++k) {
      const Node& node = *nodes_[k];
      const json kept = CheckCollected(node, {});
      std::vector<const Pod*> valid;
      std::set<size_t> stale;
      for (size_t i = 0; i < node.pods.size(); ++i) {
        if (i % static_cast<size_t>(o_.stale_every) == 0) {
          stale.insert(i);
        } else {
          valid.push_back(&node.pods[i]);
        }
      }
      const mb::ExecResult r = RunGc(node, valid);
      json row = {{"records", node.records},
                  {"keep_all", mb::StatsJson(mb::Summarize(keep_all[k]))},
                  {"keep_all_check", kept},
                  {"collect_ms", r.ok() ? json(r.wall_ms) : json(nullptr)},
                  {"collect_check", CheckCollected(node, stale)}};
      ok = ok && r.ok() && kept["attachments_wrong"] == 0 &&
           row["collect_check"]["attachments_wrong"] == 0;
      std::cerr << "   " << row.dump() << "\n";
      out["by_size"].push_back(row);
    }
    results_["gc"] = out;
    return ok;
  }

  bool Fail(const std::string& why) { return mb::RecordFailure(results_, why); }

  Options o_;
  std::vector<std::unique_ptr<Node>> nodes_;
  json results_;
};

FlagTable Flags(Options& o) {
  FlagTable t;
  t.String("bin-dir", "DIR", "where mizarmp, mizarmp-mock, mizarmp-addons, mizarmpctl are (required)",
           &o.bin_dir);
  t.String("work", "DIR", "scratch directory (default " + o.work_dir + ")", &o.work_dir);
  t.String("out", "FILE", "where the JSON results go (default " + o.out + ")", &o.out);
  t.String("sections", "S,S,...", "which sections (default " + o.sections + ")", &o.sections);
  t.String("sizes", "N,N,...", "attachment records per node, baseline first (default " + o.sizes + ")",
           &o.sizes);
  t.Int("iterations", "N", "ADD/DEL pairs per size (default 50)", 1, 100000, &o.iterations);
  t.Int("warmup", "N", "ADD/DEL pairs per size not counted (default 3)", 0, 1000, &o.warmup);
  t.Int("ctl-rounds", "N", "mizarmpctl attachments runs per size (default 3)", 1, 1000,
        &o.ctl_rounds);
  t.Int("getclients-calls", "N", "GetFenceClients calls of each kind per size (default 20)", 1,
        100000, &o.getclients_calls);
  t.Int("gc-rounds", "N", "GCs with every record valid, per size (default 3)", 1, 1000,
        &o.gc_rounds);
  t.Int("stale-every", "N", "the collecting GC: one record in N is no longer valid (default 10)",
        1, 1000000, &o.stale_every);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  return mb::DriverMain<Bench>("mizarmp-bench-records", "--bin-dir DIR [flags]", argc, argv, Flags,
                               [](const Options& o) -> std::string {
                                 if (o.bin_dir.empty()) return "--bin-dir is required";
                                 if (::geteuid() != 0) return "must run as root (netns)";
                                 for (const std::string& s : mb::Split(o.sizes, ',')) {
                                   if (std::atoi(s.c_str()) < 1)
                                     return "--sizes: each must be at least 1";
                                 }
                                 return "";
                               });
}
