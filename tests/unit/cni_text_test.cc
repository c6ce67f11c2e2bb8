// The text checks the plugin applies to values from outside (common/strings.h): UTF-8
// validation, log-line escaping and the JSON nesting bound.
#include <gtest/gtest.h>

#include <string>

#include "common/strings.h"

namespace mizarmp {
namespace {

TEST(CniText, IsValidUtf8AcceptsWellFormedTextOnly) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("/var/run/netns/cni-1234"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("eth\xc3"));           // cut off
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a stray continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf0\x9f\x98"));      // cut off
}

TEST(CniText, LogEscapedKeepsALogLineOneLine) {
  EXPECT_EQ(LogEscaped("eth0"), "\"eth0\"");
  EXPECT_EQ(LogEscaped("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(LogEscaped("x\nE 2024 mizarmp[ADD] forged"), "\"x\\nE 2024 mizarmp[ADD] forged\"");
  EXPECT_EQ(LogEscaped("\r\t\x01\x7f"), "\"\\r\\t\\x01\\x7f\"");
  EXPECT_EQ(LogEscaped("p\xff"), "\"p\\xff\"");
  EXPECT_EQ(LogEscaped("caf\xc3\xa9"), "\"caf\xc3\xa9\"") << "valid UTF-8 is kept as it is";
  EXPECT_EQ(LogEscaped("\xc3"), "\"\\xc3\"");
  const std::string escaped = LogEscaped(std::string("a\0b\n\xed\xa0\x80", 6));
  EXPECT_EQ(escaped.find('\n'), std::string::npos);
  EXPECT_EQ(escaped.find('\0'), std::string::npos);
  EXPECT_TRUE(IsValidUtf8(escaped));
}

TEST(CniText, JsonNestingDepthCountsOutsideStringsAndStopsAtTheLimit) {
  EXPECT_EQ(JsonNestingDepth("{}", 64), 1u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":[]}]})", 64), 4u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[{{{{\"[["})", 64), 1u);
  EXPECT_EQ(JsonNestingDepth("42", 64), 0u);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(JsonNestingDepth(deep, 64), 65u);
  EXPECT_EQ(JsonNestingDepth(std::string(64, '[') + std::string(64, ']'), 64), 64u);
}

}  // namespace
}  // namespace mizarmp
