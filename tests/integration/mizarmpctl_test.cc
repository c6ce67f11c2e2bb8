// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmpctl as an operator runs it: its answers checked against the plugin's records, the mock
// controller's ports and the pods' namespaces, and against a running mizarmp-addons. The mock
// plays the real Alcor controller (strict, mock-server/strict.h), the generation a fence needs:
// its port list, and an agent that takes a disabled port down.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "mizarmp-client/types.h"
#include "mock-server/mock.h"
#include "records/records.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

using json = nlohmann::json;
using testing::ProcessResult;
using testing::ScopedNetns;
using testing::TempDir;
using testing::UniqueName;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
const std::map<std::string, std::string> kEnv = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};

class MizarmpctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    host_ = std::make_unique<ScopedNetns>(UniqueName("mzh"));
    mock::Options o;
    o.agent = true;
    o.bridge = UniqueName("mzbr");
    o.agent_netns = host_->path();
    o.cidr = "10.247.0.0/24";
    o.strict = true;
    o.dialect = mock::Dialect::kAlcor;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
    const json conflist = {{"cniVersion", "1.0.0"},
                           {"name", "mzctl"},
                           {"plugins",
                            {{{"type", "mizarmp"},
                              {"mpurl", mock_->base_url()},
                              {"project", kProject},
                              {"subnet", kSubnet},
                              {"networkId", client::kDefaultVpcId},  // Alcor's: the VPC
                              {"hostId", "node-a"},
                              {"stateDir", state_dir()},
                              {"timeouts", {{"readyMs", 10000}, {"nicMs", 10000}}}},
                             {{"type", "portmap"}, {"capabilities", {{"portMappings", true}}}}}}};
    ASSERT_TRUE(WriteFileAtomic(conflist_path(), conflist.dump(2)).ok());
  }

  void TearDown() override {
    addons_.reset();
    mock_.reset();
    pods_.clear();
    host_.reset();
  }

  std::string state_dir() const { return dir_.path() + "/state"; }
  std::string conflist_path() const { return dir_.path() + "/10-mizarmp.conflist"; }
  std::string socket_path() const { return dir_.path() + "/run/csi-addons.sock"; }

  // ADD through the plugin binary as the runtime would, with the conflist's plugin config.
  std::string AddPod(const std::string& container) {
    pods_.push_back(std::make_unique<ScopedNetns>(UniqueName("mzp")));
    json conf = json::parse(*ReadFile(conflist_path()))["plugins"][0];
    conf["name"] = "mzctl";
    conf["cniVersion"] = "1.0.0";
    const ProcessResult r = testing::RunProcess({testing::BinDir() + "/mizarmp"},
                                                {{"CNI_COMMAND", "ADD"},
                                                 {"CNI_CONTAINERID", container},
                                                 {"CNI_IFNAME", "eth0"},
                                                 {"CNI_NETNS", pods_.back()->path()},
                                                 {"CNI_PATH", testing::BinDir()},
                                                 {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
                                                conf.dump());
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    return pods_.back()->path();
  }

  ProcessResult Ctl(std::vector<std::string> args) const {
    args.insert(args.begin(), testing::BinDir() + "/mizarmpctl");
    return testing::RunProcess(args, kEnv, "", std::chrono::seconds(60));
  }

  // `mizarmpctl ARGS -o json`, parsed; a failed run fails the test.
  json CtlJson(std::vector<std::string> args) const {
    args.insert(args.end(), {"-o", "json"});
    const ProcessResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    json doc = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << r.out;
    return doc;
  }

  json Attachments() const { return CtlJson({"attachments", "--conflist", conflist_path()}); }

  void StartAddons(const std::string& secrets_file) {
    const json config = {{"endpoint", "unix://" + socket_path()},
                         {"mpurl", mock_->base_url()},
                         {"project", kProject},
                         {"subnet", kSubnet},
                         {"stateDir", state_dir()},
                         {"hostId", "node-a"},
                         {"fenceStore", dir_.path() + "/fence.db"},
                         {"secretsFile", secrets_file},
                         {"logFile", dir_.path() + "/addons.log"}};
    ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/addons.json", config.dump()).ok());
    addons_ = std::make_unique<testing::Daemon>();
    ASSERT_TRUE(addons_->Start(
        {testing::BinDir() + "/mizarmp-addons", "--config", dir_.path() + "/addons.json"},
        dir_.path() + "/addons.out"));
  }

  // Until `probe` answers ready (the fence store opens in the background).
  ProcessResult ProbeUntilReady(const std::string& secrets_file) const {
    ProcessResult r;
    for (int i = 0; i < 100; ++i) {
      r = Ctl({"probe", "--endpoint", "unix://" + socket_path(), "--secrets-file", secrets_file});
      if (r.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r;
  }

  TempDir dir_;
  std::unique_ptr<ScopedNetns> host_;
  std::unique_ptr<mock::MockServer> mock_;
  std::vector<std::unique_ptr<ScopedNetns>> pods_;
  std::unique_ptr<testing::Daemon> addons_;
};

TEST_F(MizarmpctlTest, AttachmentsJoinTheRecordsWithMizarMpAndTheNamespaces) {
  AddPod("ctr-a");
  AddPod("ctr-b");
  const json listed = Attachments();
  ASSERT_EQ(listed.size(), 2u) << listed.dump(2);
  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 2u);
  auto records = records::RecordStore(state_dir()).List("mzctl");
  ASSERT_TRUE(records.ok());
  for (const json& a : listed) {
    const auto record = std::find_if(records->begin(), records->end(), [&](const auto& r) {
      return r.container_id == a["containerId"];
    });
    ASSERT_NE(record, records->end()) << a.dump();
    EXPECT_EQ(a["portId"], record->port_id);
    EXPECT_EQ(a["ips"][0], record->ips[0].address);
    const auto port = std::find_if(ports.begin(), ports.end(),
                                   [&](const auto& p) { return p.id == record->port_id; });
    ASSERT_NE(port, ports.end());
    EXPECT_EQ(a["ips"][0].get<std::string>().substr(0, port->ips[0].size()), port->ips[0]);
    EXPECT_EQ(a["portStatus"], "ACTIVE");  // Alcor's word for ready
    EXPECT_EQ(a["adminStateUp"], true);
    EXPECT_EQ(a["netnsPresent"], true);
    EXPECT_EQ(a["interface"], "up");
    EXPECT_EQ(a["stale"], false);
  }
  // The table: a header, then one row per attachment naming its container and port.
  const ProcessResult table = Ctl({"attachments", "--conflist", conflist_path()});
  ASSERT_TRUE(table.ok()) << table.Describe();
  EXPECT_EQ(table.out.rfind("CONTAINER", 0), 0u) << table.out;
  for (const auto& r : *records) {
    EXPECT_NE(table.out.find(r.container_id), std::string::npos) << table.out;
    EXPECT_NE(table.out.find(r.port_id), std::string::npos) << table.out;
  }
}

TEST_F(MizarmpctlTest, GcRemovesExactlyTheAttachmentsWhosePodIsGone) {
  AddPod("ctr-a");
  AddPod("ctr-b");
  pods_.back().reset();  // ctr-b's namespace goes without a DEL (a crashed runtime)
  const json stale = CtlJson({"stale", "--conflist", conflist_path()});
  ASSERT_EQ(stale.size(), 1u) << stale.dump(2);
  EXPECT_EQ(stale[0]["containerId"], "ctr-b");

  const json dry = CtlJson({"gc", "--dry-run", "--conflist", conflist_path()});
  ASSERT_EQ(dry.size(), 1u);
  EXPECT_EQ(dry[0]["result"], "would remove");
  EXPECT_EQ(mock_->Ports().size(), 2u) << "--dry-run removed something";

  const json removed = CtlJson({"gc", "--conflist", conflist_path()});
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0]["containerId"], "ctr-b");
  EXPECT_EQ(removed[0]["result"], "removed");
  auto ports = mock_->Ports();
  ASSERT_EQ(ports.size(), 1u);
  const json left = Attachments();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]["containerId"], "ctr-a");
  EXPECT_EQ(left[0]["portId"], ports[0].id);
  EXPECT_TRUE(CtlJson({"stale", "--conflist", conflist_path()}).empty());
}

TEST_F(MizarmpctlTest, FencesThroughTheServerShowInTheAttachmentsAndTheFenceClients) {
  AddPod("ctr-a");
  const std::string ip = Attachments()[0]["ips"][0].get<std::string>();
  const std::string address = ip.substr(0, ip.find('/'));
  const std::string secrets = dir_.path() + "/secrets.json";
  ASSERT_TRUE(WriteFileAtomic(secrets, R"({"token":"s3cret"})").ok());
  StartAddons(secrets);
  const ProcessResult probe = ProbeUntilReady(secrets);
  ASSERT_TRUE(probe.ok()) << probe.Describe();
  EXPECT_NE(probe.out.find("controller"), std::string::npos) << probe.out;
  const std::vector<std::string> server = {"--endpoint", "unix://" + socket_path(),
                                           "--secrets-file", secrets};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), server.begin(), server.end());
    return args;
  };

  const json clients = CtlJson(with({"fence-clients"}));
  ASSERT_EQ(clients.size(), 1u) << clients.dump();
  EXPECT_EQ(clients[0]["id"], "node-a");
  EXPECT_EQ(clients[0]["addresses"], json::array({address + "/32"}));

  // The preview names the pod's port and changes nothing (no index here: the whole list).
  const json preview = CtlJson(with({"fence", "--dry-run", address + "/32"}));
  ASSERT_EQ(preview.size(), 1u) << preview.dump();
  EXPECT_EQ(preview[0]["ips"], json::array({address}));
  EXPECT_EQ(preview[0]["node"], "node-a");
  EXPECT_EQ(preview[0]["alreadyDown"], false);
  EXPECT_TRUE(CtlJson(with({"fences"})).empty());
  EXPECT_EQ(Attachments()[0]["adminStateUp"], true);

  const ProcessResult fenced = Ctl(with({"fence", address + "/32"}));
  ASSERT_TRUE(fenced.ok()) << fenced.Describe();
  EXPECT_EQ(CtlJson(with({"fences"})), json::array({address + "/32"}));
  EXPECT_EQ(Attachments()[0]["adminStateUp"], false);

  const ProcessResult unfenced = Ctl(with({"unfence", address + "/32"}));
  ASSERT_TRUE(unfenced.ok()) << unfenced.Describe();
  EXPECT_TRUE(CtlJson(with({"fences"})).empty());
  EXPECT_EQ(Attachments()[0]["adminStateUp"], true);

  // The audit: the fence, the pass that disabled the port, the unfence, the pass that restored it.
  const json audit = CtlJson(with({"audit"}));
  ASSERT_EQ(audit.size(), 4u) << audit.dump(2);
  const std::string port = preview[0]["portId"];
  EXPECT_EQ(audit[0]["action"], "fence");
  EXPECT_EQ(audit[0]["cidrs"], json::array({address + "/32"}));
  EXPECT_EQ(audit[1]["action"], "pass");
  EXPECT_EQ(audit[1]["disabled"], json::array({port}));
  EXPECT_EQ(audit[2]["action"], "unfence");
  EXPECT_EQ(audit[3]["enabled"], json::array({port}));
  const ProcessResult table = Ctl(with({"audit", "--limit", "1"}));
  EXPECT_NE(table.out.find("up: " + port), std::string::npos) << table.Describe();

  // A controller without a port index has no node publishing to it, and says so.
  const ProcessResult nodes = Ctl(with({"nodes"}));
  EXPECT_EQ(nodes.exit_code, 1) << nodes.Describe();
  EXPECT_NE(nodes.err.find("portIndex is off"), std::string::npos) << nodes.Describe();

  // Without the secrets the server refuses, and mizarmpctl says why.
  const ProcessResult refused = Ctl({"fences", "--endpoint", "unix://" + socket_path()});
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  EXPECT_NE(refused.err.find("token"), std::string::npos) << refused.err;
}

TEST(Mizarmpctl, UsageErrorsExitTwoNamingTheProblem) {
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), testing::BinDir() + "/mizarmpctl");
    return testing::RunProcess(args, kEnv, "");
  };
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"frobnicate"}, "unknown command"},
      {{"fence"}, "needs the CIDRs"},
      {{"fences", "extra"}, "takes no argument"},
      {{"fences", "-o", "yaml"}, "want table or json"},
      {{"fences", "--no-such-flag"}, "no-such-flag"},
  };
  for (const auto& [args, needle] : cases) {
    const ProcessResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  const ProcessResult missing = run({"attachments", "--conflist", "/nonexistent/conflist"});
  EXPECT_EQ(missing.exit_code, 1) << missing.Describe();
  EXPECT_NE(missing.err.find("/nonexistent/conflist"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace mizarmp
