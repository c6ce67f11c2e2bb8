// The FenceController's options: what mizarmp-addons' configuration sets for fencing. The
// server's config (cmd/mizarmp-addons) composes this struct; nothing here knows about flags or
// files.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "mizarmp-client/client.h"

namespace mizarmp::fence {

inline constexpr const char* kDefaultStateDir = "/var/lib/cni/mizarmp";
inline constexpr const char* kDefaultFenceStore = "/var/lib/mizarmp/fence.db";

struct FenceOptions {
  client::ClientConfig mizarmp;  // base_url, project, dialect, TLS, token file
  std::string state_dir = kDefaultStateDir;      // the plugin's attachment records
  std::string fence_store = kDefaultFenceStore;  // where the fence store keeps its state
  std::map<std::string, std::vector<std::string>> node_addresses;  // hostId -> addrs/CIDRs
  std::string host_id;  // this node; records without a host id count for it
  bool use_port_list = false;
  std::map<std::string, std::string> expected_secrets;  // never logged
  std::chrono::milliseconds reconcile_interval{10000};
};

}  // namespace mizarmp::fence
