// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Minimal leveled logging to stderr or an append-only 0600 file. One line per record, written
// with a single write(2) so lines from concurrent processes (many CNI invocations sharing a log
// file) never interleave. Nothing here ever writes to stdout.
//
//   MZ_LOG(kInfo) << "port " << id << " ready";
//
// Never stream secrets (tokens, keys, `secrets` maps) into a log line.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp::log {

enum class Level : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

Result<Level> ParseLevel(std::string_view name);  // debug|info|warn|warning|error|off
void SetLevel(Level level);
// For tests: a test that changes the process-wide level puts the one it found back; the level
// lives in log.cc alone.
Level GetLevel();
// Sends log lines to `path` (created 0600, appended). An empty path means stderr.
Status SetFile(const std::string& path);
// Opens the log file's path again (after logrotate moved it away; mizarmp-addons on SIGHUP),
// in place: threads writing at that moment write to the old file or the new one, never to a
// closed descriptor. Nothing to do for stderr.
Status Reopen();
// Caps the log file: a line that would take it past `max_bytes` first moves it to
// "<path>.1" (replacing that) and starts a new file, so neither passes the cap (but for a
// single line longer than it). Processes sharing the file (many plugin invocations) write each
// capped line under an flock of "<path>.lock" after looking at the file at the path: they
// never pass the cap together, move the file once, and follow one another to the new file.
// 0: no cap (the default).
void SetMaxBytes(uint64_t max_bytes);
// Put on every line this thread writes, after the tag (e.g. "req=1f2e3d4c"); empty: nothing.
// mizarmp-addons sets it for the RPC a server thread is handling.
void SetThreadContext(std::string context);
// This thread's context, for a thread that works on its behalf (it sets it as its own).
std::string ThreadContext();
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
