// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The whole plugin for one invocation: cni::Run() given an environment and stdin, with the
// controller an in-process mock (mock-server/mock.h, no host agent) started once per dialect.
//
// Input: the bytes before the first NUL are the environment, one "NAME=VALUE" per '\n'-separated
// line (a line without '=' is skipped; real environment values cannot hold a NUL or, here, a
// '\n'); the bytes after it are stdin. Without a NUL the whole input is the environment and stdin
// is empty. The line "FUZZ_DIALECT=alcor" picks the Alcor mock instead of the v0.1 one.
//
// What the harness forces, so no input can reach outside its sandbox: keys appended at the end
// of the top-level JSON object of stdin (the last of duplicate keys wins) point mpurl at the
// mock, stateDir at a scratch directory emptied after every input, logFile at /dev/null (log
// level as given) and the timeouts, poll and retries at small values; stdin that does not end in
// '}' goes in as it is (it is not a config then anyway). A CNI_NETNS naming an existing path is
// replaced by a path that does not exist, so no real namespace is ever configured.
//
// Checked: Run returns 0 or 1, and 1 always comes with the CNI error JSON on stdout (an object
// with an integer "code" and a string "msg").
#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "cni/plugin.h"
#include "mock-server/mock.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using mizarmp::fuzz::Require;

struct Harness {
  mizarmp::fuzz::ScratchDir dir;
  std::unique_ptr<mizarmp::mock::MockServer> v01;
  std::unique_ptr<mizarmp::mock::MockServer> alcor;
};
Harness* g = nullptr;

std::unique_ptr<mizarmp::mock::MockServer> StartMock(mizarmp::mock::Dialect dialect) {
  mizarmp::mock::Options options;
  options.dialect = dialect;
  options.agent = false;
  auto mock = mizarmp::mock::MockServer::Create(options);
  Require(mock.ok(), "harness could not create the mock");
  Require((*mock)->Start().ok(), "harness could not start the mock");
  return std::move(mock).value();
}

// The keys that keep the plugin inside the sandbox (see the file comment).
std::string ForcedKeys(const std::string& mpurl) {
  nlohmann::json forced = {
      {"mpurl", mpurl},
      {"stateDir", g->dir.Sub("state")},
      {"logFile", "/dev/null"},
      {"tokenFile", ""},
      {"timeouts", {{"readyMs", 200}, {"requestMs", 1000}, {"connectMs", 500}, {"nicMs", 10}}},
      {"poll", {{"initialMs", 1}, {"maxMs", 5}}},
      {"retries", 1},
  };
  std::string text = forced.dump();
  return text.substr(1, text.size() - 2);  // without the braces
}

// stdin with ForcedKeys appended to its top-level object (when it ends in '}').
std::string Sandboxed(std::string_view stdin_text, const std::string& mpurl) {
  size_t end = stdin_text.find_last_not_of(" \t\r\n");
  if (end == std::string_view::npos || stdin_text[end] != '}') return std::string(stdin_text);
  std::string_view head = stdin_text.substr(0, end);
  size_t last = head.find_last_not_of(" \t\r\n");
  const bool empty_object = last != std::string_view::npos && head[last] == '{';
  return std::string(head) + (empty_object ? "" : ",") + ForcedKeys(mpurl) + "}";
}

std::map<std::string, std::string> ParseEnvLines(std::string_view text) {
  std::map<std::string, std::string> env;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return env;
}

// Keeps CNI_NETNS from naming any real namespace: a value naming an existing path is replaced by
// one that does not exist (the interface is never configured; the commands still run up to there).
void SandboxNetns(std::map<std::string, std::string>& env) {
  auto it = env.find("CNI_NETNS");
  struct stat st;
  if (it != env.end() && ::stat(it->second.c_str(), &st) == 0) {
    it->second = g->dir.Sub("no-such-netns");
  }
}

void CheckAnswer(int rc, const std::string& out) {
  Require(rc == 0 || rc == 1, "Run returned an exit code other than 0 or 1");
  if (rc == 0) return;
  nlohmann::json error = mizarmp::fuzz::ParseJson(out);
  Require(error.is_object(), "a failure without the CNI error JSON on stdout");
  Require(error.contains("code") && error["code"].is_number_integer(),
          "CNI error JSON without an integer code");
  Require(error.contains("msg") && error["msg"].is_string(), "CNI error JSON without a msg");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g = new Harness();
  g->v01 = StartMock(mizarmp::mock::Dialect::kV01);
  g->alcor = StartMock(mizarmp::mock::Dialect::kAlcor);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = mizarmp::fuzz::AsText(data, size);
  size_t nul = input.find('\0');
  std::string_view env_text = input.substr(0, nul);
  std::string_view stdin_text = nul == std::string_view::npos ? "" : input.substr(nul + 1);

  auto env = ParseEnvLines(env_text);
  SandboxNetns(env);
  const bool alcor = env.count("FUZZ_DIALECT") != 0 && env["FUZZ_DIALECT"] == "alcor";
  const std::string url = (alcor ? g->alcor : g->v01)->base_url();

  mizarmp::cni::RunOptions options;
  options.hostid_file = g->dir.Sub("hostid");
  std::string out;
  const int rc = mizarmp::cni::Run(env, Sandboxed(stdin_text, url), &out, options);
  CheckAnswer(rc, out);
  g->dir.Clear();
  return 0;
}
