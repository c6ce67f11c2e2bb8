// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the SQLite-backed files of fence/ (the fence store, the port index) share: a prepared
// statement, and a database file created private (0600 in a 0700 directory) before SQLite opens
// it, so SQLite never creates it with the umask's mode.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mizarmp::fence {

// A prepared statement, finalized on destruction.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Compiles `sql`; false on failure (the connection's error message says why).
  bool Prepare(sqlite3* db, const char* sql);
  // Runs the statement once more with `params` bound to ?1, ?2, ... as text; whether it
  // completed.
  bool Run(std::initializer_list<std::string_view> params);
  // Starts the statement over with nothing bound, for Bind*() and Step().
  void Reset();
  void BindText(int index, std::string_view text);
  void BindBlob(int index, std::string_view bytes);
  void BindInt64(int index, int64_t value);
  // The next row of a query: SQLITE_ROW, SQLITE_DONE or an error code.
  int Step();
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// Column `i` of the current row as text ("" for NULL).
std::string Column(sqlite3_stmt* s, int i);
// The same as raw bytes (a BLOB column).
std::string BlobColumn(sqlite3_stmt* s, int i);

// The connection's last error as a Status whose code says what a caller can do about it (busy:
// UNAVAILABLE, full: RESOURCE_EXHAUSTED, corrupt: DATA_LOSS, anything else: FAILED_PRECONDITION);
// the message is "<context>: <SQLite's message>".
Status SqliteError(sqlite3* db, const std::string& context);

// Runs `sql`, statements without results; an error quotes the statement after `named`.
Status SqliteExec(sqlite3* db, const char* sql, const std::string& named);

// The database's directory, created 0700 when missing. An existing one is left as it is (it may
// be shared), with a warning when others could write into it. `what` names the file in errors
// ("fence store").
Status PrepareDirectory(const std::string& dir, const std::string& what);

// Makes sure `path` is a regular file of mode 0600, creating it when missing; its -wal and -shm
// files take the database file's mode. A file just created has its directory entry made durable.
Status CreatePrivateFile(const std::string& path, const std::string& dir, const std::string& what);

// Opens the database `path` as every SQLite file of fence/ is opened: its directory prepared and
// the file created private first (above), then read-write, serialized, never through a symlink,
// with extended result codes and a 5 s busy timeout. `what` names the file in errors. On failure
// *db may hold a handle, which the caller closes as it would a good one.
Status OpenPrivateDatabase(const std::string& path, const std::string& what, sqlite3** db);

}  // namespace mizarmp::fence
