// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/options.h"

#include "common/strings.h"

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

}  // namespace mizarmp::fence
