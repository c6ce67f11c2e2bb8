// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The FenceController of mizarmp-addons in node mode: GetFenceClients for this node only, the
// way a CSI-Addons node plugin reports the clients on its node (the CSI-Addons controller asks
// every CSIAddonsNode that advertises GET_CLIENTS_TO_FENCE, through that node's own sidecar, and
// stores the answer under that CSIAddonsNode: kubernetes-csi-addons
// internal/controller/csiaddons/csiaddonsnode_controller.go). The answer is one ClientDetails
// whose id is this node's host id: the addresses of the attachment records in this node's state
// dir (every record there is this node's, whatever host id the plugin wrote into it) and this
// node's configured addresses. A "hostId" parameter naming another node gives an empty list.
//
// Fencing changes Mizar-MP for the whole cluster, so Fence, Unfence and List are the
// controller's (controller mode): here they answer UNIMPLEMENTED saying so.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "addons/service.h"
#include "fence/fence.grpc.pb.h"
#include "fence/service/clients.h"
#include "fence/service/options.h"

namespace mizarmp::fence {

class NodeFenceClients final : public ::fence::FenceController::Service,
                               public addons::AddonsService {
 public:
  // Uses state_dir, host_id (must not be empty), node_addresses and expected_secrets.
  explicit NodeFenceClients(const FenceOptions& options);

  grpc::Service* grpc_service() override { return this; }
  std::string health_name() const override;  // "fence.FenceController"
  // GET_CLIENTS_TO_FENCE only.
  std::vector<identity::Capability> capabilities() const override;

  grpc::Status GetFenceClients(grpc::ServerContext* context,
                               const ::fence::GetFenceClientsRequest* request,
                               ::fence::GetFenceClientsResponse* response) override;
  grpc::Status FenceClusterNetwork(grpc::ServerContext* context,
                                   const ::fence::FenceClusterNetworkRequest* request,
                                   ::fence::FenceClusterNetworkResponse* response) override;
  grpc::Status UnfenceClusterNetwork(grpc::ServerContext* context,
                                     const ::fence::UnfenceClusterNetworkRequest* request,
                                     ::fence::UnfenceClusterNetworkResponse* response) override;
  grpc::Status ListClusterFence(grpc::ServerContext* context,
                                const ::fence::ListClusterFenceRequest* request,
                                ::fence::ListClusterFenceResponse* response) override;

 private:
  // This node's addresses; every record counts, so records are read for every host id.
  Result<std::vector<FenceClient>> OwnClients();

  std::map<std::string, std::string> expected_secrets_;  // never logged
  FenceClientSources sources_;
};

}  // namespace mizarmp::fence
