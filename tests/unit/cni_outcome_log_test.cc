// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The plugin's outcome log (common/cni_outcome_log.h): the line format, the bounded append with
// its rotation, and a reader that follows the file across rotations and survives hostile
// content (garbage, truncated and huge lines, a symlink or FIFO at the path).
#include "common/cni_outcome_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/fileutil.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using testing::TempDir;

class CniOutcomeLogTest : public ::testing::Test {
 protected:
  std::vector<CniOutcome> ReadAll(CniOutcomeLogReader& reader, uint64_t* bad = nullptr) {
    std::vector<CniOutcome> seen;
    const auto counts = reader.ReadNew([&seen](const CniOutcome& o) { seen.push_back(o); });
    EXPECT_EQ(counts.outcomes, seen.size());
    if (bad != nullptr) *bad = counts.bad_lines;
    return seen;
  }

  void AppendRaw(const std::string& text) {
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << text;
  }

  TempDir dir_;
  const std::string path_ = CniOutcomeLogPath(dir_.path());
};

TEST_F(CniOutcomeLogTest, ALineHasTheFixedSizeAndReadsBackAsWritten) {
  const CniOutcome add{"ADD", 0, 12345};
  const std::string line = FormatCniOutcome(add);
  EXPECT_EQ(line, "1 ADD    000 0000012345\n");
  EXPECT_EQ(line.size(), kCniOutcomeLineSize);
  EXPECT_EQ(ParseCniOutcome(std::string_view(line).substr(0, line.size() - 1)), add);

  const std::string status = FormatCniOutcome({"STATUS", 50, 1});
  EXPECT_EQ(status, "1 STATUS 050 0000000001\n");
}

TEST_F(CniOutcomeLogTest, ValuesBeyondTheColumnsAreClampedNotSpilled) {
  const std::string line = FormatCniOutcome({"DEL", 100000, int64_t{1} << 50});
  EXPECT_EQ(line, "1 DEL    999 9999999999\n");
  EXPECT_EQ(FormatCniOutcome({"GC", -4, -7}), "1 GC     000 0000000000\n");
}

TEST_F(CniOutcomeLogTest, AnythingButAWrittenLineIsRefused) {
  for (const char* bad : {"", "garbage", "1 ADD    000 000001234",   // one digit short
                          "2 ADD    000 0000012345",                  // unknown format version
                          "1 ADX    000 0000012345", "1 A DD   000 0000012345",
                          "1 ADD    0x0 0000012345", "1 ADD    000 00000-2345",
                          "1 ADD    000 0000012345 ", "1  ADD   000 0000012345"}) {
    EXPECT_FALSE(ParseCniOutcome(bad).has_value()) << '"' << bad << '"';
  }
}

TEST_F(CniOutcomeLogTest, EachAppendAddsOneLineToAPrivateFile) {
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 10}).ok());
  ASSERT_TRUE(AppendCniOutcome(path_, {"DEL", 7, 20}).ok());
  auto text = ReadFile(path_);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "1 ADD    000 0000000010\n1 DEL    007 0000000020\n");
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(CniOutcomeLogTest, TheFileRotatesAtItsBoundAndKeepsOneOlderFile) {
  const off_t three_lines = 3 * kCniOutcomeLineSize;
  for (int i = 1; i <= 7; ++i) {
    ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, i}, three_lines).ok());
  }
  // 1-3 rotated away and then replaced by 4-6; 7 is live.
  auto live = ReadFile(path_);
  auto older = ReadFile(path_ + ".1");
  ASSERT_TRUE(live.ok() && older.ok());
  EXPECT_EQ(*live, FormatCniOutcome({"ADD", 0, 7}));
  EXPECT_EQ(*older, FormatCniOutcome({"ADD", 0, 4}) + FormatCniOutcome({"ADD", 0, 5}) +
                        FormatCniOutcome({"ADD", 0, 6}));
}

TEST_F(CniOutcomeLogTest, ASymlinkOrFifoAtThePathIsRefusedWithoutBlocking) {
  const std::string target = dir_.path() + "/elsewhere";
  ASSERT_EQ(::symlink(target.c_str(), path_.c_str()), 0);
  EXPECT_FALSE(AppendCniOutcome(path_, {"ADD", 0, 1}).ok());
  EXPECT_NE(::access(target.c_str(), F_OK), 0) << "followed the symlink";
  ASSERT_EQ(::unlink(path_.c_str()), 0);

  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  EXPECT_FALSE(AppendCniOutcome(path_, {"ADD", 0, 1}).ok());
  CniOutcomeLogReader reader(path_);
  uint64_t bad = 0;
  EXPECT_TRUE(ReadAll(reader, &bad).empty());
  EXPECT_EQ(bad, 0u);
}

TEST_F(CniOutcomeLogTest, TheReaderCountsGoodLinesAndSkipsBadOnes) {
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 100}).ok());
  AppendRaw("garbage\n");
  AppendRaw("1 ADD    000 00\n");           // truncated
  AppendRaw(std::string(300000, 'x') + "\n");  // far longer than a line
  AppendRaw("\n");
  // Written raw: an append would rotate the now oversized file away first.
  AppendRaw(FormatCniOutcome({"DEL", 11, 200}));

  CniOutcomeLogReader reader(path_, /*chunk_bytes=*/4096);
  uint64_t bad = 0;
  const auto seen = ReadAll(reader, &bad);
  EXPECT_EQ(seen, (std::vector<CniOutcome>{{"ADD", 0, 100}, {"DEL", 11, 200}}));
  EXPECT_EQ(bad, 4u);

  // Nothing new: nothing counted again.
  EXPECT_TRUE(ReadAll(reader, &bad).empty());
  EXPECT_EQ(bad, 0u);
}

TEST_F(CniOutcomeLogTest, ALineSplitAcrossReadsIsCountedOnceWhole) {
  const std::string line = FormatCniOutcome({"CHECK", 0, 5});
  AppendRaw(line.substr(0, 10));
  CniOutcomeLogReader reader(path_);
  uint64_t bad = 0;
  EXPECT_TRUE(ReadAll(reader, &bad).empty());
  EXPECT_EQ(bad, 0u);
  AppendRaw(line.substr(10));
  EXPECT_EQ(ReadAll(reader, &bad), (std::vector<CniOutcome>{{"CHECK", 0, 5}}));
  EXPECT_EQ(bad, 0u);
}

TEST_F(CniOutcomeLogTest, TheReaderFollowsRotationsWithoutLosingOrRepeatingLines) {
  const off_t four_lines = 4 * kCniOutcomeLineSize;
  CniOutcomeLogReader reader(path_);
  std::vector<CniOutcome> seen;
  for (int i = 1; i <= 10; ++i) {
    ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, i}, four_lines).ok());
    // Reads after every third append, so rotations fall between reads.
    if (i % 3 == 0) {
      for (const CniOutcome& o : ReadAll(reader)) seen.push_back(o);
    }
  }
  for (const CniOutcome& o : ReadAll(reader)) seen.push_back(o);
  ASSERT_EQ(seen.size(), 10u);
  for (int i = 1; i <= 10; ++i) EXPECT_EQ(seen[i - 1].micros, i);
}

TEST_F(CniOutcomeLogTest, SkipExistingCountsOnlyWhatComesAfter) {
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 1}).ok());
  CniOutcomeLogReader reader(path_);
  reader.SkipExisting();
  ASSERT_TRUE(AppendCniOutcome(path_, {"DEL", 0, 2}).ok());
  EXPECT_EQ(ReadAll(reader), (std::vector<CniOutcome>{{"DEL", 0, 2}}));
}

TEST_F(CniOutcomeLogTest, AFileTruncatedInPlaceIsReadFromItsStart) {
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 1}).ok());
  ASSERT_TRUE(AppendCniOutcome(path_, {"ADD", 0, 2}).ok());
  CniOutcomeLogReader reader(path_);
  EXPECT_EQ(ReadAll(reader).size(), 2u);
  ASSERT_EQ(::truncate(path_.c_str(), 0), 0);
  ASSERT_TRUE(AppendCniOutcome(path_, {"GC", 0, 3}).ok());
  EXPECT_EQ(ReadAll(reader), (std::vector<CniOutcome>{{"GC", 0, 3}}));
}

TEST_F(CniOutcomeLogTest, AHugeFileIsReadInBoundedSteps) {
  // 2 MiB of lines without a newline, then a good line: each call reads at most 256 KiB.
  AppendRaw(std::string(2 * 1024 * 1024, 'z') + "\n" + FormatCniOutcome({"ADD", 0, 9}));
  CniOutcomeLogReader reader(path_, /*chunk_bytes=*/64 * 1024, /*max_bytes_per_call=*/256 * 1024);
  std::vector<CniOutcome> seen;
  uint64_t bad_total = 0;
  int calls = 0;
  while (seen.empty() && calls < 100) {
    uint64_t bad = 0;
    for (const CniOutcome& o : ReadAll(reader, &bad)) seen.push_back(o);
    bad_total += bad;
    ++calls;
  }
  EXPECT_EQ(seen, (std::vector<CniOutcome>{{"ADD", 0, 9}}));
  EXPECT_EQ(bad_total, 1u);
  EXPECT_GE(calls, 8) << "read more than its bound in one call";
}

}  // namespace
}  // namespace mizarmp
