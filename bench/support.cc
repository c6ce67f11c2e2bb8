// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "bench/support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace mizarmp::bench {

using nlohmann::json;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

Stats Summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&v](double p) {
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    if (k == 0) k = 1;
    return v[std::min(k, v.size()) - 1];
  };
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

json StatsJson(const Stats& s) {
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

std::optional<json> HttpJson(const std::string& method, const std::string& url,
                             const std::string& body_file, const std::string& ca_file) {
  std::string cmd = "curl -sS --max-time 120 -X " + method + " -H 'Content-Type: application/json'";
  if (!ca_file.empty()) cmd += " --cacert '" + ca_file + "'";
  if (!body_file.empty()) cmd += " --data-binary @" + body_file;
  cmd += " '" + url + "'";
  std::string out;
  if (Shell(cmd, &out) != 0) return std::nullopt;
  json j = json::parse(out, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::string IpBinary() { return ::access("/usr/sbin/ip", X_OK) == 0 ? "/usr/sbin/ip" : "/sbin/ip"; }

Mock::Mock(const MockOptions& o)
    : work_dir_(o.work_dir), tls_ca_(o.tls_cert.empty() ? "" : o.tls_ca) {
  const std::string tag = UniqueName("mk");
  const std::string port_file = o.work_dir + "/" + tag + ".port";
  log_ = o.work_dir + "/" + tag + ".log";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv = {o.bin_dir + "/mizarmp-mock",
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--port-file",
                                   port_file,
                                   "--cidr",
                                   o.cidr,
                                   "--ready-delay-ms",
                                   std::to_string(o.ready_delay_ms),
                                   "--journal-capacity",
                                   std::to_string(o.journal_capacity),
                                   "--log-level",
                                   "warn"};
  if (!o.agent_netns.empty()) {
    const std::string bridge = ("mzbb" + tag.substr(2)).substr(0, 15);  // a link name's limit
    for (const std::string& a :
         {std::string("--agent"), std::string("--agent-netns"), o.agent_netns,
          std::string("--bridge"), bridge, std::string("--mtu"), std::string("1400")}) {
      argv.push_back(a);
    }
    if (o.agent_unplugs_later) argv.push_back("--agent-unplugs-later");
  }
  if (o.strict_alcor || !o.ovs_socket.empty()) {
    argv.insert(argv.end(), {"--strict", "--dialect", "alcor"});
  }
  if (o.row_limit > 0) argv.insert(argv.end(), {"--row-limit", std::to_string(o.row_limit)});
  if (!o.ovs_socket.empty()) {
    argv.insert(argv.end(), {"--agent-ovsdb", o.ovs_socket, "--bridge", o.ovs_bridge});
  }
  if (!o.netns_name.empty()) argv.insert(argv.begin(), {IpBinary(), "netns", "exec", o.netns_name});
  if (!o.tls_cert.empty()) {
    for (const std::string& a :
         {std::string("--tls-cert"), o.tls_cert, std::string("--tls-key"), o.tls_key}) {
      argv.push_back(a);
    }
  }
  if (!daemon_.Start(argv, log_)) return;
  port_ = std::atoi(WaitForFile(port_file, std::chrono::seconds(10)).c_str());
  ok_ = port_ > 0;
}

std::optional<json> Mock::State() const {
  return HttpJson("GET", url() + "/mock/state", {}, tls_ca_);
}

std::vector<std::string> Mock::CreatePorts(int n) const {
  std::vector<std::string> ips;
  const std::string body = work_dir_ + "/bulk-" + std::to_string(port_) + ".json";
  for (int base = 0; base < n; base += 500) {
    json ports = json::array();
    for (int i = base; i < std::min(n, base + 500); ++i) {
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
    auto r = HttpJson("POST", url() + "/project/" + kProject + "/ports", body, tls_ca_);
    if (!r || !r->contains("ports")) break;
    for (const auto& p : (*r)["ports"]) {
      if (p.contains("fixed_ips") && !p["fixed_ips"].empty()) {
        ips.push_back(p["fixed_ips"][0]["ip_address"]);
      }
    }
  }
  return ips;
}

TrustStoreWith::TrustStoreWith(const std::string& ca_file, const std::string& work_dir) {
  const std::string certs = work_dir + "/etc-ssl-certs";
  const std::string ready = work_dir + "/trust-store.ready";
  bundle_ = certs + "/ca-certificates.crt";
  // cp -a keeps Debian's links into /usr/share/ca-certificates, which the namespace still sees.
  const std::string script =
      "set -e; rm -rf '" + certs + "'; cp -a /etc/ssl/certs '" + certs + "'; cp '" + ca_file +
      "' '" + certs + "/mizarmp-bench-ca.pem'; h=$(openssl x509 -hash -noout -in '" + ca_file +
      "'); n=0; while [ -e '" + certs + "'/$h.$n ]; do n=$((n+1)); done; ln -s " +
      "mizarmp-bench-ca.pem '" + certs + "'/$h.$n; cat '" + ca_file + "' >> '" + bundle_ + "'";
  if (Shell(script, &error_) != 0) return;
  std::filesystem::remove(ready);
  // Slave propagation: the pod netns mounted after this (ip netns add) still show up inside.
  if (!holder_.Start({"/usr/bin/unshare", "--mount", "--propagation", "slave", "/bin/sh", "-c",
                      "mount --bind '" + certs + "' /etc/ssl/certs && echo ok > '" + ready +
                          "' && exec sleep 1000000"},
                     work_dir + "/trust-store.log")) {
    error_ = "cannot start the namespace holder";
    return;
  }
  ok_ = !WaitForFile(ready, std::chrono::seconds(10)).empty();
  if (!ok_) error_ = "the trust store was not mounted (log " + work_dir + "/trust-store.log)";
}

json MizarmpConfig(const std::string& url, const std::string& state_dir) {
  return {{"cniVersion", "1.0.0"},
          {"name", "mzbench"},
          {"type", "mizarmp"},
          {"mpurl", url},
          {"project", kProject},
          {"subnet", kSubnet},
          {"hostId", "bench-node"},
          {"stateDir", state_dir},
          {"mtu", 1400},
          {"timeouts", {{"readyMs", 20000}, {"nicMs", 10000}}}};
}

Exec PluginExec(const std::string& plugin_path, const std::string& cni_path,
                const std::string& command, const std::string& container, const std::string& netns,
                const json& config) {
  Exec e;
  e.argv = {plugin_path};
  e.env = {{"CNI_COMMAND", command},
           {"CNI_CONTAINERID", container},
           {"CNI_IFNAME", "eth0"},
           {"CNI_PATH", cni_path},
           {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  if (!netns.empty()) e.env["CNI_NETNS"] = netns;
  e.stdin_data = config.dump();
  return e;
}

bool RecordFailure(nlohmann::json& results, const std::string& why) {
  std::cerr << "   " << why << "\n";
  results["errors"].push_back(why);
  return false;
}

std::optional<int> ParseDriverFlags(const std::string& program, const std::string& synopsis,
                                    const FlagTable& flags, int argc, char** argv,
                                    const std::function<std::string()>& check) {
  bool help = false;
  const Status parsed = flags.Parse(std::vector<std::string>(argv + 1, argv + argc), &help);
  const std::string usage = "usage: " + program + " " + synopsis + "\n" + flags.Help();
  if (help) {
    std::cout << usage;
    return 0;
  }
  const std::string wrong = parsed.ok() ? check() : parsed.message();
  if (wrong.empty()) return std::nullopt;
  std::cerr << program << ": " << wrong << "\n" << usage;
  return 2;
}

void SaveResults(const nlohmann::json& results, const std::string& path) {
  std::ofstream(path) << results.dump(2) << "\n";
}

int RunSections(const std::vector<Section>& sections, const std::set<std::string>& wanted,
                const nlohmann::json& results, const std::string& path) {
  int rc = 0;
  for (const Section& section : sections) {
    if (!wanted.contains(section.name)) continue;
    std::cerr << "== " << section.name << "\n";
    const auto t0 = Clock::now();
    const bool ok = section.run();
    std::cerr << "   " << section.name << (ok ? " done" : " FAILED") << " in "
              << Ms(Clock::now() - t0) / 1000 << " s\n";
    if (!ok) rc = 1;
    SaveResults(results, path);
  }
  return rc;
}

}  // namespace mizarmp::bench
