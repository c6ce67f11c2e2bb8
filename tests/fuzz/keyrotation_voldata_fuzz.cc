// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// kubelet's vol_data.json: the input written as the file in each place kubelet keeps one (the
// hashed staging directory of Kubernetes >= 1.24, pv/<PV>/ and volumeDevices/<PV>/data/) under a
// scratch kubelet root, and FindStagedVolume asked for the volume, as a key rotation request
// without volume_path does; ParseVolumeData on the input too. Nothing is mounted or bound, so
// no input may lead to a device, and an answer must be NOT_FOUND or INVALID_ARGUMENT.
#include <cstdint>
#include <filesystem>
#include <string>

#include "keyrotation/kubelet.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kDriver = "fuzz.csi.example.com";
constexpr const char* kVolumeId = "vol-fuzz";

mizarmp::fuzz::ScratchDir* g_dir = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  g_dir = new mizarmp::fuzz::ScratchDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using mizarmp::Code;
  namespace kr = mizarmp::keyrotation;
  const std::string text(mizarmp::fuzz::AsText(data, size));

  auto parsed = kr::ParseVolumeData(text);
  mizarmp::fuzz::Require(parsed.ok() || parsed.status().code() == Code::kInvalidArgument,
                         "ParseVolumeData failed with another code than INVALID_ARGUMENT");

  g_dir->Clear();
  const std::string csi = g_dir->Sub("kubelet/plugins/kubernetes.io/csi");
  const std::string dirs[] = {
      csi + "/" + kDriver + "/" + kr::VolumeHandleHash(kVolumeId),
      csi + "/pv/pv-1",
      csi + "/volumeDevices/pv-2/data",
  };
  for (const std::string& dir : dirs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    mizarmp::fuzz::Require(!ec, "harness could not make its kubelet directories");
    mizarmp::fuzz::WriteFileOrDie(dir + "/vol_data.json", text);
  }
  std::filesystem::create_directories(dirs[0] + "/globalmount");
  mizarmp::fuzz::WriteFileOrDie(g_dir->Sub("mountinfo"), "");

  mizarmp::keyrotation::ResolveOptions options;
  options.kubelet_dir = g_dir->Sub("kubelet");
  options.driver_name = kDriver;
  options.mount_table = g_dir->Sub("mountinfo");
  options.sys_block_dir = g_dir->Sub("sys/block");
  options.dev_dir = g_dir->Sub("dev");
  auto found = kr::FindStagedVolume(kVolumeId, kr::AccessType::kUnspecified, options);
  mizarmp::fuzz::Require(!found.ok(), "a device was found where nothing is mounted or bound");
  const Code code = found.status().code();
  mizarmp::fuzz::Require(code == Code::kNotFound || code == Code::kInvalidArgument,
                         "FindStagedVolume failed with another code than NOT_FOUND or "
                         "INVALID_ARGUMENT");
  // An input that does not parse is never taken: the answer names the file's problem.
  if (!parsed.ok() && text.size() <= kr::kMaxVolumeDataBytes) {
    mizarmp::fuzz::Require(code == Code::kInvalidArgument,
                           "an unusable hashed vol_data.json was not reported");
  }
  return 0;
}
