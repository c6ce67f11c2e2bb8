#include "common/log.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace mizarmp::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
std::atomic<int> g_fd{STDERR_FILENO};
std::mutex g_tag_mu;
std::string g_tag;

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
  int old = g_fd.exchange(fd);
  if (old != STDERR_FILENO && old != fd) ::close(old);
  return Status::Ok();
}

void SetTag(std::string tag) {
  std::lock_guard<std::mutex> lock(g_tag_mu);
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
    std::lock_guard<std::mutex> lock(g_tag_mu);
    if (!g_tag.empty()) {
      line += ' ';
      line += g_tag;
    }
  }
  line += ' ';
  line += os_.str();
  line += '\n';
  const int fd = g_fd.load();
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // nowhere left to complain to
    off += static_cast<size_t>(n);
  }
}

}  // namespace mizarmp::log
