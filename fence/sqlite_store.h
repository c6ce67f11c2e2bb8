// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence store in SQLite (libsqlite3): the backend for a file path.
//
// One database file (default /var/lib/mizarmp/fence.db), created 0600 in a directory created
// 0700; journal_mode=WAL with synchronous=FULL, so a transaction that returned is on disk: a
// crash (kill -9, power loss) at any later point loses no acknowledged fence, and a crash in
// the middle of a transaction leaves the state before it.
//
// Schema (user_version 2):
//   fences(cidr TEXT PRIMARY KEY, state TEXT 'pending'|'enforced', created_at, updated_at,
//          tracked INTEGER)
//   unfences(cidr TEXT PRIMARY KEY, created_at, tracked INTEGER)
//   held_ports(cidr, port_id; PRIMARY KEY both): the records, keyed by the fence's canonical
//          CIDR, so a fence lifted into an unfence (or fenced again) keeps its record as it is
// A version 1 file is migrated in place when opened (one transaction): its fences and unfences
// get tracked=0, i.e. no record of the ports they disabled, and their unfence re-enables every
// down port inside them as version 1 did (fence/store.h). A file of a newer version is refused.
//
// Thread-safe: one connection, one mutex.
//
// Snapshot() answers from the last snapshot it read while nothing changed since: this store's
// own writes drop it, and another connection's commit (a second server or an operator's sqlite3
// on the same file) shows in `PRAGMA data_version`, which is read on every call (one step of a
// statement prepared once, instead of a transaction with two queries and their parsing).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "fence/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mizarmp::fence {

class SqliteFenceStore final : public FenceStore {
 public:
  // Opens (creating when missing) the database at `path`. Errors name the path:
  // INVALID_ARGUMENT for a relative path; DATA_LOSS for a file that is not a database or is
  // corrupt; FAILED_PRECONDITION for a newer schema, a special file or another unusable
  // database; the errno's code for file-system problems (a directory in the way included).
  static Result<std::unique_ptr<SqliteFenceStore>> Open(const std::string& path);
  ~SqliteFenceStore() override;
  SqliteFenceStore(const SqliteFenceStore&) = delete;
  SqliteFenceStore& operator=(const SqliteFenceStore&) = delete;

  Status AddFences(const std::vector<Cidr>& cidrs) override;
  Result<std::vector<Cidr>> RemoveFences(const std::vector<Cidr>& cidrs) override;
  Status RecordHeldPorts(const std::vector<PortHold>& holds) override;
  Status RecordCompleted(const Completed& done) override;
  Result<StoreSnapshot> Snapshot() const override;
  Result<std::vector<FenceEntry>> ListFences() const override;
  Result<int64_t> Revision() const override;
  // One file, one replica: always the leader (SoleLeadership).
  std::unique_ptr<Leadership> JoinElection(const std::string& candidate) override;

 private:
  explicit SqliteFenceStore(std::string path) : path_(std::move(path)) {}

  // The steps of Open(), in order. Everything below that uses the connection runs under mu_.
  Status ApplyPragmas() MZ_REQUIRES(mu_);
  Status CheckIntegrity() MZ_REQUIRES(mu_);
  Status MigrateSchema() MZ_REQUIRES(mu_);

  Status Exec(const char* sql) const MZ_REQUIRES(mu_);
  Status Begin() const MZ_REQUIRES(mu_);
  Status Commit() const MZ_REQUIRES(mu_);
  void Rollback() const MZ_REQUIRES(mu_);
  // Runs `body` in a write transaction: committed when it succeeds, rolled back otherwise.
  Status InWriteTransaction(const std::function<Status()>& body) MZ_REQUIRES(mu_);
  Status SqlError(const std::string& what) const MZ_REQUIRES(mu_);
  Result<int64_t> DataVersion() const MZ_REQUIRES(mu_);
  Result<StoreSnapshot> ReadSnapshot() const MZ_REQUIRES(mu_);
  // Canonical CIDR -> its record (sorted port ids).
  using HeldPorts = std::map<std::string, std::vector<std::string>>;
  Status ReadHeldPorts(HeldPorts& held) const MZ_REQUIRES(mu_);
  // Runs `row` on every row `sql` selects; `what` names the read in an error.
  Status ForEachRow(const char* sql, const std::string& what,
                    const std::function<void(sqlite3_stmt*)>& row) const MZ_REQUIRES(mu_);
  // The same for rows whose first column is a stored CIDR: one that does not parse is logged
  // and skipped, the others reach `row` parsed and as stored.
  Status ForEachCidrRow(
      const char* sql, const std::string& what,
      const std::function<void(const Cidr&, const std::string&, sqlite3_stmt*)>& row) const
      MZ_REQUIRES(mu_);
  static std::vector<std::string> RecordOf(const HeldPorts& held, const std::string& text);
  Status ReadFences(const HeldPorts& held, StoreSnapshot& snap) const MZ_REQUIRES(mu_);
  Status ReadUnfences(const HeldPorts& held, StoreSnapshot& snap) const MZ_REQUIRES(mu_);
  Result<std::vector<Cidr>> StoredAmong(const std::vector<Cidr>& cidrs) const MZ_REQUIRES(mu_);

  const std::string path_;
  mutable Mutex mu_;
  sqlite3* db_ MZ_GUARDED_BY(mu_) = nullptr;
  // PRAGMA data_version, prepared once.
  mutable sqlite3_stmt* data_version_ MZ_GUARDED_BY(mu_) = nullptr;
  // The last snapshot read and the data_version it was read at; Begin() (every write) drops it.
  mutable std::shared_ptr<const StoreSnapshot> cached_ MZ_GUARDED_BY(mu_);
  mutable int64_t cached_version_ MZ_GUARDED_BY(mu_) = -1;
  uint64_t commits_ MZ_GUARDED_BY(mu_) = 0;  // this connection's commits, for Revision()
};

}  // namespace mizarmp::fence
