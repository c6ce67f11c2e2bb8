// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/options.h"

#include "common/file_check.h"
#include "common/strings.h"
#include "endpoint/endpoint.h"

namespace mizarmp::fence {

Status FenceOptions::Validate() const {
  if (state_dir.empty() || state_dir[0] != '/') {
    return InvalidArgumentError("stateDir " + Quoted(state_dir) + ": must be an absolute path");
  }
  MZ_RETURN_IF_ERROR(
      ValidateFenceStore(fence_store, etcd, mizarmp.connect_timeout + mizarmp.request_timeout));
  if (!host_id.empty() && host_id.find_first_of(" \t\n/") != std::string::npos) {
    return InvalidArgumentError("hostId " + Quoted(host_id) + ": must not contain spaces or '/'");
  }
  if (reconcile_interval.count() <= 0) {
    return InvalidArgumentError("reconcileIntervalMs: must be > 0");
  }
  if (update_connections < 1 || update_connections > kMaxUpdateConnections) {
    return InvalidArgumentError("updateConnections: " + std::to_string(update_connections) +
                                " is out of range (1.." + std::to_string(kMaxUpdateConnections) +
                                ")");
  }
  return Status::Ok();
}

Status PublisherOptions::Validate() const {
  auto endpoint = endpoint::ParseEndpoint(target);
  if (!endpoint.ok() || endpoint->kind != endpoint::Endpoint::Kind::kTcp) {
    return InvalidArgumentError("publishTo " + Quoted(target) +
                                ": must be tcp://HOST:PORT (the controller's "
                                "publicationEndpoint)");
  }
  if (node.empty()) {
    return InvalidArgumentError("hostId: a node agent that publishes must know its node's name");
  }
  if (interval.count() <= 0) return InvalidArgumentError("publishIntervalMs: must be > 0");
  if (insecure) return Status::Ok();
  if (ca_file.empty() || cert_file.empty() || key_file.empty()) {
    return InvalidArgumentError(
        "publishCaFile, publishCertFile and publishKeyFile: all three are needed to publish to " +
        target + " (the controller authenticates node agents by client certificate)");
  }
  MZ_RETURN_IF_ERROR(CheckReadableFile("publishCaFile", ca_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("publishCertFile", cert_file));
  return CheckReadableFile("publishKeyFile", key_file);
}

}  // namespace mizarmp::fence
