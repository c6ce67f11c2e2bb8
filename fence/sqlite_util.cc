// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/sqlite_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd.h"
#include "common/fileutil.h"
#include "common/log.h"

namespace mizarmp::fence {

Stmt::~Stmt() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

bool Stmt::Prepare(sqlite3* db, const char* sql) {
  return sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) == SQLITE_OK;
}

bool Stmt::Run(std::initializer_list<std::string_view> params) {
  Reset();
  int index = 1;
  for (std::string_view p : params) BindText(index++, p);
  return Step() == SQLITE_DONE;
}

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Stmt::BindText(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void Stmt::BindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
}

void Stmt::BindInt64(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

int Stmt::Step() { return sqlite3_step(stmt_); }

std::string Column(sqlite3_stmt* s, int i) {
  const unsigned char* text = sqlite3_column_text(s, i);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

std::string BlobColumn(sqlite3_stmt* s, int i) {
  const void* bytes = sqlite3_column_blob(s, i);
  const int size = sqlite3_column_bytes(s, i);
  return bytes == nullptr ? std::string() : std::string(static_cast<const char*>(bytes), size);
}

Status SqliteError(sqlite3* db, const std::string& context) {
  const int code = db != nullptr ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  const std::string text = context + ": " + (db != nullptr ? sqlite3_errmsg(db) : "no database");
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(text);
    case SQLITE_FULL:
      return Status(Code::kResourceExhausted, text);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return DataLossError(text);
    default:
      return FailedPreconditionError(text);
  }
}

Status SqliteExec(sqlite3* db, const char* sql, const std::string& named) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    return SqliteError(db, named + ": executing \"" + sql + "\" (" + msg + ")");
  }
  return Status::Ok();
}

Status PrepareDirectory(const std::string& dir, const std::string& what) {
  struct stat st {};
  const bool existed = ::stat(dir.c_str(), &st) == 0;
  Status made = MakeDirs(dir, 0700);
  if (!made.ok()) return made.WithContext(what + " directory \"" + dir + "\"");
  if (existed && (st.st_mode & 022) != 0) {
    MZ_LOG(kWarn) << what << " directory " << dir
                  << " is writable by group/others; it should be 0700";
  }
  return Status::Ok();
}

Status OpenPrivateDatabase(const std::string& path, const std::string& what, sqlite3** db) {
  const std::string dir = DirName(path);
  MZ_RETURN_IF_ERROR(PrepareDirectory(dir, what));
  MZ_RETURN_IF_ERROR(CreatePrivateFile(path, dir, what));
  const int rc = sqlite3_open_v2(
      path.c_str(), db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW,
      nullptr);
  if (rc != SQLITE_OK) return SqliteError(*db, what + " \"" + path + "\": open");
  sqlite3_extended_result_codes(*db, 1);
  sqlite3_busy_timeout(*db, 5000);
  return Status::Ok();
}

Status CreatePrivateFile(const std::string& path, const std::string& dir, const std::string& what) {
  const std::string named = what + " \"" + path + "\"";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return ErrnoError(named + ": open", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(named + ": fstat", errno);
  if (!S_ISREG(st.st_mode)) return FailedPreconditionError(named + ": not a regular file");
  if ((st.st_mode & 0777) != 0600 && ::fchmod(fd.get(), 0600) != 0) {
    return ErrnoError(named + ": chmod 0600", errno);
  }
  if (st.st_size == 0) {
    // Possibly just created: make its directory entry durable before anything is stored.
    UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dfd.valid() || ::fsync(dfd.get()) != 0) {
      return ErrnoError(what + " directory \"" + dir + "\": fsync", errno);
    }
  }
  return Status::Ok();
}

}  // namespace mizarmp::fence
