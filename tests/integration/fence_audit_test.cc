// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence audit's log (fence/audit.h) on both backends: entries come back as appended, in
// order, with their sequence and time set; the log keeps only its newest entries; SQLite's file
// is private; a hostile document in it is an error naming the log, not a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "fence/audit.h"
#include "fence/etcd/audit.h"
#include "fence/etcd/backends.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

AuditEntry Request(const std::string& id, const std::string& cidr) {
  AuditEntry e;
  e.action = "fence";
  e.replica = "replica-a";
  e.request_id = id;
  e.caller = "unix:";
  e.cidrs = {cidr};
  return e;
}

AuditEntry Pass(std::vector<std::string> disabled, std::vector<std::string> enabled) {
  AuditEntry e;
  e.action = "pass";
  e.replica = "replica-a";
  e.cidrs = {"10.0.0.0/24"};
  e.disabled = std::move(disabled);
  e.enabled = std::move(enabled);
  return e;
}

// What every backend promises; `open(capacity)` opens one fresh log.
void ExpectTheLogsContract(
    const std::function<Result<std::unique_ptr<AuditLog>>(size_t capacity)>& open) {
  auto log = open(3);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto empty = (*log)->Recent(10);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->empty());

  const std::vector<AuditEntry> appended = {Request("req-1", "10.0.0.0/24"),
                                            Pass({"port-a", "port-b"}, {}),
                                            Request("req-2", "10.0.1.0/24"), Pass({}, {"port-a"})};
  for (const AuditEntry& e : appended) ASSERT_TRUE((*log)->Append(e).ok());
  auto recent = (*log)->Recent(10);
  ASSERT_TRUE(recent.ok()) << recent.status().ToString();
  // Capacity 3: the first entry went; the rest come back oldest first, as appended.
  ASSERT_EQ(recent->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    AuditEntry got = (*recent)[i];
    EXPECT_GT(got.sequence, 0u);
    if (i > 0) {
      EXPECT_GT(got.sequence, (*recent)[i - 1].sequence);
    }
    EXPECT_EQ(got.time.size(), 20u) << got.time;  // 2026-11-28T12:34:56Z
    got.sequence = 0;
    got.time.clear();
    EXPECT_EQ(got, appended[i + 1]) << AuditEntryToJson(got).dump();
  }
  // A limit takes the newest.
  auto newest = (*log)->Recent(1);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ(newest->front().enabled, std::vector<std::string>{"port-a"});
}

TEST(FenceAudit, SqliteKeepsTheNewestEntriesInAPrivateFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/lib/audit.db";
  ExpectTheLogsContract([&](size_t capacity) { return OpenSqliteAuditLog(path, capacity); });
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(FenceAudit, EtcdKeepsTheNewestEntriesBesideTheStore) {
  testing::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.error().empty()) << etcd.error();
  const std::string prefix = AuditPrefix(EtcdStoreOptions{}.prefix);
  EXPECT_EQ(prefix, "/mizarmp/fence-audit/");  // beside the store's keys, not among them
  ExpectTheLogsContract([&](size_t capacity) {
    return OpenEtcdAuditLog(etcd.Location(), etcd::Options{}, prefix, capacity);
  });
}

// Two replicas' clocks may disagree, and an entry's key starts with its replica's time: a
// replica whose clock is an hour behind writes keys that sort first. The newest entries by
// creation are kept, as Recent() lists them, not the newest by key.
TEST(FenceAudit, EtcdKeepsTheNewestEntriesWhateverTheReplicasClocks) {
  testing::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.error().empty()) << etcd.error();
  const std::string prefix = "/audit-clocks/";
  auto log = OpenEtcdAuditLog(etcd.Location(), etcd::Options{}, prefix, 2);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE((*log)->Append(Request("req-1", "10.0.0.0/24")).ok());
  // What a replica an hour behind appends: a key of an earlier time, the same JSON.
  etcd::Options options;
  options.endpoints = etcd.endpoints();
  auto client = etcd::Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const auto hour_ago = std::chrono::system_clock::now() - std::chrono::hours(1);
  char stamp[32];  // as the log names its keys: nanoseconds, 20 digits
  std::snprintf(stamp, sizeof(stamp), "%020lld",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           hour_ago.time_since_epoch())
                                           .count()));
  AuditEntry behind = Request("req-2", "10.0.1.0/24");
  behind.replica = "replica-b";
  behind.time = "2026-11-28T11:00:00Z";
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(prefix + "e/" + stamp + "-replica-b");
  put->set_value(AuditEntryToJson(behind).dump());
  ASSERT_TRUE((*client)->Txn(txn).ok());
  ASSERT_TRUE((*log)->Append(Request("req-3", "10.0.2.0/24")).ok());

  auto recent = (*log)->Recent(10);
  ASSERT_TRUE(recent.ok()) << recent.status().ToString();
  std::vector<std::string> ids;
  for (const AuditEntry& e : *recent) ids.push_back(e.request_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"req-2", "req-3"}));
}

TEST(FenceAudit, AHostileDocumentIsRefusedNamingTheField) {
  for (const char* doc : {R"([])", R"({"action":"fence","cidrs":"10.0.0.0/8"})",
                          R"({"action":"pass","disabled":[1,2]})", R"({"time":"x"})",
                          R"({"action":"fence","sequence":-1})"}) {
    const auto parsed = AuditEntryFromJson(nlohmann::json::parse(doc));
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << doc;
    EXPECT_NE(parsed.status().message().find("audit entry"), std::string::npos) << doc;
  }
}

}  // namespace
}  // namespace mizarmp::fence
