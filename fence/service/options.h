// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The FenceController's options: what mizarmp-addons' configuration sets for fencing. The
// server's config (cmd/mizarmp-addons) composes this struct; nothing here knows about flags or
// files.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "fence/etcd/backends.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

inline constexpr const char* kDefaultStateDir = "/var/lib/cni/mizarmp";
inline constexpr const char* kDefaultFenceStore = "/var/lib/mizarmp/fence.db";
inline constexpr int kDefaultUpdateConnections = 8;
inline constexpr int kMaxUpdateConnections = 64;
inline constexpr std::chrono::seconds kDefaultPublicationLease{30};

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
  // The port index (fence/port_index.h): node agents publish their attachments into it and a
  // pass reads back the indexed ports inside its CIDRs instead of listing every port. Kept
  // beside the fence store (PortIndexPath). Off: every pass lists every port.
  bool port_index = false;
  // How long a node's publication counts: a node that did not publish again within it is
  // covered by the controller with a list of the node's ports (binding:host_id).
  std::chrono::seconds publication_lease{kDefaultPublicationLease};

  // INVALID_ARGUMENT naming the configuration key: stateDir, fenceStore and its etcd settings
  // (ValidateFenceStore), hostId, reconcileIntervalMs, updateConnections. The configuration
  // and FenceService (before it opens the store) both ask it.
  Status Validate() const;
};

// A node agent's publication of its node's attachments to the controller (fence/service/publisher.h).
struct PublisherOptions {
  std::string target;     // the controller's publication endpoint, tcp://HOST:PORT; empty: none
  std::string ca_file;    // the CA the controller's certificate is checked against
  std::string cert_file;  // this node's client certificate, and its key
  std::string key_file;
  bool insecure = false;                     // plaintext (tests only)
  std::string node;                          // the node's name at Mizar-MP (binding:host_id)
  std::string state_dir = kDefaultStateDir;  // the plugin's attachment records
  // How often the records are looked at (a stat per network when nothing changed); a change is
  // published at the next look, and the whole set again before a third of the lease is left.
  std::chrono::milliseconds interval{1000};

  // INVALID_ARGUMENT naming the first bad key: publishTo (tcp://HOST:PORT), hostId,
  // publishIntervalMs, and the three TLS files unless insecure. The configuration and
  // Publisher::Create both call it.
  Status Validate() const;
};

}  // namespace mizarmp::fence
