// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// fence/store: the FenceStore contract, run against every backend through the interface and
// OpenFenceStore() (a typed suite: a new backend adds one backend type to Backends), then what
// only one backend promises: SQLite's file modes, errors and kill -9; etcd's transactions
// between replicas, one transaction per change, hostile shards and a lost quorum. The etcd
// backend runs against a real single-member etcd on loopback (tests/support/etcd_cluster.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "common/strings.h"
#include "etcd/client.h"
#include "fence/cidrset.h"
#include "fence/etcd/backends.h"
#include "fence/store.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/support.h"

// ------------------------------------------------------------------------------- the backends
// Each backend of the suite: where a test's store lives and how something other than a FenceStore
// writes to it. At global scope because ctest names each test after its type
// ("FenceStoreTest.FencesSurviveReopenInCanonicalOrder<SqliteBackend>").

// The SQLite backend: a file path.
struct SqliteBackend {
  static void Require() {}
  static mizarmp::fence::EtcdStoreOptions Options(const std::string&) { return {}; }
  // Where a test's store lives, given the test's own temporary directory.
  static std::string Location(const std::string& dir) { return dir + "/state/fence.db"; }
  // A commit by something other than a FenceStore (an operator's sqlite3 on the file) that marks
  // every fence enforced.
  static void EnforceAllBehindTheStoresBack(const std::string& location, const std::string&) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(location.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE fences SET state = 'enforced'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
};

// The etcd backend: one etcd member for the test process, each test its own key prefix.
struct EtcdBackend {
  static mizarmp::testing::EtcdCluster& Cluster() {
    static mizarmp::testing::EtcdCluster cluster(1);
    return cluster;
  }
  static void Require() {
    MZ_REQUIRE_ETCD();
    ASSERT_EQ(Cluster().error(), "");
  }
  static std::string Location(const std::string&) { return Cluster().Location(); }
  static mizarmp::fence::EtcdStoreOptions Options(const std::string& dir) {
    mizarmp::fence::EtcdStoreOptions o;
    o.prefix = dir + "/";  // the test's temporary directory: unique
    o.client.call_timeout = std::chrono::milliseconds(1000);
    return o;
  }
  static std::unique_ptr<mizarmp::etcd::Client> Client() {
    mizarmp::etcd::Options o;
    o.endpoints = Cluster().endpoints();
    auto c = mizarmp::etcd::Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // Every shard rewritten by a client that is not a FenceStore, every fence made enforced.
  static void EnforceAllBehindTheStoresBack(const std::string& location, const std::string& dir) {
    (void)location;
    auto client = Client();
    ASSERT_NE(client, nullptr);
    etcdserverpb::RangeRequest range;
    range.set_key(dir + "/shards/");
    range.set_range_end(dir + "/shards0");
    auto shards = client->Range(range);
    ASSERT_TRUE(shards.ok()) << shards.status().ToString();
    etcdserverpb::TxnRequest txn;
    for (const auto& kv : shards->kvs()) {
      std::string value = kv.value();
      for (size_t at; (at = value.find("\"pending\"")) != std::string::npos;) {
        value.replace(at, 9, "\"enforced\"");
      }
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(kv.key());
      put->set_value(value);
    }
    auto done = client->Txn(txn);
    ASSERT_TRUE(done.ok() && done->succeeded()) << done.status().ToString();
  }
};

namespace mizarmp::fence {
namespace {

Cidr C(const std::string& text) {
  auto c = ParseFenceCidr(text);
  EXPECT_TRUE(c.ok()) << text;
  return c.ok() ? *c : Cidr();
}

std::vector<std::string> Fences(const FenceStore& store) {
  auto list = store.ListFences();
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  std::vector<std::string> out;
  if (!list.ok()) return out;
  for (const auto& e : *list)
    out.push_back(CanonicalCidr(e.cidr) + "=" + std::string(FenceStateName(e.state)));
  return out;
}

std::vector<std::string> Unfences(const FenceStore& store) {
  auto snap = store.Snapshot();
  EXPECT_TRUE(snap.ok());
  std::vector<std::string> out;
  if (!snap.ok()) return out;
  for (const auto& u : snap->unfences) out.push_back(CanonicalCidr(u.cidr));
  return out;
}

// Every fence's and pending unfence's record: "<cidr>:<port ids>", "<cidr>:untracked" without one.
std::vector<std::string> Records(const FenceStore& store) {
  auto snap = store.Snapshot();
  EXPECT_TRUE(snap.ok()) << snap.status().ToString();
  std::vector<std::string> out;
  if (!snap.ok()) return out;
  auto text = [](const Cidr& c, bool tracked, const std::vector<std::string>& held) {
    return CanonicalCidr(c) + ":" + (tracked ? Joined(held, ",") : "untracked");
  };
  for (const auto& e : snap->fences)
    out.push_back("fence " + text(e.cidr, e.tracked, e.held_ports));
  for (const auto& u : snap->unfences)
    out.push_back("unfence " + text(u.cidr, u.tracked, u.held_ports));
  return out;
}

// ------------------------------------------------------------------------------- the contract

template <typename Backend>
class FenceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Backend::Require(); }
  std::string Location() const { return Backend::Location(dir_.path()); }
  std::unique_ptr<FenceStore> Open() {
    auto s = OpenFenceStore(Location(), Backend::Options(dir_.path()));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  testing::TempDir dir_;
};

using Backends = ::testing::Types<SqliteBackend, EtcdBackend>;
TYPED_TEST_SUITE(FenceStoreTest, Backends);

TYPED_TEST(FenceStoreTest, FencesSurviveReopenInCanonicalOrder) {
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->AddFences({C("fd00::/64"), C("10.2.0.0/16"), C("10.1.0.5")}).ok());
    ASSERT_TRUE(store->RecordCompleted({.enforced = {C("10.2.0.0/16")}}).ok());
  }
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.1.0.5/32=pending", "10.2.0.0/16=enforced",
                                                      "fd00::/64=pending"}));
  auto list = store->ListFences();
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE((*list)[0].created_at.empty());
}

TYPED_TEST(FenceStoreTest, RepeatedFenceIsOneRowAndBecomesPendingAgain) {
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddFences({C("10.0.0.0/24"), C("10.0.0.0/24")}).ok());
  ASSERT_TRUE(store->RecordCompleted({.enforced = {C("10.0.0.0/24")}}).ok());
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.0.0.0/24=enforced"}));
  ASSERT_TRUE(store->AddFences({C("10.0.0.0/24")}).ok());
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.0.0.0/24=pending"}));
}

TYPED_TEST(FenceStoreTest, RemoveRecordsPendingUnfencesAcrossReopen) {
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->AddFences({C("10.0.0.0/24"), C("10.0.1.0/24"), C("10.9.0.0/16")}).ok());
    // Exact matches only (a wider CIDR does not lift the fences inside it, so a retried
    // unfence never lifts a newer, narrower fence); an unknown CIDR is harmless.
    auto removed = store->RemoveFences(
        {C("10.0.0.0/24"), C("10.0.1.0/24"), C("10.8.0.0/15"), C("192.168.0.0/16")});
    ASSERT_TRUE(removed.ok()) << removed.status().ToString();
    std::vector<std::string> names;
    for (const auto& c : *removed) names.push_back(CanonicalCidr(c));
    EXPECT_EQ(names, (std::vector<std::string>{"10.0.0.0/24", "10.0.1.0/24"}));
  }
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.9.0.0/16=pending"}));
  EXPECT_EQ(Unfences(*store), (std::vector<std::string>{"10.0.0.0/24", "10.0.1.0/24"}));
  ASSERT_TRUE(store->RecordCompleted({.unfenced = {C("10.0.0.0/24")}}).ok());
  EXPECT_EQ(Unfences(*store), (std::vector<std::string>{"10.0.1.0/24"}));
  // Fencing again drops the pending unfence of the same CIDR.
  ASSERT_TRUE(store->AddFences({C("10.0.1.0/24")}).ok());
  EXPECT_TRUE(Unfences(*store).empty());
  // A narrower unfence does not lift a wider fence.
  auto none = store->RemoveFences({C("10.9.1.0/24")});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TYPED_TEST(FenceStoreTest, RecordsFollowTheFenceThroughUnfenceAndRefence) {
  const Cidr a = C("10.0.1.0/24");
  const Cidr b = C("10.0.1.0/25");
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->AddFences({a, b}).ok());
    // A pair naming no stored fence (lifted meanwhile) is ignored; repeats are one entry.
    ASSERT_TRUE(store
                    ->RecordHeldPorts(
                        {{a, "p1"}, {a, "p2"}, {b, "p2"}, {a, "p1"}, {C("10.9.0.0/16"), "p3"}})
                    .ok());
  }
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Records(*store),
            (std::vector<std::string>{"fence 10.0.1.0/24:p1,p2", "fence 10.0.1.0/25:p2"}));
  // Lifted: the unfence keeps the record.
  ASSERT_TRUE(store->RemoveFences({a}).ok());
  EXPECT_EQ(Records(*store),
            (std::vector<std::string>{"fence 10.0.1.0/25:p2", "unfence 10.0.1.0/24:p1,p2"}));
  // p2 is up again: no record names it any more.
  ASSERT_TRUE(store->RecordCompleted({.released = {"p2", "unknown"}}).ok());
  EXPECT_EQ(Records(*store),
            (std::vector<std::string>{"fence 10.0.1.0/25:", "unfence 10.0.1.0/24:p1"}));
  // Fenced again before the unfence completed: the fence takes its record back.
  ASSERT_TRUE(store->AddFences({a}).ok());
  EXPECT_EQ(Records(*store),
            (std::vector<std::string>{"fence 10.0.1.0/24:p1", "fence 10.0.1.0/25:"}));
  // A completed unfence forgets the record: a later fence of the CIDR starts empty.
  ASSERT_TRUE(store->RemoveFences({a}).ok());
  ASSERT_TRUE(store->RecordCompleted({.unfenced = {a}}).ok());
  ASSERT_TRUE(store->AddFences({a}).ok());
  EXPECT_EQ(Records(*store),
            (std::vector<std::string>{"fence 10.0.1.0/24:", "fence 10.0.1.0/25:"}));
}

// What a pass completed is one change: fences enforced, ports released and unfences completed
// together, each as its own kind of change would have it.
TYPED_TEST(FenceStoreTest, APassCompletionIsRecordedWhole) {
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  const Cidr fenced = C("10.0.1.0/24");
  const Cidr lifted = C("10.0.2.0/24");
  const Cidr refenced = C("10.0.3.0/24");
  ASSERT_TRUE(store->AddFences({fenced, lifted, refenced}).ok());
  ASSERT_TRUE(
      store->RecordHeldPorts({{fenced, "p1"}, {fenced, "p2"}, {lifted, "p3"}, {refenced, "p4"}})
          .ok());
  ASSERT_TRUE(store->RemoveFences({lifted, refenced}).ok());
  ASSERT_TRUE(store->AddFences({refenced}).ok());
  auto before = store->Revision();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(store
                  ->RecordCompleted({.enforced = {fenced, lifted},
                                     .released = {"p2", "p3"},
                                     .unfenced = {lifted, refenced}})
                  .ok());
  // `lifted` is no fence to enforce; `refenced` is a fence again, so its record stays.
  EXPECT_EQ(Fences(*store),
            (std::vector<std::string>{"10.0.1.0/24=enforced", "10.0.3.0/24=pending"}));
  EXPECT_EQ(Records(*store),
            (std::vector<std::string>{"fence 10.0.1.0/24:p1", "fence 10.0.3.0/24:p4"}));
  auto after = store->Revision();
  ASSERT_TRUE(after.ok());
  EXPECT_NE(*after, *before);
  ASSERT_TRUE(store->RecordCompleted({}).ok());
  auto unchanged = store->Revision();
  ASSERT_TRUE(unchanged.ok());
  EXPECT_EQ(*unchanged, *after) << "nothing to record writes nothing";
}

TYPED_TEST(FenceStoreTest, TwoHandlesSeeEachOthersCommits) {
  auto a = this->Open();
  auto b = this->Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->AddFences({C("10.3.0.0/16")}).ok());
  EXPECT_EQ(Fences(*b), (std::vector<std::string>{"10.3.0.0/16=pending"}));
}

TYPED_TEST(FenceStoreTest, RepeatedSnapshotsFollowEveryChange) {
  // Snapshot() may answer repeated reads from memory; each kind of change must still show at
  // once, in the handle that made it and in another one on the same location.
  auto a = this->Open();
  auto b = this->Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->AddFences({C("10.3.0.0/16")}).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.3.0.0/16=pending"}));
    EXPECT_EQ(Fences(*b), (std::vector<std::string>{"10.3.0.0/16=pending"}));
  }
  ASSERT_TRUE(a->RecordCompleted({.enforced = {C("10.3.0.0/16")}}).ok());
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.3.0.0/16=enforced"}));
  EXPECT_EQ(Fences(*b), (std::vector<std::string>{"10.3.0.0/16=enforced"}));
  ASSERT_TRUE(b->AddFences({C("fd00::/64")}).ok());
  EXPECT_EQ(Fences(*b), (std::vector<std::string>{"10.3.0.0/16=enforced", "fd00::/64=pending"}));
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.3.0.0/16=enforced", "fd00::/64=pending"}));
  auto removed = a->RemoveFences({C("10.3.0.0/16")});
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"fd00::/64=pending"}));
  EXPECT_EQ(Fences(*b), (std::vector<std::string>{"fd00::/64=pending"}));
  auto snap = b->Snapshot();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->unfences.size(), 1u);
  ASSERT_TRUE(a->RecordCompleted({.unfenced = {C("10.3.0.0/16")}}).ok());
  snap = b->Snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(snap->unfences.empty());

  // A write by something else entirely.
  TypeParam::EnforceAllBehindTheStoresBack(this->Location(), this->dir_.path());
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"fd00::/64=enforced"}));
  EXPECT_EQ(Fences(*b), (std::vector<std::string>{"fd00::/64=enforced"}));
}

// ------------------------------------------------------------------------ SQLite's own promises

class SqliteFenceStoreTest : public ::testing::Test {
 protected:
  std::string Path() const { return SqliteBackend::Location(dir_.path()); }
  testing::TempDir dir_;
};

TEST_F(SqliteFenceStoreTest, CreatesPrivateFileInPrivateDir) {
  auto store = OpenFenceStore(Path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->AddFences({C("10.0.0.0/24")}).ok());
  struct stat st {};
  ASSERT_EQ(::stat(Path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_.path() + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // The WAL and shared-memory files are no more open than the database.
  for (const char* suffix : {"-wal", "-shm"}) {
    if (::stat((Path() + suffix).c_str(), &st) == 0) {
      EXPECT_EQ(st.st_mode & 0077, 0u) << suffix;
    }
  }
}

// For etcd the same promise is a quorum's commit; fence_ha_test kills a replica (kill -9) right
// after an acknowledged fence and reads it back through another.
TEST_F(SqliteFenceStoreTest, AcknowledgedFenceSurvivesKill9) {
  // A child process stores a fence, reports it acknowledged through a pipe and is killed
  // before it can close anything; the parent then opens the store.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    auto s = OpenFenceStore(Path());
    if (!s.ok() || !(*s)->AddFences({C("10.7.0.0/16"), C("fd07::/48")}).ok()) ::_exit(3);
    const char ack = 'y';
    if (::write(fds[1], &ack, 1) != 1) ::_exit(4);
    ::pause();  // killed here, with the store still open
    ::_exit(0);
  }
  ::close(fds[1]);
  char ack = 0;
  ASSERT_EQ(::read(fds[0], &ack, 1), 1);
  ::close(fds[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto store = OpenFenceStore(Path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(Fences(**store),
            (std::vector<std::string>{"10.7.0.0/16=pending", "fd07::/48=pending"}));
}

TEST_F(SqliteFenceStoreTest, NotADatabaseIsReported) {
  ASSERT_TRUE(MakeDirs(dir_.path() + "/state").ok());
  ASSERT_TRUE(WriteFileAtomic(Path(), std::string(8192, 'x')).ok());
  auto s = OpenFenceStore(Path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(Path()), std::string::npos) << s.status().ToString();
}

TEST_F(SqliteFenceStoreTest, DirectoryInTheWayIsReported) {
  ASSERT_TRUE(MakeDirs(Path()).ok());
  auto s = OpenFenceStore(Path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(Path()), std::string::npos) << s.status().ToString();
}

// A file as a version 1 server left it (user_version 1, no records), built with raw sqlite3.
void WriteVersion1File(const std::string& path, int user_version = 1) {
  ASSERT_TRUE(MakeDirs(DirName(path), 0700).ok());
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  const std::string sql =
      "CREATE TABLE fences (cidr TEXT PRIMARY KEY NOT NULL,"
      " state TEXT NOT NULL CHECK (state IN ('pending', 'enforced')),"
      " created_at TEXT NOT NULL, updated_at TEXT NOT NULL);"
      "CREATE TABLE unfences (cidr TEXT PRIMARY KEY NOT NULL, created_at TEXT NOT NULL);"
      "INSERT INTO fences VALUES ('10.0.1.0/24', 'enforced', '2026-01-01T00:00:00Z',"
      " '2026-01-01T00:00:00Z');"
      "INSERT INTO fences VALUES ('10.0.2.0/24', 'pending', '2026-01-01T00:00:00Z',"
      " '2026-01-01T00:00:00Z');"
      "INSERT INTO unfences VALUES ('10.0.3.0/24', '2026-01-01T00:00:00Z');"
      "PRAGMA user_version = " +
      std::to_string(user_version) + ";";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err != nullptr ? err : "");
  sqlite3_free(err);
  sqlite3_close(raw);
}

int UserVersion(const std::string& path) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  int version = -1;
  if (sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    version = sqlite3_column_int(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  return version;
}

TEST_F(SqliteFenceStoreTest, Version1FileIsMigratedInPlaceAndKeepsWorking) {
  WriteVersion1File(Path());
  {
    auto store = OpenFenceStore(Path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    // Every fence and unfence is kept, marked as having no record.
    EXPECT_EQ(Fences(**store),
              (std::vector<std::string>{"10.0.1.0/24=enforced", "10.0.2.0/24=pending"}));
    EXPECT_EQ(Records(**store), (std::vector<std::string>{"fence 10.0.1.0/24:untracked",
                                                          "fence 10.0.2.0/24:untracked",
                                                          "unfence 10.0.3.0/24:untracked"}));
    // New fences have records; an old fence lifted stays without one.
    ASSERT_TRUE((*store)->AddFences({C("10.0.4.0/24")}).ok());
    ASSERT_TRUE((*store)->RecordHeldPorts({{C("10.0.4.0/24"), "p"}}).ok());
    ASSERT_TRUE((*store)->RemoveFences({C("10.0.1.0/24")}).ok());
  }
  EXPECT_EQ(UserVersion(Path()), 2);
  auto store = OpenFenceStore(Path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(
      Records(**store),
      (std::vector<std::string>{"fence 10.0.2.0/24:untracked", "fence 10.0.4.0/24:p",
                                "unfence 10.0.1.0/24:untracked", "unfence 10.0.3.0/24:untracked"}));
}

TEST_F(SqliteFenceStoreTest, NewerSchemaIsRefusedNamingTheVersions) {
  WriteVersion1File(Path(), /*user_version=*/3);
  auto s = OpenFenceStore(Path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("schema version 3 is newer than this server's 2"),
            std::string::npos)
      << s.status().ToString();
}

TEST_F(SqliteFenceStoreTest, RelativePathIsInvalid) {
  auto s = OpenFenceStore("relative/fence.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

// ------------------------------------------------------------------------- etcd's own promises

class EtcdFenceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { EtcdBackend::Require(); }
  std::unique_ptr<FenceStore> Open() {
    auto s = OpenFenceStore(EtcdBackend::Location(""), EtcdBackend::Options(dir_.path()));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Writes `value` at `name` under this test's prefix, as something that is not a FenceStore.
  void Put(const std::string& name, const std::string& value) {
    auto client = EtcdBackend::Client();
    ASSERT_NE(client, nullptr);
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(dir_.path() + "/" + name);
    put->set_value(value);
    ASSERT_TRUE(client->Txn(txn).ok());
  }
  // Deletes `name` under this test's prefix, as something that is not a FenceStore.
  void Delete(const std::string& name) {
    auto client = EtcdBackend::Client();
    ASSERT_NE(client, nullptr);
    etcdserverpb::TxnRequest txn;
    txn.add_success()->mutable_request_delete_range()->set_key(dir_.path() + "/" + name);
    ASSERT_TRUE(client->Txn(txn).ok());
  }
  // The value at `name` under this test's prefix, as etcd holds it ("" absent).
  std::string Value(const std::string& name) {
    auto client = EtcdBackend::Client();
    if (client == nullptr) return "";
    etcdserverpb::RangeRequest range;
    range.set_key(dir_.path() + "/" + name);
    auto answer = client->Range(range);
    return answer.ok() && answer->kvs_size() == 1 ? answer->kvs(0).value() : "";
  }
  testing::TempDir dir_;
};

TEST_F(EtcdFenceStoreTest, ReplicasWritingAtOnceLoseNothing) {
  // Two replicas' stores, each writing from its own thread: every write reads, changes and
  // commits only if nobody wrote in between, so none overwrites the other's.
  auto a = Open();
  auto b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->AddFences({C("10.200.0.0/16")}).ok());
  auto writer = [](FenceStore* store, int first) {
    for (int i = first; i < first + 50; ++i) {
      EXPECT_TRUE(store->AddFences({C("10.1." + std::to_string(i) + ".0/24")}).ok());
      EXPECT_TRUE(store->RecordHeldPorts({{C("10.200.0.0/16"), "p" + std::to_string(i)}}).ok());
    }
  };
  std::thread ta(writer, a.get(), 0);
  std::thread tb(writer, b.get(), 100);
  ta.join();
  tb.join();
  auto snap = a->Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->fences.size(), 101u);
  for (const auto& f : snap->fences) {
    if (CanonicalCidr(f.cidr) == "10.200.0.0/16") {
      EXPECT_EQ(f.held_ports.size(), 100u);
    }
  }
}

// A change starts from the state this replica last committed; a writer that went around the guard
// (an operator's etcdctl) since is read, not overwritten, since each shard written is compared.
TEST_F(EtcdFenceStoreTest, AWriteAroundTheGuardIsReadNotOverwritten) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddFences({C("10.0.0.0/24")}).ok());  // shard 09
  ASSERT_NE(Value("shards/09"), "");
  Put("shards/09",
      R"({"fences":{"10.0.0.0/24":{"state":"pending","created_at":"2026-01-01T00:00:00Z",)"
      R"("updated_at":"2026-01-01T00:00:00Z","tracked":true,"held_ports":["p-by-hand"]},)"
      R"("not-a-cidr":{"state":"pending"}},"unfences":{}})");
  ASSERT_TRUE(store->RecordCompleted({.enforced = {C("10.0.0.0/24")}}).ok());
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.0.0.0/24=enforced"}));
  const std::string shard = Value("shards/09");
  EXPECT_NE(shard.find("not-a-cidr"), std::string::npos) << shard;
  EXPECT_NE(shard.find("p-by-hand"), std::string::npos) << shard;
}

// A read after this replica's own reads and writes still sees every other change: another
// replica's, a shard rewritten or deleted around the guard (which leaves the guard as it was).
TEST_F(EtcdFenceStoreTest, AReadSeesEveryChangeSinceTheLastOne) {
  auto a = Open();
  auto b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->AddFences({C("10.0.0.0/24"), C("10.1.0.0/24")}).ok());  // shards 09 and 56
  ASSERT_TRUE(a->RecordCompleted({.enforced = {C("10.1.0.0/24")}}).ok());
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.0.0.0/24=pending", "10.1.0.0/24=enforced"}));
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.0.0.0/24=pending", "10.1.0.0/24=enforced"}));

  ASSERT_TRUE(b->AddFences({C("10.2.0.0/24")}).ok());
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.0.0.0/24=pending", "10.1.0.0/24=enforced",
                                                  "10.2.0.0/24=pending"}));
  const std::string shard09 = Value("shards/09");
  ASSERT_NE(shard09.find("10.0.0.0/24"), std::string::npos) << shard09;
  Delete("shards/09");
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.1.0.0/24=enforced", "10.2.0.0/24=pending"}));
  Put("shards/09", shard09);
  EXPECT_EQ(Fences(*a), (std::vector<std::string>{"10.0.0.0/24=pending", "10.1.0.0/24=enforced",
                                                  "10.2.0.0/24=pending"}));
}

// The revision a replica's own changes lead to from a snapshot's: the chain ends where another
// replica's change came in between.
TEST_F(EtcdFenceStoreTest, OwnChangesAreChainedUntilAnotherWriterComesBetween) {
  auto a = Open();
  auto b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->AddFences({C("10.0.0.0/24")}).ok());
  auto snap = a->Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  auto revision = a->Revision();
  ASSERT_TRUE(revision.ok()) << revision.status().ToString();
  EXPECT_EQ(snap->revision, *revision);
  EXPECT_EQ(a->RevisionAfterOwnChanges(snap->revision), snap->revision);

  ASSERT_TRUE(a->RecordHeldPorts({{C("10.0.0.0/24"), "p1"}}).ok());
  ASSERT_TRUE(a->RecordCompleted({.enforced = {C("10.0.0.0/24")}}).ok());
  const auto own = a->Revision();
  ASSERT_TRUE(own.ok());
  EXPECT_GT(*own, snap->revision);
  EXPECT_EQ(a->RevisionAfterOwnChanges(snap->revision), *own);

  ASSERT_TRUE(b->AddFences({C("10.1.0.0/24")}).ok());
  const auto others = a->Revision();
  ASSERT_TRUE(others.ok());
  ASSERT_TRUE(a->RecordCompleted({.released = {"p1"}})
                  .ok());  // lost the race, so re-read and committed on b's
  const auto last = a->Revision();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(a->RevisionAfterOwnChanges(snap->revision), *own) << "b's change is not a's";
  EXPECT_EQ(a->RevisionAfterOwnChanges(*others), *last);
  EXPECT_EQ(b->RevisionAfterOwnChanges(snap->revision), snap->revision);
}

TEST_F(EtcdFenceStoreTest, AThousandCidrFenceIsOneTransaction) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<Cidr> cidrs;
  for (int i = 0; i < 1000; ++i) {
    cidrs.push_back(C("10.9." + std::to_string(i / 250) + "." + std::to_string(i % 250)));
  }
  ASSERT_TRUE(store->AddFences({C("192.0.2.0/24")}).ok());
  auto before = store->Revision();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(store->AddFences(cidrs).ok());
  auto after = store->Revision();
  ASSERT_TRUE(after.ok());
  // etcd's revision counts transactions: the fence took exactly one (nobody else writes here).
  EXPECT_EQ(*after, *before + 1);
  auto fences = store->ListFences();
  ASSERT_TRUE(fences.ok());
  EXPECT_EQ(fences->size(), 1001u);
  // A read changes nothing; a write that changes nothing writes nothing.
  ASSERT_TRUE(store->AddFences({}).ok());
  ASSERT_TRUE(store->RecordCompleted({.enforced = {C("198.51.100.0/24")}}).ok());
  auto again = store->Revision();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *after);
}

TEST_F(EtcdFenceStoreTest, RevisionMovesWithEveryWriteAndOnlyThen) {
  auto a = Open();
  auto b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto revision = a->Revision();
  ASSERT_TRUE(revision.ok()) << revision.status().ToString();
  EXPECT_EQ(*revision, 0) << "nothing was written under this prefix yet";
  const Cidr fence = C("10.0.0.0/24");
  auto expect_moved = [&](const Status& write, const char* what) {
    ASSERT_TRUE(write.ok()) << what << ": " << write.ToString();
    auto now = a->Revision();
    ASSERT_TRUE(now.ok()) << now.status().ToString();
    EXPECT_GT(*now, *revision) << what;
    revision = now;
  };
  expect_moved(a->AddFences({fence}), "AddFences");
  expect_moved(a->RecordHeldPorts({{fence, "p1"}}), "RecordHeldPorts");
  expect_moved(a->RecordCompleted({.enforced = {fence}}), "RecordCompleted: enforced");
  expect_moved(a->RecordCompleted({.released = {"p1"}}), "RecordCompleted: released");
  expect_moved(a->RemoveFences({fence}).status(), "RemoveFences");
  expect_moved(a->RecordCompleted({.unfenced = {fence}}), "RecordCompleted: unfenced");
  expect_moved(b->AddFences({fence}), "AddFences through another replica");
  ASSERT_TRUE(a->Snapshot().ok());
  ASSERT_TRUE(a->ListFences().ok());
  auto after_reads = a->Revision();
  ASSERT_TRUE(after_reads.ok());
  EXPECT_EQ(*after_reads, *revision);
}

TEST_F(EtcdFenceStoreTest, HostileShardsAreReportedOrSkippedNeverACrash) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AddFences({C("10.0.0.0/24")}).ok());
  // Shards 62 and 63 hold nothing of this test's own (10.0.0.0/24 is in shard 09). Entries that
  // do not parse are skipped; a shard that is not an object of objects is DATA_LOSS.
  Put("shards/63", R"({"fences":{"not-a-cidr":{"state":"pending"},"10.5.0.0/16":{"state":7},)"
                   R"("10.6.0.0/16":{"held_ports":"p1"}},"unfences":[]})");
  auto snap = store->Snapshot();
  EXPECT_FALSE(snap.ok());
  EXPECT_EQ(snap.status().code(), Code::kDataLoss) << snap.status().ToString();
  EXPECT_NE(snap.status().message().find("shards/63"), std::string::npos);

  Put("shards/63", R"({"fences":{"not-a-cidr":{"state":"pending"},"10.5.0.0/16":{"state":7}}})");
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.0.0.0/24=pending"}));
  Put("shards/62", "not json at all");
  auto bad = store->ListFences();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kDataLoss);
  EXPECT_NE(bad.status().message().find("shards/62"), std::string::npos) << bad.status().ToString();
  Put("shards/62", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(store->ListFences().status().code(), Code::kDataLoss);
}

TEST_F(EtcdFenceStoreTest, AChangeOverEtcdsRequestLimitIsResourceExhausted) {
  // etcd refuses a request over --max-request-bytes (1.5 MiB) itself, and one over that plus
  // 512 KiB already in gRPC: both are the operator's limit to raise, and nothing is stored.
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const Cidr fence = C("10.0.0.0/24");
  ASSERT_TRUE(store->AddFences({fence}).ok());
  for (int ports : {17000, 30000}) {
    std::vector<PortHold> holds;
    for (int i = 0; i < ports; ++i)
      holds.push_back({fence, std::to_string(i) + std::string(90, 'p')});
    Status s = store->RecordHeldPorts(holds);
    EXPECT_EQ(s.code(), Code::kResourceExhausted) << ports << ": " << s.ToString();
    EXPECT_NE(s.message().find("--max-request-bytes"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("fence store etcd://"), std::string::npos) << s.ToString();
  }
  EXPECT_EQ(Records(*store), (std::vector<std::string>{"fence 10.0.0.0/24:"}));
}

TEST_F(EtcdFenceStoreTest, AStoreOfAnotherLayoutIsRefused) {
  // Another schema, another shard count, and meta values that are no layout at all.
  for (const std::string& meta :
       {std::string(R"({"schema":9,"shards":64})"), std::string(R"({"schema":1,"shards":16})"),
        std::string("not json"), std::string(100000, '[') + std::string(100000, ']')}) {
    Put("meta", meta);
    auto s = OpenFenceStore(EtcdBackend::Location(""), EtcdBackend::Options(dir_.path()));
    ASSERT_FALSE(s.ok()) << meta.substr(0, 40);
    EXPECT_EQ(s.status().code(), Code::kFailedPrecondition) << s.status().ToString();
    EXPECT_NE(s.status().message().find(dir_.path() + "/meta"), std::string::npos)
        << s.status().ToString();
    EXPECT_LT(s.status().message().size(), 1000u) << "a foreign value is shown cut short";
  }
}

TEST(EtcdFenceStoreOpen, APrefixNotEndingInASlashIsInvalid) {
  for (const char* prefix : {"", "/mizarmp/fence"}) {
    EtcdStoreOptions options;
    options.prefix = prefix;
    auto s = OpenFenceStore("etcd://127.0.0.1:1", options);
    ASSERT_FALSE(s.ok()) << prefix;
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument) << s.status().ToString();
    EXPECT_NE(s.status().message().find("etcd://127.0.0.1:1"), std::string::npos)
        << s.status().ToString();
  }
}

TEST(EtcdFenceStoreQuorum, WithoutAQuorumChangesAreUnavailableNotHung) {
  MZ_REQUIRE_ETCD();
  testing::EtcdCluster cluster(3);
  ASSERT_EQ(cluster.error(), "");
  testing::TempDir dir;
  EtcdStoreOptions options;
  options.prefix = dir.path() + "/";
  options.client.call_timeout = std::chrono::milliseconds(1000);
  auto store = OpenFenceStore(cluster.Location(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->AddFences({C("10.0.0.0/24")}).ok());
  cluster.Kill(0);
  // Member 0 may have led: the two left elect a leader (500 ms election timeout) before the
  // change, or a loaded machine can take longer than the store's 1 s call timeout to elect.
  ASSERT_TRUE(cluster.WaitForQuorum(std::chrono::seconds(10)));
  ASSERT_TRUE((*store)->AddFences({C("10.0.1.0/24")}).ok()) << "a minority lost is harmless";
  cluster.Kill(1);
  Status s = (*store)->AddFences({C("10.0.2.0/24")});
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("etcd at"), std::string::npos) << s.ToString();
  // The change starts from the state this replica's last commit left, so its transaction went
  // out, and without a quorum nobody answered it: whether it was stored is unknown.
  EXPECT_NE(s.message().find("may or may not have been stored"), std::string::npos) << s.ToString();
  // The next change reads the store first, and without a quorum that read already fails:
  // nothing of it went out.
  s = (*store)->AddFences({C("10.0.3.0/24")});
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("nothing of it was stored"), std::string::npos) << s.ToString();
  // A read of the guard is linearizable: without a quorum it fails too.
  EXPECT_EQ((*store)->Revision().status().code(), Code::kUnavailable);
  ASSERT_TRUE(cluster.Restart(1));
  EXPECT_EQ(Fences(**store),
            (std::vector<std::string>{"10.0.0.0/24=pending", "10.0.1.0/24=pending"}));
}

}  // namespace
}  // namespace mizarmp::fence
