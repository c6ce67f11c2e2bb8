// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Finding the LUKS device behind a CSI volume_path on the node.
//
//   block volume       volume_path is the LUKS device (or an image file) itself; a device node
//                      outside dev_dir (one a CSI driver bound at kubelet's publish path) is
//                      taken by its kernel name (/sys/dev/block/MAJ:MIN), so the stack below
//                      is followed as for the node in /dev
//   filesystem volume  volume_path is a mount point: the mount table gives the mounted device;
//                      when that is a device-mapper device (/dev/mapper/NAME, /dev/dm-N), the
//                      stack is followed down to its dm-crypt layer (/sys/block/dm-N/dm/uuid
//                      "CRYPT-..."), whose device holds the header: the active mapping names it
//                      (crypt_init_by_name), else /sys/block/dm-N/slaves does. Other layers
//                      (LVM) are followed through their one slave, so a filesystem on LVM on
//                      LUKS and one on LUKS on LVM both resolve to the LUKS device; a device
//                      that carries a LUKS header itself (LUKS on an LV) is the answer.
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
  std::string sys_block_dir = "/sys/block";  // the sysfs tree /sys/block/dm-N/{dm/uuid,slaves}
  std::string sys_dev_block_dir = "/sys/dev/block";  // MAJ:MIN -> the device's sysfs directory
  std::string dev_dir = "/dev";
  // Where kubelet stages CSI volumes, and the CSI driver whose volumes are ours
  // (keyrotation/kubelet.h); an empty driver_name searches nothing there.
  std::string kubelet_dir = kDefaultKubeletDir;
  std::string driver_name;
};

// NOT_FOUND when volume_path does not exist or nothing is mounted on it; INVALID_ARGUMENT when
// the access type contradicts what the path is (a mount volume that is not a directory, a
// block volume that is a directory); FAILED_PRECONDITION when the device stack cannot be
// followed (e.g. a device-mapper device with several underlying devices).
Result<std::string> ResolveLuksDevice(const std::string& volume_path, AccessType access,
                                      const ResolveOptions& options);

// The node in dev_dir, under the kernel's name, of the block device at `path` when `path` lies
// outside dev_dir (its MAJ:MIN looked up in sys_dev_block_dir): a device node a CSI driver made
// or bound at a kubelet path has a name of its own, under which sys_block_dir knows nothing.
// `path` itself when it is in dev_dir, is no block device, or no node in dev_dir has its number.
std::string KernelDeviceNode(const std::string& path, const ResolveOptions& options);

// The device mounted on `mount_point` according to `mount_table` (the last mount wins, as
// later mounts shadow earlier ones). NOT_FOUND when nothing is mounted there.
Result<std::string> MountSource(const std::string& mount_point, const std::string& mount_table);

// Follows device-mapper from `device` down to the device holding the LUKS header (see the top),
// or to the first device that is not device-mapper. FAILED_PRECONDITION when a layer on the way
// has no or several underlying devices. sys_block_dir and dev_dir root the walk (tests: a fake
// /sys tree and device files).
Result<std::string> DeviceUnderMapper(const std::string& device, const ResolveOptions& options);

}  // namespace mizarmp::keyrotation
