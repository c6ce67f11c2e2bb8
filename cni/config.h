// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mizarmp network configuration (stdin JSON). Every key is listed in the README (plugin
// configuration).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "mizarmp-client/client.h"

namespace mizarmp::cni {

inline constexpr const char* kDefaultStateDir = "/var/lib/cni/mizarmp";
// Where in the state dir TLS sessions are kept between plugin processes (one file per server).
inline constexpr const char* kTlsSessionDirName = ".tls-sessions";
inline constexpr const char* kDefaultHostIdFile = "/etc/mizarmp/hostid";
// The largest network configuration read from stdin: real ones are a few KiB, and the plugin
// must not hold (or make a runtime wait on) an unbounded input.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;
// The deepest nesting of arrays and objects accepted in the configuration (prevResult,
// runtimeConfig and args included). Real configurations nest fewer than ten levels; the bound
// keeps every recursive walk of the tree (copy, dump, destruction) far from the stack's end.
inline constexpr size_t kMaxConfigDepth = 64;
// logMaxBytes' range: below a few lines a file would rotate on every invocation.
inline constexpr int64_t kMinLogMaxBytes = 4096;
inline constexpr int64_t kMaxLogMaxBytes = int64_t{1} << 30;

struct DnsConfig {
  std::vector<std::string> nameservers;
  std::string domain;
  std::vector<std::string> search;
  std::vector<std::string> options;
  bool empty() const {
    return nameservers.empty() && domain.empty() && search.empty() && options.empty();
  }
};

// Who puts the pod's NIC in place: the controller's host agent (Mizar-MP v0.1, the seed), or the
// plugin itself, plugging a veth into Open vSwitch's integration bridge as Alcor's agent expects
// (cni/ovs_plug.h). kAuto: the plugin plugs on Alcor, the agent on v0.1.
enum class PlugMode { kAuto, kAgent, kOvs };

struct NetConf {
  std::string cni_version;
  std::string name;
  std::string type;
  std::string mpurl;
  std::string project;     // UUID
  std::string subnet;      // UUID
  std::string host_id;     // empty until ResolveHostId()
  std::string network_id;  // network_id of created ports; default: the subnet id
  client::Dialect dialect = client::Dialect::kAuto;
  PlugMode plug = PlugMode::kAuto;
  std::string ovs_bridge = "br-int";                          // plug mode ovs
  std::string ovsdb_socket = "/var/run/openvswitch/db.sock";  // plug mode ovs
  std::string state_dir = kDefaultStateDir;
  std::string log_file;
  std::string log_level = "warn";
  uint64_t log_max_bytes = 0;  // 0: the log file grows without a cap
  int mtu = 0;                 // 0: not configured
  DnsConfig dns;
  client::TlsConfig tls;
  std::string token_file;
  std::string relay_socket;  // the node's relay for an https mpurl (ClientConfig::relay_socket)
  std::chrono::milliseconds ready_timeout{60000};
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds nic_timeout{10000};
  std::chrono::milliseconds poll_initial{5};
  std::chrono::milliseconds poll_max{5};
  int retries = 3;
  // Passed through untouched.
  nlohmann::json prev_result;  // null when absent
  nlohmann::json runtime_config;
  nlohmann::json args;
  nlohmann::json raw;  // the whole document (GC reads cni.dev/* keys from it)
};

// Parses stdin. INVALID_ARGUMENT (the caller maps it to code 6) with the parser's byte position
// when the text is not JSON or not an object, and for a text longer than kMaxConfigBytes or
// nested deeper than kMaxConfigDepth (refused before any tree is built).
Result<nlohmann::json> DecodeJson(std::string_view text);

// The document's "cniVersion", or "0.1.0" when absent. INVALID_ARGUMENT if it is not a string.
Result<std::string> ConfigVersion(const nlohmann::json& doc);

// Reads every key. INVALID_ARGUMENT naming the key that is missing, of the wrong type, or out of
// range. Does not resolve hostId (see ResolveHostId), so parsing has no side effects.
Result<NetConf> ParseNetConf(const nlohmann::json& doc);

// hostId from the config, else the first non-empty line of `hostid_file`, else gethostname().
Result<std::string> ResolveHostId(const NetConf& conf,
                                  const std::string& hostid_file = kDefaultHostIdFile);

// The REST client's configuration for this network.
client::ClientConfig ClientConfigFor(const NetConf& conf);
// The polling options for WaitPortReady (without cancellation).
client::PollOptions PollOptionsFor(const NetConf& conf);

// CNI network names: [A-Za-z0-9][A-Za-z0-9_.-]* (they name a directory of the state dir).
Status ValidateNetworkName(std::string_view name);

}  // namespace mizarmp::cni
