// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index (fence/port_index.h): its contract run against every backend through the
// interface (a typed suite: a new backend adds one type to Backends), then what only one backend
// promises: SQLite's private file, etcd's batches past --max-txn-ops and its skipping of keys
// that do not decode. The etcd backend runs against a real single-member etcd on loopback
// (tests/support/etcd_cluster.h).
#include "fence/port_index.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "fence/etcd/port_index.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/support.h"

// ------------------------------------------------------------------------------- the backends
// At global scope because ctest names each test after its type
// ("PortIndexTest.ForgetDropsTheNodesEntriesAndItsPublication<EtcdIndex>").

// The SQLite backend: a file in the test's temporary directory.
struct SqliteIndex {
  static void Require() {}
  static mizarmp::Result<std::unique_ptr<mizarmp::fence::PortIndex>> Open(const std::string& dir) {
    return mizarmp::fence::OpenSqlitePortIndex(dir + "/index/ports.db");
  }
};

// The etcd backend: one etcd member for the test process, each test its own key prefix.
struct EtcdIndex {
  static mizarmp::testing::EtcdCluster& Cluster() {
    static mizarmp::testing::EtcdCluster cluster(1);
    return cluster;
  }
  static void Require() {
    MZ_REQUIRE_ETCD();
    ASSERT_EQ(Cluster().error(), "");
  }
  // The test's temporary directory is unique: so is the prefix made of it.
  static std::string Prefix(const std::string& dir) { return dir + "/index/"; }
  static mizarmp::Result<std::unique_ptr<mizarmp::fence::PortIndex>> Open(const std::string& dir) {
    mizarmp::etcd::Options options;
    options.call_timeout = std::chrono::milliseconds(1000);
    return mizarmp::fence::OpenEtcdPortIndex(Cluster().Location(), options, Prefix(dir));
  }
  static std::unique_ptr<mizarmp::etcd::Client> Client() {
    mizarmp::etcd::Options options;
    options.endpoints = Cluster().endpoints();
    auto client = mizarmp::etcd::Client::Connect(options);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }
};

namespace mizarmp::fence {
namespace {

using std::chrono::milliseconds;
using TimePoint = std::chrono::system_clock::time_point;

IpAddress Ip(const std::string& text) { return *IpAddress::Parse(text); }
Cidr Net(const std::string& text) { return *Cidr::ParseNetwork(text); }
// 10.1.0.0 + n, for publications of many addresses.
IpAddress V4Plus(uint32_t n) { return IpAddress::V4((10u << 24) + (1u << 16) + n); }
// A publication time as both backends keep it: whole milliseconds.
TimePoint At(int64_t unix_ms) { return TimePoint(milliseconds(unix_ms)); }

Status PublishNow(PortIndex& index, const std::string& node,
                  const std::vector<AddressedPort>& ports) {
  return index.Publish(node, ports, std::chrono::system_clock::now(), "");
}

std::vector<std::string> Ids(const std::vector<IndexedPort>& found) {
  std::vector<std::string> ids;
  for (const IndexedPort& p : found) ids.push_back(p.port_id);
  return ids;
}

// The port ids inside `cidrs`, in the index's order; a failed read fails the test.
std::vector<std::string> IdsInside(const PortIndex& index, const std::vector<Cidr>& cidrs) {
  auto found = index.Inside(cidrs);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  return found.ok() ? Ids(*found) : std::vector<std::string>{};
}

std::vector<Publication> PublicationsOf(const PortIndex& index) {
  auto found = index.Publications();
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  return found.ok() ? *found : std::vector<Publication>{};
}

// `count` ports of one node at consecutive addresses from 10.1.0.0 + `first`, "<tag>-<n>".
std::vector<AddressedPort> ManyPorts(const std::string& tag, uint32_t first, uint32_t count) {
  std::vector<AddressedPort> ports;
  for (uint32_t n = 0; n < count; ++n) {
    ports.push_back({V4Plus(first + n), tag + "-" + std::to_string(n)});
  }
  return ports;
}

// ------------------------------------------------------------------------------- the contract

template <typename Backend>
class PortIndexTest : public ::testing::Test {
 protected:
  void SetUp() override { Backend::Require(); }
  std::unique_ptr<fence::PortIndex> Open() {
    auto index = Backend::Open(dir_.path());
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    return index.ok() ? std::move(*index) : nullptr;
  }
  testing::TempDir dir_;
};

using Backends = ::testing::Types<SqliteIndex, EtcdIndex>;
TYPED_TEST_SUITE(PortIndexTest, Backends);

TYPED_TEST(PortIndexTest, FindsTheAddressesInsideEachCidrOnceInAddressOrder) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(PublishNow(*index, "node-a",
                         {{Ip("10.0.1.5"), "a1"},
                          {Ip("10.0.0.9"), "a2"},
                          {Ip("10.0.2.1"), "a3"},
                          {Ip("fd00::5"), "a6"}})
                  .ok());
  ASSERT_TRUE(
      PublishNow(*index, "node-b", {{Ip("10.0.1.200"), "b1"}, {Ip("11.0.0.1"), "b2"}}).ok());

  auto found = index->Inside({Net("10.0.1.0/24"), Net("10.0.0.0/23"), Net("fd00::/120")});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(Ids(*found), (std::vector<std::string>{"a2", "a1", "b1", "a6"}));
  EXPECT_EQ((*found)[2], (IndexedPort{Ip("10.0.1.200"), "b1", "node-b"}));

  EXPECT_EQ(IdsInside(*index, {Net("11.0.0.1/32")}), std::vector<std::string>{"b2"});
  EXPECT_TRUE(IdsInside(*index, {Net("192.168.0.0/16"), Net("fd01::/64")}).empty());
  // An IPv4 range never reaches IPv6 entries, whatever their bytes.
  EXPECT_EQ(IdsInside(*index, {Net("0.0.0.0/0")}).size(), 5u);
}

TYPED_TEST(PortIndexTest, OrdersPortsOfOneAddressByIdWhateverTheirBytes) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  // Ids with the bytes a key must escape ('/', '%', a space, non-ASCII) come back as published.
  ASSERT_TRUE(PublishNow(*index, "node-a",
                         {{Ip("10.0.0.1"), "p/2"},
                          {Ip("10.0.0.1"), "p 1"},
                          {Ip("10.0.0.1"), "p%3"},
                          {Ip("10.0.0.1"), "p\xc3\xa9"}})
                  .ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.1/32")}),
            (std::vector<std::string>{"p 1", "p%3", "p/2", "p\xc3\xa9"}));
}

TYPED_TEST(PortIndexTest, APublicationReplacesWhatItsNodePublishedBefore) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(PublishNow(*index, "node-a", {{Ip("10.0.0.1"), "a1"}, {Ip("10.0.0.2"), "a2"}}).ok());
  ASSERT_TRUE(PublishNow(*index, "node-b", {{Ip("10.0.0.3"), "b1"}}).ok());
  ASSERT_TRUE(PublishNow(*index, "node-a", {{Ip("10.0.0.4"), "a3"}}).ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"b1", "a3"}));
  ASSERT_TRUE(PublishNow(*index, "node-b", {}).ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), std::vector<std::string>{"a3"});
}

TYPED_TEST(PortIndexTest, ARepublicationRemovesTheEntriesItNoLongerHas) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(PublishNow(*index, "node-a",
                         {{Ip("10.0.0.1"), "a1"}, {Ip("10.0.0.2"), "a2"}, {Ip("10.0.0.3"), "a3"}})
                  .ok());
  // Kept, moved to another address, dropped.
  ASSERT_TRUE(PublishNow(*index, "node-a", {{Ip("10.0.0.2"), "a2"}, {Ip("10.0.0.9"), "a1"}}).ok());
  auto found = index->Inside({Net("10.0.0.0/24")});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (std::vector<IndexedPort>{{Ip("10.0.0.2"), "a2", "node-a"},
                                              {Ip("10.0.0.9"), "a1", "node-a"}}));
  const auto publications = PublicationsOf(*index);
  ASSERT_EQ(publications.size(), 1u);
  EXPECT_EQ(publications[0].entries, 2u);
}

TYPED_TEST(PortIndexTest, ARenewalOfAnEarlierSetAfterAChangeRestoresItsEntries) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  const std::vector<AddressedPort> first = {{Ip("10.0.0.1"), "a1"}, {Ip("10.0.0.2"), "a2"}};
  ASSERT_TRUE(index->Publish("node-a", first, At(1000), "").ok());
  ASSERT_TRUE(index->Publish("node-a", first, At(2000), "").ok());
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.3"), "a3"}}, At(3000), "").ok());
  ASSERT_TRUE(index->Publish("node-a", first, At(4000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(4000), 2}}));
}

TYPED_TEST(PortIndexTest, APortMovedToAnotherNodeStaysWhenItsOldNodeRepublishes) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(PublishNow(*index, "node-a", {{Ip("10.0.0.1"), "p1"}}).ok());
  ASSERT_TRUE(PublishNow(*index, "node-b", {{Ip("10.0.0.1"), "p1"}}).ok());
  ASSERT_TRUE(PublishNow(*index, "node-a", {}).ok());
  auto found = index->Inside({Net("10.0.0.0/24")});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (std::vector<IndexedPort>{{Ip("10.0.0.1"), "p1", "node-b"}}));
}

TYPED_TEST(PortIndexTest, RefusesAPublicationWithoutANodeOrAPortIdAndKeepsTheOldOne) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(PublishNow(*index, "node-a", {{Ip("10.0.0.1"), "a1"}}).ok());
  Status s = PublishNow(*index, "", {{Ip("10.0.0.2"), "x"}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  s = PublishNow(*index, "node-a", {{Ip("10.0.0.2"), "a2"}, {Ip("10.0.0.3"), ""}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("10.0.0.3"), std::string::npos) << s.message();
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), std::vector<std::string>{"a1"});
}

TYPED_TEST(PortIndexTest, KeepsItsEntriesAndPublicationsAcrossAReopen) {
  {
    auto index = this->Open();
    ASSERT_NE(index, nullptr);
    ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}}, At(1790000000123), "").ok());
  }
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.1/32")}), std::vector<std::string>{"a1"});
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(1790000000123), 1}}));
}

TYPED_TEST(PortIndexTest, PublicationsHaveTheirTimesAndEntryCountsByNodeName) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  EXPECT_TRUE(PublicationsOf(*index).empty());
  ASSERT_TRUE(
      index->Publish("node-b", {{Ip("10.0.0.1"), "b1"}, {Ip("fd00::1"), "b1"}}, At(1790000000000), "")
          .ok());
  // A node without ports is live all the same.
  ASSERT_TRUE(index->Publish("node-a", {}, At(1790000000500), "").ok());
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(1790000000500), 0},
                                                              {"node-b", At(1790000000000), 2}}));
  ASSERT_TRUE(index->Publish("node-b", {{Ip("10.0.0.1"), "b1"}}, At(1790000009000), "").ok());
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(1790000000500), 0},
                                                              {"node-b", At(1790000009000), 1}}));
}

// The fence set a node says it enforces is its acknowledgement: each publication records the
// latest, whether its ports changed or not (etcd's renewal of an unchanged set included), and it
// survives a reopen.
TYPED_TEST(PortIndexTest, EachPublicationRecordsTheFenceSetTheNodeEnforces) {
  const std::vector<AddressedPort> ports = {{Ip("10.0.0.1"), "a1"}};
  {
    auto index = this->Open();
    ASSERT_NE(index, nullptr);
    ASSERT_TRUE(index->Publish("node-a", ports, At(1000), "").ok());
    EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(1000), 1, ""}}));
    ASSERT_TRUE(index->Publish("node-a", ports, At(2000), "1-00000000000000aa").ok());
    EXPECT_EQ(PublicationsOf(*index),
              (std::vector<Publication>{{"node-a", At(2000), 1, "1-00000000000000aa"}}));
    ASSERT_TRUE(index->Publish("node-a", {}, At(3000), "2-00000000000000bb").ok());
  }
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(PublicationsOf(*index),
            (std::vector<Publication>{{"node-a", At(3000), 0, "2-00000000000000bb"}}));
}

// An acknowledgement changes what the node enforces and nothing else: not its time (it renews no
// lease), not its entries, and a later renewal of the same set still finds them all.
TYPED_TEST(PortIndexTest, AnAcknowledgementRecordsTheFenceSetAloneAndNeedsAPublication) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->Acknowledge("node-a", "1-00000000000000aa").code(), Code::kNotFound);
  const std::vector<AddressedPort> ports = {{Ip("10.0.0.1"), "a1"}, {Ip("10.0.0.2"), "a2"}};
  ASSERT_TRUE(index->Publish("node-a", ports, At(1000), "").ok());
  ASSERT_TRUE(index->Acknowledge("node-a", "1-00000000000000aa").ok());
  EXPECT_EQ(PublicationsOf(*index),
            (std::vector<Publication>{{"node-a", At(1000), 2, "1-00000000000000aa"}}));
  ASSERT_TRUE(index->Acknowledge("node-a", "1-00000000000000aa").ok());  // again: no change
  ASSERT_TRUE(index->Publish("node-a", ports, At(2000), "1-00000000000000aa").ok());
  EXPECT_EQ(PublicationsOf(*index),
            (std::vector<Publication>{{"node-a", At(2000), 2, "1-00000000000000aa"}}));
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"a1", "a2"}));
}

// A node's addresses, for the fence of its own address that covers its pods: each once,
// sorted, kept after its lease (a dead node's pods are what that fence is for), gone with it.
TYPED_TEST(PortIndexTest, AddressesOnANodeAreItsLastPublishedOnesEachOnce) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  const auto addresses_on = [&](const std::string& node) {
    auto found = index->AddressesOn(node);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    std::vector<std::string> texts;
    for (const IpAddress& ip : found.ok() ? *found : std::vector<IpAddress>{})
      texts.push_back(ip.ToString());
    return texts;
  };
  EXPECT_TRUE(addresses_on("node-a").empty());
  ASSERT_TRUE(index
                  ->Publish("node-a",
                            {{Ip("10.0.0.9"), "a1"}, {Ip("fd00::1"), "a1"}, {Ip("10.0.0.2"), "a2"},
                             {Ip("10.0.0.9"), "a3"}},
                            At(1000), "")
                  .ok());
  ASSERT_TRUE(index->Publish("node-b", {{Ip("10.0.0.3"), "b1"}}, At(1000), "").ok());
  EXPECT_EQ(addresses_on("node-a"), (std::vector<std::string>{"10.0.0.2", "10.0.0.9", "fd00::1"}));
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.2"), "a2"}}, At(2000), "").ok());
  EXPECT_EQ(addresses_on("node-a"), std::vector<std::string>{"10.0.0.2"});
  EXPECT_EQ(addresses_on("node-b"), std::vector<std::string>{"10.0.0.3"});
  ASSERT_TRUE(index->Forget("node-a").ok());
  EXPECT_TRUE(addresses_on("node-a").empty());
}

TYPED_TEST(PortIndexTest, ForgetDropsTheNodesEntriesAndItsPublication) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(
      index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}, {Ip("10.0.0.2"), "a2"}}, At(1000), "").ok());
  ASSERT_TRUE(index->Publish("node-b", {{Ip("10.0.0.3"), "b1"}}, At(2000), "").ok());
  ASSERT_TRUE(index->Forget("node-a").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), std::vector<std::string>{"b1"});
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-b", At(2000), 1}}));
  // A node that never published (or is already forgotten) is no error.
  EXPECT_TRUE(index->Forget("node-a").ok());
  EXPECT_TRUE(index->Forget("node-never").ok());
  // A forgotten node publishes afresh.
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.9"), "a9"}}, At(3000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"b1", "a9"}));
}

TYPED_TEST(PortIndexTest, PublishesAndFindsThousandsOfEntries) {
  auto index = this->Open();
  ASSERT_NE(index, nullptr);
  // More entries than etcd takes in one transaction (128), and an answer of more than one page.
  ASSERT_TRUE(index->Publish("node-a", ManyPorts("a", 0, 1000), At(1000), "").ok());
  ASSERT_TRUE(index->Publish("node-b", ManyPorts("b", 1000, 1000), At(2000), "").ok());
  auto found = index->Inside({Net("10.1.0.0/21")});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 2000u);
  EXPECT_EQ(found->front(), (IndexedPort{V4Plus(0), "a-0", "node-a"}));
  EXPECT_EQ((*found)[999], (IndexedPort{V4Plus(999), "a-999", "node-a"}));
  EXPECT_EQ((*found)[1000], (IndexedPort{V4Plus(1000), "b-0", "node-b"}));
  EXPECT_EQ(found->back(), (IndexedPort{V4Plus(1999), "b-999", "node-b"}));

  // The republication drops 700 of node-a's entries: more deletes than one transaction takes.
  ASSERT_TRUE(index->Publish("node-a", ManyPorts("a", 0, 300), At(3000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.1.0.0/21")}).size(), 1300u);
  EXPECT_TRUE(IdsInside(*index, {Net("10.1.1.44/32")}).empty());  // 10.1.0.0 + 300
  EXPECT_EQ(PublicationsOf(*index),
            (std::vector<Publication>{{"node-a", At(3000), 300}, {"node-b", At(2000), 1000}}));
  ASSERT_TRUE(index->Forget("node-b").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.1.0.0/16")}).size(), 300u);
}

// ------------------------------------------------------------------------- SQLite's own file

TEST(SqlitePortIndex, IsAPrivateFileAtAnAbsolutePath) {
  testing::TempDir dir;
  auto index = SqliteIndex::Open(dir.path());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/index/ports.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/index").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(OpenSqlitePortIndex("relative/ports.db").status().code(), Code::kInvalidArgument);
}

TEST(SqlitePortIndex, AnIndexOfAnEarlierSchemaIsDroppedForTheAgentsToRebuild) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/index/ports.db";
  ASSERT_TRUE(SqliteIndex::Open(dir.path()).ok());
  {  // schema 2: publications without their entry counts
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* earlier =
        "DROP TABLE publications;"
        "CREATE TABLE publications (node TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);"
        "INSERT INTO publications VALUES ('node-a', 1);"
        "PRAGMA user_version = 2;";
    EXPECT_EQ(sqlite3_exec(db, earlier, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto index = SqliteIndex::Open(dir.path());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  auto publications = (*index)->Publications();
  ASSERT_TRUE(publications.ok()) << publications.status().ToString();
  EXPECT_TRUE(publications->empty());
  ASSERT_TRUE(PublishNow(**index, "node-a", {{Ip("10.0.0.1"), "a1"}}).ok());
  publications = (*index)->Publications();
  ASSERT_TRUE(publications.ok());
  ASSERT_EQ(publications->size(), 1u);
  EXPECT_EQ((*publications)[0].entries, 1u);
}

// ------------------------------------------------------------------------- etcd's own keys

class EtcdPortIndex : public ::testing::Test {
 protected:
  void SetUp() override { EtcdIndex::Require(); }
  std::unique_ptr<fence::PortIndex> Open() {
    auto index = EtcdIndex::Open(dir_.path());
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    return index.ok() ? std::move(*index) : nullptr;
  }
  // Writes `value` at `name` under this test's prefix, as something that is not the index.
  void Put(const std::string& name, const std::string& value) {
    auto client = EtcdIndex::Client();
    ASSERT_NE(client, nullptr);
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(EtcdIndex::Prefix(dir_.path()) + name);
    put->set_value(value);
    auto done = client->Txn(txn);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
  }
  void Delete(const std::string& name) {
    auto client = EtcdIndex::Client();
    ASSERT_NE(client, nullptr);
    etcdserverpb::TxnRequest txn;
    txn.add_success()->mutable_request_delete_range()->set_key(EtcdIndex::Prefix(dir_.path()) +
                                                               name);
    auto done = client->Txn(txn);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
  }
  // The keys under this test's prefix (without it) written after `revision`, and their values.
  std::map<std::string, std::string> WrittenAfter(int64_t revision) {
    auto client = EtcdIndex::Client();
    if (client == nullptr) return {};
    const std::string prefix = EtcdIndex::Prefix(dir_.path());
    etcdserverpb::RangeRequest range;
    range.set_key(prefix);
    range.set_range_end(prefix.substr(0, prefix.size() - 1) + "0");  // '0' follows '/'
    range.set_min_mod_revision(revision + 1);
    auto answer = client->Range(range);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    std::map<std::string, std::string> written;
    if (!answer.ok()) return written;
    for (const auto& kv : answer->kvs()) written[kv.key().substr(prefix.size())] = kv.value();
    return written;
  }
  // The store's revision: it moves once per transaction that wrote.
  int64_t Revision() {
    auto client = EtcdIndex::Client();
    if (client == nullptr) return -1;
    etcdserverpb::RangeRequest range;
    range.set_key(EtcdIndex::Prefix(dir_.path()));
    range.set_count_only(true);
    auto answer = client->Range(range);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? answer->header().revision() : -1;
  }
  testing::TempDir dir_;
};

TEST_F(EtcdPortIndex, KeysThatDoNotDecodeAreSkippedNeverACrash) {
  auto index = Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}}, At(1000), "").ok());
  // Each inside the range of 10.0.0.0/24 or of every IPv4 address, none an entry.
  for (const char* name :
       {"a/040a000001", "a/040a000001/p9", "a/040a000001/p9/", "a/040a0000zz/p9/node-x",
        "a/040a00000/p9/node-x", "a/040a00000102/p9/node-x", "a/040a000001/%zz/node-x",
        "a/040a000001//node-x", "a/040A000002/p9/node-x"}) {
    Put(name, "");
  }
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), std::vector<std::string>{"a1"});
  EXPECT_EQ(IdsInside(*index, {Net("0.0.0.0/0")}), std::vector<std::string>{"a1"});

  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"n/node-b", "not json"},
           {"n/node-c", R"({"at_ms":"soon","entries":[]})"},
           {"n/node-d", R"({"at_ms":1,"entries":"a1"})"},
           {"n/node-e", R"({"entries":[]})"},
           {"n/node-g", R"({"at_ms":9223372036854775807,"entries":[]})"},
           {"n/node-f", std::string(100000, '[') + std::string(100000, ']')},
           {"n/", R"({"at_ms":1,"entries":[]})"}}) {
    Put(name, value);
  }
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"l/node-h", "not json"},
           {"l/node-i", R"({"at_ms":1})"},
           {"l/node-j", R"({"at_ms":1,"entries":-1})"},
           {"l/node-k", R"({"at_ms":1,"entries":0,"digest":7})"},
           {"l/", R"({"at_ms":1,"entries":0})"}}) {
    Put(name, value);
  }
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(1000), 1}}));
  // A node whose record does not decode publishes over it, and can be forgotten.
  ASSERT_TRUE(index->Publish("node-b", {{Ip("10.0.0.7"), "b7"}}, At(2000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"a1", "b7"}));
  EXPECT_TRUE(index->Forget("node-c").ok());
  EXPECT_EQ(PublicationsOf(*index),
            (std::vector<Publication>{{"node-a", At(1000), 1}, {"node-b", At(2000), 1}}));
}

TEST_F(EtcdPortIndex, ARenewalOfAnUnchangedSetIsOneWrite) {
  auto index = Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->Publish("node-a", ManyPorts("a", 0, 1000), At(1000), "").ok());
  const int64_t before = Revision();
  ASSERT_TRUE(index->Publish("node-a", ManyPorts("a", 0, 1000), At(2000), "").ok());
  // etcd's revision counts transactions that wrote: the renewal took exactly one, of the
  // node's lease key alone, a value whose size does not follow the node's entries.
  EXPECT_EQ(Revision(), before + 1);
  const auto written = WrittenAfter(before);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written.begin()->first, "l/node-a");
  EXPECT_LT(written.begin()->second.size(), 200u);
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(2000), 1000}}));
  EXPECT_EQ(IdsInside(*index, {Net("10.1.0.0/16")}).size(), 1000u);
}

TEST_F(EtcdPortIndex, PublicationsAreReadFromTheLeaseKeysAlone) {
  auto index = Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->Publish("node-a", ManyPorts("a", 0, 1000), At(1000), "").ok());
  ASSERT_TRUE(index->Publish("node-a", ManyPorts("a", 0, 1000), At(2000), "").ok());
  // The node key, 1,000 entries long, is not what a pass reads: its loss does not show.
  Put("n/node-a", "not json");
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(2000), 1000}}));
}

// What a replica of the first layout (node keys without lease keys) does in a rolling upgrade:
// it rewrites a node's node key and entries, not its lease key.
TEST_F(EtcdPortIndex, ANodeKeyRewrittenWithoutItsLeaseKeySendsTheRenewalTheLongWay) {
  auto index = Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}}, At(1000), "").ok());
  Put("n/node-a", R"({"at_ms":2000,"entries":["040a000002/a2"]})");
  Put("a/040a000002/a2/node-a", "");
  Delete("a/040a000001/a1/node-a");
  // The lease key's digest is that of {a1}, but it no longer vouches for the node key.
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}}, At(3000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), std::vector<std::string>{"a1"});
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(3000), 1}}));
}

// An index the first layout wrote: node keys and entries, no lease keys, no layout key.
TEST_F(EtcdPortIndex, AnIndexOfTheFirstLayoutGetsItsLeaseKeysWhenOpened) {
  Put("n/node-a", R"({"at_ms":1000,"entries":["040a000001/a1","040a000002/a2"]})");
  Put("a/040a000001/a1/node-a", "");
  Put("a/040a000002/a2/node-a", "");
  // Interrupted: a3 named, never put.
  Put("n/node-b", R"({"at_ms":1500,"entries":["040a000003/b3"],"partial":true})");
  Put("n/node-c", "not json");
  auto index = Open();
  ASSERT_NE(index, nullptr);
  // A node that died before the upgrade is known all the same, so it lapses.
  EXPECT_EQ(PublicationsOf(*index),
            (std::vector<Publication>{{"node-a", At(1000), 2}, {"node-b", At(1500), 1}}));
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"a1", "a2"}));

  // Its lease key vouches for its set: the renewal writes the lease key alone.
  int64_t before = Revision();
  ASSERT_TRUE(
      index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}, {Ip("10.0.0.2"), "a2"}}, At(2000), "").ok());
  EXPECT_EQ(WrittenAfter(before).size(), 1u);
  // A partial node key vouches for nothing: its renewal puts every entry.
  ASSERT_TRUE(index->Publish("node-b", {{Ip("10.0.0.3"), "b3"}}, At(2000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), (std::vector<std::string>{"a1", "a2", "b3"}));

  // Once upgraded, opening again writes nothing.
  before = Revision();
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(Revision(), before);
}

// What a batched publication that died after its first transaction leaves: the node key naming
// old and new entries, marked partial, and some of the new ones never put.
TEST_F(EtcdPortIndex, APublicationAfterAnInterruptedOnePutsWhatIsMissing) {
  auto index = Open();
  ASSERT_NE(index, nullptr);
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.1"), "a1"}}, At(1000), "").ok());
  Put("n/node-a", R"({"at_ms":1000,"entries":["040a000001/a1","040a000002/a2","040a000003/a3"],)"
                  R"("partial":true})");
  Put("a/040a000003/a3/node-a", "");
  ASSERT_TRUE(index->Publish("node-a", {{Ip("10.0.0.2"), "a2"}}, At(2000), "").ok());
  EXPECT_EQ(IdsInside(*index, {Net("10.0.0.0/24")}), std::vector<std::string>{"a2"});
  EXPECT_EQ(PublicationsOf(*index), (std::vector<Publication>{{"node-a", At(2000), 1}}));
}

TEST_F(EtcdPortIndex, ReplicasSeeWhatEachOtherPublished) {
  auto first = Open();
  auto second = Open();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->Publish("node-a", {{Ip("10.0.0.1"), "a1"}}, At(1000), "").ok());
  ASSERT_TRUE(second->Publish("node-b", {{Ip("10.0.0.2"), "b2"}}, At(2000), "").ok());
  EXPECT_EQ(IdsInside(*first, {Net("10.0.0.0/24")}), (std::vector<std::string>{"a1", "b2"}));
  ASSERT_TRUE(second->Publish("node-a", {}, At(3000), "").ok());
  EXPECT_EQ(IdsInside(*first, {Net("10.0.0.0/24")}), std::vector<std::string>{"b2"});
}

TEST(EtcdPortIndexOpen, APrefixNotEndingInASlashIsInvalid) {
  auto index = OpenEtcdPortIndex("etcd://127.0.0.1:1", {}, "/mizarmp/fence/index");
  EXPECT_EQ(index.status().code(), Code::kInvalidArgument);
  EXPECT_NE(index.status().message().find("etcd://127.0.0.1:1"), std::string::npos)
      << index.status().ToString();
}

}  // namespace
}  // namespace mizarmp::fence
