// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the runtime sees when something is wrong: the error JSON on stdout, its code and message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cni/errors.h"
#include "cni/plugin.h"
#include "tests/support/support.h"

namespace mizarmp::cni {
namespace {

using nlohmann::json;

class CniErrorsTest : public ::testing::Test {
 protected:
  json Config(const std::string& version = "1.0.0") const {
    return json{{"cniVersion", version},
                {"name", "errnet"},
                {"type", "mizarmp"},
                {"mpurl", "http://127.0.0.1:1"},
                {"project", "3dda2801-d675-4688-a63f-dcda8d327f50"},
                {"subnet", "a87e0f87-a2d9-44ef-9194-9a62f178594e"},
                {"hostId", "node-a"},
                {"stateDir", state_.path()}};
  }
  static std::map<std::string, std::string> Env(const std::string& command) {
    return {{"CNI_COMMAND", command},
            {"CNI_CONTAINERID", "c1"},
            {"CNI_NETNS", "/var/run/netns/none"},
            {"CNI_IFNAME", "eth0"},
            {"CNI_PATH", "/opt/cni/bin"}};
  }
  // Runs and returns the error JSON, checking the envelope every runtime relies on.
  json RunError(const std::map<std::string, std::string>& env, const std::string& stdin_text) {
    std::string out;
    int rc = cni::Run(env, stdin_text, &out);
    EXPECT_NE(rc, 0) << out;
    json j = json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON: " << out;
    if (j.is_discarded()) return json::object();
    EXPECT_TRUE(j["cniVersion"].is_string()) << out;
    EXPECT_TRUE(j["code"].is_number_integer()) << out;
    EXPECT_TRUE(j["msg"].is_string()) << out;
    EXPECT_TRUE(j.contains("details")) << out;
    EXPECT_EQ(j.size(), 4u) << out;
    return j;
  }
  static std::string Msg(const json& j) { return j.value("msg", std::string()); }

  testing::TempDir state_;
};

TEST_F(CniErrorsTest, MalformedJsonIsCode6WithPosition) {
  json e = RunError(Env("ADD"), "{\"cniVersion\":\"1.0.0\",\"name\":}");
  EXPECT_EQ(e["code"], 6);
  EXPECT_NE(Msg(e).find("byte 30"), std::string::npos) << e.dump();
  e = RunError(Env("DEL"), "");
  EXPECT_EQ(e["code"], 6);
  EXPECT_NE(Msg(e).find("empty"), std::string::npos) << e.dump();
}

TEST_F(CniErrorsTest, MissingOrWrongKeyIsCode7NamingIt) {
  json cfg = Config();
  cfg.erase("mpurl");
  json e = RunError(Env("ADD"), cfg.dump());
  EXPECT_EQ(e["code"], 7);
  EXPECT_NE(Msg(e).find("\"mpurl\""), std::string::npos) << e.dump();
  EXPECT_EQ(e["cniVersion"], "1.0.0");
  cfg = Config();
  cfg["subnet"] = 42;
  e = RunError(Env("DEL"), cfg.dump());
  EXPECT_EQ(e["code"], 7);
  EXPECT_NE(Msg(e).find("\"subnet\""), std::string::npos) << e.dump();
}

TEST_F(CniErrorsTest, MissingEnvIsCode4NamingEachVariable) {
  json e = RunError({{"CNI_COMMAND", "ADD"}, {"CNI_IFNAME", "eth0"}}, Config("0.4.0").dump());
  EXPECT_EQ(e["code"], 4);
  for (const char* v : {"CNI_CONTAINERID", "CNI_NETNS", "CNI_PATH"}) {
    EXPECT_NE(Msg(e).find(v), std::string::npos) << v << ": " << e.dump();
  }
  EXPECT_EQ(Msg(e).find("CNI_IFNAME"), std::string::npos) << e.dump();
  EXPECT_EQ(e["cniVersion"], "0.4.0") << "the error speaks the config's version";
  e = RunError({}, Config().dump());
  EXPECT_EQ(e["code"], 4);
  EXPECT_NE(Msg(e).find("CNI_COMMAND"), std::string::npos);
}

TEST_F(CniErrorsTest, BadEnvValuesAreCode4NamingTheValue) {
  auto env = Env("ADD");
  env["CNI_COMMAND"] = "FROB";
  json e = RunError(env, Config().dump());
  EXPECT_EQ(e["code"], 4);
  EXPECT_NE(Msg(e).find("FROB"), std::string::npos);
  env = Env("ADD");
  env["CNI_IFNAME"] = "eth0/evil";
  e = RunError(env, Config().dump());
  EXPECT_EQ(e["code"], 4);
  EXPECT_NE(Msg(e).find("eth0/evil"), std::string::npos);
  env = Env("DEL");
  env["CNI_CONTAINERID"] = "../x";
  e = RunError(env, Config().dump());
  EXPECT_EQ(e["code"], 4);
  EXPECT_NE(Msg(e).find("../x"), std::string::npos);
}

TEST_F(CniErrorsTest, UnsupportedVersionIsCode1) {
  json e = RunError(Env("ADD"), Config("0.2.0").dump());
  EXPECT_EQ(e["code"], 1);
  EXPECT_NE(Msg(e).find("0.2.0"), std::string::npos) << e.dump();
  EXPECT_NE(Msg(e).find("1.1.0"), std::string::npos) << "lists the supported versions";
  json cfg = Config();
  cfg.erase("cniVersion");
  e = RunError(Env("DEL"), cfg.dump());
  EXPECT_EQ(e["code"], 1);
  EXPECT_NE(Msg(e).find("0.1.0"), std::string::npos) << e.dump();
}

TEST_F(CniErrorsTest, CheckRefusedBefore040AndGcStatusBefore110) {
  json e = RunError(Env("CHECK"), Config("0.3.1").dump());
  EXPECT_EQ(e["code"], 1);
  EXPECT_NE(Msg(e).find("CHECK"), std::string::npos);
  EXPECT_NE(Msg(e).find("0.3.1"), std::string::npos) << e.dump();
  std::map<std::string, std::string> env = {{"CNI_PATH", "/opt/cni/bin"}};
  for (const char* cmd : {"GC", "STATUS"}) {
    env["CNI_COMMAND"] = cmd;
    e = RunError(env, Config("1.0.0").dump());
    EXPECT_EQ(e["code"], 1) << cmd;
    EXPECT_NE(Msg(e).find("1.0.0"), std::string::npos) << e.dump();
  }
}

TEST_F(CniErrorsTest, CheckWithoutPrevResultOrRecord) {
  json e = RunError(Env("CHECK"), Config().dump());
  EXPECT_EQ(e["code"], 7);
  EXPECT_NE(Msg(e).find("prevResult"), std::string::npos);
  json cfg = Config();
  cfg["prevResult"] = {{"cniVersion", "1.0.0"}, {"interfaces", json::array()}};
  e = RunError(Env("CHECK"), cfg.dump());
  EXPECT_EQ(e["code"], 3) << e.dump();
  EXPECT_NE(Msg(e).find("c1"), std::string::npos);
}

TEST(CniErrorCodes, OneMappingFromStatus) {
  EXPECT_EQ(CodeFor(UnavailableError("x"), Stage::kController), 11);
  EXPECT_EQ(CodeFor(DeadlineExceededError("x"), Stage::kPortWait), 11);
  EXPECT_EQ(CodeFor(CancelledError("x"), Stage::kPortWait), 11);
  EXPECT_EQ(CodeFor(DeadlineExceededError("x"), Stage::kNetns), 11);
  EXPECT_EQ(CodeFor(InvalidArgumentError("x"), Stage::kConfig), 7);
  EXPECT_EQ(CodeFor(InvalidArgumentError("x"), Stage::kEnv), 4);
  EXPECT_EQ(CodeFor(InvalidArgumentError("x"), Stage::kDecode), 6);
  EXPECT_EQ(CodeFor(InvalidArgumentError("x"), Stage::kVersion), 1);
  EXPECT_EQ(CodeFor(NotFoundError("x"), Stage::kSubnet), 7);
  EXPECT_EQ(CodeFor(FailedPreconditionError("x"), Stage::kPortWait), 102);
  EXPECT_EQ(CodeFor(NotFoundError("x"), Stage::kPortWait), 102);
  EXPECT_EQ(CodeFor(PermissionDeniedError("x"), Stage::kStateDir), 5);
  EXPECT_EQ(CodeFor(UnauthenticatedError("x"), Stage::kController), 7);
  EXPECT_EQ(CodeFor(PermissionDeniedError("x"), Stage::kSubnet), 7);
  EXPECT_EQ(CodeFor(InvalidArgumentError("x"), Stage::kController), 103);
  EXPECT_EQ(CodeFor(InternalError("x"), Stage::kController), 104);
  EXPECT_EQ(CodeFor(NotFoundError("x"), Stage::kNetns), 4);
  EXPECT_EQ(CodeFor(InternalError("x"), Stage::kNetns), 105);
  EXPECT_EQ(CodeFor(UnavailableError("x"), Stage::kStatus), 50);
  EXPECT_EQ(CodeFor(InternalError("x"), Stage::kStatus), 50);

  CniError e = FromStatus(UnavailableError("GET /x: connection refused"), Stage::kController);
  EXPECT_EQ(e.code, 11);
  EXPECT_EQ(e.msg, "GET /x: connection refused");
  EXPECT_EQ(e.details, "UNAVAILABLE");
  json j = json::parse(ErrorJson(e, "0.4.0"));
  EXPECT_EQ(j, json({{"cniVersion", "0.4.0"},
                     {"code", 11},
                     {"msg", "GET /x: connection refused"},
                     {"details", "UNAVAILABLE"}}));
}

TEST(CniErrorCodes, NamedErrorsCarryTheirCodes) {
  EXPECT_EQ(IncompatibleVersion("m").code, 1);
  EXPECT_EQ(ContainerUnknown("m", "d").code, 3);
  EXPECT_EQ(InvalidConfig("m").code, 7);
  EXPECT_EQ(TryAgainLater("m").code, 11);
  EXPECT_EQ(NotAvailable("m").code, 50);
  EXPECT_EQ(AttachmentExists("m").code, 100);
  EXPECT_EQ(CheckMismatch("m", "d").code, 101);
  CniError e = CheckMismatch("port p is DOWN, not ready", "container c1 interface eth0");
  EXPECT_EQ(e.msg, "port p is DOWN, not ready");
  EXPECT_EQ(e.details, "container c1 interface eth0");
  EXPECT_TRUE(InvalidConfig("m").details.empty());
}

TEST(CniErrorCodes, ContextAndNotesExtendAnError) {
  CniError e = FromStatus(UnavailableError("connection refused"), Stage::kStatus);
  CniError wrapped = e.WithContext("controller at http://x is not usable");
  EXPECT_EQ(wrapped.code, 50);
  EXPECT_EQ(wrapped.msg, "controller at http://x is not usable: connection refused");
  EXPECT_EQ(wrapped.details, "UNAVAILABLE");
  CniError noted = e.WithNote("record r kept for a retry");
  EXPECT_EQ(noted.msg, "connection refused");
  EXPECT_EQ(noted.details, "UNAVAILABLE; record r kept for a retry");
  EXPECT_TRUE(IsTryAgainLater(UnavailableError("x"), Stage::kController));
  EXPECT_FALSE(IsTryAgainLater(InvalidArgumentError("x"), Stage::kController));
}

}  // namespace
}  // namespace mizarmp::cni
