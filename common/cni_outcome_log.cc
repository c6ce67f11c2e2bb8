// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/cni_outcome_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/fd.h"

namespace mizarmp {

namespace {

constexpr std::array<std::string_view, 5> kCommands = {"ADD", "DEL", "CHECK", "GC", "STATUS"};
constexpr size_t kCommandColumns = 6;
constexpr int kMaxCode = 999;
constexpr int64_t kMaxMicros = 9'999'999'999;
// A write racing a rotation retries on the new file; a third loss means something else is
// renaming the file, and the outcome is dropped rather than the command delayed.
constexpr int kAppendAttempts = 3;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t DigitsValue(std::string_view s) {
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

std::string CniOutcomeLogPath(const std::string& state_dir) {
  return state_dir + "/" + kCniOutcomeLogName;
}

std::string FormatCniOutcome(const CniOutcome& outcome) {
  const std::string command = outcome.command.substr(0, kCommandColumns);
  const int code = std::clamp(outcome.code, 0, kMaxCode);
  const auto micros = static_cast<long long>(std::clamp<int64_t>(outcome.micros, 0, kMaxMicros));
  char line[kCniOutcomeLineSize + 1];
  std::snprintf(line, sizeof line, "1 %-6s %03d %010lld\n", command.c_str(), code, micros);
  return std::string(line, kCniOutcomeLineSize);
}

std::optional<CniOutcome> ParseCniOutcome(std::string_view line) {
  if (line.size() != kCniOutcomeLineSize - 1) return std::nullopt;
  if (line.substr(0, 2) != "1 " || line[8] != ' ' || line[12] != ' ') return std::nullopt;
  std::string_view command = line.substr(2, kCommandColumns);
  command = command.substr(0, command.find(' '));
  // Spaces are padding only after the name: "A DD  " is no command.
  if (line.substr(2 + command.size(), kCommandColumns - command.size()).find_first_not_of(' ') !=
      std::string_view::npos) {
    return std::nullopt;
  }
  if (std::find(kCommands.begin(), kCommands.end(), command) == kCommands.end()) {
    return std::nullopt;
  }
  const std::string_view code = line.substr(9, 3);
  const std::string_view micros = line.substr(13, 10);
  if (!AllDigits(code) || !AllDigits(micros)) return std::nullopt;
  return CniOutcome{std::string(command), static_cast<int>(DigitsValue(code)),
                    DigitsValue(micros)};
}

Status AppendCniOutcome(const std::string& path, const CniOutcome& outcome, off_t max_bytes) {
  const std::string line = FormatCniOutcome(outcome);
  for (int attempt = 0; attempt < kAppendAttempts; ++attempt) {
    // O_NONBLOCK: a FIFO planted at the path fails the open instead of hanging the command.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
                                         O_NONBLOCK,
                       0600));
    if (!fd.valid()) return ErrnoError("open " + path, errno);
    struct stat held {};
    if (::fstat(fd.get(), &held) != 0) return ErrnoError("fstat " + path, errno);
    if (!S_ISREG(held.st_mode)) return FailedPreconditionError(path + ": not a regular file");
    // Every writer locks the file it opened, so one rotation happens per overflow and no line
    // goes to a file that was already rotated away.
    if (::flock(fd.get(), LOCK_EX) != 0) return ErrnoError("flock " + path, errno);
    struct stat named {};
    if (::stat(path.c_str(), &named) != 0 || !SameFile(held, named)) continue;  // rotated
    if (::fstat(fd.get(), &held) != 0) return ErrnoError("fstat " + path, errno);
    if (held.st_size + static_cast<off_t>(line.size()) > max_bytes) {
      // Unlinked first: ext4 flushes a file renamed over another (auto_da_alloc), which
      // stalled this append by 200-500 ms on a busy disk; a rename to a free name does not.
      const std::string older = path + ".1";
      if (::unlink(older.c_str()) != 0 && errno != ENOENT) {
        return ErrnoError("rotate " + path, errno);
      }
      if (::rename(path.c_str(), older.c_str()) != 0) {
        return ErrnoError("rotate " + path, errno);
      }
      continue;
    }
    const ssize_t n = ::write(fd.get(), line.data(), line.size());
    if (n < 0) return ErrnoError("write " + path, errno);
    if (static_cast<size_t>(n) != line.size()) return InternalError("short write to " + path);
    return Status::Ok();
  }
  return AbortedError(path + ": rotated by others on every attempt");
}

CniOutcomeLogReader::CniOutcomeLogReader(std::string path, size_t chunk_bytes,
                                         size_t max_bytes_per_call)
    : path_(std::move(path)),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      max_bytes_per_call_(max_bytes_per_call) {}

void CniOutcomeLogReader::Track(const struct stat& st, off_t offset) {
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  offset_ = offset;
  partial_.clear();
  overlong_ = false;
}

void CniOutcomeLogReader::SkipExisting() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) Track(st, st.st_size);
}

CniOutcomeLogReader::Counts CniOutcomeLogReader::ReadNew(
    const std::function<void(const CniOutcome&)>& on_outcome) {
  Counts counts;
  size_t budget = max_bytes_per_call_;
  struct stat named {};
  const bool exists = ::stat(path_.c_str(), &named) == 0;
  if (Tracking() && !(exists && named.st_dev == dev_ && named.st_ino == ino_)) {
    // Rotated (or removed): what the tracked file got after the last call is in NAME.1.
    ReadTracked(path_ + ".1", on_outcome, &counts, &budget);
    if (budget == 0) return counts;  // the rest of NAME.1 next time
    ino_ = 0;
    dev_ = 0;
  }
  if (!exists || !S_ISREG(named.st_mode)) return counts;
  if (!Tracking()) Track(named, 0);
  if (named.st_size < offset_) Track(named, 0);  // truncated in place: start over
  ReadTracked(path_, on_outcome, &counts, &budget);
  return counts;
}

void CniOutcomeLogReader::ReadTracked(const std::string& path,
                                      const std::function<void(const CniOutcome&)>& on,
                                      Counts* counts, size_t* budget) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != dev_ ||
      st.st_ino != ino_) {
    return;
  }
  std::vector<char> chunk(chunk_bytes_);
  while (*budget > 0) {
    const size_t want = std::min(chunk.size(), *budget);
    const ssize_t n = ::pread(fd.get(), chunk.data(), want, offset_);
    if (n <= 0) return;
    offset_ += n;
    *budget -= static_cast<size_t>(n);
    Consume(std::string_view(chunk.data(), static_cast<size_t>(n)), on, counts);
  }
}

void CniOutcomeLogReader::Consume(std::string_view data,
                                  const std::function<void(const CniOutcome&)>& on,
                                  Counts* counts) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    const std::string_view piece = data.substr(0, newline);
    if (!overlong_) {
      if (partial_.size() + piece.size() < kCniOutcomeLineSize) {
        partial_.append(piece);
      } else {
        overlong_ = true;
        partial_.clear();
      }
    }
    if (newline == std::string_view::npos) return;
    EndLine(on, counts);
    data.remove_prefix(newline + 1);
  }
}

void CniOutcomeLogReader::EndLine(const std::function<void(const CniOutcome&)>& on,
                                  Counts* counts) {
  std::optional<CniOutcome> outcome;
  if (!overlong_) outcome = ParseCniOutcome(partial_);
  if (outcome) {
    ++counts->outcomes;
    on(*outcome);
  } else {
    ++counts->bad_lines;
  }
  partial_.clear();
  overlong_ = false;
}

}  // namespace mizarmp
