// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// CNI_* environment parsing and validation.
#include <gtest/gtest.h>

#include "cni/env.h"

namespace mizarmp::cni {
namespace {

std::map<std::string, std::string> AddEnv() {
  return {{"CNI_COMMAND", "ADD"},
          {"CNI_CONTAINERID", "abc123"},
          {"CNI_NETNS", "/var/run/netns/x"},
          {"CNI_IFNAME", "eth0"},
          {"CNI_PATH", "/opt/cni/bin"}};
}

TEST(CniEnv, ParsesAdd) {
  auto vars = AddEnv();
  vars["CNI_ARGS"] = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;FOO=bar";
  auto env = ParseEnv(vars);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->command, Command::kAdd);
  EXPECT_EQ(env->container_id, "abc123");
  EXPECT_EQ(env->netns, "/var/run/netns/x");
  EXPECT_EQ(env->ifname, "eth0");
  EXPECT_EQ(env->path, "/opt/cni/bin");
  EXPECT_TRUE(env->args.ignore_unknown);
  EXPECT_EQ(env->args.pod_namespace, "default");
  EXPECT_EQ(env->args.pod_name, "web-0");
  EXPECT_EQ(env->args.pairs.size(), 4u);
}

TEST(CniEnv, CommandNames) {
  for (const char* c : {"ADD", "DEL", "CHECK", "VERSION", "GC", "STATUS"}) {
    auto cmd = ParseCommand(c);
    ASSERT_TRUE(cmd.ok()) << c;
    EXPECT_EQ(CommandName(*cmd), c);
  }
  auto bad = ParseCommand("ATTACH");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("ATTACH"), std::string::npos);
  EXPECT_FALSE(ParseCommand("add").ok());
}

TEST(CniEnv, MissingVariablesAreAllNamedInOneMessage) {
  auto env = ParseEnv({{"CNI_COMMAND", "ADD"}});
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), Code::kInvalidArgument);
  for (const char* v : {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"}) {
    EXPECT_NE(env.status().message().find(v), std::string::npos) << env.status().message();
  }
  auto vars = AddEnv();
  vars.erase("CNI_IFNAME");
  vars["CNI_PATH"] = "";  // empty counts as missing
  env = ParseEnv(vars);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("CNI_IFNAME"), std::string::npos);
  EXPECT_NE(env.status().message().find("CNI_PATH"), std::string::npos);
  EXPECT_EQ(env.status().message().find("CNI_NETNS"), std::string::npos);
  EXPECT_FALSE(ParseEnv({}).ok());
}

TEST(CniEnv, WhatEachCommandNeeds) {
  auto vars = AddEnv();
  vars["CNI_COMMAND"] = "DEL";
  vars.erase("CNI_NETNS");
  EXPECT_TRUE(ParseEnv(vars).ok()) << "DEL must not need CNI_NETNS";
  vars["CNI_COMMAND"] = "CHECK";
  auto check = ParseEnv(vars);
  ASSERT_FALSE(check.ok());
  EXPECT_NE(check.status().message().find("CNI_NETNS"), std::string::npos);
  for (const char* c : {"GC", "STATUS"}) {
    auto env = ParseEnv({{"CNI_COMMAND", c}, {"CNI_PATH", "/opt/cni/bin"}});
    EXPECT_TRUE(env.ok()) << c << ": " << env.status().ToString();
    auto none = ParseEnv({{"CNI_COMMAND", c}});
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("CNI_PATH"), std::string::npos);
  }
  EXPECT_TRUE(ParseEnv({{"CNI_COMMAND", "VERSION"}}).ok());
}

TEST(CniEnv, ContainerIdValidation) {
  for (const char* ok : {"a", "0", "abc-DEF_1.2", "6f2c1c7b9c8e4d2a"}) {
    EXPECT_TRUE(ValidateContainerId(ok).ok()) << ok;
  }
  for (const char* bad : {"", "-a", "_a", ".a", "a/b", "a b", "a;b", "../x"}) {
    Status s = ValidateContainerId(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find(std::string("\"") + bad + "\""), std::string::npos) << s.message();
  }
  auto vars = AddEnv();
  vars["CNI_CONTAINERID"] = "../../etc";
  auto env = ParseEnv(vars);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("../../etc"), std::string::npos);
}

TEST(CniEnv, IfnameValidation) {
  for (const char* ok : {"eth0", "net1", "a", "abcdefghijklmno"}) {
    EXPECT_TRUE(ValidateIfname(ok).ok()) << ok;
  }
  for (const char* bad : {"", ".", "..", "abcdefghijklmnop", "a/b", "a:b", "a b", "a\tb"}) {
    Status s = ValidateIfname(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("CNI_IFNAME"), std::string::npos) << s.message();
  }
  auto vars = AddEnv();
  vars["CNI_IFNAME"] = "way-too-long-name0";
  auto env = ParseEnv(vars);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("way-too-long-name0"), std::string::npos);
}

TEST(CniEnv, CniArgs) {
  auto a = ParseCniArgs("");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->pairs.empty());
  a = ParseCniArgs("K8S_POD_NAME=p;;K8S_POD_NAMESPACE=ns;EMPTY=;");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->ignore_unknown);
  EXPECT_EQ(a->pod_name, "p");
  EXPECT_EQ(a->pod_namespace, "ns");
  ASSERT_EQ(a->pairs.size(), 3u);
  EXPECT_EQ(a->pairs[2].second, "");
  a = ParseCniArgs("IgnoreUnknown=true;X=a=b");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ignore_unknown);
  EXPECT_EQ(a->pairs[1].second, "a=b");
  for (const char* bad : {"novalue", "=x", "A=1;broken"}) {
    auto r = ParseCniArgs(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("CNI_ARGS"), std::string::npos);
  }
}

// Values that go into JSON (the port, the record, the result) must be UTF-8: refused where they
// enter, naming the variable, with the byte escaped in the message.
TEST(CniEnv, NonUtf8ValuesAreRefusedNamingTheVariable) {
  for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{
           {"CNI_NETNS", "/var/run/netns/p\xff"},
           {"CNI_IFNAME", "eth\xc3"},
           {"CNI_ARGS", "K8S_POD_NAME=web\xfe"},
           {"CNI_ARGS", "K8S_POD_NAMESPACE=\xed\xa0\x80"},
           {"CNI_ARGS", "IgnoreUnknown=1;OTHER\x80=x"}}) {
    for (const char* command : {"ADD", "DEL", "CHECK"}) {
      auto vars = AddEnv();
      vars["CNI_COMMAND"] = command;
      vars[var] = value;
      auto env = ParseEnv(vars);
      ASSERT_FALSE(env.ok()) << var << " " << command;
      EXPECT_EQ(env.status().code(), Code::kInvalidArgument);
      const std::string& msg = env.status().message();
      EXPECT_NE(msg.find(var), std::string::npos) << msg;
      EXPECT_NE(msg.find("UTF-8"), std::string::npos) << msg;
      EXPECT_NE(msg.find("\\x"), std::string::npos) << "the byte is escaped: " << msg;
    }
  }
  auto vars = AddEnv();
  vars["CNI_NETNS"] = "/var/run/netns/caf\xc3\xa9";
  vars["CNI_ARGS"] = "K8S_POD_NAME=caf\xc3\xa9";
  EXPECT_TRUE(ParseEnv(vars).ok()) << "valid UTF-8 beyond ASCII is fine";
}

}  // namespace
}  // namespace mizarmp::cni
