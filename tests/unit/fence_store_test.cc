// fence/store: the FenceStore contract, run against every backend through the interface and
// OpenFenceStore() (a typed suite: a new backend adds one backend type to Backends), then what
// only the SQLite backend promises (file modes, its errors).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/fileutil.h"
#include "fence/cidrset.h"
#include "fence/store.h"
#include "tests/support/support.h"

// ------------------------------------------------------------------------------- the backends
// Each backend of the suite: where a test's store lives and how something other than a FenceStore
// writes to it. At global scope because ctest names each test after its type
// ("FenceStoreTest.FencesSurviveReopenInCanonicalOrder<SqliteBackend>").

// The SQLite backend: a file path.
struct SqliteBackend {
  // Where a test's store lives, given the test's own temporary directory.
  static std::string Location(const std::string& dir) { return dir + "/state/fence.db"; }
  // A commit by something other than a FenceStore (an operator's sqlite3 on the file) that marks
  // every fence enforced.
  static void EnforceAllBehindTheStoresBack(const std::string& location) {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(location.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE fences SET state = 'enforced'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
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
  for (const auto& c : snap->unfences) out.push_back(CanonicalCidr(c));
  return out;
}

// ------------------------------------------------------------------------------- the contract

template <typename Backend>
class FenceStoreTest : public ::testing::Test {
 protected:
  std::string Location() const { return Backend::Location(dir_.path()); }
  std::unique_ptr<FenceStore> Open() {
    auto s = OpenFenceStore(Location());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  testing::TempDir dir_;
};

using Backends = ::testing::Types<SqliteBackend>;
TYPED_TEST_SUITE(FenceStoreTest, Backends);

TYPED_TEST(FenceStoreTest, FencesSurviveReopenInCanonicalOrder) {
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->AddFences({C("fd00::/64"), C("10.2.0.0/16"), C("10.1.0.5")}).ok());
    ASSERT_TRUE(store->MarkEnforced({C("10.2.0.0/16")}).ok());
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
  ASSERT_TRUE(store->MarkEnforced({C("10.0.0.0/24")}).ok());
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
  ASSERT_TRUE(store->CompleteUnfences({C("10.0.0.0/24")}).ok());
  EXPECT_EQ(Unfences(*store), (std::vector<std::string>{"10.0.1.0/24"}));
  // Fencing again drops the pending unfence of the same CIDR.
  ASSERT_TRUE(store->AddFences({C("10.0.1.0/24")}).ok());
  EXPECT_TRUE(Unfences(*store).empty());
  // A narrower unfence does not lift a wider fence.
  auto none = store->RemoveFences({C("10.9.1.0/24")});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TYPED_TEST(FenceStoreTest, AcknowledgedFenceSurvivesKill9) {
  // A child process stores a fence, reports it acknowledged through a pipe and is killed
  // before it can close anything; the parent then opens the store.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    auto s = OpenFenceStore(this->Location());
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
  auto store = this->Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Fences(*store), (std::vector<std::string>{"10.7.0.0/16=pending", "fd07::/48=pending"}));
}

TYPED_TEST(FenceStoreTest, TwoHandlesSeeEachOthersCommits) {
  auto a = this->Open();
  auto b = this->Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->AddFences({C("10.3.0.0/16")}).ok());
  EXPECT_EQ(Fences(*b), (std::vector<std::string>{"10.3.0.0/16=pending"}));
  EXPECT_TRUE(b->Check().ok());
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
  ASSERT_TRUE(a->MarkEnforced({C("10.3.0.0/16")}).ok());
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
  ASSERT_TRUE(a->CompleteUnfences({C("10.3.0.0/16")}).ok());
  snap = b->Snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(snap->unfences.empty());

  // A write by something else entirely.
  TypeParam::EnforceAllBehindTheStoresBack(this->Location());
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

TEST_F(SqliteFenceStoreTest, RelativePathIsInvalid) {
  auto s = OpenFenceStore("relative/fence.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace mizarmp::fence
