// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-bench-fence-set: the fence set on one node at its limit (issue 48, target 8). A node
// namespace routes for --pods pod namespaces (a veth and a /32 route each, as agent mode wires
// them); the node agent's host filter (fence/host_filter.h, nftables) holds --cidrs fenced /32s,
// none adjacent, so nftables merges none of them, and so does each pod's (fence/pod_filters.h).
// Measured, each --rounds times:
//   - update: HostFilter::Apply of the whole set into a node without it, of a set one CIDR
//     apart (one fence more, one less), and of the empty set (the table's removal); then
//     PodFilters::Apply of the same into every pod, as the agent does before it acknowledges;
//   - unfenced traffic between two pods through the node's forward hook: TCP throughput
//     (iperf3) and UDP round trips (sockperf ping-pong), without the set and with it (in the
//     node and both pods), interleaved so that drift of a shared machine falls on both sides;
//   - memory: this process's peak RSS growth over the first Apply, and the kernel's unreclaimable
//     slab while the set stands in the node and in every pod.
// Needs root, iperf3 and sockperf.
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "bench/support.h"
#include "fence/fence_set.h"
#include "fence/host_filter.h"
#include "fence/pod_filters.h"
#include "tests/support/entered_netns.h"

namespace {

namespace mb = mizarmp::bench;
namespace fs = std::filesystem;
using json = nlohmann::json;
using mizarmp::Cidr;
using mizarmp::FlagTable;
using mizarmp::IpAddress;
using mizarmp::fence::FenceSet;
using mizarmp::fence::HostFilter;
using mizarmp::fence::MakeFenceSet;
using mizarmp::fence::PodFilters;

struct Options {
  std::string work_dir = "/tmp/mizarmp-bench-fence-set";
  std::string out = "fence-set.json";
  int cidrs = 65536;
  int pods = 110;
  int rounds = 5;
  int seconds = 3;
};

// The pods' addresses are 10.77.0.0/16 from .1, the node's side of every veth 10.76.0.1.
IpAddress PodAddress(int i) { return IpAddress::V4(0x0a4d0000u + static_cast<uint32_t>(i) + 1); }
constexpr const char* kNodeAddress = "10.76.0.1";

// `count` fenced /32s from 11.0.0.0, every other address (so no two merge into a wider range),
// the `shift`th one left out and the one past the last put in instead: a set one fence apart.
FenceSet Fenced(int count, int shift = -1) {
  std::vector<Cidr> cidrs;
  cidrs.reserve(count);
  for (int i = 0; i <= count; ++i) {
    if (i == shift || (i == count && shift < 0)) continue;
    cidrs.emplace_back(IpAddress::V4(0x0b000000u + 2u * static_cast<uint32_t>(i)), 32);
  }
  return MakeFenceSet(std::move(cidrs));
}

long MaxRssKib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// /proc/meminfo's SUnreclaim: where the kernel keeps nftables' sets.
long UnreclaimableSlabKib() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "SUnreclaim:") return value;
  }
  return -1;
}

class FenceSetBench {
 public:
  explicit FenceSetBench(Options o) : o_(std::move(o)) {}

  int Main() {
    fs::create_directories(o_.work_dir);
    fs::permissions(o_.work_dir, fs::perms::owner_all, fs::perm_options::replace);
    results_["config"] = {{"cidrs", o_.cidrs}, {"pods", o_.pods}, {"rounds", o_.rounds},
                          {"seconds", o_.seconds}};
    const bool ok = Wire() && Measure();
    StopServers();
    mb::SaveResults(results_, o_.out);
    return ok ? 0 : 1;
  }

 private:
  bool Fail(const std::string& why) { return mb::RecordFailure(results_, why); }

  bool Sh(const std::string& command) {
    std::string out;
    if (mb::Shell(command, &out) == 0) return true;
    return Fail(command + ": " + out);
  }

  // The node and its pods, each pod reaching the others through the node's forward hook.
  bool Wire() {
    node_ = std::make_unique<mb::Netns>(mb::UniqueName("mzfn"));
    if (!node_->ok()) return Fail("ip netns add (the node)");
    const std::string n = node_->name();
    if (!Sh("ip netns exec " + n + " sysctl -qw net.ipv4.ip_forward=1") ||
        !Sh("ip -n " + n + " link set lo up")) {
      return false;
    }
    for (int i = 0; i < o_.pods; ++i) {
      pods_.push_back(std::make_unique<mb::Netns>(mb::UniqueName("mzfp")));
      if (!pods_.back()->ok()) return Fail("ip netns add (pod " + std::to_string(i) + ")");
      const std::string p = pods_.back()->name(), link = "p" + std::to_string(i);
      const std::string ip = PodAddress(i).ToString();
      for (const std::string& step : {
               "ip -n " + n + " link add " + link + " type veth peer name eth0 netns " + p,
               "ip -n " + n + " addr add " + std::string(kNodeAddress) + "/32 dev " + link,
               "ip -n " + n + " link set " + link + " up",
               "ip -n " + n + " route add " + ip + "/32 dev " + link,
               "ip -n " + p + " addr add " + ip + "/32 dev eth0",
               "ip -n " + p + " link set eth0 up", "ip -n " + p + " link set lo up",
               "ip -n " + p + " route add " + kNodeAddress + " dev eth0",
               "ip -n " + p + " route add default via " + kNodeAddress + " dev eth0"}) {
        if (!Sh(step)) return false;
      }
    }
    if (o_.pods < 2) return Fail("--pods: at least 2, one to send and one to answer");
    // sockperf's server stays up; iperf3's serves one test each (-1), started per measurement.
    return Sh("ip netns exec " + pods_[1]->name() + " sockperf server -i " +
              PodAddress(1).ToString() + " -p 11111 --daemonize >/dev/null 2>&1");
  }

  void StopServers() { mb::Shell("pkill -f 'sockperf server -i " + PodAddress(1).ToString() + "'"); }

  // Pod 0 to pod 1: iperf3's received bits per second.
  std::optional<double> Throughput() {
    const std::string server = PodAddress(1).ToString();
    if (!Sh("ip netns exec " + pods_[1]->name() + " iperf3 -s -1 -D -B " + server)) return {};
    std::string out;
    for (int tries = 0; tries < 50; ++tries) {  // until its server listens
      if (mb::Shell("ip netns exec " + pods_[0]->name() + " iperf3 -J -c " + server + " -t " +
                        std::to_string(o_.seconds),
                    &out) == 0) {
        const json doc = json::parse(out, nullptr, false);
        const json* sum = doc.is_object() && doc.contains("end") && doc["end"].contains("sum_received")
                              ? &doc["end"]["sum_received"]
                              : nullptr;
        if (sum != nullptr && sum->value("bits_per_second", 0.0) > 0) {
          return sum->value("bits_per_second", 0.0);
        }
      }
      mb::Shell("sleep 0.1");
    }
    Fail("iperf3 from pod 0 to pod 1: " + out);
    return {};
  }

  // Pod 0 to pod 1: sockperf's one-way latency (half the round trip), µs: average, p50, p99.
  std::optional<json> Latency() {
    std::string out;
    if (mb::Shell("ip netns exec " + pods_[0]->name() + " sockperf ping-pong -i " +
                      PodAddress(1).ToString() + " -p 11111 -t " + std::to_string(o_.seconds),
                  &out) != 0) {
      Fail("sockperf ping-pong from pod 0 to pod 1: " + out);
      return {};
    }
    const auto figure = [&out](const std::string& pattern) -> std::optional<double> {
      std::smatch m;
      if (!std::regex_search(out, m, std::regex(pattern))) return {};
      return std::stod(m[1]);
    };
    const auto avg = figure(R"(avg-latency=([0-9.]+))");
    const auto p50 = figure(R"(percentile 50\.000 = +([0-9.]+))");
    const auto p99 = figure(R"(percentile 99\.000 = +([0-9.]+))");
    if (!avg || !p50 || !p99) {
      Fail("sockperf printed no latency: " + out);
      return {};
    }
    return json{{"avg_us", *avg}, {"p50_us", *p50}, {"p99_us", *p99}};
  }

  // One round of traffic on each side; false when a tool failed.
  bool Traffic(const std::string& side) {
    const auto bps = Throughput();
    const auto latency = Latency();
    if (!bps || !latency) return false;
    json sample = *latency;
    sample["gbit_per_s"] = *bps / 1e9;
    results_["traffic"][side].push_back(sample);
    return true;
  }

  // The elements nftables holds in the table's IPv4 sets: what the node really enforces.
  long KernelElements() {
    long count = 0;
    for (const char* set : {"hosts4", "nets4"}) {
      std::string out;
      if (mb::Shell("ip netns exec " + node_->name() + " nft -j list set inet mizarmp_fence " + set,
                    &out) != 0) {
        return -1;
      }
      const json doc = json::parse(out, nullptr, false);
      if (!doc.is_object()) return -1;
      for (const json& item : doc.value("nftables", json::array())) {
        if (item.contains("set")) count += static_cast<long>(item["set"].value("elem", json::array()).size());
      }
    }
    return count;
  }

  // HostFilter::Apply of `set` in the node's namespace, its time under update_ms[what].
  bool Timed(HostFilter& filter, const FenceSet& set, const char* what) {
    mizarmp::testing::EnteredNetns inside(node_->path());
    if (!inside.error().empty()) return Fail(inside.error());
    const auto start = mb::Clock::now();
    const mizarmp::Status applied = filter.Apply(set);
    if (!applied.ok()) return Fail(std::string(what) + ": " + applied.ToString());
    results_["update_ms"][what].push_back(mb::Ms(mb::Clock::now() - start));
    return true;
  }

  // PodFilters::Apply of `set` in every pod's namespace, its time under update_ms["pods_" what].
  bool TimedInPods(PodFilters& filters, const FenceSet& set, const std::string& what) {
    std::set<std::string> namespaces;
    for (const auto& pod : pods_) namespaces.insert(pod->path());
    const auto start = mb::Clock::now();
    const mizarmp::Status applied =
        filters.Apply(namespaces, std::make_shared<const FenceSet>(set));
    if (!applied.ok()) return Fail("pods, " + what + ": " + applied.ToString());
    results_["update_ms"]["pods_" + what].push_back(mb::Ms(mb::Clock::now() - start));
    return true;
  }

  // The node's and then every pod's update to `set`, under `what`.
  bool Updated(HostFilter& node, PodFilters& pods, const FenceSet& set, const char* what) {
    return Timed(node, set, what) && TimedInPods(pods, set, what);
  }

  bool Measure() {
    const FenceSet full = Fenced(o_.cidrs);
    const FenceSet apart = Fenced(o_.cidrs, o_.cidrs / 2);
    HostFilter filter(o_.work_dir + "/fence-set", {});
    PodFilters pod_filters;
    for (int round = 0; round < o_.rounds; ++round) {
      if (!Traffic("without")) return false;
      const long rss_before = MaxRssKib(), slab_before = UnreclaimableSlabKib();
      if (!Updated(filter, pod_filters, full, "whole")) return false;
      results_["memory"]["driver_rss_growth_kib"].push_back(MaxRssKib() - rss_before);
      results_["memory"]["kernel_slab_growth_kib"].push_back(UnreclaimableSlabKib() - slab_before);
      if (!Updated(filter, pod_filters, apart, "one_apart") ||
          !Updated(filter, pod_filters, full, "one_apart")) {
        return false;
      }
      results_["kernel_elements"] = KernelElements();
      if (!Traffic("with")) return false;
      if (!Updated(filter, pod_filters, MakeFenceSet({}), "removal")) return false;
      std::cerr << "round " << round + 1 << "/" << o_.rounds << " done\n";
    }
    return true;
  }

  Options o_;
  json results_ = json::object();
  std::unique_ptr<mb::Netns> node_;
  std::vector<std::unique_ptr<mb::Netns>> pods_;
};

FlagTable Flags(Options& o) {
  FlagTable t;
  t.String("work", "DIR", "scratch directory (default " + o.work_dir + ")", &o.work_dir);
  t.String("out", "FILE", "where the JSON results go (default " + o.out + ")", &o.out);
  t.Int("cidrs", "N", "fenced /32s (default 65536)", 1, 65536, &o.cidrs);
  t.Int("pods", "N", "pods on the node (default 110)", 2, 1000, &o.pods);
  t.Int("rounds", "N", "rounds of each measurement (default 5)", 1, 100, &o.rounds);
  t.Int("seconds", "S", "seconds of each traffic measurement (default 3)", 1, 60, &o.seconds);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  return mb::DriverMain<FenceSetBench>("mizarmp-bench-fence-set", "[flags]", argc, argv, Flags);
}
