// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/sqlite_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <string_view>

#include "common/fd.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "fence/cidrset.h"
#include "fence/sqlite_util.h"
#include "records/records.h"

namespace mizarmp::fence {
namespace {

constexpr int kStoreSchemaVersion = 2;

// Version 1: the fences and the pending unfences.
constexpr const char* kSchemaV1 =
    "CREATE TABLE IF NOT EXISTS fences ("
    " cidr TEXT PRIMARY KEY NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('pending', 'enforced')),"
    " created_at TEXT NOT NULL,"
    " updated_at TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS unfences ("
    " cidr TEXT PRIMARY KEY NOT NULL,"
    " created_at TEXT NOT NULL);"
    "PRAGMA user_version = 1;";

// Version 2 (from 1, in place): each fence's record of the ports held down on its behalf.
// Rows of version 1 get tracked = 0 (no record: their unfence re-enables as version 1 did);
// every row written since sets tracked explicitly.
constexpr const char* kMigrateToV2 =
    "ALTER TABLE fences ADD COLUMN tracked INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE unfences ADD COLUMN tracked INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE IF NOT EXISTS held_ports ("
    " cidr TEXT NOT NULL,"
    " port_id TEXT NOT NULL,"
    " PRIMARY KEY (cidr, port_id));"
    "CREATE INDEX IF NOT EXISTS held_ports_by_port ON held_ports(port_id);"
    "PRAGMA user_version = 2;";

}  // namespace

Result<std::unique_ptr<SqliteFenceStore>> SqliteFenceStore::Open(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return InvalidArgumentError("fence store \"" + path + "\": must be an absolute path");
  }
  std::unique_ptr<SqliteFenceStore> store(new SqliteFenceStore(path));
  // Nobody else has the store yet; its mutex is held so the steps run as every later use does.
  MutexLock lock(store->mu_);
  MZ_RETURN_IF_ERROR(OpenPrivateDatabase(path, "fence store", &store->db_));
  // The first statements fail early on a file that is not a database (or a corrupt one).
  MZ_RETURN_IF_ERROR(store->ApplyPragmas());
  MZ_RETURN_IF_ERROR(store->CheckIntegrity());
  MZ_RETURN_IF_ERROR(store->MigrateSchema());
  MZ_LOG(kInfo) << "fence store " << path << " open (WAL, synchronous=FULL)";
  return store;
}

SqliteFenceStore::~SqliteFenceStore() {
  if (data_version_ != nullptr) sqlite3_finalize(data_version_);
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

// WAL with synchronous=FULL: a committed transaction is on disk (see the header).
Status SqliteFenceStore::ApplyPragmas() {
  MZ_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
  MZ_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  return Exec("PRAGMA foreign_keys=ON");
}

Status SqliteFenceStore::CheckIntegrity() {
  Stmt check;
  if (!check.Prepare(db_, "PRAGMA quick_check") || check.Step() != SQLITE_ROW) {
    return SqlError("integrity check");
  }
  const std::string verdict = Column(check.get(), 0);
  if (verdict != "ok") {
    return DataLossError("fence store \"" + path_ + "\": integrity check failed: " + verdict);
  }
  return Status::Ok();
}

// Creates the tables in a new file, migrates an older one in place (one transaction: a crash
// leaves the old version); refuses a file written by a newer server.
Status SqliteFenceStore::MigrateSchema() {
  int version = 0;
  {
    Stmt v;
    if (!v.Prepare(db_, "PRAGMA user_version") || v.Step() != SQLITE_ROW) {
      return SqlError("reading the schema version");
    }
    version = sqlite3_column_int(v.get(), 0);
  }
  if (version > kStoreSchemaVersion) {
    return FailedPreconditionError("fence store \"" + path_ + "\": schema version " +
                                   std::to_string(version) + " is newer than this server's " +
                                   std::to_string(kStoreSchemaVersion));
  }
  if (version == kStoreSchemaVersion) return Status::Ok();
  if (version >= 1) {
    MZ_LOG(kInfo) << "fence store " << path_ << ": migrating schema version " << version << " to "
                  << kStoreSchemaVersion << " (fences stored so far have no record of their ports)";
  }
  return InWriteTransaction([this, version]() MZ_REQUIRES(mu_) -> Status {
    if (version < 1) MZ_RETURN_IF_ERROR(Exec(kSchemaV1));
    return Exec(kMigrateToV2);
  });
}

Status SqliteFenceStore::SqlError(const std::string& what) const {
  return SqliteError(db_, "fence store \"" + path_ + "\": " + what);
}

Status SqliteFenceStore::Exec(const char* sql) const {
  return SqliteExec(db_, sql, "fence store \"" + path_ + "\"");
}

// Every write runs in a transaction begun here, so this is where the cached snapshot goes, at the
// start of the write (a write that then fails or rolls back only costs the next read).
Status SqliteFenceStore::Begin() const {
  cached_.reset();
  return Exec("BEGIN IMMEDIATE");
}

Status SqliteFenceStore::Commit() const { return Exec("COMMIT"); }

void SqliteFenceStore::Rollback() const {
  if (sqlite3_get_autocommit(db_) == 0) {
    if (sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr) != SQLITE_OK) {
      MZ_LOG(kWarn) << "fence store " << path_ << ": rollback failed: " << sqlite3_errmsg(db_);
    }
  }
}

Status SqliteFenceStore::InWriteTransaction(const std::function<Status()>& body) {
  MZ_RETURN_IF_ERROR(Begin());
  Status s = body();
  if (s.ok()) s = Commit();
  if (!s.ok()) Rollback();
  if (s.ok()) ++commits_;
  return s;
}

Status SqliteFenceStore::AddFences(const std::vector<Cidr>& cidrs) {
  MutexLock lock(mu_);
  return InWriteTransaction([&]() MZ_REQUIRES(mu_) -> Status {
    const std::string now = records::NowRfc3339();
    Stmt upsert;
    Stmt drop_unfence;
    // A fence made again from a pending unfence takes back its tracked flag (and, keyed by the
    // CIDR, its record).
    if (!upsert.Prepare(db_,
                        "INSERT INTO fences(cidr, state, created_at, updated_at, tracked) "
                        "VALUES (?1, 'pending', ?2, ?2, "
                        "        COALESCE((SELECT tracked FROM unfences WHERE cidr = ?1), 1)) "
                        "ON CONFLICT(cidr) DO UPDATE SET state = 'pending', updated_at = ?2") ||
        !drop_unfence.Prepare(db_, "DELETE FROM unfences WHERE cidr = ?1")) {
      return SqlError("preparing the fence insert");
    }
    for (const Cidr& cidr : cidrs) {
      const std::string text = CanonicalCidr(cidr);
      if (!upsert.Run({text, now}) || !drop_unfence.Run({text})) {
        return SqlError("storing fence " + text);
      }
    }
    return Status::Ok();
  });
}

// The stored fences that exactly match one of `cidrs` (canonical), as stored.
Result<std::vector<Cidr>> SqliteFenceStore::StoredAmong(const std::vector<Cidr>& cidrs) const {
  const CidrSet wanted(cidrs);
  std::vector<Cidr> found;
  Stmt all;
  if (!all.Prepare(db_, "SELECT cidr FROM fences")) return SqlError("listing fences");
  int rc;
  while ((rc = all.Step()) == SQLITE_ROW) {
    const std::string text = Column(all.get(), 0);
    auto c = Cidr::Parse(text);
    if (!c.ok()) {
      MZ_LOG(kWarn) << "fence store " << path_ << ": ignoring unparsable row \"" << text << "\"";
      continue;
    }
    if (wanted.Has(*c)) found.push_back(*c);
  }
  if (rc != SQLITE_DONE) return SqlError("listing fences");
  return found;
}

Result<std::vector<Cidr>> SqliteFenceStore::RemoveFences(const std::vector<Cidr>& cidrs) {
  MutexLock lock(mu_);
  std::vector<Cidr> removed;
  Status s = InWriteTransaction([&]() MZ_REQUIRES(mu_) -> Status {
    MZ_ASSIGN_OR_RETURN(removed, StoredAmong(cidrs));
    const std::string now = records::NowRfc3339();
    Stmt del;
    Stmt add_unfence;
    // The unfence keeps the fence's tracked flag and (keyed by the CIDR) its record.
    if (!del.Prepare(db_, "DELETE FROM fences WHERE cidr = ?1") ||
        !add_unfence.Prepare(db_,
                             "INSERT INTO unfences(cidr, created_at, tracked) "
                             "VALUES (?1, ?2, (SELECT tracked FROM fences WHERE cidr = ?1)) "
                             "ON CONFLICT(cidr) DO NOTHING")) {
      return SqlError("preparing the fence removal");
    }
    for (const Cidr& cidr : removed) {
      const std::string text = CanonicalCidr(cidr);
      if (!add_unfence.Run({text, now}) || !del.Run({text})) {
        return SqlError("removing fence " + text);
      }
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  std::sort(removed.begin(), removed.end(), CidrLess);
  return removed;
}

Status SqliteFenceStore::RecordCompleted(const Completed& done) {
  if (done.empty()) return Status::Ok();
  MutexLock lock(mu_);
  return InWriteTransaction([&]() MZ_REQUIRES(mu_) -> Status {
    const std::string now = records::NowRfc3339();
    Stmt enforced;
    Stmt release;
    Stmt unfenced;
    Stmt forget;
    // An unfence's record goes with it, unless the CIDR is fenced again (then it is the fence's).
    if (!enforced.Prepare(db_,
                          "UPDATE fences SET state = 'enforced', updated_at = ?2 "
                          "WHERE cidr = ?1 AND state <> 'enforced'") ||
        !release.Prepare(db_, "DELETE FROM held_ports WHERE port_id = ?1") ||
        !unfenced.Prepare(db_, "DELETE FROM unfences WHERE cidr = ?1") ||
        !forget.Prepare(db_,
                        "DELETE FROM held_ports WHERE cidr = ?1 "
                        "AND NOT EXISTS (SELECT 1 FROM fences WHERE cidr = ?1)")) {
      return SqlError("preparing the record of what a pass completed");
    }
    for (const Cidr& cidr : done.enforced) {
      const std::string text = CanonicalCidr(cidr);
      if (!enforced.Run({text, now})) return SqlError("marking " + text + " enforced");
    }
    for (const std::string& id : done.released) {
      if (!release.Run({id})) return SqlError("releasing port " + Quoted(id));
    }
    for (const Cidr& cidr : done.unfenced) {
      const std::string text = CanonicalCidr(cidr);
      if (!unfenced.Run({text}) || !forget.Run({text})) {
        return SqlError("completing unfence " + text);
      }
    }
    return Status::Ok();
  });
}

Status SqliteFenceStore::RecordHeldPorts(const std::vector<PortHold>& holds) {
  if (holds.empty()) return Status::Ok();
  MutexLock lock(mu_);
  return InWriteTransaction([&]() MZ_REQUIRES(mu_) -> Status {
    Stmt add;
    if (!add.Prepare(db_,
                     "INSERT OR IGNORE INTO held_ports(cidr, port_id) SELECT ?1, ?2 "
                     "WHERE EXISTS (SELECT 1 FROM fences WHERE cidr = ?1)")) {
      return SqlError("preparing the record update");
    }
    for (const PortHold& h : holds) {
      const std::string text = CanonicalCidr(h.fence);
      if (!add.Run({text, h.port_id})) {
        return SqlError("recording port " + Quoted(h.port_id) + " for fence " + text);
      }
    }
    return Status::Ok();
  });
}

Result<int64_t> SqliteFenceStore::DataVersion() const {
  if (data_version_ == nullptr) {
    // Prepared on first use; kept until the store closes.
    if (sqlite3_prepare_v2(db_, "PRAGMA data_version", -1, &data_version_, nullptr) != SQLITE_OK) {
      return SqlError("reading the data version");
    }
  }
  sqlite3_reset(data_version_);
  if (sqlite3_step(data_version_) != SQLITE_ROW) return SqlError("reading the data version");
  const int64_t v = sqlite3_column_int64(data_version_, 0);
  sqlite3_reset(data_version_);
  return v;
}

Result<StoreSnapshot> SqliteFenceStore::Snapshot() const {
  MutexLock lock(mu_);
  MZ_ASSIGN_OR_RETURN(const int64_t version, DataVersion());
  if (cached_ && version == cached_version_) return *cached_;
  MZ_ASSIGN_OR_RETURN(StoreSnapshot snap, ReadSnapshot());
  cached_ = std::make_shared<const StoreSnapshot>(snap);
  cached_version_ = version;
  return snap;
}

Result<StoreSnapshot> SqliteFenceStore::ReadSnapshot() const {
  StoreSnapshot snap;
  // One read transaction, so both tables are seen at the same point.
  MZ_RETURN_IF_ERROR(Exec("BEGIN"));
  HeldPorts held;
  Status s = ReadHeldPorts(held);
  if (s.ok()) s = ReadFences(held, snap);
  if (s.ok()) s = ReadUnfences(held, snap);
  if (s.ok()) {
    s = Exec("COMMIT");
  } else {
    Rollback();
  }
  if (!s.ok()) return s;
  std::sort(snap.fences.begin(), snap.fences.end(),
            [](const FenceEntry& a, const FenceEntry& b) { return CidrLess(a.cidr, b.cidr); });
  std::sort(snap.unfences.begin(), snap.unfences.end(),
            [](const UnfenceEntry& a, const UnfenceEntry& b) { return CidrLess(a.cidr, b.cidr); });
  return snap;
}

Status SqliteFenceStore::ForEachRow(const char* sql, const std::string& what,
                                    const std::function<void(sqlite3_stmt*)>& row) const {
  Stmt q;
  if (!q.Prepare(db_, sql)) return SqlError(what);
  int rc;
  while ((rc = q.Step()) == SQLITE_ROW) row(q.get());
  if (rc != SQLITE_DONE) return SqlError(what);
  return Status::Ok();
}

Status SqliteFenceStore::ForEachCidrRow(
    const char* sql, const std::string& what,
    const std::function<void(const Cidr&, const std::string&, sqlite3_stmt*)>& row) const {
  return ForEachRow(sql, what, [&](sqlite3_stmt* stmt) {
    const std::string text = Column(stmt, 0);
    auto c = Cidr::Parse(text);
    if (!c.ok()) {
      MZ_LOG(kWarn) << "fence store " << path_ << ": ignoring unparsable row \"" << text << "\"";
      return;
    }
    row(*c, text, stmt);
  });
}

Status SqliteFenceStore::ReadHeldPorts(HeldPorts& held) const {
  return ForEachRow(
      "SELECT cidr, port_id FROM held_ports ORDER BY cidr, port_id", "listing the fences' records",
      [&held](sqlite3_stmt* stmt) { held[Column(stmt, 0)].push_back(Column(stmt, 1)); });
}

// The record stored under `text` (the CIDR as stored: canonical), empty when none.
std::vector<std::string> SqliteFenceStore::RecordOf(const HeldPorts& held,
                                                    const std::string& text) {
  auto it = held.find(text);
  return it == held.end() ? std::vector<std::string>() : it->second;
}

Status SqliteFenceStore::ReadFences(const HeldPorts& held, StoreSnapshot& snap) const {
  return ForEachCidrRow(
      "SELECT cidr, state, created_at, updated_at, tracked FROM fences", "listing fences",
      [&](const Cidr& cidr, const std::string& text, sqlite3_stmt* stmt) {
        FenceEntry e;
        e.cidr = cidr;
        e.state = Column(stmt, 1) == "enforced" ? FenceState::kEnforced : FenceState::kPending;
        e.created_at = Column(stmt, 2);
        e.updated_at = Column(stmt, 3);
        e.tracked = sqlite3_column_int(stmt, 4) != 0;
        e.held_ports = RecordOf(held, text);
        snap.fences.push_back(std::move(e));
      });
}

Status SqliteFenceStore::ReadUnfences(const HeldPorts& held, StoreSnapshot& snap) const {
  return ForEachCidrRow(
      "SELECT cidr, tracked FROM unfences", "listing pending unfences",
      [&](const Cidr& cidr, const std::string& text, sqlite3_stmt* stmt) {
        snap.unfences.push_back({cidr, sqlite3_column_int(stmt, 1) != 0, RecordOf(held, text)});
      });
}

Result<std::vector<FenceEntry>> SqliteFenceStore::ListFences() const {
  MZ_ASSIGN_OR_RETURN(StoreSnapshot snap, Snapshot());
  return std::move(snap.fences);
}

Result<int64_t> SqliteFenceStore::Revision() const {
  MutexLock lock(mu_);
  MZ_ASSIGN_OR_RETURN(const int64_t others, DataVersion());
  // data_version moves with other connections' commits only; this connection's are counted.
  return (others << 32) + static_cast<int64_t>(commits_ & 0xffffffff);
}

std::unique_ptr<Leadership> SqliteFenceStore::JoinElection(const std::string& candidate) {
  return std::make_unique<SoleLeadership>(candidate);
}

}  // namespace mizarmp::fence
