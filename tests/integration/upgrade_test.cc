// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Upgrades that keep state: a fence store that an earlier release's mizarmp-addons wrote is read
// by today's FenceService with nothing lost, in SQLite and in etcd.
//
// Each directory of tests/upgrade/fixtures/ is one release's store, written by that release's
// server through tests/upgrade/make_fixtures.sh: fence.db, etcd.json (every key under the
// server's prefix) and manifest.json (the ports the fences were made over and what the store
// holds). A test recreates those ports at a fresh strict Alcor mock, the same ones down, opens a
// copy of the store and checks what a user sees: every fence listed, a reconcile that keeps the
// fenced ports down and finishes what was pending, each unfence re-enabling exactly the ports its
// fence held, and a store still readable by the next start. None of it names a schema version:
// the store migrates whatever it finds.
//
// Not here: SQLite files of schema version 1 (written by no fixture: fence_store_test's
// Version1FileIsMigratedInPlaceAndKeepsWorking builds one), and the port index, which keeps soft
// state and drops an earlier schema on purpose (fence/sqlite_port_index.cc): the node agents
// publish it again.
#include <grpcpp/server_context.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "common/ipaddr.h"
#include "etcd/client.h"
#include "fence/service/fence_service.h"
#include "mock-server/mock.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using nlohmann::json;
using PortIds = std::set<std::string>;

// ------------------------------------------------------------------------------ the fixtures

std::string FixturesDir() { return testing::SourceDir() + "/tests/upgrade/fixtures"; }

// The releases that left a fixture, in name order; empty when none could be read (the test
// AtLeastOneReleaseLeftAFixture then fails).
std::vector<std::string> FixtureReleases() {
  std::vector<std::string> releases;
  auto names = ListDir(FixturesDir());
  if (!names.ok()) return releases;
  for (const std::string& name : *names) {
    if (ReadFile(FixturesDir() + "/" + name + "/manifest.json").ok()) releases.push_back(name);
  }
  std::sort(releases.begin(), releases.end());
  return releases;
}

// A stored fence, or a pending unfence, as the manifest has it.
struct FixtureFence {
  std::string cidr;
  std::string state;  // "enforced" | "pending"; empty for an unfence
  PortIds held_ports;
  Cidr parsed;
};

struct FixturePort {
  std::string id;
  std::string ip;
  std::string node;
  bool down = false;  // when the earlier server stopped
};

struct Manifest {
  std::string written_by;
  mock::Options mock;  // the project, VPC, subnet and CIDR the ports were made in
  std::vector<FixturePort> ports;
  std::vector<FixtureFence> fences;  // in ListClusterFence's order
  std::vector<FixtureFence> pending_unfences;
  std::string sqlite_file;
  std::string etcd_dump;
};

FixtureFence FenceFrom(const json& j) {
  FixtureFence f{j.at("cidr").get<std::string>(), j.value("state", ""),
                 j.at("held_ports").get<PortIds>(), Cidr()};
  auto parsed = Cidr::Parse(f.cidr);
  EXPECT_TRUE(parsed.ok()) << f.cidr;
  if (parsed.ok()) f.parsed = *parsed;
  return f;
}

// The manifest of `release`; throws (a test error naming the key) when it does not parse.
Manifest ReadManifest(const std::string& release) {
  auto text = ReadFile(FixturesDir() + "/" + release + "/manifest.json");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  const json j = json::parse(text.ok() ? *text : std::string("{}"));
  Manifest m;
  m.written_by = j.at("written_by").get<std::string>();
  const json& mp = j.at("mizarmp");
  m.mock.strict = true;
  m.mock.dialect = mock::Dialect::kAlcor;
  m.mock.project_id = mp.at("project").get<std::string>();
  m.mock.vpc_id = mp.at("vpc").get<std::string>();
  m.mock.subnet_id = mp.at("subnet").get<std::string>();
  m.mock.cidr = mp.at("cidr").get<std::string>();
  for (const json& p : j.at("ports")) {
    m.ports.push_back({p.at("id").get<std::string>(), p.at("ip").get<std::string>(),
                       p.at("node").get<std::string>(), p.at("down").get<bool>()});
  }
  for (const json& f : j.at("fences")) m.fences.push_back(FenceFrom(f));
  for (const json& u : j.at("pending_unfences")) m.pending_unfences.push_back(FenceFrom(u));
  m.sqlite_file = j.at("sqlite").get<std::string>();
  m.etcd_dump = j.at("etcd").get<std::string>();
  return m;
}

// Standard base64 (etcdctl's JSON output); nullopt for anything else.
std::optional<std::string> DecodeBase64(std::string_view text) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int pending = 0;
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  for (const char c : text) {
    const size_t value = kAlphabet.find(c);
    if (value == std::string_view::npos) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    pending += 6;
    if (pending >= 8) {
      pending -= 8;
      out.push_back(static_cast<char>((bits >> pending) & 0xff));
    }
  }
  return out;
}

// ------------------------------------------------------------------ what the manifest promises

bool Inside(const FixtureFence& fence, const FixturePort& port) {
  auto ip = IpAddress::Parse(port.ip);
  EXPECT_TRUE(ip.ok()) << port.ip;
  return ip.ok() && fence.parsed.Contains(*ip);
}

// The ports `fence` holds down once a pass of the new server ran: its record, and for a pending
// fence also the ports inside it that were up, which the pass disables. (No fixture puts a
// pending fence over a port that only another fence keeps down.)
PortIds HeldAfterPass(const Manifest& m, const FixtureFence& fence) {
  PortIds held = fence.held_ports;
  if (fence.state != "pending") return held;
  for (const FixturePort& p : m.ports) {
    if (!p.down && Inside(fence, p)) held.insert(p.id);
  }
  return held;
}

// The ports that the fences from the `first`-th on hold down after a pass.
PortIds HeldByFencesFrom(const Manifest& m, size_t first) {
  PortIds held;
  for (size_t i = first; i < m.fences.size(); ++i) {
    const PortIds of_fence = HeldAfterPass(m, m.fences[i]);
    held.insert(of_fence.begin(), of_fence.end());
  }
  return held;
}

// The ports down after the new server's first pass: what was down stays down but for the ports
// a pending unfence's record names and no fence holds; the pending fences' ports go down.
PortIds DownAfterPass(const Manifest& m) {
  const PortIds fenced = HeldByFencesFrom(m, 0);
  PortIds down = fenced;
  for (const FixturePort& p : m.ports) {
    if (p.down) down.insert(p.id);
  }
  for (const FixtureFence& u : m.pending_unfences) {
    for (const std::string& id : u.held_ports) {
      if (fenced.count(id) == 0) down.erase(id);
    }
  }
  return down;
}

std::vector<std::string> CidrsOfFencesFrom(const Manifest& m, size_t first) {
  std::vector<std::string> cidrs;
  for (size_t i = first; i < m.fences.size(); ++i) cidrs.push_back(m.fences[i].cidr);
  return cidrs;
}

// ---------------------------------------------------------------------------------- the tests

enum class Backend { kSqlite, kEtcd };

struct UpgradeCase {
  std::string release;
  Backend backend;
};

std::vector<UpgradeCase> UpgradeCases() {
  std::vector<UpgradeCase> cases;
  for (const std::string& release : FixtureReleases()) {
    cases.push_back({release, Backend::kSqlite});
    cases.push_back({release, Backend::kEtcd});
  }
  return cases;
}

// How gtest shows a case in a failure and in the test list ctest reads.
void PrintTo(const UpgradeCase& c, std::ostream* out) {
  *out << c.release << (c.backend == Backend::kSqlite ? " in SQLite" : " in etcd");
}

// "0_1_0_g04b93c7_sqlite": the release with what gtest does not allow in a name replaced.
std::string CaseName(const ::testing::TestParamInfo<UpgradeCase>& info) {
  std::string name = info.param.release;
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name + (info.param.backend == Backend::kSqlite ? "_sqlite" : "_etcd");
}

// One etcd member for the test process; each test loads the dump under its own prefix.
testing::EtcdCluster& Etcd() {
  static testing::EtcdCluster cluster(1);
  return cluster;
}

class UpgradeTest : public ::testing::TestWithParam<UpgradeCase> {
 protected:
  void SetUp() override {
    if (etcd()) {
      MZ_REQUIRE_ETCD();
      ASSERT_EQ(Etcd().error(), "");
    }
    manifest_ = ReadManifest(GetParam().release);
    ASSERT_NO_FATAL_FAILURE(RecreatePorts());
    if (etcd()) {
      ASSERT_NO_FATAL_FAILURE(LoadEtcdDump());
    } else {
      ASSERT_NO_FATAL_FAILURE(CopySqliteFile());
    }
    ASSERT_NO_FATAL_FAILURE(StartService());
  }

  void TearDown() override {
    if (service_) service_->Stop();
  }

  bool etcd() const { return GetParam().backend == Backend::kEtcd; }

  // The manifest's ports at a fresh mock, with the ids and addresses they had, the same ones down.
  void RecreatePorts() {
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(manifest_.mock, &mock_));
    client::ClientConfig cc;
    cc.base_url = mock_->base_url();
    cc.project_id = manifest_.mock.project_id;
    auto made = client::Client::Create(cc);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    mp_ = std::move(*made);
    for (const FixturePort& p : manifest_.ports) {
      client::PortSpec spec;
      spec.project_id = manifest_.mock.project_id;
      spec.id = p.id;
      spec.name = "k8s_" + p.id;
      spec.network_id = manifest_.mock.vpc_id;
      spec.veth_name = "eth0";
      spec.network_ns = "/var/run/netns/none-" + p.id;
      spec.host_id = p.node;
      spec.fixed_ips.push_back({manifest_.mock.subnet_id, p.ip});
      auto port = mp_->CreatePort(spec);
      ASSERT_TRUE(port.ok()) << p.id << ": " << port.status().ToString();
      if (p.down) {
        auto updated = mp_->UpdatePort(p.id, json{{"admin_state_up", false}});
        ASSERT_TRUE(updated.ok()) << p.id << ": " << updated.status().ToString();
      }
    }
    ASSERT_EQ(DownPorts(), DownAtCapture());
  }

  std::string FixtureFile(const std::string& name) const {
    return FixturesDir() + "/" + GetParam().release + "/" + name;
  }

  std::string SqlitePath() const { return dir_.path() + "/lib/fence.db"; }

  // A copy: the committed file stays as the earlier release left it.
  void CopySqliteFile() {
    auto bytes = ReadFile(FixtureFile(manifest_.sqlite_file));
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    ASSERT_TRUE(MakeDirs(dir_.path() + "/lib", 0700).ok());
    ASSERT_TRUE(WriteFileAtomic(SqlitePath(), *bytes, 0600).ok());
  }

  // Every key of the dump, moved from the earlier server's prefix to this test's, in one
  // transaction.
  void LoadEtcdDump() {
    auto text = ReadFile(FixtureFile(manifest_.etcd_dump));
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    const json dump = json::parse(*text);
    const std::string from = dump.at("prefix").get<std::string>();
    etcdserverpb::TxnRequest txn;
    for (const json& kv : dump.at("kvs")) {
      auto key = DecodeBase64(kv.at("key").get<std::string>());
      auto value = DecodeBase64(kv.at("value").get<std::string>());
      ASSERT_TRUE(key && value) << kv.dump();
      ASSERT_EQ(key->rfind(from, 0), 0u) << *key << " is not under " << from;
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(EtcdPrefix() + key->substr(from.size()));
      put->set_value(*value);
    }
    etcd::Options o;
    o.endpoints = Etcd().endpoints();
    auto client = etcd::Client::Connect(o);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    auto done = (*client)->Txn(txn);
    ASSERT_TRUE(done.ok() && done->succeeded()) << done.status().ToString();
  }

  std::string EtcdPrefix() const { return dir_.path() + "/"; }  // the temporary dir: unique

  FenceOptions Options() const {
    FenceOptions o;
    o.mizarmp.base_url = mock_->base_url();
    o.mizarmp.project_id = manifest_.mock.project_id;
    o.mizarmp.request_timeout = std::chrono::milliseconds(3000);
    o.state_dir = dir_.path() + "/cni";
    o.fence_store = SqlitePath();
    if (etcd()) {
      o.fence_store = Etcd().Location();
      o.etcd.prefix = EtcdPrefix();
    }
    o.replica_id = "upgrade-test";
    o.reconcile_interval = std::chrono::hours(1);  // the tests pass themselves
    return o;
  }

  // (Re)starts today's service on the store, and returns once one of its passes completed
  // (on etcd, the first ones fail until this replica is elected).
  void StartService() {
    if (service_) service_->Stop();
    service_ = std::make_unique<FenceService>(Options());
    const Status opened = service_->StartAndWait();
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    Result<EnforceReport> pass = service_->Reconcile();
    while (!pass.ok() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      pass = service_->Reconcile();
    }
    ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  }

  PortIds DownPorts() const {
    PortIds down;
    for (const auto& p : mock_->Ports()) {
      if (!p.admin_state_up) down.insert(p.id);
    }
    return down;
  }

  PortIds DownAtCapture() const {
    PortIds down;
    for (const FixturePort& p : manifest_.ports) {
      if (p.down) down.insert(p.id);
    }
    return down;
  }

  std::vector<std::string> List() {
    ::fence::ListClusterFenceRequest req;
    ::fence::ListClusterFenceResponse resp;
    grpc::ServerContext ctx;
    const grpc::Status s = service_->ListClusterFence(&ctx, &req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> cidrs;
    for (const auto& c : resp.cidrs()) cidrs.push_back(c.cidr());
    return cidrs;
  }

  grpc::Status Unfence(const std::string& cidr) {
    ::fence::UnfenceClusterNetworkRequest req;
    req.add_cidrs()->set_cidr(cidr);
    ::fence::UnfenceClusterNetworkResponse resp;
    grpc::ServerContext ctx;
    return service_->UnfenceClusterNetwork(&ctx, &req, &resp);
  }

  // What an independent reader of the SQLite file says of it ("ok" when sound).
  std::string SqliteQuickCheck() const {
    sqlite3* raw = nullptr;
    std::string verdict = "cannot open";
    if (sqlite3_open_v2(SqlitePath().c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* stmt = nullptr;
      if (sqlite3_prepare_v2(raw, "PRAGMA quick_check", -1, &stmt, nullptr) == SQLITE_OK &&
          sqlite3_step(stmt) == SQLITE_ROW) {
        verdict = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      }
      sqlite3_finalize(stmt);
    }
    sqlite3_close(raw);
    return verdict;
  }

  testing::TempDir dir_;
  Manifest manifest_;
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<client::Client> mp_;
  std::unique_ptr<FenceService> service_;
};

TEST(UpgradeFixtures, AtLeastOneReleaseLeftAFixture) {
  EXPECT_FALSE(FixtureReleases().empty()) << "no manifest.json under " << FixturesDir();
}

TEST_P(UpgradeTest, EveryFenceIsListedAlsoAfterARestart) {
  const std::vector<std::string> stored = CidrsOfFencesFrom(manifest_, 0);
  EXPECT_EQ(List(), stored) << "store written by " << manifest_.written_by;
  // The second start opens the store as the first left it (migrated, if it was).
  ASSERT_NO_FATAL_FAILURE(StartService());
  EXPECT_EQ(List(), stored);
}

TEST_P(UpgradeTest, AReconcileKeepsTheFencedPortsDownAndChangesNothingElse) {
  // The first pass (StartService) finished the pending fence and unfence.
  const PortIds expected = DownAfterPass(manifest_);
  EXPECT_EQ(DownPorts(), expected) << "store written by " << manifest_.written_by;
  auto again = service_->Reconcile();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(DownPorts(), expected);
}

TEST_P(UpgradeTest, EachUnfenceReenablesExactlyThePortsItsFenceHeld) {
  PortIds down = DownAfterPass(manifest_);
  for (size_t i = 0; i < manifest_.fences.size(); ++i) {
    const FixtureFence& fence = manifest_.fences[i];
    const grpc::Status s = Unfence(fence.cidr);
    ASSERT_TRUE(s.ok()) << fence.cidr << ": " << s.error_message();
    // Its ports come up, but for those a fence not lifted yet still holds.
    const PortIds still_held = HeldByFencesFrom(manifest_, i + 1);
    for (const std::string& id : HeldAfterPass(manifest_, fence)) {
      if (still_held.count(id) == 0) down.erase(id);
    }
    EXPECT_EQ(DownPorts(), down) << "after unfencing " << fence.cidr;
    EXPECT_EQ(List(), CidrsOfFencesFrom(manifest_, i + 1)) << "after unfencing " << fence.cidr;
  }
  // What is left down was down for another reason (an operator's), and stays so; the store, as
  // today's server left it, is read by the next start.
  ASSERT_NO_FATAL_FAILURE(StartService());
  EXPECT_TRUE(List().empty());
  EXPECT_EQ(DownPorts(), down);
  if (!etcd()) {
    EXPECT_EQ(SqliteQuickCheck(), "ok");
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, UpgradeTest, ::testing::ValuesIn(UpgradeCases()), CaseName);
// A checkout without fixtures is reported by AtLeastOneReleaseLeftAFixture, not by gtest.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UpgradeTest);

}  // namespace
}  // namespace mizarmp::fence
