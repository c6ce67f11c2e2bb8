// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// RecordCache: GetFenceClients sees exactly what RecordStore::ListAll() sees, and reads a
// network directory again only when it changed (or changed too recently to trust its mtime).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>

#include "common/fileutil.h"
#include "records/cache.h"
#include "records/records.h"
#include "tests/support/support.h"

namespace mizarmp::records {
namespace {

using std::chrono::hours;

Record Sample(const std::string& network, const std::string& cid, const std::string& ip) {
  Record r;
  r.state = Record::State::kComplete;
  r.network = network;
  r.container_id = cid;
  r.ifname = "eth0";
  r.netns = "/var/run/netns/" + cid;
  r.port_id = "port-" + cid;
  r.project_id = "3dda2801-d675-4688-a63f-dcda8d327f50";
  r.subnet_id = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
  r.host_id = "node-a";
  r.mpurl = "http://127.0.0.1:9090";
  r.mac = "0a:58:0a:f0:00:05";
  r.created_at = NowRfc3339();
  r.ips = {{ip + "/16", "10.240.0.1"}};
  return r;
}

// The (network, container, first address) of every record in a snapshot.
std::set<std::string> Keys(const std::vector<RecordCache::Records>& snapshot) {
  std::set<std::string> keys;
  for (const auto& list : snapshot) {
    for (const auto& r : *list) {
      keys.insert(r.network + "/" + r.container_id + "/" + (r.ips.empty() ? "" : r.ips[0].address));
    }
  }
  return keys;
}

std::set<std::string> Keys(const std::vector<Record>& records) {
  return Keys({std::make_shared<const std::vector<Record>>(records)});
}

// Sets a directory's mtime `age` into the past, as if its last change was that long ago.
void Age(const std::string& dir, std::chrono::seconds age) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const timespec t[2] = {now, {now.tv_sec - static_cast<time_t>(age.count()), 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.c_str(), t, 0), 0) << dir;
}

// Rewrites a record file in place (same inode, no rename, the directory's mtime untouched): a
// change the cache is documented not to see, which makes a cached read observable.
void RewriteInPlace(const std::string& path, const std::string& from, const std::string& to) {
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::string s = *text;
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << s;
  s.replace(at, from.size(), to);
  std::ofstream(path, std::ios::in | std::ios::out | std::ios::trunc) << s;
}

class RecordCacheTest : public ::testing::Test {
 protected:
  void Put(const Record& r) { ASSERT_TRUE(store_.Write(r).ok()); }

  mizarmp::testing::TempDir dir_;
  RecordStore store_{dir_.path() + "/state"};
  RecordCache cache_{dir_.path() + "/state"};
};

TEST_F(RecordCacheTest, MissingStateDirIsEmpty) {
  auto snap = cache_.Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_TRUE(snap->empty());
}

TEST_F(RecordCacheTest, SameRecordsAsListAll) {
  Put(Sample("net-a", "c1", "10.240.0.5"));
  Put(Sample("net-a", "c2", "10.240.0.6"));
  Put(Sample("net-b", "c3", "10.241.0.7"));
  // What ListAll skips, the cache skips: a stray file at the top, a dot directory, a lock file,
  // a record that is not JSON.
  std::ofstream(dir_.path() + "/state/stray.txt") << "x";
  ASSERT_EQ(::mkdir((dir_.path() + "/state/.hidden").c_str(), 0700), 0);
  std::ofstream(dir_.path() + "/state/net-a/c9_eth0.json") << "{not json";
  std::ofstream(dir_.path() + "/state/net-a/c1:eth0.json.lock") << "";

  auto all = store_.ListAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  auto snap = cache_.Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(Keys(*snap), Keys(*all));
}

TEST_F(RecordCacheTest, RecentChangesAreAlwaysSeen) {
  // Fresh directories (mtime now) are never trusted from the cache: every change shows.
  Put(Sample("net-a", "c1", "10.240.0.5"));
  ASSERT_EQ(Keys(*cache_.Snapshot()), (std::set<std::string>{"net-a/c1/10.240.0.5/16"}));
  Put(Sample("net-a", "c2", "10.240.0.6"));
  ASSERT_EQ(Keys(*cache_.Snapshot()),
            (std::set<std::string>{"net-a/c1/10.240.0.5/16", "net-a/c2/10.240.0.6/16"}));
  ASSERT_TRUE(store_.Remove("net-a", "c1", "eth0").ok());
  EXPECT_EQ(Keys(*cache_.Snapshot()), (std::set<std::string>{"net-a/c2/10.240.0.6/16"}));
}

TEST_F(RecordCacheTest, SettledDirectoryIsNotReadAgain) {
  Put(Sample("net-a", "c1", "10.240.0.5"));
  Put(Sample("net-b", "c2", "10.241.0.6"));
  Age(dir_.path() + "/state/net-a", hours(1));
  Age(dir_.path() + "/state/net-b", hours(1));
  ASSERT_TRUE(cache_.Snapshot().ok());
  const uint64_t reads = cache_.directory_reads();
  EXPECT_EQ(reads, 2u);

  // A change that bypasses the plugin's rename (so the directory's mtime stays): the cache
  // answers from what it read, which shows the file was not read again.
  RewriteInPlace(store_.RecordPath("net-a", "c1", "eth0"), "10.240.0.5", "10.240.9.9");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Keys(*cache_.Snapshot()),
              (std::set<std::string>{"net-a/c1/10.240.0.5/16", "net-b/c2/10.241.0.6/16"}));
  }
  EXPECT_EQ(cache_.directory_reads(), reads);

  // The plugin's own write (rename into the directory) changes the mtime: net-a is read again,
  // net-b is still not.
  Put(Sample("net-a", "c3", "10.240.0.7"));
  EXPECT_EQ(Keys(*cache_.Snapshot()),
            (std::set<std::string>{"net-a/c1/10.240.9.9/16", "net-a/c3/10.240.0.7/16",
                                   "net-b/c2/10.241.0.6/16"}));
  EXPECT_EQ(cache_.directory_reads(), reads + 1);
}

TEST_F(RecordCacheTest, RemovedOrReplacedDirectoryIsNotServedFromTheCache) {
  Put(Sample("net-a", "c1", "10.240.0.5"));
  Put(Sample("net-b", "c2", "10.241.0.6"));
  const std::string a = dir_.path() + "/state/net-a";
  Age(a, hours(1));
  Age(dir_.path() + "/state/net-b", hours(1));
  ASSERT_EQ(Keys(*cache_.Snapshot()).size(), 2u);

  // net-b goes away entirely.
  ASSERT_TRUE(store_.Remove("net-b", "c2", "eth0").ok());
  ASSERT_EQ(::rmdir((dir_.path() + "/state/net-b").c_str()), 0);
  EXPECT_EQ(Keys(*cache_.Snapshot()), (std::set<std::string>{"net-a/c1/10.240.0.5/16"}));

  // net-a is replaced by another directory given the very same mtime: a new inode.
  ASSERT_EQ(::rename(a.c_str(), (a + ".old").c_str()), 0);
  ASSERT_EQ(::mkdir(a.c_str(), 0700), 0);
  Put(Sample("net-a", "c4", "10.240.0.8"));
  ASSERT_EQ(::rename((a + ".old/c1:eth0.json").c_str(), (a + "/c1:eth0.json").c_str()), 0);
  Age(a, hours(1));
  ::unlink((a + ".old/c1:eth0.json.lock").c_str());
  ::rmdir((a + ".old").c_str());
  EXPECT_EQ(Keys(*cache_.Snapshot()),
            (std::set<std::string>{"net-a/c1/10.240.0.5/16", "net-a/c4/10.240.0.8/16"}));
}

}  // namespace
}  // namespace mizarmp::records
