// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What GetFenceClients answers, shared by the controller's FenceService (every node) and the
// node's NodeFenceClients (its own node): the addresses behind each node, gathered per host id
// and merged into the fewest CIDRs covering exactly them.
//
// Sources here: the plugin's attachment records under the state dir (a record without a host id
// counts for the configured host id), and the configured node addresses (a CIDR without host
// bits stands for the whole block, an address with host bits such as "10.0.0.5/24" for the
// address alone). The controller adds Mizar-MP's port list (fence_queries.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"
#include "fence/fence.pb.h"
#include "records/cache.h"

namespace mizarmp::fence {

// The GetFenceClients parameter that narrows the answer to one node.
inline constexpr const char* kHostIdParameter = "hostId";

// One node's addresses as GetFenceClients answers them.
struct FenceClient {
  std::string id;
  std::vector<Cidr> addresses;  // merged
};

using NodeAddresses = std::map<std::string, std::vector<Cidr>>;  // host id -> addresses

// The node a request asks for (its "hostId" parameter), empty for every node. Other parameters
// are ignored. INVALID_ARGUMENT naming the parameter when it is present but empty.
Result<std::string> AskedNode(const google::protobuf::Map<std::string, std::string>& parameters);

// The host CIDR (/32 or /128) of an address.
Cidr HostCidr(const IpAddress& ip);

// Whether an answer for `only` (empty: every node) includes `host`.
bool Wanted(const std::string& only, const std::string& host);

class FenceClientSources {
 public:
  FenceClientSources(std::string state_dir, std::string host_id,
                     std::map<std::string, std::vector<std::string>> node_addresses);

  // The records' addresses of `only` (empty: every node). UNAVAILABLE naming the state dir when
  // the records cannot be read.
  Status AddRecorded(const std::string& only, NodeAddresses& by_node);
  // The configured addresses of `only` (empty: every node); validated with the configuration.
  void AddConfigured(const std::string& only, NodeAddresses& by_node) const;

  const std::string& host_id() const { return host_id_; }

 private:
  std::string state_dir_;
  std::string host_id_;
  std::map<std::string, std::vector<std::string>> node_addresses_;
  records::RecordCache records_{state_dir_};
};

// One FenceClient per node that has an address (ClientDetails.addresses is required), merged.
std::vector<FenceClient> MergedClients(const NodeAddresses& by_node);

// The answer's wire form: canonical CIDRs.
void FillResponse(const std::vector<FenceClient>& clients,
                  ::fence::GetFenceClientsResponse* response);

}  // namespace mizarmp::fence
