// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index in SQLite (fence/port_index.h).
//
// attachments(ip BLOB, port_id TEXT, node TEXT; PRIMARY KEY (ip, port_id)) WITHOUT ROWID, and an
// index by node for Publish's replace; publications(node TEXT PRIMARY KEY, at_ms INTEGER,
// entries INTEGER, enforced TEXT) holds each node's last publication time (unix milliseconds),
// size and the fence set it enforces, so that
// a pass's look at the leases reads one row per node, not every entry. An address is stored as its
// address key (fence/address_key.h), so a CIDR is the range [network, last]. SQLite's page cache
// bounds the memory, whatever the row count.
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/mutex.h"
#include "fence/address_key.h"
#include "fence/port_index.h"
#include "fence/sqlite_util.h"

namespace mizarmp::fence {
namespace {

// Version 4 added each entry's pod, 5 the fence set each node enforces.
constexpr int kIndexSchemaVersion = 5;
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS attachments ("
    " ip BLOB NOT NULL,"
    " port_id TEXT NOT NULL,"
    " node TEXT NOT NULL,"
    " pod TEXT NOT NULL DEFAULT '',"
    " PRIMARY KEY (ip, port_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS attachments_by_node ON attachments(node);"
    "CREATE TABLE IF NOT EXISTS publications ("
    " node TEXT PRIMARY KEY,"
    " at_ms INTEGER NOT NULL,"
    " entries INTEGER NOT NULL,"
    " enforced TEXT NOT NULL DEFAULT '') WITHOUT ROWID;"
    "PRAGMA user_version = 5;";
// An index of an earlier schema is dropped, not migrated: it is soft state, which the node
// agents' next publications rebuild.
constexpr const char* kDropEarlierSchema =
    "DROP TABLE IF EXISTS attachments; DROP TABLE IF EXISTS publications;";

int64_t UnixMillis(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

class SqlitePortIndex final : public PortIndex {
 public:
  explicit SqlitePortIndex(std::string path) : path_(std::move(path)) {}
  ~SqlitePortIndex() override {
    if (db_ != nullptr) sqlite3_close_v2(db_);
  }
  SqlitePortIndex(const SqlitePortIndex&) = delete;
  SqlitePortIndex& operator=(const SqlitePortIndex&) = delete;

  Status Open() MZ_EXCLUDES(mu_) {
    MutexLock lock(mu_);  // nobody else has the index yet: the connection's rule holds from here
    MZ_RETURN_IF_ERROR(OpenPrivateDatabase(path_, "port index", &db_));
    // Soft state: an application crash loses nothing committed in WAL mode, a power loss at
    // most the last publications, which their agents make again.
    MZ_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"));
    int found = 0;
    {  // finalized before the schema changes: a live statement locks the tables
      Stmt version;
      if (!version.Prepare(db_, "PRAGMA user_version") || version.Step() != SQLITE_ROW) {
        return Error("reading the schema version");
      }
      found = sqlite3_column_int(version.get(), 0);
    }
    if (found > kIndexSchemaVersion) {
      return FailedPreconditionError("port index \"" + path_ + "\": schema version " +
                                     std::to_string(found) + " is newer than this server's " +
                                     std::to_string(kIndexSchemaVersion));
    }
    if (found != 0 && found < kIndexSchemaVersion) {
      MZ_LOG(kInfo) << "port index " << path_ << ": schema version " << found
                    << " dropped; node agents publish again";
      MZ_RETURN_IF_ERROR(Exec(kDropEarlierSchema));
    }
    return Exec(kSchema);
  }

  Status Publish(const std::string& node, const std::vector<AddressedPort>& ports,
                 std::chrono::system_clock::time_point at, const std::string& enforced) override {
    if (node.empty()) return InvalidArgumentError("port index: a publication names no node");
    for (const AddressedPort& p : ports) {
      if (p.port_id.empty()) {
        return InvalidArgumentError("port index: node " + node + " published an address (" +
                                    p.ip.ToString() + ") without a port id");
      }
    }
    MutexLock lock(mu_);
    MZ_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    auto entries = ReplaceNode(node, ports);
    Status s =
        entries.ok() ? RecordPublication(node, at, *entries, enforced) : entries.status();
    return Finish(std::move(s));
  }

  Status Acknowledge(const std::string& node, const std::string& enforced) override {
    MutexLock lock(mu_);
    Stmt update;
    if (!update.Prepare(db_, "UPDATE publications SET enforced = ?2 WHERE node = ?1") ||
        !update.Run({node, enforced})) {
      return Error("recording the acknowledgement of node " + node);
    }
    if (sqlite3_changes(db_) == 0) {
      return NotFoundError("port index: node " + node + " has not published");
    }
    return Status::Ok();
  }

  Status Forget(const std::string& node) override {
    MutexLock lock(mu_);
    MZ_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status s = ReplaceNode(node, {}).status();
    Stmt drop;
    if (s.ok() &&
        (!drop.Prepare(db_, "DELETE FROM publications WHERE node = ?1") || !drop.Run({node}))) {
      s = Error("forgetting node " + node);
    }
    return Finish(std::move(s));
  }

  Result<std::vector<Publication>> Publications() const override {
    MutexLock lock(mu_);
    Stmt query;
    if (!query.Prepare(db_, "SELECT node, at_ms, entries, enforced FROM publications ORDER BY node")) {
      return Error("preparing the read of publications");
    }
    std::vector<Publication> found;
    int rc;
    while ((rc = query.Step()) == SQLITE_ROW) {
      const auto at = std::chrono::system_clock::time_point(
          std::chrono::milliseconds(sqlite3_column_int64(query.get(), 1)));
      found.push_back({Column(query.get(), 0), at,
                       static_cast<size_t>(sqlite3_column_int64(query.get(), 2)),
                       Column(query.get(), 3)});
    }
    if (rc != SQLITE_DONE) return Error("reading the publications");
    return found;
  }

  Result<std::vector<IndexedPort>> Inside(const std::vector<Cidr>& cidrs) const override {
    MutexLock lock(mu_);
    Stmt range;
    if (!range.Prepare(
            db_, "SELECT ip, port_id, node, pod FROM attachments WHERE ip BETWEEN ?1 AND ?2")) {
      return Error("preparing the range read");
    }
    std::vector<IndexedPort> found;
    for (const Cidr& cidr : cidrs) {
      range.Reset();
      range.BindBlob(1, AddressKey(cidr.network()));
      range.BindBlob(2, AddressKey(cidr.last()));
      MZ_RETURN_IF_ERROR(ReadRows(range, "the ports inside " + cidr.ToString(), found));
    }
    const auto by_address = [](const IndexedPort& a, const IndexedPort& b) {
      return std::tie(a.ip, a.port_id) < std::tie(b.ip, b.port_id);
    };
    const auto same_entry = [](const IndexedPort& a, const IndexedPort& b) {
      return a.ip == b.ip && a.port_id == b.port_id;
    };
    std::sort(found.begin(), found.end(), by_address);
    found.erase(std::unique(found.begin(), found.end(), same_entry), found.end());
    return found;
  }

  Result<std::vector<IpAddress>> AddressesOn(const std::string& node) const override {
    MutexLock lock(mu_);
    Stmt rows;
    if (!rows.Prepare(db_, "SELECT ip, port_id, node, pod FROM attachments WHERE node = ?1")) {
      return Error("preparing the read of node " + node);
    }
    rows.BindText(1, node);
    std::vector<IndexedPort> found;
    MZ_RETURN_IF_ERROR(ReadRows(rows, "what node " + node + " published", found));
    std::vector<IpAddress> addresses;
    for (const IndexedPort& p : found) addresses.push_back(p.ip);
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
    return addresses;
  }

 private:
  // The publication's writes, inside Publish's transaction: only the difference from what the
  // node published before, so the renewal of an unchanged set (every node, every third of its
  // lease) writes one row, not the node's every entry.
  // Answers how many entries the node now has.
  Result<size_t> ReplaceNode(const std::string& node, const std::vector<AddressedPort>& ports)
      MZ_REQUIRES(mu_) {
    MZ_ASSIGN_OR_RETURN(std::set<Entry> before, EntriesOf(node));
    std::set<Entry> after;
    std::map<Entry, std::string> pods;
    for (const AddressedPort& p : ports) {
      Entry e(AddressKey(p.ip), p.port_id);
      if (!p.pod.empty()) pods[e] = p.pod;
      after.insert(std::move(e));
    }
    Stmt remove;
    Stmt insert;
    if (!remove.Prepare(db_,
                        "DELETE FROM attachments WHERE ip = ?1 AND port_id = ?2 AND node = ?3") ||
        !insert.Prepare(
            db_,
            "INSERT OR REPLACE INTO attachments(ip, port_id, node, pod) VALUES (?1, ?2, ?3, ?4)")) {
      return Error("preparing the publication of node " + node);
    }
    for (const Entry& e : before) {
      if (!after.contains(e) && !Write(remove, e, node)) {
        return Error("forgetting port " + e.second + " of node " + node);
      }
    }
    for (const Entry& e : after) {
      if (before.contains(e)) continue;
      const auto pod = pods.find(e);
      if (!Write(insert, e, node, pod == pods.end() ? "" : pod->second)) {
        return Error("indexing port " + e.second);
      }
    }
    return after.size();
  }

  // (address key, port id) of an entry.
  using Entry = std::pair<std::string, std::string>;

  // Runs `statement` on the entry: (address key, port id, node) and, for an insert, its pod.
  static bool Write(Stmt& statement, const Entry& e, const std::string& node,
                    std::optional<std::string_view> pod = std::nullopt) {
    statement.Reset();
    statement.BindBlob(1, e.first);
    statement.BindText(2, e.second);
    statement.BindText(3, node);
    if (pod) statement.BindText(4, *pod);
    return statement.Step() == SQLITE_DONE;
  }

  Result<std::set<Entry>> EntriesOf(const std::string& node) const MZ_REQUIRES(mu_) {
    Stmt query;
    if (!query.Prepare(db_, "SELECT ip, port_id FROM attachments WHERE node = ?1")) {
      return Error("preparing the read of node " + node);
    }
    query.BindText(1, node);
    std::set<Entry> entries;
    int rc;
    while ((rc = query.Step()) == SQLITE_ROW) {
      entries.emplace(BlobColumn(query.get(), 0), Column(query.get(), 1));
    }
    if (rc != SQLITE_DONE) return Error("reading what node " + node + " published");
    return entries;
  }

  Status RecordPublication(const std::string& node, std::chrono::system_clock::time_point at,
                           size_t entries, const std::string& enforced) MZ_REQUIRES(mu_) {
    Stmt record;
    if (!record.Prepare(db_,
                        "INSERT OR REPLACE INTO publications(node, at_ms, entries, enforced)"
                        " VALUES (?1, ?2, ?3, ?4)")) {
      return Error("preparing the publication time of node " + node);
    }
    record.BindText(1, node);
    record.BindInt64(2, UnixMillis(at));
    record.BindInt64(3, static_cast<int64_t>(entries));
    record.BindText(4, enforced);
    if (record.Step() != SQLITE_DONE) return Error("recording the publication of node " + node);
    return Status::Ok();
  }

  // Commits the transaction `s` completed, or rolls it back.
  Status Finish(Status s) MZ_REQUIRES(mu_) {
    if (s.ok()) s = Exec("COMMIT");
    if (!s.ok()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }

  // Appends the rows `range` selects (`what` names them in an error); a row whose key does not
  // decode is logged and skipped.
  Status ReadRows(Stmt& range, const std::string& what, std::vector<IndexedPort>& found) const
      MZ_REQUIRES(mu_) {
    int rc;
    while ((rc = range.Step()) == SQLITE_ROW) {
      auto ip = AddressFromKey(BlobColumn(range.get(), 0));
      if (!ip.ok()) {
        MZ_LOG(kWarn) << "port index " << path_ << ": skipping a row: " << ip.status().message();
        continue;
      }
      found.push_back(
          {*ip, Column(range.get(), 1), Column(range.get(), 2), Column(range.get(), 3)});
    }
    if (rc != SQLITE_DONE) return Error("reading " + what);
    return Status::Ok();
  }

  Status Exec(const char* sql) const MZ_REQUIRES(mu_) {
    return SqliteExec(db_, sql, "port index \"" + path_ + "\"");
  }
  Status Error(const std::string& what) const MZ_REQUIRES(mu_) {
    return SqliteError(db_, "port index \"" + path_ + "\": " + what);
  }

  const std::string path_;
  mutable Mutex mu_;  // one statement or transaction at a time on db_
  sqlite3* db_ MZ_GUARDED_BY(mu_) = nullptr;
};

}  // namespace

Result<std::unique_ptr<PortIndex>> OpenSqlitePortIndex(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return InvalidArgumentError("port index \"" + path + "\": must be an absolute path");
  }
  auto index = std::make_unique<SqlitePortIndex>(path);
  MZ_RETURN_IF_ERROR(index->Open());
  return std::unique_ptr<PortIndex>(std::move(index));
}

}  // namespace mizarmp::fence
