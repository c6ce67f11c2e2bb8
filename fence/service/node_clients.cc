// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/node_clients.h"

#include "addons/grpc_status.h"
#include "addons/secrets.h"
#include "common/log.h"

namespace mizarmp::fence {
namespace {

grpc::Status ServedByTheController(const char* rpc) {
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      std::string(rpc) +
                          " is served by mizarmp-addons in controller mode; this one runs in "
                          "node mode and serves GetFenceClients for its node only");
}

}  // namespace

NodeFenceClients::NodeFenceClients(const FenceOptions& options)
    : expected_secrets_(options.expected_secrets),
      sources_(options.state_dir, options.host_id, options.node_addresses) {}

std::string NodeFenceClients::health_name() const {
  return ::fence::FenceController::service_full_name();
}

std::vector<identity::Capability> NodeFenceClients::capabilities() const {
  identity::Capability c;
  c.mutable_network_fence()->set_type(identity::Capability::NetworkFence::GET_CLIENTS_TO_FENCE);
  return {c};
}

Result<std::vector<FenceClient>> NodeFenceClients::OwnClients() {
  NodeAddresses every_host;
  MZ_RETURN_IF_ERROR(sources_.AddRecorded("", every_host));
  NodeAddresses own;
  std::vector<Cidr>& addresses = own[sources_.host_id()];
  for (auto& [host, cidrs] : every_host)
    addresses.insert(addresses.end(), cidrs.begin(), cidrs.end());
  sources_.AddConfigured(sources_.host_id(), own);
  return MergedClients(own);
}

grpc::Status NodeFenceClients::GetFenceClients(grpc::ServerContext*,
                                               const ::fence::GetFenceClientsRequest* request,
                                               ::fence::GetFenceClientsResponse* response) {
  if (Status s = addons::CheckSecrets(request->secrets(), expected_secrets_); !s.ok()) {
    MZ_LOG(kWarn) << "GetFenceClients refused: " << s.message();
    return addons::ToGrpcStatus(s);
  }
  auto only = AskedNode(request->parameters());
  if (!only.ok()) return addons::ToGrpcStatus(only.status());
  if (!Wanted(*only, sources_.host_id())) return grpc::Status::OK;
  auto clients = OwnClients();
  if (!clients.ok()) {
    MZ_LOG(kWarn) << "GetFenceClients: " << clients.status().ToString();
    return addons::ToGrpcStatus(clients.status());
  }
  FillResponse(*clients, response);
  return grpc::Status::OK;
}

grpc::Status NodeFenceClients::FenceClusterNetwork(grpc::ServerContext*,
                                                   const ::fence::FenceClusterNetworkRequest*,
                                                   ::fence::FenceClusterNetworkResponse*) {
  return ServedByTheController("FenceClusterNetwork");
}

grpc::Status NodeFenceClients::UnfenceClusterNetwork(grpc::ServerContext*,
                                                     const ::fence::UnfenceClusterNetworkRequest*,
                                                     ::fence::UnfenceClusterNetworkResponse*) {
  return ServedByTheController("UnfenceClusterNetwork");
}

grpc::Status NodeFenceClients::ListClusterFence(grpc::ServerContext*,
                                                const ::fence::ListClusterFenceRequest*,
                                                ::fence::ListClusterFenceResponse*) {
  return ServedByTheController("ListClusterFence");
}

}  // namespace mizarmp::fence
