// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-addons' configuration file: ApplyConfigJson onto the defaults, then ValidateConfig.
#include <cstdint>

#include "cmd/mizarmp-addons/config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mizarmp::cmd::ServerConfig config;
  if (mizarmp::cmd::ApplyConfigJson(mizarmp::fuzz::AsText(data, size), config).ok()) {
    (void)mizarmp::cmd::ValidateConfig(config);
  }
  return 0;
}
