// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp.v1.FenceAdmin (proto/mizarmp/fence_admin.proto): the operator's questions to the
// controller that CSI-Addons has no RPC for, what a fence would cut off (mizarmpctl fence
// --dry-run), the fence audit (mizarmpctl audit) and which nodes enforce the fence set
// (mizarmpctl nodes). It converts between the protos and
// FenceService, which answers them from its store, index and audit.
#pragma once

#include <string>

#include "addons/service.h"
#include "fence/service/fence_service.h"
#include "mizarmp/fence_admin.grpc.pb.h"

namespace mizarmp::fence {

// ListAudit's limit when the request gives none.
inline constexpr size_t kDefaultAuditLimit = 50;

class FenceAdminService final : public ::mizarmp::v1::FenceAdmin::Service,
                                public addons::AddonsService {
 public:
  // `fences` must outlive this service.
  explicit FenceAdminService(FenceService& fences) : fences_(fences) {}

  grpc::Service* grpc_service() override { return this; }
  // "mizarmp.v1.FenceAdmin".
  std::string health_name() const override;
  // None: this is mizarmp's own API, not a CSI-Addons capability.
  std::vector<identity::Capability> capabilities() const override { return {}; }

  grpc::Status PreviewFence(grpc::ServerContext* context,
                            const ::mizarmp::v1::PreviewFenceRequest* request,
                            ::mizarmp::v1::PreviewFenceResponse* response) override;
  grpc::Status ListAudit(grpc::ServerContext* context,
                         const ::mizarmp::v1::ListAuditRequest* request,
                         ::mizarmp::v1::ListAuditResponse* response) override;
  grpc::Status ListNodes(grpc::ServerContext* context,
                         const ::mizarmp::v1::ListNodesRequest* request,
                         ::mizarmp::v1::ListNodesResponse* response) override;

 private:
  FenceService& fences_;
};

}  // namespace mizarmp::fence
