// Minimal leveled logging to stderr or an append-only 0600 file. One line per record, written
// with a single write(2) so lines from concurrent processes (many CNI invocations sharing a log
// file) never interleave. Nothing here ever writes to stdout.
//
//   MZ_LOG(kInfo) << "port " << id << " ready";
//
// Never stream secrets (tokens, keys, `secrets` maps) into a log line.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp::log {

enum class Level : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

Result<Level> ParseLevel(std::string_view name);  // debug|info|warn|warning|error|off
void SetLevel(Level level);
Level GetLevel();
// Sends log lines to `path` (created 0600, appended). An empty path means stderr.
Status SetFile(const std::string& path);
// A tag put in front of every line, e.g. "mizarmp[ADD 1234abcd]".
void SetTag(std::string tag);
bool Enabled(Level level);

class Line {
 public:
  explicit Line(Level level) : level_(level) {}
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  std::ostringstream& stream() { return os_; }

 private:
  Level level_;
  std::ostringstream os_;
};

}  // namespace mizarmp::log

#define MZ_LOG(level)                                           \
  if (!::mizarmp::log::Enabled(::mizarmp::log::Level::level)) { \
  } else                                                        \
    ::mizarmp::log::Line(::mizarmp::log::Level::level).stream()
