// Finding the LUKS device behind a CSI volume_path on the node.
//
//   block volume       volume_path is the LUKS device (or an image file) itself
//   filesystem volume  volume_path is a mount point: the mount table gives the mounted device;
//                      when that is a device-mapper device (/dev/mapper/NAME, /dev/dm-N), the
//                      device underneath is taken from the active dm-crypt mapping
//                      (crypt_init_by_name) or from /sys/block/dm-N/slaves, level by level,
//                      until a device that is not device-mapper is reached.
// Whether the result is LUKS2 is checked by whoever opens it (LuksDevice::Open).
#pragma once

#include <string>

#include "common/status.h"
#include "keyrotation/options.h"

namespace mizarmp::keyrotation {

enum class AccessType { kUnspecified, kBlock, kMount };

struct ResolveOptions {
  // /proc/self/mountinfo format, or /proc/mounts (fstab-like) format.
  std::string mount_table = kDefaultMountTable;
  std::string sys_block_dir = "/sys/block";
  std::string dev_dir = "/dev";
};

// NOT_FOUND when volume_path does not exist or nothing is mounted on it; INVALID_ARGUMENT when
// the access type contradicts what the path is (a mount volume that is not a directory, a
// block volume that is a directory); FAILED_PRECONDITION when the device stack cannot be
// followed (e.g. a device-mapper device with several underlying devices).
Result<std::string> ResolveLuksDevice(const std::string& volume_path, AccessType access,
                                      const ResolveOptions& options);

// The device mounted on `mount_point` according to `mount_table` (the last mount wins, as
// later mounts shadow earlier ones). NOT_FOUND when nothing is mounted there.
Result<std::string> MountSource(const std::string& mount_point, const std::string& mount_table);

// Follows device-mapper from `device` down to the first device that is not device-mapper.
Result<std::string> DeviceUnderMapper(const std::string& device, const ResolveOptions& options);

}  // namespace mizarmp::keyrotation
