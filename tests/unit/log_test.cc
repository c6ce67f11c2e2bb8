// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The log's file handling: the size cap shared by many writing processes, and reopening.
#include "common/log.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/fileutil.h"
#include "gtest/gtest.h"
#include "tests/support/support.h"

namespace mizarmp::log {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  auto text = ReadFile(path);
  std::vector<std::string> out;
  if (!text.ok()) return out;
  size_t start = 0;
  for (size_t end; (end = text->find('\n', start)) != std::string::npos; start = end + 1) {
    out.push_back(text->substr(start, end - start));
  }
  EXPECT_EQ(start, text->size()) << path << " ends in a cut-off line";
  return out;
}

// Several processes log into one capped file at once, as plugin invocations do.
TEST(LogFile, ACapSharedByManyProcessesKeepsBothFilesUnderItAndEveryLineWhole) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/plugin.log";
  constexpr uint64_t kCap = 8192;
  constexpr int kWriters = 6;
  constexpr int kLines = 2000;
  const std::string payload(60, 'x');
  // The writers start together: each waits for the end of this pipe, closed once all exist.
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(start[1]);
      char byte;
      if (::read(start[0], &byte, 1) != 0) ::_exit(4);
      SetLevel(Level::kInfo);
      if (!SetFile(path).ok()) ::_exit(3);
      SetMaxBytes(kCap);
      for (int i = 0; i < kLines; ++i)
        MZ_LOG(kInfo) << "writer " << w << " line " << i << " " << payload << " end";
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  size_t longest = 0;
  for (const std::string& file : {path, path + ".1"}) {
    for (const std::string& line : Lines(file)) longest = std::max(longest, line.size() + 1);
  }
  for (const std::string& file : {path, path + ".1"}) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file << " missing: the cap never rotated";
    EXPECT_LE(static_cast<uint64_t>(st.st_size), kCap) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    for (const std::string& line : Lines(file)) {
      EXPECT_NE(line.find(" end"), std::string::npos) << "a torn line in " << file << ": " << line;
    }
  }
  // Moved only when the next line did not fit: a file moved twice (a fresh one over the full
  // one) would leave a short ".1".
  struct stat rotated {};
  ASSERT_EQ(::stat((path + ".1").c_str(), &rotated), 0);
  EXPECT_GT(static_cast<uint64_t>(rotated.st_size) + longest, kCap);
}

TEST(LogFile, ReopenFollowsTheFileToItsPath) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/server.log";
  SetLevel(Level::kInfo);
  ASSERT_TRUE(SetFile(path).ok());
  MZ_LOG(kInfo) << "before the rotation";
  ASSERT_EQ(::rename(path.c_str(), (path + ".old").c_str()), 0);
  ASSERT_TRUE(Reopen().ok());
  MZ_LOG(kInfo) << "after the rotation";
  ASSERT_TRUE(SetFile("").ok());
  const auto old_lines = Lines(path + ".old");
  const auto new_lines = Lines(path);
  ASSERT_EQ(old_lines.size(), 1u);
  ASSERT_EQ(new_lines.size(), 1u);
  EXPECT_NE(old_lines[0].find("before the rotation"), std::string::npos);
  EXPECT_NE(new_lines[0].find("after the rotation"), std::string::npos);
}

TEST(LogFile, TheThreadContextTagsThisThreadsLinesOnly) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/ctx.log";
  SetLevel(Level::kInfo);
  ASSERT_TRUE(SetFile(path).ok());
  SetThreadContext("req=abc123");
  MZ_LOG(kInfo) << "tagged";
  SetThreadContext("");
  MZ_LOG(kInfo) << "untagged";
  ASSERT_TRUE(SetFile("").ok());
  const auto lines = Lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("req=abc123 tagged"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].find("req="), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace mizarmp::log
