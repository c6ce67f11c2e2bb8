// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The plugin's commands run in-process (cni::Run) against the in-process mock controller with its
// agent disabled: everything a command does before it touches a pod's namespace, and everything
// DEL, GC and STATUS do. No root, no netns. The mock plays each real controller generation
// (strict, mock-server/strict.h); the tests that need a seed controller's fault are
// CniCommandsSeedTest's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cni/attachment.h"
#include "cni/plugin.h"
#include "common/cni_outcome_log.h"
#include "common/fileutil.h"
#include "common/uuid.h"
#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "records/records.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::cni {
namespace {

using nlohmann::json;
using records::NowRfc3339;
using records::Record;
using records::RecordStore;
using records::RecordToJson;

constexpr const char* kProject = "3dda2801-d675-4688-a63f-dcda8d327f50";
constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

// The controller a test runs against: a real generation as the strict mock plays it, or the
// seed README's controller (v0.1 dialect).
enum class Controller { kV01, kAlcor, kSeed };

std::string ControllerName(const ::testing::TestParamInfo<Controller>& info) {
  switch (info.param) {
    case Controller::kV01:
      return "V01";
    case Controller::kAlcor:
      return "Alcor";
    case Controller::kSeed:
      return "Seed";
  }
  return "";
}

struct Outcome {
  int rc = -1;
  std::string out;
  json doc;  // parsed stdout (null when empty)
  std::string Describe() const { return "rc=" + std::to_string(rc) + " stdout=" + out; }
};

class CniCommandsTest : public ::testing::TestWithParam<Controller> {
 protected:
  void SetUp() override { StartMock(mock::Faults{}); }

  bool alcor() const { return GetParam() == Controller::kAlcor; }

  // A controller of this test's kind on `cidr`.
  mock::Options MockOptions(const std::string& cidr) const {
    mock::Options o;
    o.cidr = cidr;
    o.strict = GetParam() != Controller::kSeed;
    o.dialect = alcor() ? mock::Dialect::kAlcor : mock::Dialect::kV01;
    return o;
  }

  void StartMock(const mock::Faults& faults) {
    mock_.reset();
    mock::Options o = MockOptions("10.242.0.0/16");
    o.faults = faults;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &mock_));
    url_ = mock_->base_url();
  }

  // What a create names as its network: Alcor's network_id is the VPC, v0.1's the subnet.
  std::string NetworkId() const { return alcor() ? client::kDefaultVpcId : kSubnet; }

  // A URL nobody listens on: the mock's, after it is gone.
  void StopMock() { mock_.reset(); }

  json Config(const std::string& version = "1.0.0") const {
    return json{{"cniVersion", version},
                {"name", network_},
                {"type", "mizarmp"},
                {"mpurl", url_},
                {"project", kProject},
                {"subnet", kSubnet},
                {"networkId", NetworkId()},
                {"hostId", "node-a"},
                {"stateDir", state_.path()},
                {"logLevel", "off"},
                {"retries", 2},
                {"timeouts", {{"readyMs", 2000}, {"requestMs", 1000}, {"connectMs", 500}}}};
  }

  static std::map<std::string, std::string> Env(const std::string& command,
                                                const std::string& cid = "c1",
                                                const std::string& netns = "/var/run/netns/nope") {
    std::map<std::string, std::string> env = {{"CNI_COMMAND", command},
                                              {"CNI_PATH", "/opt/cni/bin"}};
    if (command != "GC" && command != "STATUS") {
      env["CNI_CONTAINERID"] = cid;
      env["CNI_IFNAME"] = "eth0";
      if (!netns.empty()) env["CNI_NETNS"] = netns;
    }
    return env;
  }

  static Outcome Do(const std::map<std::string, std::string>& env, const json& config,
                    const RunOptions& options = {}) {
    Outcome o;
    o.rc = cni::Run(env, config.dump(), &o.out, options);
    if (!o.out.empty()) {
      o.doc = json::parse(o.out, nullptr, false);
      EXPECT_FALSE(o.doc.is_discarded()) << "stdout is not JSON: " << o.out;
    }
    return o;
  }

  // Entries of this network's record directory (records and lock files).
  std::set<std::string> Files() const {
    std::set<std::string> out;
    auto names = ListDir(state_.path() + "/" + network_);
    if (names.ok()) out.insert(names->begin(), names->end());
    return out;
  }

  std::set<std::string> MockPortIds() const {
    std::set<std::string> ids;
    if (mock_) {
      for (const auto& p : mock_->Ports()) ids.insert(p.id);
    }
    return ids;
  }

  std::unique_ptr<client::Client> Client() const {
    client::ClientConfig cc;
    cc.base_url = url_;
    cc.project_id = kProject;
    auto c = client::Client::Create(cc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // A port at the controller as ADD would have made it.
  client::Port MakePort(const std::string& id, const std::string& cid, const std::string& network,
                        const std::string& host = "node-a") const {
    client::PortSpec spec = testing::PortSpecFor(id, "/var/run/netns/" + cid, host);
    spec.network_id = NetworkId();
    if (alcor()) spec.fixed_ips = {client::FixedIp{kSubnet, ""}};  // as the plugin's ADD asks
    spec.description = PortDescription(cid, spec.network_ns, host, network, "eth0");
    auto port = Client()->CreatePort(spec);
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    return port.ok() ? *port : client::Port{};
  }

  // An attachment ADD completed: its port and its complete record.
  Record MakeAttachment(const std::string& cid) const {
    const std::string id = PortIdFor(network_, cid, "eth0");
    client::Port port = MakePort(id, cid, network_);
    Record r;
    r.state = Record::State::kComplete;
    r.network = network_;
    r.container_id = cid;
    r.ifname = "eth0";
    r.netns = "/var/run/netns/" + cid;
    r.port_id = id;
    r.project_id = kProject;
    r.subnet_id = kSubnet;
    r.host_id = "node-a";
    r.mpurl = url_;
    r.mac = port.mac_address.empty() ? "0a:58:00:00:00:01" : port.mac_address;
    for (const auto& f : port.fixed_ips) r.ips.push_back({f.ip_address + "/16", "10.242.0.1"});
    r.created_at = NowRfc3339();
    EXPECT_TRUE(RecordStore(state_.path()).Write(r).ok());
    return r;
  }

  // A complete record of `cid` naming port `id` (no port is made).
  Record MakeRecordOnly(const std::string& cid, const std::string& id) const {
    Record r;
    r.state = Record::State::kComplete;
    r.network = network_;
    r.container_id = cid;
    r.ifname = "eth0";
    r.port_id = id;
    r.project_id = kProject;
    r.mpurl = url_;
    r.mac = "0a:58:00:00:00:02";
    r.created_at = NowRfc3339();
    return r;
  }

  std::string RecordFile(const std::string& cid) const { return cid + ":eth0.json"; }

  std::string network_ = "mznet-" + testing::UniqueName("n");
  testing::TempDir state_;
  std::unique_ptr<mock::MockServer> mock_;
  std::string url_;
};

INSTANTIATE_TEST_SUITE_P(Generations, CniCommandsTest,
                         ::testing::Values(Controller::kV01, Controller::kAlcor), ControllerName);

// What only Alcor has: a port that is not ready in the POST's answer (v0.1 answers it UP, having
// programmed the host first).
class CniCommandsAlcorTest : public CniCommandsTest {};
INSTANTIATE_TEST_SUITE_P(Generations, CniCommandsAlcorTest, ::testing::Values(Controller::kAlcor),
                         ControllerName);

// Seed: the reject_creates fault, which the strict modes do not have.
class CniCommandsSeedTest : public CniCommandsTest {};
INSTANTIATE_TEST_SUITE_P(Seed, CniCommandsSeedTest, ::testing::Values(Controller::kSeed),
                         ControllerName);

// ---------------------------------------------------------------------------------- VERSION

TEST_P(CniCommandsTest, VersionListsTheSupportedVersions) {
  auto r = Do({{"CNI_COMMAND", "VERSION"}}, json::object());
  ASSERT_EQ(r.rc, 0) << r.Describe();
  EXPECT_EQ(r.doc["cniVersion"], "1.1.0");
  EXPECT_EQ(r.doc["supportedVersions"], json({"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
}

// ----------------------------------------------------------------------------------- STATUS

TEST_P(CniCommandsTest, StatusIsSilentWhenTheControllerAnswers) {
  auto r = Do(Env("STATUS"), Config("1.1.0"));
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_P(CniCommandsTest, StatusIs50WhenTheControllerIsDown) {
  StopMock();
  auto r = Do(Env("STATUS"), Config("1.1.0"));
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 50) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find(url_), std::string::npos)
      << "names the controller URL: " << r.out;
}

TEST_P(CniCommandsTest, StatusIs50WhenTheStateDirIsUnusable) {
  const std::string file = state_.path() + "/a-file";
  std::ofstream(file) << "x";
  json cfg = Config("1.1.0");
  cfg["stateDir"] = file + "/state";
  auto r = Do(Env("STATUS"), cfg);
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 50) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find(file + "/state"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------------------- OUTCOME LOG

// The outcomes the plugin appended to its state dir's log, oldest first.
std::vector<CniOutcome> LoggedOutcomes(const std::string& state_dir) {
  std::vector<CniOutcome> out;
  CniOutcomeLogReader reader(CniOutcomeLogPath(state_dir));
  const auto counts = reader.ReadNew([&out](const CniOutcome& o) { out.push_back(o); });
  EXPECT_EQ(counts.bad_lines, 0u);
  return out;
}

TEST_P(CniCommandsTest, EachCommandAppendsItsOutcomeWithTheCodeItPrinted) {
  auto ok = Do(Env("STATUS"), Config("1.1.0"));
  ASSERT_EQ(ok.rc, 0) << ok.Describe();
  auto del = Do(Env("DEL", "c1"), Config());
  ASSERT_EQ(del.rc, 0) << del.Describe();
  StopMock();
  auto failed = Do(Env("STATUS"), Config("1.1.0"));
  ASSERT_NE(failed.rc, 0);
  // VERSION names no state dir: nothing to record it in.
  ASSERT_EQ(Do({{"CNI_COMMAND", "VERSION"}}, json::object()).rc, 0);

  const auto logged = LoggedOutcomes(state_.path());
  ASSERT_EQ(logged.size(), 3u);
  EXPECT_EQ(logged[0].command, "STATUS");
  EXPECT_EQ(logged[0].code, 0);
  EXPECT_EQ(logged[1].command, "DEL");
  EXPECT_EQ(logged[1].code, 0);
  EXPECT_EQ(logged[2].command, "STATUS");
  EXPECT_EQ(logged[2].code, failed.doc["code"].get<int>()) << failed.out;
  for (const CniOutcome& o : logged) EXPECT_GT(o.micros, 0);
  struct stat st {};
  ASSERT_EQ(::stat(CniOutcomeLogPath(state_.path()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_P(CniCommandsTest, AnUnwritableOutcomeLogDoesNotChangeTheAnswer) {
  // A directory where the log would be: the append fails, the command does not.
  ASSERT_EQ(::mkdir(CniOutcomeLogPath(state_.path()).c_str(), 0700), 0);
  auto r = Do(Env("DEL", "c1"), Config());
  EXPECT_EQ(r.rc, 0) << r.Describe();
}

// -------------------------------------------------------------------------------------- DEL

TEST_P(CniCommandsTest, DelWithNoRecordAndNoPortSucceeds) {
  for (const std::string& netns : {std::string("/var/run/netns/gone"), std::string()}) {
    auto r = Do(Env("DEL", "never-added", netns), Config());
    EXPECT_EQ(r.rc, 0) << r.Describe();
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_TRUE(Files().empty()) << "no lock file left behind";
}

TEST_P(CniCommandsTest, DelDeletesThePortAndTheRecord) {
  Record rec = MakeAttachment("c1");
  ASSERT_EQ(MockPortIds(), std::set<std::string>{rec.port_id});
  auto r = Do(Env("DEL", "c1"), Config("0.3.1"));
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
  // Again: everything is already gone, still success.
  r = Do(Env("DEL", "c1"), Config("0.3.1"));
  EXPECT_EQ(r.rc, 0) << r.Describe();
}

TEST_P(CniCommandsTest, DelDerivesThePortIdWithoutARecord) {
  const std::string id = PortIdFor(network_, "lost", "eth0");
  MakePort(id, "lost", network_);
  ASSERT_EQ(MockPortIds().size(), 1u);
  auto r = Do(Env("DEL", "lost"), Config());
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(MockPortIds().empty());
}

TEST_P(CniCommandsTest, DelWithControllerDownIs11AndKeepsTheRecord) {
  MakeAttachment("c1");
  StopMock();
  auto r = Do(Env("DEL", "c1"), Config());
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  EXPECT_TRUE(Files().count(RecordFile("c1"))) << "the record must survive for a retry";
  auto rec = RecordStore(state_.path()).Read(network_, "c1", "eth0");
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_TRUE(rec->complete());
}

// -------------------------------------------------------------------------------------- ADD

TEST_P(CniCommandsTest, AddForAnExistingAttachmentIs100AndCreatesNothing) {
  Record rec = MakeAttachment("c1");
  auto r = Do(Env("ADD", "c1"), Config());
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 100) << r.out;
  const std::string msg = r.doc["msg"];
  EXPECT_NE(msg.find("c1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("eth0"), std::string::npos) << msg;
  EXPECT_NE(msg.find(network_), std::string::npos) << msg;
  EXPECT_EQ(MockPortIds(), std::set<std::string>{rec.port_id});
  auto still = RecordStore(state_.path()).Read(network_, "c1", "eth0");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(RecordToJson(*still), RecordToJson(rec));
}

// Seed: a 400 for a create is the seed routes' reject_creates fault; no strict mode has it.
TEST_P(CniCommandsSeedTest, AddRefusedByTheControllerLeavesNothing) {
  mock::Faults f;
  f.reject_creates = 1;
  StartMock(f);
  auto r = Do(Env("ADD", "refused"), Config());
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 103) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find("400"), std::string::npos) << r.out;
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
}

TEST_P(CniCommandsAlcorTest, AddWhosePortNeverGetsReadyIs11AndLeavesNothing) {
  mock::Faults f;
  f.never_ready = true;
  StartMock(f);
  json cfg = Config();
  cfg["timeouts"]["readyMs"] = 150;
  auto r = Do(Env("ADD", "slow"), cfg);
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
}

// The host could not be programmed for the port. Alcor creates it and reports it failed: 102.
// v0.1 programs the host before it answers, so its POST fails (a 500 quoting why): 11, as for any
// controller error, with the controller's reason in the message.
TEST_P(CniCommandsTest, AddWhosePortFailsLeavesNothing) {
  mock::Faults f;
  f.fail_ready = true;
  StartMock(f);
  auto r = Do(Env("ADD", "failing"), Config());
  EXPECT_NE(r.rc, 0);
  if (alcor()) {
    EXPECT_EQ(r.doc["code"], 102) << r.out;
  } else {
    EXPECT_EQ(r.doc["code"], 11) << r.out;
    EXPECT_NE(r.doc["msg"].get<std::string>().find("goal state could not be programmed"),
              std::string::npos)
        << r.out;
  }
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
}

TEST_P(CniCommandsTest, AddInterruptedBySignalIs11AndLeavesNothing) {
  std::atomic<bool> cancelled{true};
  RunOptions options;
  options.cancelled = &cancelled;
  auto r = Do(Env("ADD", "sigterm"), Config(), options);
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
}

TEST_P(CniCommandsTest, AddWithControllerDownKeepsTheIntentRecord) {
  StopMock();
  auto r = Do(Env("ADD", "c1"), Config());
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  auto rec = RecordStore(state_.path()).Read(network_, "c1", "eth0");
  ASSERT_TRUE(rec.ok()) << "the intent record lets DEL/GC finish: " << rec.status().ToString();
  EXPECT_FALSE(rec->complete());
  EXPECT_EQ(rec->port_id, PortIdFor(network_, "c1", "eth0"));
  EXPECT_NE(r.doc["details"].get<std::string>().find("kept"), std::string::npos) << r.out;
}

// Alcor: the ADD must fail after its POST, on a port that never gets ready.
TEST_P(CniCommandsAlcorTest, AddAfterACrashRemovesTheEarlierPortFirst) {
  // A crashed ADD left an intent record naming a port that exists at the controller.
  const std::string earlier = UuidV4();
  MakePort(earlier, "c1", network_);
  Record intent;
  intent.network = network_;
  intent.container_id = "c1";
  intent.ifname = "eth0";
  intent.port_id = earlier;
  ASSERT_TRUE(RecordStore(state_.path()).Write(intent).ok());
  mock::Faults f;
  f.never_ready = true;  // the new port never gets ready: the ADD fails after its POST
  mock_->SetFaults(f);
  json cfg = Config();
  cfg["timeouts"]["readyMs"] = 100;
  auto r = Do(Env("ADD", "c1"), cfg);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  EXPECT_TRUE(MockPortIds().empty()) << "neither the earlier nor the new port may leak";
  EXPECT_TRUE(Files().empty());
}

// ------------------------------------------------------------------------------------ CHECK

TEST_P(CniCommandsTest, CheckFindsPrevResultAndControllerMismatches) {
  Record rec = MakeAttachment("c1");
  json prev = {
      {"cniVersion", "1.0.0"},
      {"interfaces",
       {{{"name", "eth0"}, {"mac", "0a:58:ff:ff:ff:ff"}, {"sandbox", "/var/run/netns/c1"}}}},
      {"ips", {{{"address", rec.ips.at(0).address}, {"interface", 0}}}}};
  json cfg = Config();
  cfg["prevResult"] = prev;
  auto r = Do(Env("CHECK", "c1", "/var/run/netns/c1"), cfg);
  EXPECT_EQ(r.doc["code"], 101) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find("0a:58:ff:ff:ff:ff"), std::string::npos) << r.out;

  cfg["prevResult"]["interfaces"][0]["mac"] = rec.mac;
  cfg["prevResult"]["ips"][0]["address"] = "10.242.255.254/16";
  r = Do(Env("CHECK", "c1", "/var/run/netns/c1"), cfg);
  EXPECT_EQ(r.doc["code"], 101) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find(rec.ips.at(0).address), std::string::npos)
      << r.out;

  // The port vanished at the controller.
  cfg["prevResult"]["ips"][0]["address"] = rec.ips.at(0).address;
  ASSERT_TRUE(Client()->DeletePort(rec.port_id).ok());
  r = Do(Env("CHECK", "c1", "/var/run/netns/c1"), cfg);
  EXPECT_EQ(r.doc["code"], 101) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find(rec.port_id), std::string::npos) << r.out;
}

TEST_P(CniCommandsTest, CheckOfAnIncompleteAttachmentIs3) {
  Record intent;
  intent.network = network_;
  intent.container_id = "c1";
  intent.ifname = "eth0";
  intent.port_id = PortIdFor(network_, "c1", "eth0");
  ASSERT_TRUE(RecordStore(state_.path()).Write(intent).ok());
  json cfg = Config("0.4.0");
  cfg["prevResult"] = {{"cniVersion", "0.4.0"}, {"interfaces", json::array()}};
  auto r = Do(Env("CHECK", "c1", "/var/run/netns/c1"), cfg);
  EXPECT_EQ(r.doc["code"], 3) << r.out;
}

// --------------------------------------------------------------------------------------- GC

TEST_P(CniCommandsTest, GcRemovesStaleAttachmentsAndLeakedPorts) {
  Record keep = MakeAttachment("keep");
  Record stale1 = MakeAttachment("stale1");
  Record stale2 = MakeAttachment("stale2");
  // Ports whose records were lost: one of this network on this host (leaked), one valid
  // attachment's port without a record, and ports GC must not touch.
  const std::string leaked = UuidV4();
  MakePort(leaked, "ghost", network_);
  const std::string valid_no_record = PortIdFor(network_, "valid2", "eth0");
  MakePort(valid_no_record, "valid2", network_);
  const std::string other_net = UuidV4();
  MakePort(other_net, "x", network_ + "x");
  const std::string other_host = UuidV4();
  MakePort(other_host, "y", network_, "node-b");

  json cfg = Config("1.1.0");
  cfg["cni.dev/valid-attachments"] = json::array({{{"containerID", "keep"}, {"ifname", "eth0"}},
                                                  {{"containerID", "valid2"}, {"ifname", "eth0"}}});
  auto r = Do(Env("GC"), cfg);
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(MockPortIds(),
            (std::set<std::string>{keep.port_id, valid_no_record, other_net, other_host}));
  EXPECT_EQ(Files(), std::set<std::string>{RecordFile("keep")});
}

TEST_P(CniCommandsTest, GcAcceptsTheOlderKeyAndTreatsNoKeyAsNothingValid) {
  Record a = MakeAttachment("a");
  Record b = MakeAttachment("b");
  json cfg = Config("1.1.0");
  cfg["cni.dev/attachments"] = json::array({{{"containerID", "a"}, {"ifname", "eth0"}}});
  auto r = Do(Env("GC"), cfg);
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_EQ(MockPortIds(), std::set<std::string>{a.port_id});
  EXPECT_EQ(Files(), std::set<std::string>{RecordFile("a")});

  r = Do(Env("GC"), Config("1.1.0"));
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
}

TEST_P(CniCommandsTest, GcWithControllerDownIs11AndKeepsRecords) {
  MakeAttachment("stale");
  StopMock();
  auto r = Do(Env("GC"), Config("1.1.0"));
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find("stale"), std::string::npos) << r.out;
  EXPECT_TRUE(Files().count(RecordFile("stale")));
}

TEST_P(CniCommandsTest, GcRejectsMalformedAttachmentLists) {
  json cfg = Config("1.1.0");
  cfg["cni.dev/valid-attachments"] = json::array({{{"containerID", 5}}});
  auto r = Do(Env("GC"), cfg);
  EXPECT_EQ(r.doc["code"], 7) << r.out;
  EXPECT_NE(r.doc["msg"].get<std::string>().find("cni.dev/valid-attachments[0]"), std::string::npos)
      << r.out;
}

// ------------------------------------------------------------------ moved controller, legacy

// A record names the controller and project its port was made at; DEL and GC delete it there
// even when the configuration names another controller (or project) now.
TEST_P(CniCommandsTest, DelAndGcDeleteThePortAtTheControllerTheRecordNames) {
  Record moved = MakeAttachment("moved");
  Record stale = MakeAttachment("stale");
  ASSERT_EQ(MockPortIds().size(), 2u);
  auto other = mock::MockServer::Create(MockOptions("10.244.0.0/16"));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_TRUE((*other)->Start().ok());

  json cfg = Config();
  cfg["mpurl"] = (*other)->base_url();
  auto r = Do(Env("DEL", "moved"), cfg);
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_EQ(MockPortIds(), std::set<std::string>{stale.port_id})
      << "the port must be deleted where the record says it is";
  EXPECT_FALSE(Files().count(RecordFile("moved")));

  json gc = Config("1.1.0");
  gc["mpurl"] = (*other)->base_url();
  r = Do(Env("GC"), gc);
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(MockPortIds().empty()) << "GC deletes the stale port at its own controller";
  EXPECT_TRUE(Files().empty());
}

TEST_P(CniCommandsTest, DelOfARecordAtAControllerThatIsDownIs11AndKeepsIt) {
  MakeAttachment("c1");
  const std::string old_url = url_;
  json cfg = Config();
  StopMock();  // the record's controller is gone; the configuration names a live one
  StartMock(mock::Faults{});
  cfg["mpurl"] = url_;
  ASSERT_NE(url_, old_url);
  auto r = Do(Env("DEL", "c1"), cfg);
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.doc["code"], 11) << r.out;
  EXPECT_TRUE(Files().count(RecordFile("c1"))) << "the record must survive for a retry";
}

// Records written by the previous version ("<containerId>_<ifname>.json") are still found: DEL
// deletes their port and removes them, GC collects them.
TEST_P(CniCommandsTest, DelAndGcHandleRecordsUnderTheLegacyName) {
  Record del = MakeAttachment("old-del");
  Record gc = MakeAttachment("old-gc");
  const std::string dir = state_.path() + "/" + network_;
  for (const Record& r : {del, gc}) {
    ASSERT_EQ(::rename((dir + "/" + r.container_id + ":eth0.json").c_str(),
                       (dir + "/" + r.container_id + "_eth0.json").c_str()),
              0);
  }
  auto r = Do(Env("DEL", "old-del"), Config());
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_EQ(MockPortIds(), std::set<std::string>{gc.port_id});
  EXPECT_EQ(Files(), std::set<std::string>{"old-gc_eth0.json"});

  r = Do(Env("GC"), Config("1.1.0"));
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_TRUE(MockPortIds().empty());
  EXPECT_TRUE(Files().empty());
}

// ------------------------------------------------------------------------------ GC vs. ADD

// An ADD in flight holds its attachment's lock from before its intent record until it is done.
// A GC that lists the ADD's port while the ADD is between "port created" and "record written"
// must not delete it: whatever the interleaving, a record never ends up without its port.
TEST_P(CniCommandsTest, GcNeverDeletesThePortOfAnAddInFlight) {
  RecordStore store(state_.path());
  auto lock = store.Lock(network_, "adding", "eth0");  // the ADD in flight
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  const std::string id = PortIdFor(network_, "adding", "eth0");
  MakePort(id, "adding", network_);  // created; the ADD's record is not on disk for now

  Outcome gc;
  std::thread collector([&] { gc = Do(Env("GC"), Config("1.1.0")); });
  // The GC has listed the records (none) and the ports (the ADD's) once it waits for the ADD's
  // lock; only then does the ADD write its record: the order that made the GC delete the port
  // of an ADD about to succeed.
  const bool gc_waits = testing::WaitForLockWaiter(
      state_.path() + "/" + network_ + "/" + RecordFile("adding") + ".lock",
      std::chrono::seconds(30));
  EXPECT_TRUE(gc_waits) << "the GC never waited for the ADD's lock";
  Record rec = MakeRecordOnly("adding", id);
  ASSERT_TRUE(store.Write(rec).ok());
  (void)lock->ReleaseAndRemove();
  collector.join();
  EXPECT_EQ(gc.rc, 0) << gc.Describe();

  auto found = store.Find(network_, "adding", "eth0");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  const bool has_record = found->valid();
  const bool has_port = MockPortIds().count(id) > 0;
  EXPECT_EQ(has_record, has_port) << "record without port (or port without record) after GC";
  EXPECT_TRUE(has_record) << "the GC waited for the ADD and then found its record";
}

TEST_P(CniCommandsTest, GcSweepsOldOrphanLockAndTempFilesOnly) {
  Record keep = MakeAttachment("keep");
  RecordStore store(state_.path());
  { ASSERT_TRUE(store.Lock(network_, "gone", "eth0").ok()); }   // an interrupted command's
  { ASSERT_TRUE(store.Lock(network_, "young", "eth0").ok()); }  // a command just started
  const std::string dir = state_.path() + "/" + network_;
  std::ofstream(dir + "/.gone:eth0.json.tmp.1.2") << "{";
  for (const std::string name : {"gone:eth0.json.lock", ".gone:eth0.json.tmp.1.2"}) {
    struct timeval times[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
    ASSERT_EQ(::utimes((dir + "/" + name).c_str(), times), 0);
  }
  json cfg = Config("1.1.0");
  cfg["cni.dev/valid-attachments"] = json::array({{{"containerID", "keep"}, {"ifname", "eth0"}}});
  auto r = Do(Env("GC"), cfg);
  EXPECT_EQ(r.rc, 0) << r.Describe();
  EXPECT_EQ(Files(), (std::set<std::string>{RecordFile("keep"), "young:eth0.json.lock"}));
  EXPECT_EQ(MockPortIds(), std::set<std::string>{keep.port_id});
}

}  // namespace
}  // namespace mizarmp::cni
