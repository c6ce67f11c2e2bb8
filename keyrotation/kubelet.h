// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Finding a CSI volume on the node from its volume_id alone, where kubelet staged it.
//
// The CSI-Addons sidecar's EncryptionKeyRotateRequest carries the PV's volumeHandle as
// volume_id, never a volume_path, and a volume_capability with an access mode only. So the node
// looks where kubelet puts a CSI volume (kubernetes pkg/volume/csi/csi_attacher.go
// makeDeviceMountPath, csi_block.go), with P = <kubelet_dir>/plugins/kubernetes.io/csi:
//
//   filesystem, Kubernetes >= 1.24  P/<driver>/<sha256 of volume_id, lower-case hex>/globalmount
//   filesystem, up to 1.23          P/pv/<PV name>/globalmount
//   block                           P/volumeDevices/publish/<PV name>/<pod UID> (NodePublish) and
//                                   P/volumeDevices/staging/<PV name>/ (NodeStage)
//
// kubelet writes which volume it staged there in a vol_data.json: beside globalmount, and for a
// block volume in P/volumeDevices/<PV name>/data/. A place is used only when its vol_data.json
// names this volume_id as "volumeHandle" and the configured driver as "driverName": first the
// hashed directory, then every P/pv/* and P/volumeDevices/*. The device is what
// ResolveLuksDevice finds there: a filesystem volume's mount source (down its device-mapper
// stack), or the block device (or LUKS image file) a driver bound at a publish or staging path.
//
// Every byte read is treated as hostile: a vol_data.json must be a regular file (no symlink, no
// FIFO) of at most kMaxVolumeDataBytes holding a JSON object with both strings; a directory is
// read up to kMaxDirEntries entries. A vol_data.json that fails this is never taken.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"
#include "keyrotation/resolve.h"

namespace mizarmp::keyrotation {

// Far beyond what kubelet writes (a few hundred bytes), far below what costs anything.
inline constexpr size_t kMaxVolumeDataBytes = 16 * 1024;
// Entries read from one directory (P/pv, P/volumeDevices, one PV's publish or staging directory):
// far beyond the volumes one node stages.
inline constexpr size_t kMaxDirEntries = 4096;

// What a vol_data.json says about the volume staged beside it.
struct VolumeData {
  std::string volume_handle;  // "volumeHandle": the CSI volume_id
  std::string driver_name;    // "driverName"
};

// INVALID_ARGUMENT saying what is wrong: not JSON, nested too deep, not an object, "volumeHandle"
// or "driverName" missing or not a string. Other keys are ignored.
Result<VolumeData> ParseVolumeData(std::string_view text);

// Reads and parses the vol_data.json at `path`. NOT_FOUND when there is none; INVALID_ARGUMENT
// naming `path` when it is a symlink, not a regular file, larger than kMaxVolumeDataBytes or
// does not parse.
Result<VolumeData> ReadVolumeData(const std::string& path);

// The lower-case hex SHA-256 of `volume_id`: the directory kubelet >= 1.24 stages it in.
std::string VolumeHandleHash(std::string_view volume_id);

struct StagedVolume {
  std::string device;        // what ResolveLuksDevice found: the LUKS device (or image file)
  std::string staging_path;  // where: the globalmount directory, or the block device's file
  std::string volume_data;   // the vol_data.json that names the volume there
};

// The volume `volume_id` of options.driver_name as kubelet staged it under options.kubelet_dir;
// `access` kMount or kBlock looks only at that kind of staging.
//   NOT_FOUND naming volume_id and the places looked at: no vol_data.json names it, or nothing
//     is mounted or bound where one does (or options.driver_name is empty);
//   INVALID_ARGUMENT: the hashed directory's vol_data.json is unusable (what is wrong with it)
//     and no other place names the volume;
//   FAILED_PRECONDITION: several places name it and hold different devices, or the one that
//     names it holds a device stack that cannot be followed (ResolveLuksDevice).
// An unusable vol_data.json of another PV's directory is skipped (the NOT_FOUND message counts
// it).
Result<StagedVolume> FindStagedVolume(const std::string& volume_id, AccessType access,
                                      const ResolveOptions& options);

}  // namespace mizarmp::keyrotation
