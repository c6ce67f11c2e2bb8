// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/audit.h"

#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/fileutil.h"
#include "common/mutex.h"
#include "fence/sqlite_util.h"
#include "records/records.h"

namespace mizarmp::fence {
namespace {

using nlohmann::json;

// A list of strings at `key` of `doc`, absent meaning empty.
Status ReadStrings(const json& doc, const char* key, std::vector<std::string>& out) {
  const auto it = doc.find(key);
  if (it == doc.end()) return Status::Ok();
  if (!it->is_array())
    return InvalidArgumentError(std::string("audit entry: ") + key + ": not a list");
  for (const json& item : *it) {
    if (!item.is_string()) {
      return InvalidArgumentError(std::string("audit entry: ") + key + ": not a list of strings");
    }
    out.push_back(item.get<std::string>());
  }
  return Status::Ok();
}

Status ReadString(const json& doc, const char* key, std::string& out) {
  const auto it = doc.find(key);
  if (it == doc.end()) return Status::Ok();
  if (!it->is_string())
    return InvalidArgumentError(std::string("audit entry: ") + key + ": not a string");
  out = it->get<std::string>();
  return Status::Ok();
}

// Entries as rows (sequence, JSON document); the sequence is SQLite's rowid, which increases
// with each insert (AUTOINCREMENT: never reused after the oldest rows are dropped).
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS audit ("
    " sequence INTEGER PRIMARY KEY AUTOINCREMENT,"
    " entry TEXT NOT NULL);";

class SqliteAuditLog final : public AuditLog {
 public:
  SqliteAuditLog(std::string path, size_t capacity) : path_(std::move(path)), capacity_(capacity) {}
  ~SqliteAuditLog() override {
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }
  SqliteAuditLog(const SqliteAuditLog&) = delete;
  SqliteAuditLog& operator=(const SqliteAuditLog&) = delete;

  Status Open() MZ_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    MZ_RETURN_IF_ERROR(OpenPrivateDatabase(path_, "fence audit", &db_));
    // As durable as the store beside it: an entry appended is on disk.
    MZ_RETURN_IF_ERROR(
        SqliteExec(db_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL", Named()));
    return SqliteExec(db_, kSchema, Named());
  }

  Status Append(AuditEntry entry) override MZ_EXCLUDES(mu_) {
    entry.sequence = 0;  // the row's
    entry.time = records::NowRfc3339();
    const std::string doc = AuditEntryToJson(entry).dump();
    MutexLock lock(mu_);
    Stmt insert;
    Stmt trim;
    if (!insert.Prepare(db_, "INSERT INTO audit(entry) VALUES (?1)") || !insert.Run({doc}) ||
        !trim.Prepare(db_, "DELETE FROM audit WHERE sequence <= last_insert_rowid() - ?1")) {
      return SqliteError(db_, Named() + ": appending");
    }
    trim.BindInt64(1, static_cast<int64_t>(capacity_));
    if (trim.Step() != SQLITE_DONE) return SqliteError(db_, Named() + ": dropping old entries");
    return Status::Ok();
  }

  Result<std::vector<AuditEntry>> Recent(size_t limit) const override MZ_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    Stmt read;
    if (!read.Prepare(db_, "SELECT sequence, entry FROM audit ORDER BY sequence DESC LIMIT ?1")) {
      return SqliteError(db_, Named() + ": reading");
    }
    read.BindInt64(1, static_cast<int64_t>(std::min(limit, kMaxAuditRead)));
    std::vector<AuditEntry> entries;
    int rc;
    while ((rc = read.Step()) == SQLITE_ROW) {
      const json doc = json::parse(Column(read.get(), 1), nullptr, /*allow_exceptions=*/false);
      auto entry = AuditEntryFromJson(doc);
      if (!entry.ok()) return DataLossError(Named() + ": " + entry.status().message());
      entry->sequence = static_cast<uint64_t>(sqlite3_column_int64(read.get(), 0));
      entries.push_back(std::move(*entry));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, Named() + ": reading");
    std::reverse(entries.begin(), entries.end());
    return entries;
  }

 private:
  std::string Named() const { return "fence audit \"" + path_ + "\""; }

  const std::string path_;
  const size_t capacity_;
  mutable Mutex mu_;  // one statement at a time on the connection
  sqlite3* db_ = nullptr;
};

}  // namespace

json AuditEntryToJson(const AuditEntry& e) {
  json doc = {{"time", e.time}, {"action", e.action}, {"replica", e.replica}};
  if (e.sequence != 0) doc["sequence"] = e.sequence;
  if (!e.request_id.empty()) doc["request_id"] = e.request_id;
  if (!e.caller.empty()) doc["caller"] = e.caller;
  if (!e.cidrs.empty()) doc["cidrs"] = e.cidrs;
  if (!e.disabled.empty()) doc["disabled"] = e.disabled;
  if (!e.enabled.empty()) doc["enabled"] = e.enabled;
  return doc;
}

Result<AuditEntry> AuditEntryFromJson(const json& doc) {
  if (!doc.is_object()) return InvalidArgumentError("audit entry: not a JSON object");
  AuditEntry e;
  MZ_RETURN_IF_ERROR(ReadString(doc, "time", e.time));
  MZ_RETURN_IF_ERROR(ReadString(doc, "action", e.action));
  MZ_RETURN_IF_ERROR(ReadString(doc, "replica", e.replica));
  MZ_RETURN_IF_ERROR(ReadString(doc, "request_id", e.request_id));
  MZ_RETURN_IF_ERROR(ReadString(doc, "caller", e.caller));
  MZ_RETURN_IF_ERROR(ReadStrings(doc, "cidrs", e.cidrs));
  MZ_RETURN_IF_ERROR(ReadStrings(doc, "disabled", e.disabled));
  MZ_RETURN_IF_ERROR(ReadStrings(doc, "enabled", e.enabled));
  if (const auto it = doc.find("sequence"); it != doc.end()) {
    if (!it->is_number_unsigned())
      return InvalidArgumentError("audit entry: sequence: not a number");
    e.sequence = it->get<uint64_t>();
  }
  if (e.action.empty()) return InvalidArgumentError("audit entry: action: missing");
  return e;
}

Result<std::unique_ptr<AuditLog>> OpenSqliteAuditLog(const std::string& path, size_t capacity) {
  auto log = std::make_unique<SqliteAuditLog>(path, capacity);
  MZ_RETURN_IF_ERROR(log->Open());
  return std::unique_ptr<AuditLog>(std::move(log));
}

}  // namespace mizarmp::fence
