// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/publication_service.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>

#include "addons/grpc_status.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::fence {
namespace {

// A node name or port id: present, bounded, UTF-8 (it reaches logs and Mizar-MP's filters).
Status CheckName(const std::string& value, const std::string& field) {
  if (value.empty()) return InvalidArgumentError(field + " is empty");
  if (value.size() > kMaxPublishedNameBytes) {
    return InvalidArgumentError(field + " is longer than " +
                                std::to_string(kMaxPublishedNameBytes) + " bytes");
  }
  if (!IsValidUtf8(value)) return InvalidArgumentError(field + " is not UTF-8");
  return Status::Ok();
}

// "namespace/name" of the attachment's pod; "" when it names none. A name may come alone
// (podman's CNI backend passes K8S_POD_NAME without K8S_POD_NAMESPACE: Debian 12's podman 4.3,
// seen in the Alcor demo), a namespace never does, and a namespace holds no '/'.
Result<std::string> PublishedPod(const ::mizarmp::v1::Attachment& attachment,
                                 const std::string& field) {
  if (attachment.pod_namespace().empty() && attachment.pod_name().empty()) return std::string();
  if (!attachment.pod_namespace().empty()) {
    MZ_RETURN_IF_ERROR(CheckName(attachment.pod_namespace(), field + ".pod_namespace"));
  }
  MZ_RETURN_IF_ERROR(CheckName(attachment.pod_name(), field + ".pod_name"));
  if (attachment.pod_namespace().find('/') != std::string::npos) {
    return InvalidArgumentError(field + ".pod_namespace holds a '/'");
  }
  return attachment.pod_namespace() + "/" + attachment.pod_name();
}

// The fence set a node says it enforces: empty, or a digest as fence/fence_set.h makes them
// ("<count>-<16 hex digits>"), so what the index stores for it stays small and printable.
Status CheckEnforcedDigest(const std::string& digest) {
  constexpr size_t kMaxDigestBytes = 32;  // "65536-" and 16 digits, with room
  const bool shaped = digest.size() <= kMaxDigestBytes &&
                      digest.find_first_not_of("0123456789abcdef-") == std::string::npos;
  if (shaped) return Status::Ok();
  return InvalidArgumentError("fence_set_digest (\"" + LogEscaped(digest.substr(0, 40)) +
                              "\") is not a fence set's digest (<count>-<16 hex digits>)");
}

// What every call of a node agent checks, in order: its node's name, the digest it names and
// that its certificate speaks for that node.
Status CheckNodeCall(const grpc::ServerContext& context, const std::string& node,
                     const std::string& digest) {
  MZ_RETURN_IF_ERROR(CheckName(node, "node"));
  MZ_RETURN_IF_ERROR(CheckEnforcedDigest(digest));
  return CheckPublisherIdentity(context, node);
}

}  // namespace

Status CheckPublisherIdentity(const grpc::ServerContext& context, const std::string& node) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  const std::vector<grpc::string_ref> names =
      auth ? auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME) : std::vector<grpc::string_ref>{};
  const std::string wanted = LogEscaped(kNodeIdentityPrefix + node);
  if (names.empty()) {
    // The controller's own unix socket: 0600 in a 0700 directory, so the caller is the operator
    // of this server, who may write the index as it may write the store (DESIGN.md, "Security").
    if (context.peer().rfind("unix:", 0) == 0) return Status::Ok();
    return PermissionDeniedError("a publication for node " + LogEscaped(node) +
                                 " needs a client certificate whose CN is " + wanted);
  }
  const std::string caller(names.front().data(), names.front().size());
  if (caller == kNodeIdentityPrefix + node) return Status::Ok();
  return PermissionDeniedError("the client certificate " + LogEscaped(caller) +
                               " may not publish for node " + LogEscaped(node) + ": only " +
                               wanted + " may");
}

Result<std::vector<AddressedPort>> PublishedPorts(const ::mizarmp::v1::PublishRequest& request) {
  MZ_RETURN_IF_ERROR(CheckName(request.node(), "node"));
  if (request.attachments_size() > kMaxPublishedAttachments) {
    return InvalidArgumentError("attachments: " + std::to_string(request.attachments_size()) +
                                " is more than the " + std::to_string(kMaxPublishedAttachments) +
                                " one node may publish");
  }
  std::vector<AddressedPort> ports;
  ports.reserve(static_cast<size_t>(request.attachments_size()));
  for (int i = 0; i < request.attachments_size(); ++i) {
    const auto& attachment = request.attachments(i);
    const std::string field = "attachments[" + std::to_string(i) + "]";
    MZ_RETURN_IF_ERROR(CheckName(attachment.port_id(), field + ".port_id"));
    MZ_ASSIGN_OR_RETURN(const std::string pod, PublishedPod(attachment, field));
    if (attachment.ips_size() > kMaxAddressesPerAttachment) {
      return InvalidArgumentError(field + ".ips: more than " +
                                  std::to_string(kMaxAddressesPerAttachment) + " addresses");
    }
    for (int j = 0; j < attachment.ips_size(); ++j) {
      auto ip = IpAddress::Parse(attachment.ips(j));
      if (!ip.ok()) {
        return InvalidArgumentError(field + ".ips[" + std::to_string(j) + "] (\"" +
                                    LogEscaped(attachment.ips(j)) + "\") is not an IP address");
      }
      ports.push_back({*ip, attachment.port_id(), pod});
    }
  }
  return ports;
}

std::string PublicationService::health_name() const {
  return ::mizarmp::v1::PortIndex::service_full_name();
}

grpc::Status PublicationService::Publish(grpc::ServerContext* context,
                                         const ::mizarmp::v1::PublishRequest* request,
                                         ::mizarmp::v1::PublishResponse* response) {
  auto ports = PublishedPorts(*request);
  const Status allowed = ports.ok() ? CheckNodeCall(*context, request->node(),
                                                    request->fence_set_digest())
                                    : ports.status();
  if (!allowed.ok()) {
    MZ_LOG(kWarn) << "Publish refused: " << allowed.message();
    return addons::ToGrpcStatus(allowed);
  }
  auto answer = fences_.Publish(request->node(), *ports, request->fence_set_digest());
  if (!answer.ok()) {
    MZ_LOG(kWarn) << "Publish of node " << LogEscaped(request->node())
                  << " failed: " << answer.status().message();
    return addons::ToGrpcStatus(answer.status());
  }
  response->set_lease_seconds(static_cast<uint32_t>(answer->lease.count()));
  for (const std::string& id : answer->fenced_port_ids) response->add_fenced_port_ids(id);
  response->set_fence_set_digest(answer->fence_set.digest);
  if (request->fence_set_digest() != answer->fence_set.digest) {
    for (const Cidr& c : answer->fence_set.cidrs) response->add_fenced_cidrs(c.ToString());
  }
  return grpc::Status::OK;
}


grpc::Status PublicationService::WatchFenceSet(
    grpc::ServerContext* context, const ::mizarmp::v1::WatchFenceSetRequest* request,
    grpc::ServerWriter<::mizarmp::v1::FenceSetUpdate>* writer) {
  if (Status allowed = CheckNodeCall(*context, request->node(), request->fence_set_digest());
      !allowed.ok()) {
    MZ_LOG(kWarn) << "WatchFenceSet refused: " << allowed.message();
    return addons::ToGrpcStatus(allowed);
  }
  if (watches_.fetch_add(1) >= kMaxFenceSetWatches) {
    watches_.fetch_sub(1);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "WatchFenceSet: " + std::to_string(kMaxFenceSetWatches) +
                            " streams are open already; the node's publications carry the set");
  }
  struct Release {
    std::atomic<int>& n;
    ~Release() { n.fetch_sub(1); }
  } release{watches_};
  const Watched<FenceSet>& feed = fences_.fence_sets();
  std::string sent = request->fence_set_digest();
  bool sent_any = false;
  uint64_t seen = 0;
  for (;;) {
    const Watched<FenceSet>::Version latest = feed.WaitPast(seen, kWatchCancelPoll);
    if (feed.closed()) return grpc::Status::OK;  // the server drains; the node reconnects
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    if (latest.number == seen) continue;
    seen = latest.number;
    const std::string& digest = latest.value->digest;
    if (sent_any && digest == sent) continue;
    ::mizarmp::v1::FenceSetUpdate digest_only;
    digest_only.set_fence_set_digest(digest);
    const bool written = digest != sent ? writer->Write(*WholeUpdate(latest))
                                        : writer->Write(digest_only);
    if (!written) return grpc::Status(grpc::StatusCode::CANCELLED, "the node went away");
    sent = digest;
    sent_any = true;
  }
}

std::shared_ptr<const ::mizarmp::v1::FenceSetUpdate> PublicationService::WholeUpdate(
    const Watched<FenceSet>::Version& offered) {
  MutexLock lock(update_mu_);
  if (update_ == nullptr || update_version_ != offered.number) {
    auto update = std::make_shared<::mizarmp::v1::FenceSetUpdate>();
    update->set_fence_set_digest(offered.value->digest);
    for (const Cidr& c : offered.value->cidrs) update->add_fenced_cidrs(c.ToString());
    update_ = std::move(update);
    update_version_ = offered.number;
  }
  return update_;
}

grpc::Status PublicationService::Acknowledge(grpc::ServerContext* context,
                                             const ::mizarmp::v1::AcknowledgeRequest* request,
                                             ::mizarmp::v1::AcknowledgeResponse*) {
  Status s = CheckNodeCall(*context, request->node(), request->fence_set_digest());
  if (s.ok()) s = fences_.Acknowledge(request->node(), request->fence_set_digest());
  if (!s.ok()) {
    MZ_LOG(kWarn) << "Acknowledge refused: " << s.message();
    return addons::ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

}  // namespace mizarmp::fence
