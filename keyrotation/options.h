// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The EncryptionKeyRotationController's options: what mizarmp-addons' configuration sets for
// key rotation in node mode. The server's config (cmd/mizarmp-addons) composes this struct.
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace mizarmp::keyrotation {

inline constexpr const char* kDefaultKeyStoreDir = "/var/lib/mizarmp/keys";
inline constexpr const char* kDefaultMountTable = "/proc/self/mountinfo";
inline constexpr const char* kDefaultKubeletDir = "/var/lib/kubelet";

struct KeyRotationOptions {
  std::string key_store_dir = kDefaultKeyStoreDir;  // 0700, one 0600 file per volume
  std::string mount_table = kDefaultMountTable;     // filesystem volumes resolve through it
  // Requests without volume_path (the CSI-Addons sidecar's) find the volume where kubelet staged
  // it under kubelet_dir for the CSI driver `driver_name` (keyrotation/kubelet.h); empty
  // driver_name: not searched. The server's config gives it its own driver name.
  std::string kubelet_dir = kDefaultKubeletDir;
  std::string driver_name;
  std::map<std::string, std::string> expected_secrets;  // never logged

  // INVALID_ARGUMENT naming the configuration key (kubeletDir) for options
  // NodeKeyRotation::Create() would misuse; the configuration check asks the same.
  Status Validate() const;
};

}  // namespace mizarmp::keyrotation
