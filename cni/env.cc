// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/env.h"

#include <cctype>

#include "common/strings.h"

namespace mizarmp::cni {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::string Get(const std::map<std::string, std::string>& vars, const char* key) {
  auto it = vars.find(key);
  return it == vars.end() ? std::string() : it->second;
}

bool TruthyArg(std::string_view v) {
  return v == "1" || v == "true" || v == "True" || v == "TRUE" || v == "yes";
}

}  // namespace

Result<Command> ParseCommand(std::string_view name) {
  if (name == "ADD") return Command::kAdd;
  if (name == "DEL") return Command::kDel;
  if (name == "CHECK") return Command::kCheck;
  if (name == "VERSION") return Command::kVersion;
  if (name == "GC") return Command::kGc;
  if (name == "STATUS") return Command::kStatus;
  return InvalidArgumentError("CNI_COMMAND " + LogEscaped(name) +
                              " is not one of ADD, DEL, CHECK, VERSION, GC, STATUS");
}

std::string_view CommandName(Command command) {
  switch (command) {
    case Command::kAdd:
      return "ADD";
    case Command::kDel:
      return "DEL";
    case Command::kCheck:
      return "CHECK";
    case Command::kVersion:
      return "VERSION";
    case Command::kGc:
      return "GC";
    case Command::kStatus:
      return "STATUS";
  }
  return "?";
}

Result<CniArgs> ParseCniArgs(std::string_view text) {
  CniArgs args;
  while (!text.empty()) {
    size_t end = text.find(';');
    std::string_view pair = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (pair.empty()) continue;  // "a=b;" or ";;"
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("CNI_ARGS: " + LogEscaped(pair) + " is not KEY=VALUE");
    }
    std::string key(pair.substr(0, eq));
    std::string value(pair.substr(eq + 1));
    // Every pair may end up in a JSON document or a log line (the pod's identity names its
    // port): refuse bytes JSON cannot carry here, where the value enters.
    if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
      return InvalidArgumentError("CNI_ARGS: " + LogEscaped(pair) + " is not valid UTF-8");
    }
    if (key == "IgnoreUnknown") {
      args.ignore_unknown = TruthyArg(value);
    } else if (key == "K8S_POD_NAMESPACE") {
      args.pod_namespace = value;
    } else if (key == "K8S_POD_NAME") {
      args.pod_name = value;
    }
    args.pairs.emplace_back(std::move(key), std::move(value));
  }
  return args;
}

Status ValidateContainerId(std::string_view id) {
  bool ok = !id.empty() && Alnum(id[0]);
  for (size_t i = 1; ok && i < id.size(); ++i) {
    char c = id[i];
    ok = Alnum(c) || c == '_' || c == '.' || c == '-';
  }
  if (ok) return Status::Ok();
  return InvalidArgumentError("CNI_CONTAINERID " + LogEscaped(id) +
                              " is invalid (want [A-Za-z0-9][A-Za-z0-9_.-]*)");
}

Status ValidateIfname(std::string_view name) {
  std::string why;
  if (name.empty()) {
    why = "is empty";
  } else if (name.size() > 15) {
    why = "is longer than 15 characters";
  } else if (name == "." || name == "..") {
    why = "is not a usable name";
  } else if (!IsValidUtf8(name)) {
    why = "is not valid UTF-8";
  } else {
    for (char c : name) {
      if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) ||
          static_cast<unsigned char>(c) < 0x20) {
        why = "contains '/', ':' or whitespace";
        break;
      }
    }
  }
  if (why.empty()) return Status::Ok();
  return InvalidArgumentError("CNI_IFNAME " + LogEscaped(name) + " " + why);
}

Status ValidateNetns(std::string_view path) {
  if (IsValidUtf8(path)) return Status::Ok();
  return InvalidArgumentError("CNI_NETNS " + LogEscaped(path) + " is not valid UTF-8");
}

Result<Env> ParseEnv(const std::map<std::string, std::string>& vars) {
  Env env;
  auto cmd = vars.find("CNI_COMMAND");
  if (cmd == vars.end() || cmd->second.empty()) {
    return InvalidArgumentError("missing environment variable: CNI_COMMAND");
  }
  MZ_ASSIGN_OR_RETURN(env.command, ParseCommand(cmd->second));
  if (env.command == Command::kVersion) return env;

  env.container_id = Get(vars, "CNI_CONTAINERID");
  env.netns = Get(vars, "CNI_NETNS");
  env.ifname = Get(vars, "CNI_IFNAME");
  env.path = Get(vars, "CNI_PATH");

  const bool attachment = env.command == Command::kAdd || env.command == Command::kCheck ||
                          env.command == Command::kDel;
  std::vector<std::string> missing;
  if (attachment && env.container_id.empty()) missing.push_back("CNI_CONTAINERID");
  if ((env.command == Command::kAdd || env.command == Command::kCheck) && env.netns.empty()) {
    missing.push_back("CNI_NETNS");
  }
  if (attachment && env.ifname.empty()) missing.push_back("CNI_IFNAME");
  if (env.path.empty()) missing.push_back("CNI_PATH");
  if (!missing.empty()) {
    std::string msg =
        missing.size() == 1 ? "missing environment variable: " : "missing environment variables: ";
    msg += Joined(missing, ", ");
    msg += " (required for " + std::string(CommandName(env.command)) + ")";
    return InvalidArgumentError(msg);
  }
  if (attachment) {
    MZ_RETURN_IF_ERROR(ValidateContainerId(env.container_id));
    MZ_RETURN_IF_ERROR(ValidateIfname(env.ifname));
    MZ_RETURN_IF_ERROR(ValidateNetns(env.netns));
  }
  MZ_ASSIGN_OR_RETURN(env.args, ParseCniArgs(Get(vars, "CNI_ARGS")));
  return env;
}

}  // namespace mizarmp::cni
