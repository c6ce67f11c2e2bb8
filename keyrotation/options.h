// The EncryptionKeyRotationController's options: what mizarmp-addons' configuration sets for
// key rotation in node mode. The server's config (cmd/mizarmp-addons) composes this struct.
#pragma once

#include <map>
#include <string>

namespace mizarmp::keyrotation {

inline constexpr const char* kDefaultKeyStoreDir = "/var/lib/mizarmp/keys";
inline constexpr const char* kDefaultMountTable = "/proc/self/mountinfo";

struct KeyRotationOptions {
  std::string key_store_dir = kDefaultKeyStoreDir;  // 0700, one 0600 file per volume
  std::string mount_table = kDefaultMountTable;     // filesystem volumes resolve through it
  std::map<std::string, std::string> expected_secrets;  // never logged
};

}  // namespace mizarmp::keyrotation
