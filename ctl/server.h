// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmpctl's side of the mizarmp-addons socket: a gRPC client of Identity and the
// FenceController, for what the csi-addons CLI does not offer (GetFenceClients,
// ListClusterFence) and for a quick look at what a server runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace mizarmp::ctl {

struct ServerTarget {
  std::string endpoint;   // unix:///path or tcp://HOST:PORT, as the server's "endpoint"
  std::string ca_file;    // tcp:// with TLS: the server certificate's CA
  std::string cert_file;  // and a client certificate, when the server asks for one
  std::string key_file;
  std::string secrets_file;  // secrets every request carries (the server's secretsFile)
  std::chrono::seconds timeout{30};
};

struct ServerInfo {
  std::string name;  // the driver name
  std::string vendor_version;
  std::map<std::string, std::string> manifest;
  std::vector<std::string> capabilities;  // "service:CONTROLLER_SERVICE", "network_fence:..."
  bool ready = false;
  // Why Probe did not answer ready: its error, or the reason the server gave for ready=false.
  std::string probe_error;
};

// A port a fence would cut off (mizarmp.v1.FenceAdmin/PreviewFence).
struct PreviewedPort {
  std::string port_id;
  std::vector<std::string> ips;
  std::string node;
  std::string pod;  // "namespace/name"; empty when unknown
  bool down = false;
};

// One entry of the fence audit (mizarmp.v1.FenceAdmin/ListAudit).
struct AuditRecord {
  uint64_t sequence = 0;
  std::string time, action, replica, request_id, caller;
  std::vector<std::string> cidrs, disabled, enabled;
};

// A node publishing to the controller and the fence set it enforces
// (mizarmp.v1.FenceAdmin/ListNodes).
struct NodeInfo {
  std::string node, published_at, enforced;
  bool live = false, current = false;
  uint64_t ports = 0;
};
struct NodesInfo {
  std::string standing;  // the digest of the set the controller offers
  std::vector<NodeInfo> nodes;
};

struct FenceClientInfo {
  std::string id;
  std::vector<std::string> cidrs;
};

class AddonsClient {
 public:
  // INVALID_ARGUMENT naming the flag for a bad endpoint, an unreadable file or a TLS file
  // without tcp://. Does not connect yet.
  static Result<AddonsClient> Connect(const ServerTarget& target);

  // GetIdentity, GetCapabilities and Probe. A failed Probe is reported in the answer; a failed
  // GetIdentity is the error (the server is not there).
  Result<ServerInfo> Info();
  Result<std::vector<FenceClientInfo>> FenceClients(const std::string& host_id);
  Result<std::vector<std::string>> Fences();
  Status Fence(const std::vector<std::string>& cidrs);
  Status Unfence(const std::vector<std::string>& cidrs);
  // The controller's FenceAdmin: what a fence of `cidrs` would cut off, and the audit's newest
  // `limit` entries (0: the server's default).
  Result<std::vector<PreviewedPort>> PreviewFence(const std::vector<std::string>& cidrs);
  Result<std::vector<AuditRecord>> Audit(uint32_t limit);
  // Which nodes enforce the standing fence set.
  Result<NodesInfo> Nodes();

 private:
  AddonsClient() = default;
  // One FenceController call with the deadline and the secrets; errors name it and the server.
  template <typename Response, typename Request, typename Method>
  Result<Response> FenceCall(const char* name, Method method, Request request);
  template <typename Stub, typename Response, typename Request, typename Method>
  Result<Response> Call(const char* name, Method method, Request request);

  std::shared_ptr<grpc::Channel> channel_;
  std::map<std::string, std::string> secrets_;
  std::chrono::seconds timeout_{30};
  std::string endpoint_;
};

}  // namespace mizarmp::ctl
