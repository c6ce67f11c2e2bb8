// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mizarmp binary given input a buggy runtime or an attacker could send: it must answer with
// the CNI error JSON on stdout and a non-zero exit (never a signal), and leave nothing behind
// (no record, no lock file, no port). Runs the real binary (exec, CNI_* env, config on stdin)
// against the in-process mock with its agent disabled; no root, no netns.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/fileutil.h"
#include "mock-server/mock.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using nlohmann::json;
using testing::ProcessResult;

class PluginHostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mock::Options o;
    o.cidr = "10.243.0.0/16";
    o.strict = true;  // the real v0.1 controller's behaviour (mock-server/strict.h)
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
  }

  json Config() const {
    return json{{"cniVersion", "1.0.0"},
                {"name", network_},
                {"type", "mizarmp"},
                {"mpurl", mock_->base_url()},
                {"project", "3dda2801-d675-4688-a63f-dcda8d327f50"},
                {"subnet", "a87e0f87-a2d9-44ef-9194-9a62f178594e"},
                {"hostId", "node-a"},
                {"stateDir", state_.path()},
                {"logLevel", "debug"},
                {"timeouts", {{"readyMs", 2000}, {"nicMs", 100}}}};
  }

  static std::map<std::string, std::string> Env(const std::string& command) {
    return {{"CNI_COMMAND", command},
            {"CNI_CONTAINERID", "c1"},
            {"CNI_NETNS", "/var/run/netns/nope"},
            {"CNI_IFNAME", "eth0"},
            {"CNI_PATH", testing::BinDir()},
            {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  }

  static ProcessResult Plugin(const std::map<std::string, std::string>& env,
                              const std::string& stdin_text) {
    return testing::RunProcess({testing::BinDir() + "/mizarmp"}, env, stdin_text,
                               std::chrono::seconds(60));
  }

  // The CNI error the plugin printed: exit 1 (not a signal) and one error JSON on stdout.
  static json ErrorOf(const ProcessResult& r) {
    EXPECT_EQ(r.signal, 0) << r.Describe();
    EXPECT_EQ(r.exit_code, 1) << r.Describe();
    json doc = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(doc.is_object()) << "stdout is not the error JSON: " << r.Describe();
    if (!doc.is_object()) return json::object();
    EXPECT_TRUE(doc["code"].is_number_integer()) << r.out;
    EXPECT_TRUE(doc["msg"].is_string()) << r.out;
    return doc;
  }

  // Everything under the state dir (records, lock files, temp files, network dirs).
  std::set<std::string> StateFiles() const {
    std::set<std::string> out;
    auto nets = ListDir(state_.path());
    if (!nets.ok()) return out;
    for (const std::string& n : *nets) {
      auto names = ListDir(state_.path() + "/" + n);
      if (!names.ok()) continue;
      for (const std::string& f : *names) out.insert(n + "/" + f);
    }
    return out;
  }

  void ExpectNothingLeft() const {
    EXPECT_TRUE(StateFiles().empty()) << "left behind: " << *StateFiles().begin();
    EXPECT_TRUE(mock_->Ports().empty()) << "a port was left at the controller";
  }

  std::string network_ = "mzh-" + testing::UniqueName("n");
  testing::TempDir state_;
  std::unique_ptr<mock::MockServer> mock_;
};

// A byte that is not UTF-8 in CNI_NETNS, CNI_IFNAME or a CNI_ARGS value aborted the plugin
// (an uncaught JSON exception writing the record: exit 134, empty stdout, a lock file left).
TEST_F(PluginHostileInputTest, NonUtf8EnvironmentValuesAreCode4AndLeaveNothing) {
  struct Case {
    std::string var;
    std::string value;
  };
  const std::vector<Case> cases = {
      {"CNI_NETNS", "/var/run/netns/p\xff"},
      {"CNI_IFNAME", "eth\xc3"},
      {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web\xfe"},
      {"CNI_ARGS", "K8S_POD_NAMESPACE=\xed\xa0\x80"},  // an encoded surrogate
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.var);
    auto env = Env("ADD");
    env[c.var] = c.value;
    ProcessResult r = Plugin(env, Config().dump());
    json e = ErrorOf(r);
    EXPECT_EQ(e["code"], 4) << r.out;
    const std::string msg = e.value("msg", "");
    EXPECT_NE(msg.find(c.var), std::string::npos) << "names the variable: " << msg;
    EXPECT_NE(msg.find("UTF-8"), std::string::npos) << msg;
    ExpectNothingLeft();
    // Every log line of the run is still one line per message: the byte is escaped.
    EXPECT_EQ(r.err.find('\xff'), std::string::npos) << r.err;
  }
}

// A configuration nested 100,000 levels deep crashed the plugin (exit 139) in a recursive walk
// of the parsed tree.
TEST_F(PluginHostileInputTest, DeeplyNestedConfigIsCode6AndLeavesNothing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const char* key : {"args", "prevResult", "runtimeConfig"}) {
    SCOPED_TRACE(key);
    std::string text = Config().dump();
    text.pop_back();  // the closing '}'
    text += std::string(",\"") + key + "\":" + (std::string(key) == "prevResult" ? "{\"x\":" : "") +
            deep + (std::string(key) == "prevResult" ? "}" : "") + "}";
    for (const char* command : {"ADD", "DEL", "CHECK"}) {
      SCOPED_TRACE(command);
      ProcessResult r = Plugin(Env(command), text);
      json e = ErrorOf(r);
      EXPECT_EQ(e["code"], 6) << r.out;
      EXPECT_NE(e.value("msg", "").find("deeper than 64 levels"), std::string::npos) << r.out;
      ExpectNothingLeft();
    }
  }
}

TEST_F(PluginHostileInputTest, ModeratelyNestedConfigIsStillRead) {
  // 60 levels under "args" (64 in all is the bound): read, so the ADD gets as far as the
  // namespace that does not exist (code 4), past every configuration check.
  json cfg = Config();
  json nested = json::array();
  for (int i = 0; i < 60; ++i) nested = json::array({nested});
  cfg["args"] = {{"x", nested}};
  ProcessResult r = Plugin(Env("ADD"), cfg.dump());
  json e = ErrorOf(r);
  EXPECT_EQ(e["code"], 4) << r.out;
  EXPECT_NE(e.value("msg", "").find("/var/run/netns/nope"), std::string::npos) << r.out;
  ExpectNothingLeft();
}

TEST_F(PluginHostileInputTest, OversizedConfigIsCode6AndLeavesNothing) {
  json cfg = Config();
  cfg["args"] = {{"padding", std::string(3 << 20, 'x')}};  // 3 MiB
  ProcessResult r = Plugin(Env("ADD"), cfg.dump());
  json e = ErrorOf(r);
  EXPECT_EQ(e["code"], 6) << r.out;
  EXPECT_NE(e.value("msg", "").find("larger than 1048576 bytes"), std::string::npos) << r.out;
  ExpectNothingLeft();
}

// Values from the environment are escaped in log lines: a newline, quotes or control bytes in
// CNI_NETNS or CNI_ARGS can neither split a line nor forge one.
TEST_F(PluginHostileInputTest, EnvironmentValuesAreEscapedInLogLines) {
  auto env = Env("ADD");
  env["CNI_NETNS"] = "/var/run/netns/x\n1999-01-01T00:00:00.000Z error FORGED \"quoted\"";
  env["CNI_ARGS"] =
      "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a\rb\x01"
      "c\x1b[31m";
  ProcessResult r = Plugin(env, Config().dump());
  json e = ErrorOf(r);
  EXPECT_EQ(e["code"], 4) << r.out;  // no such namespace
  ASSERT_FALSE(r.err.empty()) << "logLevel debug logs the invocation";
  size_t lines = 0;
  for (size_t start = 0; start < r.err.size();) {
    const size_t end = r.err.find('\n', start);
    const std::string line = r.err.substr(start, end == std::string::npos ? end : end - start);
    start = end == std::string::npos ? r.err.size() : end + 1;
    ++lines;
    // Every line is one message of this run: the time stamp, then the level and the tag.
    EXPECT_TRUE(line.size() > 24 && line[4] == '-' && line.find("Z ") == 23)
        << "not a log line: " << line;
    EXPECT_FALSE(line.starts_with("1999-01-01")) << "a forged line: " << line;
    for (char c : line) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << "a control byte in: " << line;
    }
  }
  EXPECT_GT(lines, 0u);
  EXPECT_NE(r.err.find("x\\n1999-01-01T00:00:00.000Z error FORGED \\\"quoted\\\""),
            std::string::npos)
      << "the value is in the log, escaped: " << r.err;
  EXPECT_NE(r.err.find("a\\rb\\x01c\\x1b[31m"), std::string::npos) << r.err;
  ExpectNothingLeft();
}

}  // namespace
}  // namespace mizarmp
