// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mizarmp CNI plugin's commands: ADD, DEL, CHECK, VERSION, GC, STATUS.
//
// Run() is the whole plugin for one invocation: it reads the CNI_* variables and the network
// configuration, does the command, and leaves exactly one thing in *stdout_text: the result or
// error JSON (or nothing, for a DEL/CHECK/GC/STATUS that succeeded). main() only wires the
// process's environment, stdin and stdout to it, so tests run commands in-process.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <string_view>

#include "cni/config.h"
#include "common/status.h"

namespace mizarmp::cni {

struct RunOptions {
  // Set (by a SIGTERM/SIGINT handler) to abandon an ADD that is waiting: the port is deleted
  // and the ADD fails with code 11.
  const std::atomic<bool>* cancelled = nullptr;
  // Where hostId comes from when the configuration has none.
  std::string hostid_file = kDefaultHostIdFile;
};

// Returns the process exit code: 0 on success, 1 with the error JSON in *stdout_text otherwise.
int Run(const std::map<std::string, std::string>& env, std::string_view stdin_text,
        std::string* stdout_text, const RunOptions& options = {});

}  // namespace mizarmp::cni
