// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/hex.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace mizarmp {
namespace {

using namespace std::string_literals;

TEST(Hex, EncodesEveryByteInTheCaseAskedFor) {
  const std::string bytes = "\x00\x01\x7f\x80\xab\xff"s;
  EXPECT_EQ(HexEncoded(bytes), "00017f80abff");
  EXPECT_EQ(HexEncoded(bytes, HexCase::kUpper), "00017F80ABFF");
  EXPECT_EQ(HexEncoded(""), "");
  const unsigned char digest[] = {0xde, 0xad, 0xbe, 0xef};
  EXPECT_EQ(HexEncoded(digest, 2), "dead");
  std::string out = "x=";
  AppendHexByte(&out, 0x0f);
  AppendHexByte(&out, 0xc3, HexCase::kUpper);
  EXPECT_EQ(out, "x=0fC3");
}

TEST(Hex, DigitValuesOfEitherCaseAndNothingElse) {
  const std::string digits = "0123456789abcdef";
  for (size_t i = 0; i < digits.size(); ++i) {
    EXPECT_EQ(HexDigitValue(digits[i]), static_cast<int>(i)) << digits[i];
    const char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(digits[i])));
    EXPECT_EQ(HexDigitValue(upper), static_cast<int>(i)) << upper;
  }
  for (const char c : {'g', 'G', '/', ':', '@', '`', ' ', '\0', '\xff'}) {
    EXPECT_EQ(HexDigitValue(c), -1) << static_cast<int>(c);
    EXPECT_FALSE(IsHexDigit(c)) << static_cast<int>(c);
  }
}

TEST(Hex, DecodesWhatItEncodesAndRefusesTheRest) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  for (const HexCase letters : {HexCase::kLower, HexCase::kUpper}) {
    auto back = HexDecoded(HexEncoded(every_byte, letters));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, every_byte);
  }
  EXPECT_EQ(*HexDecoded("aB0c"), "\xab\x0c"s);

  auto odd = HexDecoded("abc");
  EXPECT_TRUE(odd.status().IsInvalidArgument());
  EXPECT_EQ(odd.status().message(), "hex string of odd length");
  auto not_hex = HexDecoded("zz00");
  EXPECT_TRUE(not_hex.status().IsInvalidArgument());
  EXPECT_EQ(not_hex.status().message(), "not a hex string");
}

TEST(Hex, PercentEncodesWhatIsNotKeptInUpperCase) {
  const auto letters_only = [](unsigned char c) { return c >= 'a' && c <= 'z'; };
  EXPECT_EQ(PercentEncoded("ab c/\xfe", letters_only), "ab%20c%2F%FE");
  EXPECT_EQ(PercentEncoded("", letters_only), "");
}

TEST(Hex, PercentDecodesEitherCaseAndRefusesACutEscape) {
  EXPECT_EQ(*PercentDecoded("ab%20c%2f%2F%FE"), "ab c//\xfe");
  EXPECT_EQ(*PercentDecoded("plain"), "plain");
  for (const char* bad : {"%", "a%2", "%zz", "%2g", "x%"}) {
    auto decoded = PercentDecoded(bad);
    EXPECT_TRUE(decoded.status().IsInvalidArgument()) << bad;
  }
  EXPECT_EQ(PercentDecoded("ab%4").status().message(),
            "'%' at byte 2 is not followed by two hex digits");
}

}  // namespace
}  // namespace mizarmp
