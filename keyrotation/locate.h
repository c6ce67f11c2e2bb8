// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Finding a LUKS device again by its header's UUID, after a reboot renamed it (/dev/sdb became
// /dev/sdc, /dev/dm-3 became /dev/dm-5) or an image file was moved: a device path recorded in
// the key store is only a hint; the UUID recorded beside it says which header it must be.
#pragma once

#include <string>

#include "common/status.h"
#include "keyrotation/luks.h"
#include "keyrotation/resolve.h"

namespace mizarmp::keyrotation {

// Opens the LUKS2 device whose header carries `uuid`, looking in this order:
//   1. `recorded_path`, when its header still has that UUID;
//   2. <dev_dir>/disk/by-uuid/<uuid> (udev's link);
//   3. the block devices and image files directly in recorded_path's directory and in dev_dir,
//      by reading their headers (no blkid); symlinks to one device count once.
// A device whose header has another UUID is never returned, even at the recorded path.
// NOT_FOUND naming the UUID when no device has it; FAILED_PRECONDITION naming the paths when
// several different devices have it (cloned headers: refusing to guess).
Result<LuksDevice> OpenLuksByUuid(const std::string& uuid, const std::string& recorded_path,
                                  const ResolveOptions& options);

}  // namespace mizarmp::keyrotation
