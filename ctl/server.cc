// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "ctl/server.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "common/fileutil.h"
#include "endpoint/endpoint.h"
#include "endpoint/secrets_file.h"
#include "fence/fence.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "mizarmp/fence_admin.grpc.pb.h"

namespace mizarmp::ctl {
namespace {

using google::protobuf::FieldDescriptor;
using Stub = ::fence::FenceController::Stub;
using AdminStub = ::mizarmp::v1::FenceAdmin::Stub;

// A gRPC failure as a Status (the codes are the same), naming the call.
Status Failed(const char* call, const grpc::Status& s) {
  return Status(static_cast<Code>(s.error_code()), std::string(call) + ": " + s.error_message());
}

// "network_fence:GET_CLIENTS_TO_FENCE": the capability's kind and its type.
std::string CapabilityName(const identity::Capability& c) {
  std::vector<const FieldDescriptor*> set;
  c.GetReflection()->ListFields(c, &set);
  if (set.empty()) return "unknown";
  const google::protobuf::Message& kind = c.GetReflection()->GetMessage(c, set[0]);
  const FieldDescriptor* type = kind.GetDescriptor()->FindFieldByName("type");
  std::string name = set[0]->name();
  if (type != nullptr && type->type() == FieldDescriptor::TYPE_ENUM) {
    name += ":" + kind.GetReflection()->GetEnum(kind, type)->name();
  }
  return name;
}

Result<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const ServerTarget& t,
                                                              const endpoint::Endpoint& ep) {
  const bool tls = !t.ca_file.empty() || !t.cert_file.empty();
  if (!tls) return grpc::InsecureChannelCredentials();
  if (ep.kind != endpoint::Endpoint::Kind::kTcp) {
    return InvalidArgumentError("--ca-file/--cert-file: TLS is only used with a tcp:// endpoint");
  }
  if (t.cert_file.empty() != t.key_file.empty()) {
    return InvalidArgumentError("--cert-file/--key-file: give both or neither");
  }
  grpc::SslCredentialsOptions options;
  if (!t.ca_file.empty()) {
    MZ_ASSIGN_OR_RETURN(options.pem_root_certs, ReadPemFile("--ca-file", t.ca_file));
  }
  if (!t.cert_file.empty()) {
    MZ_ASSIGN_OR_RETURN(options.pem_cert_chain, ReadPemFile("--cert-file", t.cert_file));
    MZ_ASSIGN_OR_RETURN(options.pem_private_key, ReadPemFile("--key-file", t.key_file));
  }
  return grpc::SslCredentials(options);
}

template <typename Request>
void AddSecrets(const std::map<std::string, std::string>& secrets, Request& request) {
  for (const auto& [key, value] : secrets) (*request.mutable_secrets())[key] = value;
}

template <typename Request>
void AddCidrs(const std::vector<std::string>& cidrs, Request& request) {
  for (const std::string& cidr : cidrs) request.add_cidrs()->set_cidr(cidr);
}

}  // namespace

Result<AddonsClient> AddonsClient::Connect(const ServerTarget& target) {
  auto ep = endpoint::ParseEndpoint(target.endpoint);
  if (!ep.ok()) return InvalidArgumentError("--endpoint: " + ep.status().message());
  MZ_ASSIGN_OR_RETURN(auto credentials, Credentials(target, *ep));
  AddonsClient client;
  if (!target.secrets_file.empty()) {
    auto secrets = endpoint::ReadSecretsFile(target.secrets_file);
    if (!secrets.ok()) return InvalidArgumentError("--secrets-file " + secrets.status().message());
    client.secrets_ = std::move(secrets).value();
  }
  client.channel_ = grpc::CreateChannel(ep->GrpcAddress(), credentials);
  client.timeout_ = target.timeout;
  client.endpoint_ = target.endpoint;
  return client;
}

Result<ServerInfo> AddonsClient::Info() {
  auto stub = identity::Identity::NewStub(channel_);
  ServerInfo info;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    identity::GetIdentityResponse resp;
    grpc::Status s = stub->GetIdentity(&ctx, {}, &resp);
    if (!s.ok()) return Failed("GetIdentity", s).WithContext(endpoint_);
    info.name = resp.name();
    info.vendor_version = resp.vendor_version();
    info.manifest.insert(resp.manifest().begin(), resp.manifest().end());
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    identity::GetCapabilitiesResponse resp;
    grpc::Status s = stub->GetCapabilities(&ctx, {}, &resp);
    if (!s.ok()) return Failed("GetCapabilities", s).WithContext(endpoint_);
    for (const auto& c : resp.capabilities()) info.capabilities.push_back(CapabilityName(c));
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  identity::ProbeResponse resp;
  grpc::Status s = stub->Probe(&ctx, {}, &resp);
  info.ready = s.ok() && (!resp.has_ready() || resp.ready().value());
  if (!s.ok()) {
    info.probe_error = Failed("Probe", s).ToString();
  } else if (!info.ready) {
    // The server's reason for ready=false (addons/identity.h), when it gave one.
    const auto& trailing = ctx.GetServerTrailingMetadata();
    if (auto why = trailing.find("mizarmp-not-ready"); why != trailing.end()) {
      info.probe_error.assign(why->second.data(), why->second.size());
    }
  }
  return info;
}

template <typename Response, typename Request, typename Method>
Result<Response> AddonsClient::FenceCall(const char* name, Method method, Request request) {
  return Call<::fence::FenceController::Stub, Response>(name, method, std::move(request));
}

// One call of a service whose requests carry the secrets, with the deadline; errors name the
// call and the server.
template <typename Stub, typename Response, typename Request, typename Method>
Result<Response> AddonsClient::Call(const char* name, Method method, Request request) {
  Stub stub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  AddSecrets(secrets_, request);
  Response response;
  grpc::Status s = (stub.*method)(&ctx, request, &response);
  if (!s.ok()) return Failed(name, s).WithContext(endpoint_);
  return response;
}

Result<std::vector<FenceClientInfo>> AddonsClient::FenceClients(const std::string& host_id) {
  ::fence::GetFenceClientsRequest req;
  if (!host_id.empty()) (*req.mutable_parameters())["hostId"] = host_id;
  MZ_ASSIGN_OR_RETURN(auto resp, FenceCall<::fence::GetFenceClientsResponse>(
                                     "GetFenceClients", &Stub::GetFenceClients, req));
  std::vector<FenceClientInfo> out;
  for (const auto& c : resp.clients()) {
    FenceClientInfo info{c.id(), {}};
    for (const auto& a : c.addresses()) info.cidrs.push_back(a.cidr());
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<std::string>> AddonsClient::Fences() {
  MZ_ASSIGN_OR_RETURN(auto resp, FenceCall<::fence::ListClusterFenceResponse>(
                                     "ListClusterFence", &Stub::ListClusterFence,
                                     ::fence::ListClusterFenceRequest()));
  std::vector<std::string> out;
  for (const auto& c : resp.cidrs()) out.push_back(c.cidr());
  return out;
}

Status AddonsClient::Fence(const std::vector<std::string>& cidrs) {
  ::fence::FenceClusterNetworkRequest req;
  AddCidrs(cidrs, req);
  return FenceCall<::fence::FenceClusterNetworkResponse>("FenceClusterNetwork",
                                                         &Stub::FenceClusterNetwork, req)
      .status();
}

Status AddonsClient::Unfence(const std::vector<std::string>& cidrs) {
  ::fence::UnfenceClusterNetworkRequest req;
  AddCidrs(cidrs, req);
  return FenceCall<::fence::UnfenceClusterNetworkResponse>("UnfenceClusterNetwork",
                                                           &Stub::UnfenceClusterNetwork, req)
      .status();
}

Result<std::vector<PreviewedPort>> AddonsClient::PreviewFence(
    const std::vector<std::string>& cidrs) {
  ::mizarmp::v1::PreviewFenceRequest req;
  AddCidrs(cidrs, req);
  MZ_ASSIGN_OR_RETURN(auto resp, (Call<AdminStub, ::mizarmp::v1::PreviewFenceResponse>(
                                     "PreviewFence", &AdminStub::PreviewFence, req)));
  std::vector<PreviewedPort> out;
  for (const auto& p : resp.ports()) {
    PreviewedPort port{p.port_id(), {p.ips().begin(), p.ips().end()}, p.node(), "", p.down()};
    if (!p.pod_name().empty()) port.pod = p.pod_namespace() + "/" + p.pod_name();
    out.push_back(std::move(port));
  }
  return out;
}

Result<std::vector<AuditRecord>> AddonsClient::Audit(uint32_t limit) {
  ::mizarmp::v1::ListAuditRequest req;
  req.set_limit(limit);
  MZ_ASSIGN_OR_RETURN(auto resp, (Call<AdminStub, ::mizarmp::v1::ListAuditResponse>(
                                     "ListAudit", &AdminStub::ListAudit, req)));
  std::vector<AuditRecord> out;
  for (const auto& e : resp.entries()) {
    out.push_back({e.sequence(),
                   e.time(),
                   e.action(),
                   e.replica(),
                   e.request_id(),
                   e.caller(),
                   {e.cidrs().begin(), e.cidrs().end()},
                   {e.disabled_ports().begin(), e.disabled_ports().end()},
                   {e.enabled_ports().begin(), e.enabled_ports().end()}});
  }
  return out;
}

Result<NodesInfo> AddonsClient::Nodes() {
  MZ_ASSIGN_OR_RETURN(auto resp, (Call<AdminStub, ::mizarmp::v1::ListNodesResponse>(
                                     "ListNodes", &AdminStub::ListNodes,
                                     ::mizarmp::v1::ListNodesRequest())));
  NodesInfo out{resp.fence_set_digest(), {}};
  for (const auto& n : resp.nodes()) {
    out.nodes.push_back({n.node(), n.published_at(), n.fence_set_digest(), n.live(), n.current(),
                         n.ports()});
  }
  return out;
}

}  // namespace mizarmp::ctl
