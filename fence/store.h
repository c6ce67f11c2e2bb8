// The fence store: what is fenced, durably, in SQLite (libsqlite3).
//
// One database file (default /var/lib/mizarmp/fence.db), created 0600 in a directory created
// 0700; journal_mode=WAL with synchronous=FULL, so a transaction that returned is on disk: a
// crash (kill -9, power loss) at any later point loses no acknowledged fence, and a crash in
// the middle of a transaction leaves the state before it.
//
// Schema (user_version 1):
//   fences(cidr TEXT PRIMARY KEY, state TEXT 'pending'|'enforced', created_at, updated_at)
//     pending:  written, not yet (or not completely) enforced at Mizar-MP
//     enforced: every port inside it was disabled at Mizar-MP at the last pass
//   unfences(cidr TEXT PRIMARY KEY, created_at)
//     lifted fences whose ports may still need re-enabling (pending unfences)
// CIDRs are stored in canonical form (fence/cidrset.h).
//
// Thread-safe: one connection, one mutex.
//
// Snapshot() answers from the last snapshot it read while nothing changed since: this store's
// own writes drop it, and another connection's commit (a second server or an operator's sqlite3
// on the same file) shows in `PRAGMA data_version`, which is read on every call (one step of a
// statement prepared once, instead of a transaction with two queries and their parsing).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mizarmp::fence {

enum class FenceState { kPending, kEnforced };
std::string_view FenceStateName(FenceState state);  // "pending" | "enforced"

struct FenceEntry {
  Cidr cidr;  // network form
  FenceState state = FenceState::kPending;
  std::string created_at;  // RFC 3339 UTC
  std::string updated_at;
  friend bool operator==(const FenceEntry&, const FenceEntry&) = default;
};

struct StoreSnapshot {
  std::vector<FenceEntry> fences;  // sorted by CIDR (IPv4 first)
  std::vector<Cidr> unfences;      // pending unfences, sorted
};

class FenceStore {
 public:
  // Opens (creating when missing) the database at `path`. Errors: FAILED_PRECONDITION naming
  // the path for an unusable file (not a database, corrupt, newer schema, unwritable), the
  // errno code for directory problems.
  static Result<std::unique_ptr<FenceStore>> Open(const std::string& path);
  ~FenceStore();
  FenceStore(const FenceStore&) = delete;
  FenceStore& operator=(const FenceStore&) = delete;

  const std::string& path() const { return path_; }

  // Adds fences (new ones pending; an existing one becomes pending again so the next pass
  // re-checks it) and drops any pending unfence of the same CIDRs. One transaction.
  Status AddFences(const std::vector<Cidr>& cidrs);
  // Removes the listed fences (exact, canonical match: a wider CIDR does not lift narrower
  // fences, so a retried unfence never lifts a fence made since), recording each removed fence
  // as a pending unfence. Unknown CIDRs are ignored. One transaction. Returns the removed ones.
  Result<std::vector<Cidr>> RemoveFences(const std::vector<Cidr>& cidrs);
  // Marks fences enforced (those still stored; others are ignored).
  Status MarkEnforced(const std::vector<Cidr>& cidrs);
  // Forgets pending unfences (their ports were re-enabled).
  Status CompleteUnfences(const std::vector<Cidr>& cidrs);

  Result<StoreSnapshot> Snapshot() const;
  Result<std::vector<FenceEntry>> ListFences() const;

  // A cheap liveness check of the connection (a read of the schema version).
  Status Check() const;

 private:
  FenceStore() = default;
  Status Exec(const char* sql) const;
  Status Begin() const;
  Status Commit() const;
  void Rollback() const;
  Status SqlError(const std::string& what) const;
  Result<int64_t> DataVersion() const;
  Result<StoreSnapshot> ReadSnapshot() const;

  std::string path_;
  sqlite3* db_ = nullptr;
  mutable std::mutex mu_;
  mutable sqlite3_stmt* data_version_ = nullptr;  // PRAGMA data_version, prepared once
  // The last snapshot read and the data_version it was read at; Begin() (every write) drops it.
  mutable std::shared_ptr<const StoreSnapshot> cached_;
  mutable int64_t cached_version_ = -1;
};

}  // namespace mizarmp::fence
