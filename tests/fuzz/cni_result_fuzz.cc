// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A prevResult on its own: ResultFromJson; a result it accepts must print (ResultToJson) in every
// supported version and read back.
#include <cstdint>

#include "cni/result.h"
#include "tests/fuzz/fuzz_util.h"

using mizarmp::fuzz::Require;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cni = mizarmp::cni;
  nlohmann::json doc = mizarmp::fuzz::ParseJson(mizarmp::fuzz::AsText(data, size));
  if (doc.is_discarded()) return 0;
  auto result = cni::ResultFromJson(doc);
  if (!result.ok()) return 0;
  for (const char* version : {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
    nlohmann::json printed = cni::ResultToJson(*result, version);
    (void)printed.dump();
    Require(cni::ResultFromJson(printed).ok(), "a printed result does not read back");
  }
  return 0;
}
