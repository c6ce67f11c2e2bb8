// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>

#include "common/mutex.h"

namespace mizarmp::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
std::atomic<int> g_fd{STDERR_FILENO};
Mutex g_tag_mu;
std::string g_tag MZ_GUARDED_BY(g_tag_mu);
Mutex g_file_mu;                              // g_path and reopening
std::string g_path MZ_GUARDED_BY(g_file_mu);  // empty: stderr
int g_lock_fd MZ_GUARDED_BY(g_file_mu) = -1;  // "<g_path>.lock" once a capped line opened it
std::atomic<uint64_t> g_max_bytes{0};
thread_local std::string t_context;

const char* LevelName(Level l) {
  switch (l) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

}  // namespace

Result<Level> ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "error") return Level::kError;
  if (name == "off" || name == "none") return Level::kOff;
  return InvalidArgumentError("unknown log level \"" + std::string(name) +
                              "\" (want debug, info, warn, error or off)");
}

void SetLevel(Level level) { g_level.store(static_cast<int>(level)); }
Level GetLevel() { return static_cast<Level>(g_level.load()); }
bool Enabled(Level level) {
  return level != Level::kOff && static_cast<int>(level) >= g_level.load();
}

Status SetFile(const std::string& path) {
  int fd = STDERR_FILENO;
  if (!path.empty()) {
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoError("open log file " + path, errno);
  }
  MutexLock lock(g_file_mu);
  if (g_lock_fd >= 0 && path != g_path) {
    ::close(g_lock_fd);
    g_lock_fd = -1;
  }
  g_path = path;
  int old = g_fd.exchange(fd);
  if (old != STDERR_FILENO && old != fd) ::close(old);
  return Status::Ok();
}

namespace {

// Opens g_path again onto the descriptor in use (dup2 swaps the file behind the number at
// once).
Status ReopenLocked() MZ_REQUIRES(g_file_mu) {
  if (g_path.empty()) return Status::Ok();
  const int fd = ::open(g_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("reopen log file " + g_path, errno);
  const int in_use = g_fd.load();
  const int rc = ::dup3(fd, in_use, O_CLOEXEC);
  const int err = errno;
  ::close(fd);
  return rc < 0 ? ErrnoError("reopen log file " + g_path, err) : Status::Ok();
}

// The descriptor of "<g_path>.lock", opened once per path; -1 when it cannot be.
int LockFdLocked() MZ_REQUIRES(g_file_mu) {
  if (g_lock_fd < 0) {
    g_lock_fd = ::open((g_path + ".lock").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  }
  return g_lock_fd;
}

// Follows the path to a new file when another process moved the one written, then moves a file
// the next `incoming` bytes would take past `cap` to "<path>.1" and starts a new one. Call with
// the flock taken too: the check and the write after it are then one step for every process
// sharing the file, so none pushes it past the cap and it is moved once. Best effort: on a
// failure the line goes to the file as it is.
void RotateIfFullLocked(uint64_t cap, size_t incoming) MZ_REQUIRES(g_file_mu) {
  struct stat at_path {};
  struct stat written {};
  if (::stat(g_path.c_str(), &at_path) != 0 || ::fstat(g_fd.load(), &written) != 0 ||
      at_path.st_ino != written.st_ino || at_path.st_dev != written.st_dev) {
    if (!ReopenLocked().ok() || ::fstat(g_fd.load(), &written) != 0) return;
  }
  // An empty file stays: a line longer than the cap must not push the last full file out.
  if (written.st_size == 0 || static_cast<uint64_t>(written.st_size) + incoming <= cap) return;
  if (::rename(g_path.c_str(), (g_path + ".1").c_str()) == 0) (void)ReopenLocked();
}

void WriteAll(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // nowhere left to complain to
    off += static_cast<size_t>(n);
  }
}

// Writes one line to the log file: plainly, or with a cap under the file's flock.
void WriteLine(const std::string& line) {
  const uint64_t cap = g_max_bytes.load();
  if (cap == 0) return WriteAll(g_fd.load(), line);
  MutexLock lock(g_file_mu);  // flock does not order this process's threads
  const int lock_fd = g_path.empty() ? -1 : LockFdLocked();
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0) return WriteAll(g_fd.load(), line);
  RotateIfFullLocked(cap, line.size());
  WriteAll(g_fd.load(), line);
  ::flock(lock_fd, LOCK_UN);
}

}  // namespace

Status Reopen() {
  MutexLock lock(g_file_mu);
  return ReopenLocked();
}

void SetMaxBytes(uint64_t max_bytes) { g_max_bytes.store(max_bytes); }

void SetThreadContext(std::string context) { t_context = std::move(context); }

std::string ThreadContext() { return t_context; }

void SetTag(std::string tag) {
  MutexLock lock(g_tag_mu);
  g_tag = std::move(tag);
}

Line::~Line() {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  tm utc{};
  ::gmtime_r(&tv.tv_sec, &utc);
  char stamp[96];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long>(tv.tv_usec / 1000));
  std::string line = stamp;
  line += ' ';
  line += LevelName(level_);
  {
    MutexLock lock(g_tag_mu);
    if (!g_tag.empty()) {
      line += ' ';
      line += g_tag;
    }
  }
  if (!t_context.empty()) {
    line += ' ';
    line += t_context;
  }
  line += ' ';
  line += os_.str();
  line += '\n';
  WriteLine(line);
}

}  // namespace mizarmp::log
