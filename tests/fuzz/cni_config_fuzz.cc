// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The plugin's network configuration (stdin): DecodeJson, ConfigVersion, ParseNetConf, and the
// prevResult it carries (ResultFromJson), printed back in every supported version.
#include <cstdint>
#include <string>

#include "cni/config.h"
#include "cni/result.h"
#include "tests/fuzz/fuzz_util.h"

using mizarmp::fuzz::AsText;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cni = mizarmp::cni;
  auto doc = cni::DecodeJson(AsText(data, size));
  if (!doc.ok()) return 0;
  (void)cni::ConfigVersion(*doc);
  auto conf = cni::ParseNetConf(*doc);
  if (!conf.ok()) return 0;
  (void)cni::ValidateNetworkName(conf->name);
  (void)cni::ClientConfigFor(*conf);
  (void)cni::PollOptionsFor(*conf);
  if (conf->prev_result.is_null()) return 0;
  auto prev = cni::ResultFromJson(conf->prev_result);
  if (!prev.ok()) return 0;
  for (const char* version : {"0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
    (void)cni::ResultToJson(*prev, version).dump();
  }
  return 0;
}
