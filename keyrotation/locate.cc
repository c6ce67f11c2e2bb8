// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/locate.h"

#include <sys/stat.h>

#include <set>
#include <utility>
#include <vector>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::keyrotation {

namespace {

// What makes two paths one device: the device number for a block device, the inode for a file.
using Identity = std::pair<dev_t, ino_t>;

std::optional<Identity> IdentityOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (S_ISBLK(st.st_mode)) return Identity{st.st_rdev, 0};
  if (S_ISREG(st.st_mode)) return Identity{st.st_dev, st.st_ino};
  return std::nullopt;
}

// `path` opened when it is a LUKS2 device whose header has `uuid`; nullopt otherwise.
std::optional<LuksDevice> OpenIfUuid(const std::string& path, const std::string& uuid) {
  if (!IdentityOf(path) || PeekLuksUuid(path) != uuid) return std::nullopt;
  auto luks = LuksDevice::Open(path);
  if (!luks.ok() || luks->Uuid() != uuid) return std::nullopt;
  return std::move(*luks);
}

// The devices in `dirs` whose header has `uuid`, one path per device.
std::vector<std::string> ScanForUuid(const std::vector<std::string>& dirs,
                                     const std::string& uuid) {
  std::vector<std::string> found;
  std::set<Identity> seen;
  std::set<std::string> scanned;
  for (const std::string& dir : dirs) {
    if (!scanned.insert(dir).second) continue;
    auto names = ListDir(dir);
    if (!names.ok()) continue;  // a missing directory holds no candidate
    for (const std::string& name : *names) {
      const std::string path = dir + "/" + name;
      const std::optional<Identity> id = IdentityOf(path);
      if (!id || seen.count(*id) != 0 || PeekLuksUuid(path) != uuid) continue;
      seen.insert(*id);
      found.push_back(path);
    }
  }
  return found;
}

}  // namespace

Result<LuksDevice> OpenLuksByUuid(const std::string& uuid, const std::string& recorded_path,
                                  const ResolveOptions& options) {
  if (uuid.empty()) return InvalidArgumentError("LUKS UUID: empty");
  if (!recorded_path.empty()) {
    if (auto luks = OpenIfUuid(recorded_path, uuid)) return std::move(*luks);
  }
  if (auto luks = OpenIfUuid(options.dev_dir + "/disk/by-uuid/" + uuid, uuid)) {
    return std::move(*luks);
  }
  std::vector<std::string> dirs;
  if (!recorded_path.empty()) dirs.push_back(DirName(recorded_path));
  dirs.push_back(options.dev_dir);
  const std::vector<std::string> found = ScanForUuid(dirs, uuid);
  if (found.empty()) {
    return NotFoundError("no LUKS device with UUID " + Quoted(uuid) + " (recorded at " +
                         Quoted(recorded_path) + "; searched " + Joined(dirs, ", ") + " and " +
                         options.dev_dir + "/disk/by-uuid)");
  }
  if (found.size() > 1) {
    return FailedPreconditionError("several devices carry the LUKS UUID " + Quoted(uuid) + " (" +
                                   Joined(found, ", ") + "); refusing to guess which one to use");
  }
  auto luks = LuksDevice::Open(found.front());
  if (!luks.ok()) return luks.status();
  if (luks->Uuid() != uuid) {
    return FailedPreconditionError(Quoted(found.front()) + " changed while it was examined");
  }
  MZ_LOG(kInfo) << "LUKS UUID " << uuid << " found at " << found.front() << " (recorded at "
                << recorded_path << ")";
  return std::move(*luks);
}

}  // namespace mizarmp::keyrotation
