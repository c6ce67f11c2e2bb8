// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CNI_* environment: which command, for which container, netns and interface.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace mizarmp::cni {

enum class Command { kAdd, kDel, kCheck, kVersion, kGc, kStatus };

// INVALID_ARGUMENT naming the value for anything but ADD, DEL, CHECK, VERSION, GC, STATUS.
Result<Command> ParseCommand(std::string_view name);
std::string_view CommandName(Command command);

// CNI_ARGS: "K=V;K2=V2". Only IgnoreUnknown and the Kubernetes pod identity are used; other
// keys are kept but mean nothing to this plugin.
struct CniArgs {
  bool ignore_unknown = false;
  std::string pod_namespace;                               // K8S_POD_NAMESPACE
  std::string pod_name;                                    // K8S_POD_NAME
  std::vector<std::pair<std::string, std::string>> pairs;  // everything, in order
};
// INVALID_ARGUMENT naming the pair that is not KEY=VALUE or not valid UTF-8.
Result<CniArgs> ParseCniArgs(std::string_view text);

struct Env {
  Command command = Command::kVersion;
  std::string container_id;  // CNI_CONTAINERID
  std::string netns;         // CNI_NETNS
  std::string ifname;        // CNI_IFNAME
  std::string path;          // CNI_PATH
  CniArgs args;              // CNI_ARGS
};

// Reads and validates what `command` needs (ADD/CHECK: CONTAINERID, NETNS, IFNAME, PATH; DEL:
// the same but NETNS is optional; GC/STATUS: PATH; VERSION: nothing). INVALID_ARGUMENT naming
// every missing variable in one message, or the value that is invalid.
Result<Env> ParseEnv(const std::map<std::string, std::string>& vars);

// [A-Za-z0-9][A-Za-z0-9_.-]*
Status ValidateContainerId(std::string_view id);
// 1..15 bytes of valid UTF-8, no '/', ':' or whitespace, not "." or "..".
Status ValidateIfname(std::string_view name);
// Valid UTF-8 (the path goes into the port's JSON, the record and the result).
Status ValidateNetns(std::string_view path);

}  // namespace mizarmp::cni
