// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/options.h"

#include "common/strings.h"

namespace mizarmp::keyrotation {

Status KeyRotationOptions::Validate() const {
  // A relative kubelet root would be searched from wherever the server was started.
  if (kubelet_dir.empty() || kubelet_dir[0] != '/') {
    return InvalidArgumentError("kubeletDir " + Quoted(kubelet_dir) + ": must be an absolute path");
  }
  return Status::Ok();
}

}  // namespace mizarmp::keyrotation
