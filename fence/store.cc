#include "fence/store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "common/fd.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "fence/cidrset.h"

namespace mizarmp::fence {
namespace {

constexpr int kSchemaVersion = 1;

// A prepared statement, finalized on destruction.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt** out() { return &stmt_; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Column(sqlite3_stmt* s, int i) {
  const unsigned char* text = sqlite3_column_text(s, i);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

}  // namespace

std::string_view FenceStateName(FenceState state) {
  return state == FenceState::kEnforced ? "enforced" : "pending";
}

Status FenceStore::SqlError(const std::string& what) const {
  const int code = db_ != nullptr ? sqlite3_extended_errcode(db_) : SQLITE_ERROR;
  const std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "no database";
  const std::string text = "fence store \"" + path_ + "\": " + what + ": " + msg;
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

Status FenceStore::Exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    return SqlError(std::string("executing \"") + sql + "\" (" + msg + ")");
  }
  return Status::Ok();
}

// Every write runs in a transaction begun here, so this is where the cached snapshot goes, at the
// start of the write (a write that then fails or rolls back only costs the next read).
Status FenceStore::Begin() const {
  cached_.reset();
  return Exec("BEGIN IMMEDIATE");
}
Status FenceStore::Commit() const { return Exec("COMMIT"); }
void FenceStore::Rollback() const {
  if (sqlite3_get_autocommit(db_) == 0) {
    if (sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr) != SQLITE_OK) {
      MZ_LOG(kWarn) << "fence store " << path_ << ": rollback failed: " << sqlite3_errmsg(db_);
    }
  }
}

Result<std::unique_ptr<FenceStore>> FenceStore::Open(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return InvalidArgumentError("fence store \"" + path + "\": must be an absolute path");
  }
  const std::string dir = DirName(path);
  {
    struct stat st {};
    const bool existed = ::stat(dir.c_str(), &st) == 0;
    Status made = MakeDirs(dir, 0700);
    if (!made.ok()) return made.WithContext("fence store directory \"" + dir + "\"");
    if (existed && (st.st_mode & 022) != 0) {
      MZ_LOG(kWarn) << "fence store directory " << dir
                    << " is writable by group/others; it should be 0700";
    }
  }
  // Create the file 0600 ourselves so SQLite never creates it with the umask's mode; its -wal
  // and -shm files take the database file's mode.
  {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return ErrnoError("fence store \"" + path + "\": open", errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
      return ErrnoError("fence store \"" + path + "\": fstat", errno);
    if (!S_ISREG(st.st_mode)) {
      return FailedPreconditionError("fence store \"" + path + "\": not a regular file");
    }
    if ((st.st_mode & 0777) != 0600 && ::fchmod(fd.get(), 0600) != 0) {
      return ErrnoError("fence store \"" + path + "\": chmod 0600", errno);
    }
    if (st.st_size == 0) {
      // Possibly just created: make its directory entry durable before anything is stored.
      UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dfd.valid() || ::fsync(dfd.get()) != 0) {
        return ErrnoError("fence store directory \"" + dir + "\": fsync", errno);
      }
    }
  }

  std::unique_ptr<FenceStore> store(new FenceStore());
  store->path_ = path;
  const int rc = sqlite3_open_v2(
      path.c_str(), &store->db_,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  if (rc != SQLITE_OK) return store->SqlError("open");
  sqlite3_extended_result_codes(store->db_, 1);
  sqlite3_busy_timeout(store->db_, 5000);

  // Fail early on a file that is not a database (or a corrupt one).
  MZ_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  MZ_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  MZ_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  {
    Stmt check;
    if (sqlite3_prepare_v2(store->db_, "PRAGMA quick_check", -1, check.out(), nullptr) !=
        SQLITE_OK) {
      return store->SqlError("integrity check");
    }
    if (sqlite3_step(check.get()) != SQLITE_ROW) return store->SqlError("integrity check");
    const std::string verdict = Column(check.get(), 0);
    if (verdict != "ok") {
      return DataLossError("fence store \"" + path + "\": integrity check failed: " + verdict);
    }
  }

  int version = 0;
  {
    Stmt v;
    if (sqlite3_prepare_v2(store->db_, "PRAGMA user_version", -1, v.out(), nullptr) != SQLITE_OK ||
        sqlite3_step(v.get()) != SQLITE_ROW) {
      return store->SqlError("reading the schema version");
    }
    version = sqlite3_column_int(v.get(), 0);
  }
  if (version > kSchemaVersion) {
    return FailedPreconditionError("fence store \"" + path + "\": schema version " +
                                   std::to_string(version) + " is newer than this server's " +
                                   std::to_string(kSchemaVersion));
  }
  if (version < kSchemaVersion) {
    MZ_RETURN_IF_ERROR(store->Begin());
    Status s = store->Exec(
        "CREATE TABLE IF NOT EXISTS fences ("
        " cidr TEXT PRIMARY KEY NOT NULL,"
        " state TEXT NOT NULL CHECK (state IN ('pending', 'enforced')),"
        " created_at TEXT NOT NULL,"
        " updated_at TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS unfences ("
        " cidr TEXT PRIMARY KEY NOT NULL,"
        " created_at TEXT NOT NULL);"
        "PRAGMA user_version = 1;");
    if (s.ok()) s = store->Commit();
    if (!s.ok()) {
      store->Rollback();
      return s;
    }
  }
  MZ_LOG(kInfo) << "fence store " << path << " open (WAL, synchronous=FULL)";
  return store;
}

FenceStore::~FenceStore() {
  if (data_version_ != nullptr) sqlite3_finalize(data_version_);
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Status FenceStore::AddFences(const std::vector<Cidr>& cidrs) {
  std::lock_guard<std::mutex> lock(mu_);
  MZ_RETURN_IF_ERROR(Begin());
  const std::string now = NowUtc();
  Stmt upsert;
  Stmt drop_unfence;
  Status s;
  if (sqlite3_prepare_v2(db_,
                         "INSERT INTO fences(cidr, state, created_at, updated_at) "
                         "VALUES (?1, 'pending', ?2, ?2) "
                         "ON CONFLICT(cidr) DO UPDATE SET state = 'pending', updated_at = ?2",
                         -1, upsert.out(), nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "DELETE FROM unfences WHERE cidr = ?1", -1, drop_unfence.out(),
                         nullptr) != SQLITE_OK) {
    s = SqlError("preparing the fence insert");
  }
  for (size_t i = 0; s.ok() && i < cidrs.size(); ++i) {
    const std::string text = CanonicalCidr(cidrs[i]);
    sqlite3_reset(upsert.get());
    sqlite3_bind_text(upsert.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(upsert.get(), 2, now.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(upsert.get()) != SQLITE_DONE) {
      s = SqlError("storing fence " + text);
      break;
    }
    sqlite3_reset(drop_unfence.get());
    sqlite3_bind_text(drop_unfence.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(drop_unfence.get()) != SQLITE_DONE) s = SqlError("storing fence " + text);
  }
  if (s.ok()) s = Commit();
  if (!s.ok()) Rollback();
  return s;
}

Result<std::vector<Cidr>> FenceStore::RemoveFences(const std::vector<Cidr>& cidrs) {
  std::lock_guard<std::mutex> lock(mu_);
  MZ_RETURN_IF_ERROR(Begin());
  Status s;
  std::vector<Cidr> removed;
  // Which stored fences go: exact matches of the listed CIDRs (canonical).
  {
    Stmt all;
    if (sqlite3_prepare_v2(db_, "SELECT cidr FROM fences", -1, all.out(), nullptr) != SQLITE_OK) {
      s = SqlError("listing fences");
    }
    int rc = SQLITE_ROW;
    while (s.ok() && (rc = sqlite3_step(all.get())) == SQLITE_ROW) {
      const std::string text = Column(all.get(), 0);
      auto c = Cidr::Parse(text);
      if (!c.ok()) {
        MZ_LOG(kWarn) << "fence store " << path_ << ": ignoring unparsable row \"" << text << "\"";
        continue;
      }
      for (const Cidr& want : cidrs) {
        if (Cidr(want.network(), want.prefix_len()) == *c) {
          removed.push_back(*c);
          break;
        }
      }
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlError("listing fences");
  }
  const std::string now = NowUtc();
  Stmt del;
  Stmt add_unfence;
  if (s.ok() && (sqlite3_prepare_v2(db_, "DELETE FROM fences WHERE cidr = ?1", -1, del.out(),
                                    nullptr) != SQLITE_OK ||
                 sqlite3_prepare_v2(db_,
                                    "INSERT INTO unfences(cidr, created_at) VALUES (?1, ?2) "
                                    "ON CONFLICT(cidr) DO NOTHING",
                                    -1, add_unfence.out(), nullptr) != SQLITE_OK)) {
    s = SqlError("preparing the fence removal");
  }
  for (size_t i = 0; s.ok() && i < removed.size(); ++i) {
    const std::string text = CanonicalCidr(removed[i]);
    sqlite3_reset(del.get());
    sqlite3_bind_text(del.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_reset(add_unfence.get());
    sqlite3_bind_text(add_unfence.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(add_unfence.get(), 2, now.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(del.get()) != SQLITE_DONE || sqlite3_step(add_unfence.get()) != SQLITE_DONE) {
      s = SqlError("removing fence " + text);
    }
  }
  if (s.ok()) s = Commit();
  if (!s.ok()) {
    Rollback();
    return s;
  }
  std::sort(removed.begin(), removed.end(), CidrLess);
  return removed;
}

Status FenceStore::MarkEnforced(const std::vector<Cidr>& cidrs) {
  if (cidrs.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  MZ_RETURN_IF_ERROR(Begin());
  const std::string now = NowUtc();
  Stmt upd;
  Status s;
  if (sqlite3_prepare_v2(db_,
                         "UPDATE fences SET state = 'enforced', updated_at = ?2 "
                         "WHERE cidr = ?1 AND state <> 'enforced'",
                         -1, upd.out(), nullptr) != SQLITE_OK) {
    s = SqlError("preparing the state update");
  }
  for (size_t i = 0; s.ok() && i < cidrs.size(); ++i) {
    const std::string text = CanonicalCidr(cidrs[i]);
    sqlite3_reset(upd.get());
    sqlite3_bind_text(upd.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(upd.get(), 2, now.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(upd.get()) != SQLITE_DONE) s = SqlError("marking " + text + " enforced");
  }
  if (s.ok()) s = Commit();
  if (!s.ok()) Rollback();
  return s;
}

Status FenceStore::CompleteUnfences(const std::vector<Cidr>& cidrs) {
  if (cidrs.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  MZ_RETURN_IF_ERROR(Begin());
  Stmt del;
  Status s;
  if (sqlite3_prepare_v2(db_, "DELETE FROM unfences WHERE cidr = ?1", -1, del.out(), nullptr) !=
      SQLITE_OK) {
    s = SqlError("preparing the unfence completion");
  }
  for (size_t i = 0; s.ok() && i < cidrs.size(); ++i) {
    const std::string text = CanonicalCidr(cidrs[i]);
    sqlite3_reset(del.get());
    sqlite3_bind_text(del.get(), 1, text.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(del.get()) != SQLITE_DONE) s = SqlError("completing unfence " + text);
  }
  if (s.ok()) s = Commit();
  if (!s.ok()) Rollback();
  return s;
}

Result<int64_t> FenceStore::DataVersion() const {
  if (data_version_ == nullptr) {
    // Prepared on first use, under mu_; kept until the store closes.
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

Result<StoreSnapshot> FenceStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  MZ_ASSIGN_OR_RETURN(const int64_t version, DataVersion());
  if (cached_ && version == cached_version_) return *cached_;
  MZ_ASSIGN_OR_RETURN(StoreSnapshot snap, ReadSnapshot());
  cached_ = std::make_shared<const StoreSnapshot>(snap);
  cached_version_ = version;
  return snap;
}

Result<StoreSnapshot> FenceStore::ReadSnapshot() const {
  StoreSnapshot snap;
  // One read transaction, so both tables are seen at the same point.
  MZ_RETURN_IF_ERROR(Exec("BEGIN"));
  Status s;
  {
    Stmt q;
    if (sqlite3_prepare_v2(db_, "SELECT cidr, state, created_at, updated_at FROM fences", -1,
                           q.out(), nullptr) != SQLITE_OK) {
      s = SqlError("listing fences");
    }
    int rc = SQLITE_ROW;
    while (s.ok() && (rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      const std::string text = Column(q.get(), 0);
      auto c = Cidr::Parse(text);
      if (!c.ok()) {
        MZ_LOG(kWarn) << "fence store " << path_ << ": ignoring unparsable row \"" << text << "\"";
        continue;
      }
      FenceEntry e;
      e.cidr = *c;
      e.state = Column(q.get(), 1) == "enforced" ? FenceState::kEnforced : FenceState::kPending;
      e.created_at = Column(q.get(), 2);
      e.updated_at = Column(q.get(), 3);
      snap.fences.push_back(std::move(e));
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlError("listing fences");
  }
  if (s.ok()) {
    Stmt q;
    if (sqlite3_prepare_v2(db_, "SELECT cidr FROM unfences", -1, q.out(), nullptr) != SQLITE_OK) {
      s = SqlError("listing pending unfences");
    }
    int rc = SQLITE_ROW;
    while (s.ok() && (rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      auto c = Cidr::Parse(Column(q.get(), 0));
      if (c.ok()) snap.unfences.push_back(*c);
    }
    if (s.ok() && rc != SQLITE_DONE) s = SqlError("listing pending unfences");
  }
  if (s.ok()) {
    s = Exec("COMMIT");
  } else {
    Rollback();
  }
  if (!s.ok()) return s;
  std::sort(snap.fences.begin(), snap.fences.end(),
            [](const FenceEntry& a, const FenceEntry& b) { return CidrLess(a.cidr, b.cidr); });
  std::sort(snap.unfences.begin(), snap.unfences.end(), CidrLess);
  return snap;
}

Result<std::vector<FenceEntry>> FenceStore::ListFences() const {
  MZ_ASSIGN_OR_RETURN(StoreSnapshot snap, Snapshot());
  return std::move(snap.fences);
}

Status FenceStore::Check() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt v;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM fences", -1, v.out(), nullptr) != SQLITE_OK ||
      sqlite3_step(v.get()) != SQLITE_ROW) {
    return SqlError("reading");
  }
  return Status::Ok();
}

}  // namespace mizarmp::fence
