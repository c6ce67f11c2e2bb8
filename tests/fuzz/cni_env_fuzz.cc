// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CNI_* environment and CNI_ARGS.
//
// Input: lines "NAME=VALUE" ('\n' separated; a line without '=' is skipped) become the
// environment given to ParseEnv. The whole input is also parsed as one CNI_ARGS value and each
// line as a command name, container id and interface name.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "cni/env.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cni = mizarmp::cni;
  std::string_view text = mizarmp::fuzz::AsText(data, size);
  (void)cni::ParseCniArgs(text);

  std::map<std::string, std::string> vars;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    (void)cni::ParseCommand(line);
    (void)cni::ValidateContainerId(line);
    (void)cni::ValidateIfname(line);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    vars[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  auto env = cni::ParseEnv(vars);
  if (env.ok()) (void)cni::CommandName(env->command);
  return 0;
}
