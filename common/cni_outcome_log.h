// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CNI plugin's outcome log: one fixed-size line per command the plugin ran (its name, the CNI
// error code or 0, how long it took), appended by each short-lived plugin process to a file in
// its state dir and read by the node's long-lived mizarmp-addons, which exports the counts to
// Prometheus (addons/cni_outcomes.h). The plugin pays one small append per command; the reading
// happens off its path (docs/decisions/2026-11-28-plugin-outcome-log.md).
//
// Format of a line (24 bytes, the newline included): "1 ADD    000 0000012345\n": the format's
// version, the command left-aligned in 6 columns, the code in 3 digits, the duration in
// microseconds in 10 digits. The file is bounded: an append that would take it past its bound
// first renames it to NAME.1 (replacing the one before), under an flock on the file.
//
// The file sits in a directory the node's root owns, but the reader still treats it as hostile:
// a line that does not parse is counted and skipped, whatever its length, and reading never holds
// more than one bounded chunk in memory.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp {

// Dot-named, so the record store's listing of networks in the state dir skips it.
inline constexpr const char* kCniOutcomeLogName = ".cni-outcomes.log";
inline constexpr size_t kCniOutcomeLineSize = 24;
// 256 KiB: about 11 000 commands in the live file, and as many in the rotated one, which is
// minutes of a busy node's pod churn at least, while the reader looks every second.
inline constexpr off_t kCniOutcomeLogMaxBytes = 256 * 1024;

struct CniOutcome {
  std::string command;  // "ADD", "DEL", "CHECK", "GC" or "STATUS"
  int code = 0;         // the CNI error code, 0 for success
  int64_t micros = 0;   // from the start of the process's command to its answer
  friend bool operator==(const CniOutcome&, const CniOutcome&) = default;
};

// The log's path in a state dir.
std::string CniOutcomeLogPath(const std::string& state_dir);

// The line for `outcome` (kCniOutcomeLineSize bytes). Codes and durations beyond the columns are
// written as the largest that fits; a command name longer than 6 is cut.
std::string FormatCniOutcome(const CniOutcome& outcome);
// A line without its newline; nothing unless it is exactly one FormatCniOutcome wrote for one
// of the five commands.
std::optional<CniOutcome> ParseCniOutcome(std::string_view line);

// Appends `outcome` to the log at `path` (created 0600; its directory must exist), rotating
// first when the file would pass `max_bytes`. Refuses anything but a regular file (a symlink or
// a FIFO planted there).
Status AppendCniOutcome(const std::string& path, const CniOutcome& outcome,
                        off_t max_bytes = kCniOutcomeLogMaxBytes);

// Follows the log at one path across rotations: each ReadNew() hands over the complete lines
// appended since the last call, and what the file rotated to NAME.1 held past the point read.
// Not thread-safe; one reader per log.
class CniOutcomeLogReader {
 public:
  // `chunk_bytes`: what one read holds in memory; `max_bytes_per_call` bounds one call's work
  // on a huge file (the rest waits for the next call).
  explicit CniOutcomeLogReader(std::string path, size_t chunk_bytes = 64 * 1024,
                               size_t max_bytes_per_call = 4 * 1024 * 1024);

  // Starts after what the file holds now, so outcomes from before this process are not counted
  // again (a counter that starts at the log's history would show a burst that never happened).
  void SkipExisting();

  struct Counts {
    uint64_t outcomes = 0;
    uint64_t bad_lines = 0;
  };
  // Calls `on_outcome` for each new good line; counts the bad ones.
  Counts ReadNew(const std::function<void(const CniOutcome&)>& on_outcome);

 private:
  bool Tracking() const { return ino_ != 0; }
  void Track(const struct stat& st, off_t offset);
  // Reads what `path` holds from offset_ on, if it still is the tracked file.
  void ReadTracked(const std::string& path, const std::function<void(const CniOutcome&)>& on,
                   Counts* counts, size_t* budget);
  void Consume(std::string_view data, const std::function<void(const CniOutcome&)>& on,
               Counts* counts);
  void EndLine(const std::function<void(const CniOutcome&)>& on, Counts* counts);

  std::string path_;
  size_t chunk_bytes_;
  size_t max_bytes_per_call_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t offset_ = 0;
  // The start of a line whose newline has not been read yet; never longer than a line, past
  // which the line is bad and the rest of it is skipped.
  std::string partial_;
  bool overlong_ = false;
};

}  // namespace mizarmp
