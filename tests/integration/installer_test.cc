// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-install: the conflist it renders, the files it puts in place, and the property the
// installer DaemonSet relies on: replacing a plugin while a runtime executes it neither fails
// ("text file busy") nor disturbs the running process nor leaves a partial file.
#include "install/installer.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fileutil.h"
#include "gtest/gtest.h"
#include "tests/support/support.h"

namespace mizarmp::install {
namespace {

using json = nlohmann::json;
using testing::BinDir;
using testing::TempDir;

constexpr const char* kTemplate = R"({
  "cniVersion": "1.0.0",
  "name": "mizarmp",
  "plugins": [
    {"type": "mizarmp", "mpurl": "http://10.0.0.1:9090",
     "subnet": "a87e0f87-a2d9-44ef-9194-9a62f178594e",
     "project": "3dda2801-d675-4688-a63f-dcda8d327f50", "hostId": "template-host"},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "bandwidth", "capabilities": {"bandwidth": true}}
  ]
})";

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

void Write(const std::string& path, const std::string& text, mode_t mode = 0644) {
  ASSERT_TRUE(WriteFileAtomic(path, text, mode).ok()) << path;
}

TEST(RenderConflist, SetsTheHostIdOfEveryMizarmpPluginAndNothingElse) {
  auto rendered = RenderConflist(kTemplate, "node-7.example");
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  const json out = json::parse(*rendered);
  json expected = json::parse(kTemplate);
  expected["plugins"][0]["hostId"] = "node-7.example";
  EXPECT_EQ(out, expected);
}

TEST(RenderConflist, AnEmptyHostIdKeepsTheTemplates) {
  auto rendered = RenderConflist(kTemplate, "");
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  EXPECT_EQ(json::parse(*rendered)["plugins"][0]["hostId"], "template-host");
}

TEST(RenderConflist, RefusesWhatThePluginWouldRefuseNamingTheKey) {
  json bad_subnet = json::parse(kTemplate);
  bad_subnet["plugins"][0]["subnet"] = "not-a-uuid";
  auto refused = RenderConflist(bad_subnet.dump(), "n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("plugins[0]"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("subnet"), std::string::npos)
      << refused.status().message();
}

TEST(RenderConflist, RefusesTemplatesThatAreNoMizarmpConflist) {
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", ""},
      {R"({"cniVersion":"1.0.0","plugins":[{"type":"mizarmp"}]})", "name"},
      {R"({"cniVersion":"1.0.0","name":"n","plugins":[]})", "plugins"},
      {R"({"cniVersion":"1.0.0","name":"n","plugins":[{"type":"portmap"}]})",
       "no plugin of type \"mizarmp\""},
      {R"({"cniVersion":"1.0.0","name":"n","plugins":[{"kind":"x"}]})", "plugins[0].type"},
  };
  for (const auto& [text, named] : cases) {
    auto refused = RenderConflist(text, "n1");
    ASSERT_FALSE(refused.ok()) << text;
    EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status().ToString();
    EXPECT_NE(refused.status().message().find(named), std::string::npos)
        << text << " -> " << refused.status().message();
  }
}

TEST(RenderConflist, RefusesAHostIdWithAControlCharacter) {
  auto refused = RenderConflist(kTemplate, "node\n1");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("control character"), std::string::npos);
}

TEST(InstallBinaries, CopiesEveryRegularFileExecutableAndRemovesOnlyStaleTemps) {
  TempDir from, bin;
  Write(from.path() + "/mizarmp", "new plugin");
  Write(from.path() + "/portmap", "new portmap");
  ASSERT_TRUE(MakeDirs(from.path() + "/subdir").ok());
  const std::string stale = bin.path() + "/.mizarmp.tmp.1.2";
  const std::string fresh = bin.path() + "/.mizarmp.tmp.3.4";
  const std::string foreign = bin.path() + "/.other.tmp.5.6";
  Write(stale, "half");
  Write(fresh, "half");
  Write(foreign, "x");
  const time_t old = ::time(nullptr) - 11 * 60;
  const utimbuf times{old, old};
  ASSERT_EQ(::utime(stale.c_str(), &times), 0);
  ASSERT_EQ(::utime(foreign.c_str(), &times), 0);

  auto installed = InstallBinaries(from.path(), bin.path());
  ASSERT_TRUE(installed.ok()) << installed.status().ToString();
  EXPECT_EQ(*installed, (std::vector<std::string>{"mizarmp", "portmap"}));
  EXPECT_EQ(*ReadFile(bin.path() + "/mizarmp"), "new plugin");
  EXPECT_EQ(*ReadFile(bin.path() + "/portmap"), "new portmap");
  EXPECT_EQ(ModeOf(bin.path() + "/mizarmp"), 0755u);
  EXPECT_NE(::access(stale.c_str(), F_OK), 0) << "a temp of a killed install stays behind";
  EXPECT_EQ(::access(fresh.c_str(), F_OK), 0) << "a temp of an install running now was removed";
  EXPECT_EQ(::access(foreign.c_str(), F_OK), 0) << "another program's file was removed";
}

TEST(InstallBinaries, RefusesADirectoryWithNothingToInstall) {
  TempDir from, bin;
  auto refused = InstallBinaries(from.path(), bin.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition) << refused.status().ToString();
}

// The installer as the DaemonSet runs it.
class InstallerBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeDirs(from_ + "/cni").ok());
    ASSERT_TRUE(MakeDirs(host_ + "/opt/cni/bin").ok());
    ASSERT_TRUE(MakeDirs(host_ + "/etc/cni/net.d").ok());
    Write(template_, kTemplate);
  }

  testing::ExecResult Install(const std::string& host_id) {
    return testing::RunProcess(
        {BinDir() + "/mizarmp-install", "install", "--from", from_ + "/cni", "--bin-dir", bin_dir(),
         "--conflist", template_, "--conf-dir", conf_dir(), "--host-id", host_id},
        {}, "");
  }

  std::string bin_dir() const { return host_ + "/opt/cni/bin"; }
  std::string conf_dir() const { return host_ + "/etc/cni/net.d"; }

  TempDir image_, host_dir_;
  const std::string from_ = image_.path() + "/opt/mizarmp";
  const std::string template_ = image_.path() + "/10-mizarmp.conflist";
  const std::string host_ = host_dir_.path();
};

TEST_F(InstallerBinary, ReplacesAPluginThatIsRunningAndWritesTheConflistForThisNode) {
  // The "old plugin" is a copy of sleep, executing from the host's plugin directory.
  const std::string old_plugin = bin_dir() + "/mizarmp";
  ASSERT_EQ(testing::Shell("cp /bin/sleep " + old_plugin), 0);
  const pid_t running = testing::SpawnProcess({old_plugin, "60"}, {}, "", "/dev/null");
  ASSERT_GT(running, 0);
  // The "new plugin" is a copy of true: the installed file must be it, whole, and run.
  ASSERT_EQ(testing::Shell("cp /bin/true " + from_ + "/cni/mizarmp"), 0);

  const auto result = Install("node-a");
  EXPECT_TRUE(result.ok()) << result.Describe();
  EXPECT_EQ(::kill(running, 0), 0) << "the running old plugin was disturbed";
  EXPECT_EQ(*ReadFile(old_plugin), *ReadFile("/bin/true"));
  EXPECT_TRUE(testing::RunProcess({old_plugin}, {}, "").ok())
      << "the installed plugin does not run";
  auto conflist = ReadFile(conf_dir() + "/10-mizarmp.conflist");
  ASSERT_TRUE(conflist.ok()) << conflist.status().ToString();
  EXPECT_EQ(json::parse(*conflist)["plugins"][0]["hostId"], "node-a");
  EXPECT_EQ(ModeOf(conf_dir() + "/10-mizarmp.conflist"), 0644u);
  auto entries = ListDir(bin_dir());
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(*entries, std::vector<std::string>{"mizarmp"}) << "a temp file was left behind";

  ::kill(running, SIGKILL);
  EXPECT_NE(testing::WaitProcess(running, std::chrono::seconds(10)), -1);
}

TEST_F(InstallerBinary, AnInvalidTemplateWritesNothingAndExitsNonZero) {
  Write(from_ + "/cni/mizarmp", "plugin");
  Write(template_, R"({"cniVersion":"1.0.0","name":"mizarmp","plugins":[{"type":"portmap"}]})");
  const auto result = Install("node-a");
  EXPECT_EQ(result.exit_code, 1) << result.Describe();
  EXPECT_NE(result.err.find("no plugin of type"), std::string::npos) << result.err;
  EXPECT_EQ(ListDir(bin_dir())->size(), 0u);
  EXPECT_EQ(ListDir(conf_dir())->size(), 0u);
}

TEST_F(InstallerBinary, AMissingFlagIsAUsageError) {
  const auto result = testing::RunProcess(
      {BinDir() + "/mizarmp-install", "install", "--from", from_ + "/cni"}, {}, "");
  EXPECT_EQ(result.exit_code, 2) << result.Describe();
  EXPECT_NE(result.err.find("--bin-dir: required"), std::string::npos) << result.err;
}

TEST(InstallerWait, ExitsZeroOnSigterm) {
  testing::Daemon waiting;
  TempDir dir;
  ASSERT_TRUE(waiting.Start({BinDir() + "/mizarmp-install", "wait"}, dir.path() + "/log"));
  // The signal mask is set before the log line; wait for it so SIGTERM is not delivered early.
  ASSERT_NE(testing::WaitForFile(dir.path() + "/log", std::chrono::seconds(10)), "");
  ASSERT_EQ(::kill(waiting.pid(), SIGTERM), 0);
  const int status = waiting.Wait(std::chrono::seconds(10));
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace mizarmp::install
