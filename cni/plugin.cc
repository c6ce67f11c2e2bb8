// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Run(): read the CNI environment and the network configuration, check the version, dispatch to
// the command (add.cc, del.cc, check.cc, gc.cc, status.cc) and print what it produced.
#include "cni/plugin.h"

#include <chrono>
#include <optional>
#include <utility>

#include "cni/command.h"
#include "cni/version.h"
#include "common/cni_outcome_log.h"
#include "common/log.h"

namespace mizarmp::cni {

namespace {

// The version to put in an error: the config's, when it is one we speak.
std::string ErrorVersion(const std::optional<std::string>& config_version) {
  if (config_version && IsSupported(*config_version)) return *config_version;
  return std::string(kLatestVersion);
}

// The "cniVersion" of stdin's configuration, if it has a readable one.
std::optional<std::string> VersionOf(std::string_view stdin_text) {
  auto doc = DecodeJson(stdin_text);
  if (!doc.ok()) return std::nullopt;
  auto version = ConfigVersion(*doc);
  if (!version.ok()) return std::nullopt;
  return *version;
}

// Prints the outcome into *stdout_text (its output, or the error JSON in the config's version)
// and returns the exit code.
int Print(const Outcome& outcome, const std::optional<std::string>& config_version,
          std::string* stdout_text) {
  if (outcome.error) {
    const CniError& e = *outcome.error;
    // Messages quote values from outside (the environment, the controller): escaped, so the
    // log line stays one line.
    MZ_LOG(kError) << "code " << e.code << ": " << LogEscaped(e.msg)
                   << (e.details.empty() ? "" : " (" + LogEscaped(e.details) + ")");
    *stdout_text = ErrorJson(e, ErrorVersion(config_version));
    return 1;
  }
  *stdout_text = outcome.output;
  return 0;
}

// CNI_ARGS as the runtime sent it ("K=V;K2=V2"), for the log.
std::string ArgsText(const CniArgs& args) {
  std::string out;
  for (const auto& [key, value] : args.pairs) {
    if (!out.empty()) out += ';';
    out += key + "=" + value;
  }
  return out;
}

// Every log line of this process names the command and the container.
void TagLog(const Env& env) {
  // Appended piecewise: g++ 12 -O3 reports a false -Wrestrict for "literal" + std::string.
  std::string tag = "mizarmp[";
  tag += CommandName(env.command);
  if (!env.container_id.empty()) tag.append(" ").append(env.container_id, 0, 12);
  log::SetTag(tag + "]");
}

// The configuration's version must be one this plugin speaks.
StepError NegotiateVersion(const nlohmann::json& doc, const std::string& version) {
  Status s = CheckSupported(version);
  if (s.ok()) return std::nullopt;
  if (doc.is_object() && !doc.contains("cniVersion")) {
    s = s.WithContext("config has no \"cniVersion\" (the CNI spec reads that as " + version + ")");
  }
  return FromStatus(s, Stage::kVersion);
}

// CHECK exists from cniVersion 0.4.0, GC and STATUS from 1.1.0.
StepError CheckCommandVersion(Command command, const std::string& version) {
  if (command == Command::kCheck && !AtLeast(version, "0.4.0")) {
    return IncompatibleVersion("CHECK is not supported for cniVersion " + version +
                               " (needs 0.4.0 or later)");
  }
  if ((command == Command::kGc || command == Command::kStatus) && !AtLeast(version, "1.1.0")) {
    return IncompatibleVersion(std::string(CommandName(command)) +
                               " is not supported for cniVersion " + version +
                               " (needs 1.1.0 or later)");
  }
  return std::nullopt;
}

// Reads stdin into *conf. *version is set as soon as the configuration's cniVersion is known, so
// the errors found after that are printed in it.
StepError ReadConfig(Command command, std::string_view stdin_text,
                     std::optional<std::string>* version, NetConf* conf) {
  auto doc = DecodeJson(stdin_text);
  if (!doc.ok()) return FromStatus(doc.status(), Stage::kDecode);
  auto v = ConfigVersion(*doc);
  if (!v.ok()) return FromStatus(v.status(), Stage::kConfig);
  *version = *v;
  if (StepError e = NegotiateVersion(*doc, *v)) return e;
  if (StepError e = CheckCommandVersion(command, *v)) return e;
  auto parsed = ParseNetConf(*doc);
  if (!parsed.ok()) return FromStatus(parsed.status(), Stage::kConfig);
  *conf = std::move(parsed).value();
  return std::nullopt;
}

// The configuration's logLevel, logFile and logMaxBytes (stderr stays the log when the file
// cannot be opened).
void SetUpLogging(const NetConf& conf) {
  if (auto level = log::ParseLevel(conf.log_level); level.ok()) log::SetLevel(*level);
  if (conf.log_file.empty()) return;
  log::SetMaxBytes(conf.log_max_bytes);
  if (Status s = log::SetFile(conf.log_file); !s.ok()) {
    MZ_LOG(kWarn) << "logging to stderr: " << s.message();
  }
}

// Appends the command's outcome to the state dir's outcome log, which the node's mizarmp-addons
// exports (common/cni_outcome_log.h). A failure to record never changes the command's answer.
void RecordOutcome(const Invocation& inv, const Outcome& outcome,
                   std::chrono::steady_clock::time_point started) {
  const auto took = std::chrono::steady_clock::now() - started;
  const CniOutcome line{
      std::string(CommandName(inv.env().command)), outcome.error ? outcome.error->code : 0,
      std::chrono::duration_cast<std::chrono::microseconds>(took).count()};
  const std::string& state_dir = inv.conf().state_dir;
  Status s = AppendCniOutcome(CniOutcomeLogPath(state_dir), line);
  // A command that made no record (DEL of nothing, STATUS) may run before the dir exists.
  if (s.IsNotFound() && MakeDirs(state_dir, 0700).ok()) {
    s = AppendCniOutcome(CniOutcomeLogPath(state_dir), line);
  }
  if (!s.ok()) {
    MZ_LOG(kWarn) << "outcome not recorded: " << s.message();
  }
}

Outcome Dispatch(Invocation& inv) {
  switch (inv.env().command) {
    case Command::kAdd:
      return CmdAdd(inv);
    case Command::kDel:
      return CmdDel(inv);
    case Command::kCheck:
      return CmdCheck(inv);
    case Command::kGc:
      return CmdGc(inv);
    case Command::kStatus:
      return CmdStatus(inv);
    case Command::kVersion:
      break;
  }
  return Ok(VersionResultJson());
}

}  // namespace

int Run(const std::map<std::string, std::string>& vars, std::string_view stdin_text,
        std::string* stdout_text, const RunOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  stdout_text->clear();
  auto env = ParseEnv(vars);
  if (!env.ok()) return Print(Fail(env.status(), Stage::kEnv), VersionOf(stdin_text), stdout_text);
  // VERSION needs no configuration (the runtime may send none).
  if (env->command == Command::kVersion) {
    return Print(Ok(VersionResultJson()), std::nullopt, stdout_text);
  }
  TagLog(*env);

  std::optional<std::string> version;
  NetConf conf;
  if (StepError e = ReadConfig(env->command, stdin_text, &version, &conf)) {
    return Print(Fail(std::move(*e)), version, stdout_text);
  }
  SetUpLogging(conf);
  MZ_LOG(kDebug) << CommandName(env->command) << " container=" << env->container_id
                 << " netns=" << LogEscaped(env->netns) << " ifname=" << LogEscaped(env->ifname)
                 << " network=" << conf.name << " args=" << LogEscaped(ArgsText(env->args));

  Invocation invocation(std::move(env).value(), std::move(conf), options);
  const Outcome outcome = Dispatch(invocation);
  const int rc = Print(outcome, version, stdout_text);
  RecordOutcome(invocation, outcome, started);
  return rc;
}

}  // namespace mizarmp::cni
