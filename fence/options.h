// The FenceController's options: what mizarmp-addons' configuration sets for fencing. The
// server's config (cmd/mizarmp-addons) composes this struct; nothing here knows about flags or
// files.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "etcd/options.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

inline constexpr const char* kDefaultStateDir = "/var/lib/cni/mizarmp";
inline constexpr const char* kDefaultFenceStore = "/var/lib/mizarmp/fence.db";
inline constexpr int kDefaultUpdateConnections = 8;
inline constexpr int kMaxUpdateConnections = 64;

// An etcd fence store (fenceStore "etcd://host:port,..."): how to reach the cluster (endpoints
// come from the location), where the state lives in it, and the leader's lease.
struct EtcdStoreOptions {
  etcd::Options client;                    // TLS and user authentication files, call timeout
  std::string prefix = "/mizarmp/fence/";  // every key of the store starts with it
  std::chrono::seconds lease_ttl{15};      // the leader's lease (etcd/election.h)
};

struct FenceOptions {
  client::ClientConfig mizarmp;                  // base_url, project, dialect, TLS, token file
  std::string state_dir = kDefaultStateDir;      // the plugin's attachment records
  std::string fence_store = kDefaultFenceStore;  // where the fence store keeps its state
  EtcdStoreOptions etcd;                         // for an etcd:// fence_store
  std::string replica_id;  // this replica's name in the leader election and its Mizar-MP calls
  std::map<std::string, std::vector<std::string>> node_addresses;  // hostId -> addrs/CIDRs
  std::string host_id;  // this node; records without a host id count for it
  bool use_port_list = false;
  std::map<std::string, std::string> expected_secrets;  // never logged
  std::chrono::milliseconds reconcile_interval{10000};
  // Kept-alive Mizar-MP connections a pass's port updates go out over in parallel (Mizar-MP has
  // no bulk update); 1: one after another.
  int update_connections = kDefaultUpdateConnections;
  // The port index's SQLite file (fence/port_index.h): a pass then reads back the indexed ports
  // inside its CIDRs instead of listing every port. Empty: every pass lists every port.
  std::string port_index;
};

}  // namespace mizarmp::fence
