// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/admin_service.h"

#include "addons/grpc_status.h"
#include "common/log.h"
#include "records/records.h"

namespace mizarmp::fence {

std::string FenceAdminService::health_name() const {
  return ::mizarmp::v1::FenceAdmin::service_full_name();
}

grpc::Status FenceAdminService::PreviewFence(grpc::ServerContext* /*context*/,
                                             const ::mizarmp::v1::PreviewFenceRequest* request,
                                             ::mizarmp::v1::PreviewFenceResponse* response) {
  auto found = fences_.PreviewFence(request->secrets(), request->cidrs());
  if (!found.ok()) {
    MZ_LOG(kWarn) << "PreviewFence: " << found.status().message();
    return addons::ToGrpcStatus(found.status());
  }
  for (const FenceService::PreviewedPort& p : *found) {
    ::mizarmp::v1::PreviewedPort* out = response->add_ports();
    out->set_port_id(p.port_id);
    for (const std::string& ip : p.ips) out->add_ips(ip);
    out->set_node(p.node);
    out->set_pod_namespace(p.pod_namespace);
    out->set_pod_name(p.pod_name);
    out->set_down(p.down);
  }
  return grpc::Status::OK;
}

grpc::Status FenceAdminService::ListAudit(grpc::ServerContext* /*context*/,
                                          const ::mizarmp::v1::ListAuditRequest* request,
                                          ::mizarmp::v1::ListAuditResponse* response) {
  if (request->limit() > kMaxAuditRead) {
    return addons::ToGrpcStatus(InvalidArgumentError("limit: " + std::to_string(request->limit()) +
                                                     " is more than " +
                                                     std::to_string(kMaxAuditRead) + " entries"));
  }
  const size_t limit = request->limit() == 0 ? kDefaultAuditLimit : request->limit();
  auto entries = fences_.ListAudit(request->secrets(), limit);
  if (!entries.ok()) {
    MZ_LOG(kWarn) << "ListAudit: " << entries.status().message();
    return addons::ToGrpcStatus(entries.status());
  }
  for (const AuditEntry& e : *entries) {
    ::mizarmp::v1::AuditEntry* out = response->add_entries();
    out->set_sequence(e.sequence);
    out->set_time(e.time);
    out->set_action(e.action);
    out->set_replica(e.replica);
    out->set_request_id(e.request_id);
    out->set_caller(e.caller);
    for (const std::string& c : e.cidrs) out->add_cidrs(c);
    for (const std::string& id : e.disabled) out->add_disabled_ports(id);
    for (const std::string& id : e.enabled) out->add_enabled_ports(id);
  }
  return grpc::Status::OK;
}

grpc::Status FenceAdminService::ListNodes(grpc::ServerContext* /*context*/,
                                          const ::mizarmp::v1::ListNodesRequest* request,
                                          ::mizarmp::v1::ListNodesResponse* response) {
  auto listed = fences_.ListNodes(request->secrets());
  if (!listed.ok()) {
    MZ_LOG(kWarn) << "ListNodes: " << listed.status().message();
    return addons::ToGrpcStatus(listed.status());
  }
  response->set_fence_set_digest(listed->standing);
  for (const FenceService::NodeEnforcement& n : listed->nodes) {
    ::mizarmp::v1::NodeEnforcement* out = response->add_nodes();
    out->set_node(n.publication.node);
    out->set_published_at(records::Rfc3339(n.publication.at));
    out->set_live(n.live);
    out->set_ports(n.publication.entries);
    out->set_fence_set_digest(n.publication.enforced);
    out->set_current(n.current);
  }
  return grpc::Status::OK;
}

}  // namespace mizarmp::fence
