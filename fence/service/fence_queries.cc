// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// FenceService's answers that change nothing: GetFenceClients, ListClusterFence and the FenceAdmin
// queries, a fence's preview and the audit (fence/service/fence_service.h).
#include "fence/service/fence_service.h"

#include <utility>

#include "addons/grpc_status.h"
#include "common/log.h"
#include "common/strings.h"
#include "fence/port_finder.h"

namespace mizarmp::fence {
namespace {

using addons::ToGrpcStatus;

}  // namespace

Result<std::vector<FenceClient>> FenceService::FenceClients(const std::string& only) {
  NodeAddresses by_node;
  MZ_RETURN_IF_ERROR(client_sources_.AddRecorded(only, by_node));
  client_sources_.AddConfigured(only, by_node);
  if (options_.use_port_list) MZ_RETURN_IF_ERROR(AddPortListAddresses(only, by_node));
  return MergedClients(by_node);
}

// The Mizar-MP port list (the whole cluster).
Status FenceService::AddPortListAddresses(const std::string& only, NodeAddresses& by_node) const {
  MZ_ASSIGN_OR_RETURN(auto mp, NewClient());
  std::map<std::string, std::string> filters;
  if (!only.empty()) filters["binding:host_id"] = only;
  auto ports = mp->ListPorts(filters, kFencePortFields);
  if (!ports.ok()) {
    return DependencyError(ports.status(),
                           MizarMpName() + ": listing ports failed: " + ports.status().ToString());
  }
  if (!ports->unreadable.empty()) {
    MZ_LOG(kWarn) << "GetFenceClients: " << MizarMpName() << ": " << ports->unreadable.size()
                  << " entr(y/ies) of the port list could not be read; their addresses are "
                     "missing from the answer: "
                  << JoinedAtMost(ports->unreadable);
  }
  for (const auto& port : ports->ports) {
    // A port the network owns (a router's) is no node's client, and no fence's to cut.
    if (port.host_id.empty() || port.network_owned() || !Wanted(only, port.host_id)) continue;
    for (const auto& ip : PortIps(port)) by_node[port.host_id].push_back(HostCidr(ip));
  }
  return Status::Ok();
}

Result<std::vector<FenceService::PreviewedPort>> FenceService::PreviewFence(
    const Secrets& secrets, const google::protobuf::RepeatedPtrField<::fence::CIDR>& cidrs) {
  MZ_ASSIGN_OR_RETURN(const Admitted call, Admit("PreviewFence", secrets, &cidrs));
  // The CIDRs as the only fences: the ports a pass would plan on for them.
  StoreSnapshot as_fenced;
  for (const Cidr& cidr : call.cidrs.cidrs()) as_fenced.fences.push_back(FenceEntry{.cidr = cidr});
  MZ_ASSIGN_OR_RETURN(const PortListing listed,
                      FindPorts(as_fenced, call.port_index, Leases::kRecent, {}));
  if (!listed.ports.ok()) {
    return DependencyError(listed.ports.status(), MizarMpName() + ": finding the ports failed (" +
                                                      listed.ports.status().ToString() +
                                                      "); nothing was changed");
  }
  // The pods, as the nodes' agents published them: the index's entries inside the CIDRs.
  std::map<std::string, std::string> pods;
  if (call.port_index != nullptr) {
    MZ_ASSIGN_OR_RETURN(const std::vector<IndexedPort> indexed,
                        call.port_index->Inside(call.cidrs.cidrs()));
    for (const IndexedPort& entry : indexed) {
      if (!entry.pod.empty()) pods[entry.port_id] = entry.pod;
    }
  }
  std::vector<PreviewedPort> found;
  for (const client::Port& port : listed.ports->ports) {
    if (port.network_owned()) continue;  // a fence never touches these (fence/plan.h)
    PreviewedPort p{.port_id = port.id, .node = port.host_id, .down = !port.admin_state_up};
    for (const client::FixedIp& ip : port.fixed_ips) {
      auto address = IpAddress::Parse(ip.ip_address);
      if (address.ok() && call.cidrs.Contains(*address)) p.ips.push_back(ip.ip_address);
    }
    if (p.ips.empty()) continue;
    if (const auto pod = pods.find(port.id); pod != pods.end()) {
      const size_t slash = pod->second.find('/');
      p.pod_namespace = pod->second.substr(0, slash);
      p.pod_name = pod->second.substr(slash + 1);
    }
    found.push_back(std::move(p));
  }
  std::sort(found.begin(), found.end(),
            [](const PreviewedPort& a, const PreviewedPort& b) { return a.port_id < b.port_id; });
  return found;
}

Result<std::vector<AuditEntry>> FenceService::ListAudit(const Secrets& secrets, size_t limit) {
  MZ_ASSIGN_OR_RETURN(const Admitted call, Admit("ListAudit", secrets, nullptr));
  return call.audit->Recent(limit);
}

grpc::Status FenceService::ListClusterFence(grpc::ServerContext*,
                                            const ::fence::ListClusterFenceRequest* request,
                                            ::fence::ListClusterFenceResponse* response) {
  auto call = Admit("ListClusterFence", request->secrets(), nullptr);
  if (!call.ok()) return ToGrpcStatus(call.status());
  auto fences = call->store->ListFences();
  if (!fences.ok()) {
    NoteStoreError(fences.status());
    return ToGrpcStatus(fences.status());
  }
  for (const auto& e : *fences) response->add_cidrs()->set_cidr(CanonicalCidr(e.cidr));
  const size_t bytes = response->ByteSizeLong();
  if (bytes > kMaxListResponseBytes) {
    response->Clear();
    const Status s(Code::kResourceExhausted,
                   std::to_string(fences->size()) + " fences take " + std::to_string(bytes) +
                       " bytes, more than a default gRPC client's receive limit of " +
                       std::to_string(kMaxListResponseBytes) + " bytes (the store holds more " +
                       "than the limit of " + std::to_string(kMaxStoredFences) + " fences)");
    MZ_LOG(kWarn) << "ListClusterFence: " << s.message();
    return ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

grpc::Status FenceService::GetFenceClients(grpc::ServerContext*,
                                           const ::fence::GetFenceClientsRequest* request,
                                           ::fence::GetFenceClientsResponse* response) {
  if (Status s = Authenticate("GetFenceClients", request->secrets()); !s.ok()) {
    return ToGrpcStatus(s);
  }
  auto only = AskedNode(request->parameters());
  if (!only.ok()) return ToGrpcStatus(only.status());
  auto clients = FenceClients(*only);
  if (!clients.ok()) {
    MZ_LOG(kWarn) << "GetFenceClients: " << clients.status().ToString();
    return ToGrpcStatus(clients.status());
  }
  FillResponse(*clients, response);
  return grpc::Status::OK;
}

}  // namespace mizarmp::fence
