// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/json_fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mizarmp {
namespace {

using nlohmann::json;

std::string SettingName(std::string_view path) { return "setting " + Quoted(path); }

constexpr FieldErrors kSettings{Code::kInvalidArgument, SettingName};
constexpr FieldErrors kAnswer{Code::kInternal, nullptr};

// The message of a failed read, with the family's code checked on the way.
std::string Failure(const Status& status, Code code = Code::kInvalidArgument) {
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), code) << status.ToString();
  return status.message();
}

TEST(FieldErrors, OneWordingEachFamilyNamingItsFields) {
  EXPECT_EQ(kSettings.Missing("name").message(), "setting \"name\" is missing");
  EXPECT_EQ(kSettings.Empty("name").message(), "setting \"name\" is empty");
  EXPECT_EQ(kSettings.WrongType("dns.search[0]", "a string", "number").message(),
            "setting \"dns.search[0]\" is not a string (got number)");
  EXPECT_EQ(kSettings.OutOfRange("mtu", "70000", "68..65535").message(),
            "setting \"mtu\" is 70000, want 68..65535");
  EXPECT_EQ(kAnswer.Invalid("subnet.ip_version", "is 5, not 4 or 6"),
            InternalError("subnet.ip_version is 5, not 4 or 6"));
}

TEST(JsonFields, OptionalMembersLeaveTheDefaultWhenNotGiven) {
  const json doc = {
      {"name", "n"}, {"on", true}, {"count", 7}, {"list", {"a", "b"}}, {"nothing", nullptr}};
  const JsonFields fields(doc, kSettings);
  std::string name = "default", absent = "default", null = "default";
  bool on = false;
  int count = 0;
  std::vector<std::string> list;
  ASSERT_TRUE(fields.String("name", &name).ok());
  ASSERT_TRUE(fields.String("absent", &absent).ok());
  ASSERT_TRUE(fields.String("nothing", &null).ok());
  ASSERT_TRUE(fields.Bool("on", &on).ok());
  ASSERT_TRUE(fields.Int("count", 1, 10, &count).ok());
  ASSERT_TRUE(fields.Strings("list", &list).ok());
  EXPECT_EQ(name, "n");
  EXPECT_EQ(absent, "default");
  EXPECT_EQ(null, "default");
  EXPECT_TRUE(on);
  EXPECT_EQ(count, 7);
  EXPECT_EQ(list, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(fields.Find("nothing").has_value());
}

TEST(JsonFields, WrongTypesNameTheFieldAndWhatItIs) {
  const json doc = {
      {"name", 5}, {"on", "yes"}, {"count", 1.5}, {"list", {"a", 2}}, {"dns", "8.8.8.8"}};
  const JsonFields fields(doc, kSettings);
  std::string s;
  bool b = false;
  int64_t n = 0;
  std::vector<std::string> list;
  EXPECT_EQ(Failure(fields.String("name", &s)), "setting \"name\" is not a string (got number)");
  EXPECT_EQ(Failure(fields.Bool("on", &b)), "setting \"on\" is not a boolean (got string)");
  EXPECT_EQ(Failure(fields.Int<int64_t>("count", 0, 9, &n)),
            "setting \"count\" is not an integer (got number)");
  EXPECT_EQ(Failure(fields.Strings("list", &list)),
            "setting \"list[1]\" is not a string (got number)");
  EXPECT_EQ(Failure(fields.Object("dns").status()),
            "setting \"dns\" is not an object (got string)");
  EXPECT_EQ(Failure(fields.Objects("dns").status()),
            "setting \"dns\" is not an array (got string)");
}

TEST(JsonFields, IntegersOutsideTheRangeAreRefusedWithTheRange) {
  const json doc = {{"low", -1}, {"high", 70000}, {"huge", UINT64_MAX}};
  const JsonFields fields(doc, kSettings);
  int64_t n = 0;
  EXPECT_EQ(Failure(fields.Int<int64_t>("low", 0, 10, &n)), "setting \"low\" is -1, want 0..10");
  EXPECT_EQ(Failure(fields.Int<int64_t>("high", 68, 65535, &n)),
            "setting \"high\" is 70000, want 68..65535");
  EXPECT_EQ(Failure(fields.Int<int64_t>("huge", 0, INT64_MAX - 1, &n)),
            "setting \"huge\" is 18446744073709551615, want 0..9223372036854775806");
  EXPECT_EQ(n, 0);
  EXPECT_EQ(Failure(fields.Find("high")->Int(1, 600, "ms").status()),
            "setting \"high\" is 70000, want 1..600 ms");
}

TEST(JsonFields, RequiredMembersMustBeGivenAndNotEmpty) {
  const json doc = {{"empty", ""}, {"null", nullptr}, {"text", "t"}, {"n", 4}};
  const JsonFields fields(doc, kSettings);
  std::string s;
  EXPECT_EQ(Failure(fields.RequiredString("absent", &s)), "setting \"absent\" is missing");
  EXPECT_EQ(Failure(fields.RequiredString("null", &s)), "setting \"null\" is missing");
  EXPECT_EQ(Failure(fields.RequiredString("empty", &s)), "setting \"empty\" is empty");
  ASSERT_TRUE(fields.RequiredString("text", &s).ok());
  EXPECT_EQ(s, "t");
  EXPECT_EQ(Failure(fields.RequiredInt("absent", 0, 9).status()), "setting \"absent\" is missing");
  EXPECT_EQ(*fields.RequiredInt("n", 0, 9), 4);
}

TEST(JsonFields, NestedMembersCarryTheirPath) {
  const json doc = {{"dns", {{"search", {"a", 7}}}},
                    {"ips", {{{"address", "10.0.0.1/24"}}, {{"address", 5}}, "x"}}};
  const JsonFields top(doc, kAnswer, "result");
  auto dns = top.Object("dns");
  ASSERT_TRUE(dns.ok() && dns->has_value());
  std::vector<std::string> search;
  EXPECT_EQ(Failure((*dns)->Strings("search", &search), Code::kInternal),
            "result.dns.search[1] is not a string (got number)");
  EXPECT_EQ(Failure(top.Objects("ips").status(), Code::kInternal),
            "result.ips[2] is not an object (got string)");
  EXPECT_FALSE(top.Object("absent")->has_value());
  EXPECT_TRUE(top.Objects("absent")->empty());

  const json ips = {{{"address", "10.0.0.1/24"}}, {{"address", 5}}};
  auto elements = JsonField(ips, kAnswer, "ips").Objects();
  ASSERT_TRUE(elements.ok());
  ASSERT_EQ(elements->size(), 2u);
  std::string address;
  ASSERT_TRUE((*elements)[0].String("address", &address).ok());
  EXPECT_EQ(address, "10.0.0.1/24");
  EXPECT_EQ(Failure((*elements)[1].String("address", &address), Code::kInternal),
            "ips[1].address is not a string (got number)");
  EXPECT_EQ((*elements)[1].Invalid("address", "is odd").message(), "ips[1].address is odd");
}

}  // namespace
}  // namespace mizarmp
