// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Mount tables (/proc/self/mountinfo or /proc/mounts format): the input written as the table and
// MountSource asked for a few fixed mount points and for the mount point fields of the input's
// first lines, as the key rotation resolves a filesystem volume's device.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "keyrotation/resolve.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

mizarmp::fuzz::ScratchDir* g_dir = nullptr;

// The 2nd and 5th space-separated fields of the first lines: where fstab-like and mountinfo
// lines keep the mount point.
std::vector<std::string> CandidateMountPoints(const std::string& text) {
  std::vector<std::string> out = {"/", "/mnt/vol",
                                  "/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/pv/mount"};
  std::istringstream in(text);
  std::string line;
  for (int n = 0; n < 8 && std::getline(in, line); ++n) {
    std::istringstream fields(line);
    std::string field;
    for (int i = 1; i <= 5 && fields >> field; ++i) {
      if (i == 2 || i == 5) out.push_back(field);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  g_dir = new mizarmp::fuzz::ScratchDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(mizarmp::fuzz::AsText(data, size));
  const std::string table = g_dir->Sub("mountinfo");
  mizarmp::fuzz::WriteFileOrDie(table, text);
  for (const std::string& point : CandidateMountPoints(text)) {
    auto source = mizarmp::keyrotation::MountSource(point, table);
    mizarmp::fuzz::Require(!source.ok() || !source->empty(), "MountSource found an empty device");
  }
  return 0;
}
