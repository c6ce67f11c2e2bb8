// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Attachment records: atomic files with private modes, lookups that tell a missing record from
// a corrupt one, and tolerant listing.
#include "records/records.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fileutil.h"
#include "common/uuid.h"
#include "tests/support/support.h"

namespace mizarmp::records {
namespace {

using nlohmann::json;

Record Sample(const std::string& network, const std::string& cid, const std::string& ifname) {
  Record r;
  r.state = Record::State::kComplete;
  r.network = network;
  r.container_id = cid;
  r.ifname = ifname;
  r.netns = "/var/run/netns/" + cid;
  r.port_id = *UuidV5(kPortIdNamespace, network + "/" + cid + "/" + ifname);
  r.project_id = "3dda2801-d675-4688-a63f-dcda8d327f50";
  r.subnet_id = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
  r.host_id = "node-a";
  r.mpurl = "http://127.0.0.1:9090";
  r.mac = "0a:58:0a:f0:00:05";
  r.ips = {{"10.240.0.5/16", "10.240.0.1"}};
  r.pod_namespace = "default";
  r.pod_name = "web-0";
  r.created_at = NowRfc3339();
  return r;
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

int Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(Records, WriteReadRoundTripWithPrivateModes) {
  testing::TempDir dir;
  RecordStore store(dir.path() + "/state");
  Record r = Sample("net1", "c1", "eth0");
  ASSERT_TRUE(store.Write(r).ok());
  const std::string path = dir.path() + "/state/net1/c1:eth0.json";
  EXPECT_EQ(store.RecordPath("net1", "c1", "eth0"), path);
  EXPECT_EQ(store.LockPath("net1", "c1", "eth0"), path + ".lock");
  EXPECT_EQ(Mode(path), 0600);
  EXPECT_EQ(Mode(dir.path() + "/state/net1"), 0700);
  EXPECT_EQ(Mode(dir.path() + "/state"), 0700);

  auto back = store.Read("net1", "c1", "eth0");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->complete());
  EXPECT_EQ(RecordToJson(*back), RecordToJson(r));

  // The on-disk shape other components (the fencing server) read.
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  json j = json::parse(*text);
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["state"], "complete");
  EXPECT_EQ(j["containerId"], "c1");
  EXPECT_EQ(j["portId"], r.port_id);
  EXPECT_EQ(j["ips"][0]["address"], "10.240.0.5/16");
  EXPECT_EQ(j["ips"][0]["gateway"], "10.240.0.1");
  EXPECT_EQ(j["podName"], "web-0");
  EXPECT_EQ(j["createdAt"].get<std::string>().size(), 20u);  // 2024-05-01T12:34:56Z
  EXPECT_FALSE(j.contains("ovs")) << "agent mode writes what earlier builds read";

  // Plug mode's OVS port, where DEL and GC find it.
  r.ovs = OvsPlug{"/var/run/openvswitch/db.sock", "br-int", "tap1b4e28ba-2f"};
  ASSERT_TRUE(store.Write(r).ok());
  back = store.Read("net1", "c1", "eth0");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ovs, r.ovs);
  j = json::parse(*ReadFile(path));
  EXPECT_EQ(j["ovs"], (json{{"socket", "/var/run/openvswitch/db.sock"},
                            {"bridge", "br-int"},
                            {"port", "tap1b4e28ba-2f"}}));
  j["ovs"]["port"] = 7;
  EXPECT_EQ(RecordFromJson(j).status().message(),
            "record field \"ovs.port\" is not a string (got number)");

  // Rewriting is atomic and leaves no temp files.
  r.state = Record::State::kIntent;
  ASSERT_TRUE(store.Write(r).ok());
  auto names = ListDir(dir.path() + "/state/net1");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"c1:eth0.json"});
  ASSERT_TRUE(store.Read("net1", "c1", "eth0").ok());
  EXPECT_FALSE(store.Read("net1", "c1", "eth0")->complete());

  ASSERT_TRUE(store.Remove("net1", "c1", "eth0").ok());
  auto gone = store.Read("net1", "c1", "eth0");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), Code::kNotFound);
  EXPECT_TRUE(store.Remove("net1", "c1", "eth0").ok()) << "removing twice is fine";
}

TEST(Records, LockFileIsCreatedPrivateAndRemovable) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  auto lock = store.Lock("net1", "c1", "eth0");
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  const std::string lock_path = store.LockPath("net1", "c1", "eth0");
  EXPECT_EQ(Mode(lock_path), 0600);
  EXPECT_EQ(Mode(dir.path() + "/net1"), 0700);
  ASSERT_TRUE(lock->ReleaseAndRemove().ok());
  struct stat st {};
  EXPECT_NE(::stat(lock_path.c_str(), &st), 0);
}

TEST(Records, ListingSkipsStrayFiles) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  ASSERT_TRUE(store.Write(Sample("net1", "a", "eth0")).ok());
  ASSERT_TRUE(store.Write(Sample("net1", "b", "net1")).ok());
  ASSERT_TRUE(store.Write(Sample("net2", "c", "eth0")).ok());
  auto lock = store.Lock("net1", "a", "eth0");  // a lock file beside the records
  ASSERT_TRUE(lock.ok());
  const std::string d1 = dir.path() + "/net1";
  std::ofstream(d1 + "/garbage.json") << "{not json";
  std::ofstream(d1 + "/wrong-shape.json") << R"({"schema":1,"state":"bogus"})";
  std::ofstream(d1 + "/future.json") << R"({"schema":2,"state":"complete"})";
  std::ofstream(d1 + "/.x_eth0.json.tmp.123.456") << "{}";
  std::ofstream(d1 + "/README") << "hello";
  ASSERT_EQ(::mkdir((d1 + "/subdir.json").c_str(), 0700), 0);
  // A record copied into the wrong network's directory.
  Record other = Sample("net3", "d", "eth0");
  ASSERT_TRUE(WriteFileAtomic(d1 + "/d_eth0.json", RecordToJson(other).dump()).ok());
  std::ofstream(dir.path() + "/stray-file") << "x";

  auto net1 = store.List("net1");
  ASSERT_TRUE(net1.ok()) << net1.status().ToString();
  std::set<std::string> ids;
  for (const Record& r : *net1) ids.insert(r.container_id + "/" + r.ifname);
  EXPECT_EQ(ids, (std::set<std::string>{"a/eth0", "b/net1"}));

  auto none = store.List("no-such-network");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  auto all = store.ListAll();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ids.clear();
  for (const Record& r : *all) ids.insert(r.network + ":" + r.container_id);
  EXPECT_EQ(ids, (std::set<std::string>{"net1:a", "net1:b", "net2:c"}));

  RecordStore missing(dir.path() + "/does-not-exist");
  auto empty = missing.ListAll();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());

  auto bad = store.Read("net1", "garbage", "");
  EXPECT_FALSE(bad.ok());
}

TEST(Records, RejectsRecordsOfTheWrongShape) {
  Record r = Sample("n", "c", "eth0");
  json j = RecordToJson(r);
  ASSERT_TRUE(RecordFromJson(j).ok());
  for (const char* key : {"portId", "containerId", "ifname", "network", "state", "schema"}) {
    json k = j;
    k.erase(key);
    auto got = RecordFromJson(k);
    ASSERT_FALSE(got.ok()) << key;
    EXPECT_NE(got.status().message().find(key), std::string::npos) << got.status().message();
  }
  json no_mac = j;
  no_mac["mac"] = "";
  EXPECT_FALSE(RecordFromJson(no_mac).ok()) << "a complete record has a MAC";
  no_mac["state"] = "intent";
  EXPECT_TRUE(RecordFromJson(no_mac).ok()) << "an intent record need not";
}

TEST(Records, FindTellsAbsentCorruptAndValidApart) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  auto absent = store.Find("net1", "c1", "eth0");
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_TRUE(absent->absent());

  // One sample: each carries the time it was made, and two may fall in different seconds.
  const Record written = Sample("net1", "c1", "eth0");
  ASSERT_TRUE(store.Write(written).ok());
  auto valid = store.Find("net1", "c1", "eth0");
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  ASSERT_TRUE(valid->valid());
  EXPECT_EQ(RecordToJson(valid->record), RecordToJson(written));

  const std::string path = store.RecordPath("net1", "c2", "eth0");
  std::ofstream(path) << "{not json";
  auto garbled = store.Find("net1", "c2", "eth0");
  ASSERT_TRUE(garbled.ok()) << garbled.status().ToString();
  ASSERT_TRUE(garbled->corrupt());
  EXPECT_EQ(garbled->problem, "attachment record " + path + " is not valid JSON");
  auto read = store.Read("net1", "c2", "eth0");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kDataLoss);
  EXPECT_EQ(read.status().message(), garbled->problem);

  std::ofstream(path, std::ios::trunc) << R"({"schema":1,"state":"bogus"})";
  auto wrong_shape = store.Find("net1", "c2", "eth0");
  ASSERT_TRUE(wrong_shape.ok()) << wrong_shape.status().ToString();
  ASSERT_TRUE(wrong_shape->corrupt());
  EXPECT_NE(wrong_shape->problem.find("attachment record " + path + ": "), std::string::npos)
      << wrong_shape->problem;
  EXPECT_NE(wrong_shape->problem.find("\"state\""), std::string::npos) << wrong_shape->problem;
}

// A record file nested 100,000 levels deep (a tree that deep overflows the stack when parsed or
// destroyed) is a corrupt record, found without building the tree.
TEST(Records, DeeplyNestedRecordFileIsCorruptNotACrash) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  ASSERT_TRUE(store.Write(Sample("net1", "c1", "eth0")).ok());
  const std::string path = store.RecordPath("net1", "c1", "eth0");
  std::ofstream(path, std::ios::trunc)
      << R"({"schema":1,"x":)" << std::string(100000, '[') << std::string(100000, ']') << "}";
  auto found = store.Find("net1", "c1", "eth0");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->corrupt());
  EXPECT_EQ(found->problem, "attachment record " + path + " nests deeper than 64 levels");
  auto listed = store.List("net1");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->empty());
}

TEST(Records, FindFailsOnlyForAFileItCannotRead) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  ASSERT_EQ(::mkdir(store.NetworkDir("net1").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(store.RecordPath("net1", "c1", "eth0").c_str(), 0700), 0);
  auto found = store.Find("net1", "c1", "eth0");
  EXPECT_FALSE(found.ok()) << "a directory where the record belongs is not a record";
}

// Container "a_b" + ifname "c" and container "a" + ifname "b_c" shared "a_b_c.json" (and its
// lock) before the ':' naming: each must have its own file and lock.
TEST(Records, AttachmentsThatDifferInWhereUnderscoreSplitsHaveTheirOwnFiles) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  EXPECT_NE(store.RecordPath("n", "a_b", "c"), store.RecordPath("n", "a", "b_c"));
  EXPECT_NE(store.LockPath("n", "a_b", "c"), store.LockPath("n", "a", "b_c"));
  const Record first = Sample("n", "a_b", "c");
  const Record second = Sample("n", "a", "b_c");
  ASSERT_TRUE(store.Write(first).ok());
  ASSERT_TRUE(store.Write(second).ok());
  auto one = store.Read("n", "a_b", "c");
  auto two = store.Read("n", "a", "b_c");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(one->port_id, first.port_id);
  EXPECT_EQ(two->port_id, second.port_id);
  // Both locks can be held at once: they are not one lock.
  auto lock1 = store.Lock("n", "a_b", "c");
  auto lock2 = store.Lock("n", "a", "b_c");
  ASSERT_TRUE(lock1.ok() && lock2.ok());
  ASSERT_TRUE(store.Remove("n", "a_b", "c").ok());
  EXPECT_TRUE(store.Read("n", "a", "b_c").ok()) << "removing one kept the other";
  auto list = store.List("n");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].container_id, "a");
}

TEST(Records, NamePartsThatWouldMakeNamesAmbiguousAreRefused) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  EXPECT_EQ(store.Write(Sample("n", "a:b", "eth0")).code(), Code::kInvalidArgument);
  EXPECT_EQ(store.Write(Sample("n", "a", "x/y")).code(), Code::kInvalidArgument);
  EXPECT_EQ(store.Lock("n", "../a", "eth0").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store.Lock("n", "a", "").status().code(), Code::kInvalidArgument);
}

// A record written by the previous version ("<containerId>_<ifname>.json") is still found,
// read, replaced and removed; only the new name is written.
TEST(Records, LegacyNamedRecordsAreReadAndRemovedButNotWritten) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  ASSERT_EQ(::mkdir(store.NetworkDir("n").c_str(), 0700), 0);
  Record legacy = Sample("n", "a", "b_c");
  const std::string legacy_path = dir.path() + "/n/a_b_c.json";
  EXPECT_EQ(store.LegacyRecordPath("n", "a", "b_c"), legacy_path);
  ASSERT_TRUE(WriteFileAtomic(legacy_path, RecordToJson(legacy).dump()).ok());

  auto found = store.Find("n", "a", "b_c");
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->valid());
  EXPECT_EQ(found->record.port_id, legacy.port_id);
  // The same legacy name for the other attachment: not its record.
  auto other = store.Find("n", "a_b", "c");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->absent());
  ASSERT_TRUE(store.Remove("n", "a_b", "c").ok());
  EXPECT_TRUE(FileExists(legacy_path))
      << "removing the other attachment must not remove this one's legacy record";

  // Rewriting moves it to the new name.
  legacy.state = Record::State::kIntent;
  ASSERT_TRUE(store.Write(legacy).ok());
  EXPECT_FALSE(FileExists(legacy_path));
  EXPECT_TRUE(FileExists(store.RecordPath("n", "a", "b_c")));

  // Removing removes a legacy-named record too.
  ASSERT_TRUE(WriteFileAtomic(legacy_path, RecordToJson(legacy).dump()).ok());
  ASSERT_TRUE(store.Remove("n", "a", "b_c").ok());
  EXPECT_FALSE(FileExists(legacy_path));
  EXPECT_TRUE(store.Find("n", "a", "b_c")->absent());
}

// Sets `path`'s modification time `age` into the past.
void Age(const std::string& path, std::chrono::seconds age) {
  struct timeval times[2];
  ::gettimeofday(&times[0], nullptr);
  times[0].tv_sec -= age.count();
  times[1] = times[0];
  ASSERT_EQ(::utimes(path.c_str(), times), 0) << path;
}

TEST(Records, SweepRemovesOnlyOldOrphanLocksAndTempFiles) {
  testing::TempDir dir;
  RecordStore store(dir.path());
  const std::string d = dir.path() + "/n";
  ASSERT_TRUE(store.Write(Sample("n", "kept", "eth0")).ok());
  {
    auto lock = store.Lock("n", "kept", "eth0");  // a lock file beside a record (as after ADD)
    ASSERT_TRUE(lock.ok());
  }
  { ASSERT_TRUE(store.Lock("n", "orphan", "eth0").ok()); }  // no record: an interrupted command
  { ASSERT_TRUE(store.Lock("n", "young", "eth0").ok()); }
  auto held = store.Lock("n", "held", "eth0");  // a command in flight holds it
  ASSERT_TRUE(held.ok());
  std::ofstream(d + "/old_eth0.json.lock") << "";  // a legacy-named orphan lock
  std::ofstream(d + "/.orphan:eth0.json.tmp.123.456") << "{";
  std::ofstream(d + "/.young:eth0.json.tmp.123.457") << "{";
  for (const char* name :
       {"kept:eth0.json", "kept:eth0.json.lock", "orphan:eth0.json.lock", "held:eth0.json.lock",
        "old_eth0.json.lock", ".orphan:eth0.json.tmp.123.456"}) {
    Age(d + "/" + std::string(name), std::chrono::seconds(3600));
  }

  auto removed = store.SweepStale("n", std::chrono::seconds(60));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(std::set<std::string>(removed->begin(), removed->end()),
            (std::set<std::string>{"orphan:eth0.json.lock", "old_eth0.json.lock",
                                   ".orphan:eth0.json.tmp.123.456"}));
  auto left = ListDir(d);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(std::set<std::string>(left->begin(), left->end()),
            (std::set<std::string>{"kept:eth0.json", "kept:eth0.json.lock", "young:eth0.json.lock",
                                   "held:eth0.json.lock", ".young:eth0.json.tmp.123.457"}));
  // The held lock still works as a lock: it was not unlinked under its holder.
  EXPECT_TRUE(FileExists(held->path()));
  EXPECT_TRUE(store.SweepStale("missing-network", std::chrono::seconds(60))->empty());
}

}  // namespace
}  // namespace mizarmp::records
