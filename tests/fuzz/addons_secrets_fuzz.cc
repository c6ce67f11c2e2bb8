// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The secrets file (mizarmp-addons' secretsFile, mizarmpctl's --secrets-file): the input written
// to a file and read by endpoint::ReadSecretsFile. Errors must never echo a secret: a value of the
// input never appears in the error message.
#include <cstdint>
#include <string>

#include "endpoint/secrets_file.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
mizarmp::fuzz::ScratchDir* g_dir = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  g_dir = new mizarmp::fuzz::ScratchDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = g_dir->Sub("secrets.json");
  mizarmp::fuzz::WriteFileOrDie(path, mizarmp::fuzz::AsText(data, size));
  auto secrets = mizarmp::endpoint::ReadSecretsFile(path);
  if (secrets.ok()) {
    for (const auto& [key, value] : *secrets) (void)key.size(), (void)value.size();
  }
  return 0;
}
