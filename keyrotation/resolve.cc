// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/resolve.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"
#include "keyrotation/luks.h"

namespace mizarmp::keyrotation {

namespace {

// Mount tables escape space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() + 1) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && oct.find_first_not_of("01234567") == std::string::npos) {
        out.push_back(static_cast<char>(std::strtol(oct.c_str(), nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string f;
  while (in >> f) out.push_back(f);
  return out;
}

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Result<std::string> MountSource(const std::string& mount_point, const std::string& mount_table) {
  auto text = ReadFile(mount_table);
  if (!text.ok()) return text.status().WithContext("mount table " + Quoted(mount_table));
  const std::string want = Canonical(mount_point);
  std::string found;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    const auto f = Fields(line);
    std::string point, source;
    // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash != 0 && f.size() >= dash + 3) {
      point = UnescapeMountField(f[4]);
      source = UnescapeMountField(f[dash + 2]);
    } else if (f.size() >= 2 && !f[0].empty() && f[0][0] != '#') {
      // /proc/mounts, fstab-like: SOURCE MOUNTPOINT FSTYPE OPTS DUMP PASS
      source = UnescapeMountField(f[0]);
      point = UnescapeMountField(f[1]);
    } else {
      continue;
    }
    if (point == want || point == mount_point) found = source;
  }
  if (found.empty()) {
    return NotFoundError("nothing is mounted on " + Quoted(mount_point) + " (mount table " +
                         Quoted(mount_table) + ")");
  }
  return found;
}

namespace {

// /sys/block/<name> of a device node (symlinks such as /dev/mapper/NAME -> ../dm-N followed).
std::string SysDirOf(const std::string& device, const ResolveOptions& options) {
  return options.sys_block_dir + "/" + BaseName(Canonical(device));
}

// Whether the device-mapper device behind `sys_dir` is a dm-crypt mapping: its dm UUID starts
// with "CRYPT-" (cryptsetup's convention; LVM's start with "LVM-").
bool IsCryptLayer(const std::string& sys_dir) {
  auto uuid = ReadFile(sys_dir + "/dm/uuid");
  return uuid.ok() && Trim(*uuid).starts_with("CRYPT-");
}

// The one device under the device-mapper device `device` (its /sys slaves); nullopt when it is
// not device-mapper. FAILED_PRECONDITION when it has none or several.
Result<std::optional<std::string>> SlaveOf(const std::string& device, const std::string& sys_dir,
                                           const ResolveOptions& options) {
  const std::string slaves_dir = sys_dir + "/slaves";
  if (!IsDir(slaves_dir)) return std::optional<std::string>();
  MZ_ASSIGN_OR_RETURN(auto slaves, ListDir(slaves_dir));
  if (slaves.empty()) {
    return FailedPreconditionError("device-mapper device " + Quoted(device) +
                                   " has no underlying device (" + slaves_dir + ")");
  }
  if (slaves.size() > 1) {
    return FailedPreconditionError("device-mapper device " + Quoted(device) + " spans " +
                                   std::to_string(slaves.size()) +
                                   " devices; cannot tell which holds the LUKS header");
  }
  return std::optional<std::string>(options.dev_dir + "/" + slaves.front());
}

// The device under the dm-crypt mapping `device`: the one holding its LUKS header.
Result<std::string> UnderCryptLayer(const std::string& device, const std::string& sys_dir,
                                    const ResolveOptions& options) {
  const std::string mapper_prefix = options.dev_dir + "/mapper/";
  if (device.starts_with(mapper_prefix)) {
    auto under = CryptMappingDevice(device.substr(mapper_prefix.size()));
    if (under.ok()) return *under;
    MZ_LOG(kDebug) << under.status().message() << "; following /sys instead";
  }
  MZ_ASSIGN_OR_RETURN(std::optional<std::string> slave, SlaveOf(device, sys_dir, options));
  if (!slave) return FailedPreconditionError(Quoted(device) + ": dm-crypt mapping without slaves");
  return *slave;
}

}  // namespace

Result<std::string> DeviceUnderMapper(const std::string& device, const ResolveOptions& options) {
  // Down the device-mapper stack to the crypt layer: a filesystem on LVM on LUKS (linear LV ->
  // crypt -> disk) or on LUKS on LVM (crypt -> linear LV -> disk), or a LUKS header on an LV
  // given as the device itself. The device under the first crypt layer holds the header; a
  // device that carries a LUKS header is the answer itself.
  std::string current = device;
  for (int depth = 0; depth < 8; ++depth) {
    const std::string sys_dir = SysDirOf(current, options);
    if (IsCryptLayer(sys_dir)) return UnderCryptLayer(current, sys_dir, options);
    if (PeekLuksUuid(current)) return current;
    MZ_ASSIGN_OR_RETURN(std::optional<std::string> slave, SlaveOf(current, sys_dir, options));
    if (!slave) {
      // Not device-mapper by /sys; a crypt mapping /sys does not describe still names its
      // backing device.
      if (current.starts_with(options.dev_dir + "/mapper/")) {
        return UnderCryptLayer(current, sys_dir, options);
      }
      return current;  // the device itself
    }
    current = *slave;
  }
  return FailedPreconditionError("device-mapper stack under " + Quoted(device) + " is too deep");
}

std::string KernelDeviceNode(const std::string& path, const ResolveOptions& options) {
  if (Canonical(path).starts_with(Canonical(options.dev_dir) + "/")) return path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return path;
  const std::string link = options.sys_dev_block_dir + "/" + std::to_string(major(st.st_rdev)) +
                           ":" + std::to_string(minor(st.st_rdev));
  char target[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return path;
  const std::string name = BaseName(std::string(target, static_cast<size_t>(n)));
  if (name.empty() || name == "." || name == "..") return path;
  const std::string node = options.dev_dir + "/" + name;
  struct stat node_st {};
  if (::stat(node.c_str(), &node_st) != 0 || !S_ISBLK(node_st.st_mode) ||
      node_st.st_rdev != st.st_rdev) {
    return path;
  }
  MZ_LOG(kDebug) << Quoted(path) << " is the block device " << node;
  return node;
}

Result<std::string> ResolveLuksDevice(const std::string& volume_path, AccessType access,
                                      const ResolveOptions& options) {
  if (volume_path.empty()) return InvalidArgumentError("volume_path: empty");
  struct stat st {};
  if (::stat(volume_path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      return NotFoundError("volume_path " + Quoted(volume_path) + " does not exist");
    }
    return ErrnoError("volume_path " + Quoted(volume_path), e);
  }
  if (S_ISDIR(st.st_mode)) {
    if (access == AccessType::kBlock) {
      return InvalidArgumentError("volume_path " + Quoted(volume_path) +
                                  " is a directory but volume_capability says block access");
    }
    MZ_ASSIGN_OR_RETURN(auto source, MountSource(volume_path, options.mount_table));
    return DeviceUnderMapper(source, options);
  }
  if (access == AccessType::kMount) {
    return InvalidArgumentError("volume_path " + Quoted(volume_path) +
                                " is not a directory but volume_capability says mount access");
  }
  if (S_ISBLK(st.st_mode)) {
    return DeviceUnderMapper(KernelDeviceNode(volume_path, options), options);
  }
  return volume_path;
}

}  // namespace mizarmp::keyrotation
