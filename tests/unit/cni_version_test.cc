// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// CNI versions: parsing, the supported set, and the VERSION command.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cni/plugin.h"
#include "cni/version.h"

namespace mizarmp::cni {
namespace {

using nlohmann::json;

TEST(CniVersion, ParsesAndCompares) {
  auto v = ParseVersion("1.10.3");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->major, 1);
  EXPECT_EQ(v->minor, 10);
  EXPECT_EQ(v->patch, 3);
  for (const char* bad :
       {"", "1", "1.0", "1.0.", "a.b.c", "1.0.0.0", "1.0.x", "-1.0.0", " 1.0.0"}) {
    auto r = ParseVersion(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_TRUE(AtLeast("0.4.0", "0.4.0"));
  EXPECT_TRUE(AtLeast("1.0.0", "0.4.0"));
  EXPECT_TRUE(AtLeast("0.10.0", "0.4.0"));
  EXPECT_FALSE(AtLeast("0.3.1", "0.4.0"));
  EXPECT_FALSE(AtLeast("1.0.0", "1.1.0"));
  EXPECT_FALSE(AtLeast("garbage", "0.1.0"));
}

TEST(CniVersion, SupportedSet) {
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}) {
    EXPECT_TRUE(IsSupported(v)) << v;
    EXPECT_TRUE(CheckSupported(v).ok()) << v;
  }
  for (const char* v : {"0.1.0", "0.2.0", "1.2.0", "2.0.0", ""}) EXPECT_FALSE(IsSupported(v)) << v;
  Status s = CheckSupported("0.2.0");
  EXPECT_NE(s.message().find("0.2.0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"), std::string::npos)
      << s.message();
}

TEST(CniVersion, VersionCommandNeedsOnlyCniCommand) {
  for (const std::string stdin_text : {"", "{\"cniVersion\":\"0.4.0\"}", "not json at all"}) {
    std::string out;
    int rc = cni::Run({{"CNI_COMMAND", "VERSION"}}, stdin_text, &out);
    EXPECT_EQ(rc, 0) << out;
    json j = json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    EXPECT_EQ(j, json::parse(R"({"cniVersion":"1.1.0",
        "supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]})"))
        << out;
  }
}

}  // namespace
}  // namespace mizarmp::cni
