// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The controller's side of the port index's publication: the gRPC service mizarmp.v1.PortIndex
// (proto/mizarmp/port_index.proto) that node agents (fence/service/publisher.h) call with their node's
// attachments, to keep the fence set stream open and to acknowledge each set they enforce. It
// checks every field of a request, which comes from the network, and hands the call to
// FenceService (Publish, fence_sets(), Acknowledge), which owns the index.
//
// It is served on every endpoint of the controller's server; node agents reach it on the
// publication endpoint (a tcp:// listener that authenticates them by client certificate, each
// of which may publish for its own node only: CheckPublisherIdentity).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "addons/service.h"
#include "fence/service/fence_service.h"
#include "mizarmp/port_index.grpc.pb.h"

namespace mizarmp::fence {

// Bounds of one publication: a node carries at most this many attachments, each with at most
// kMaxAddressesPerAttachment addresses (a pod has one per family), and names of at most
// kMaxPublishedNameBytes bytes (a Kubernetes node name is at most 253).
inline constexpr int kMaxPublishedAttachments = 100000;
inline constexpr int kMaxAddressesPerAttachment = 16;
inline constexpr size_t kMaxPublishedNameBytes = 253;

// A node agent's client certificate names its node as Kubernetes names a kubelet's: its subject
// CN is "system:node:<name>" (kubernetes pkg/auth/nodeidentifier/default.go), so a kubelet's
// client certificate can serve, and no node can publish for another (as NodeRestriction keeps a
// kubelet to its own Node object).
inline constexpr const char* kNodeIdentityPrefix = "system:node:";

// One stream per node agent: room for the largest clusters Kubernetes supports (5,000 nodes).
inline constexpr int kMaxFenceSetWatches = 8192;
inline constexpr std::chrono::milliseconds kWatchCancelPoll{1000};

// OK when the caller may publish for `node`: its certificate's CN is kNodeIdentityPrefix + node,
// or it has no certificate and came in on the server's own unix socket (its operator).
// PERMISSION_DENIED naming both names otherwise.
Status CheckPublisherIdentity(const grpc::ServerContext& context, const std::string& node);

// The request as the index takes it: every address of every attachment, or INVALID_ARGUMENT
// naming the field (`attachments[3].ips[1]`) and what is wrong with it.
Result<std::vector<AddressedPort>> PublishedPorts(const ::mizarmp::v1::PublishRequest& request);

class PublicationService final : public ::mizarmp::v1::PortIndex::Service,
                                 public addons::AddonsService {
 public:
  // `fences` owns the index; it must outlive this service.
  explicit PublicationService(FenceService& fences) : fences_(fences) {}

  grpc::Service* grpc_service() override { return this; }
  // "mizarmp.v1.PortIndex".
  std::string health_name() const override;
  // None: this is mizarmp's own API, not a CSI-Addons capability.
  std::vector<identity::Capability> capabilities() const override { return {}; }

  grpc::Status Publish(grpc::ServerContext* context, const ::mizarmp::v1::PublishRequest* request,
                       ::mizarmp::v1::PublishResponse* response) override;
  // The standing set at once (its CIDRs only when the request named another digest), then
  // each new one, until the client cancels or the server drains (EndStreams). A sync handler
  // holds a server thread and hears of a cancel only by looking, every kWatchCancelPoll; at most
  // kMaxFenceSetWatches are open at once (RESOURCE_EXHAUSTED beyond: the node publishes on, and
  // its publications carry the set).
  grpc::Status WatchFenceSet(grpc::ServerContext* context,
                             const ::mizarmp::v1::WatchFenceSetRequest* request,
                             grpc::ServerWriter<::mizarmp::v1::FenceSetUpdate>* writer) override;
  grpc::Status Acknowledge(grpc::ServerContext* context,
                           const ::mizarmp::v1::AcknowledgeRequest* request,
                           ::mizarmp::v1::AcknowledgeResponse* response) override;
  void EndStreams() override { fences_.EndFenceSetStreams(); }

 private:
  // The update carrying the whole set of `offered`, built once for every stream that sends it.
  std::shared_ptr<const ::mizarmp::v1::FenceSetUpdate> WholeUpdate(
      const Watched<FenceSet>::Version& offered) MZ_EXCLUDES(update_mu_);

  FenceService& fences_;
  std::atomic<int> watches_{0};
  Mutex update_mu_;
  uint64_t update_version_ MZ_GUARDED_BY(update_mu_) = 0;
  std::shared_ptr<const ::mizarmp::v1::FenceSetUpdate> update_ MZ_GUARDED_BY(update_mu_);
};

}  // namespace mizarmp::fence
