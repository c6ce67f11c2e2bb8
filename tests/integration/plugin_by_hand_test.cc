// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mizarmp binary run by hand, as an operator checks what is installed: `mizarmp --version`
// and a run with no CNI_COMMAND say what it is, which CNI versions it speaks and which libraries
// it runs on, and exit 0, as the reference plugins do. No server, no root.
#include <gtest/gtest.h>
#include <netlink/version.h>
#include <openssl/opensslv.h>

#include <map>
#include <string>

#include "common/version.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using testing::ProcessResult;

// The first line names this build exactly: project version and commit.
std::string FirstLine() {
  return "CNI mizarmp plugin " + std::string(Version()) + " (commit " + std::string(GitCommit()) +
         ")\n";
}
const char kVersions[] = "CNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n";

ProcessResult RunByHand(const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {testing::BinDir() + "/mizarmp"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv, env, "", std::chrono::seconds(30));
}

TEST(PluginByHand, VersionFlagPrintsWhatItIsOnStdout) {
  ProcessResult r = RunByHand({"--version"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out.rfind(FirstLine(), 0), 0u) << r.out;
  EXPECT_NE(r.out.find(kVersions), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(PluginByHand, NoCniCommandPrintsWhatItIsOnStderrAndNothingOnStdout) {
  for (const auto& env : {std::map<std::string, std::string>{},
                          std::map<std::string, std::string>{{"CNI_COMMAND", ""}}}) {
    ProcessResult r = RunByHand({}, env);
    ASSERT_EQ(r.exit_code, 0) << r.Describe();
    EXPECT_EQ(r.out, "") << "stdout is the runtime's channel";
    EXPECT_EQ(r.err.rfind(FirstLine(), 0), 0u) << r.err;
    EXPECT_NE(r.err.find(kVersions), std::string::npos) << r.err;
  }
}

// The versions of the development packages this build compiled against, which a static plugin
// carries and a dynamic one finds again on this same machine.
std::string LibrariesLine() {
#ifdef MIZARMP_STATIC_PLUGIN
  const std::string lead = "Linked into this file (a host's updates of them do not reach it): ";
#else
  const std::string lead = "Linked with the host's: ";
#endif
  return lead + OPENSSL_VERSION_TEXT + ", " + LIBNL_STRING + ", glibc " +
         std::to_string(__GLIBC__) + "." + std::to_string(__GLIBC_MINOR__) + "\n";
}

TEST(PluginByHand, VersionNamesTheLibrariesItRunsOn) {
  ProcessResult r = RunByHand({"--version"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find(kVersions + LibrariesLine()), std::string::npos) << r.out;
}

TEST(PluginByHand, AnUnknownCommandIsStillACniError) {
  ProcessResult r = RunByHand({}, {{"CNI_COMMAND", "LIST"}});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_NE(r.out.find("\"code\":4"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mizarmp
