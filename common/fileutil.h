// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Durable, permission-aware file helpers shared by the plugin, the mock and the addons server.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/status.h"

namespace mizarmp {

// Reads a whole file. NOT_FOUND when it does not exist.
Result<std::string> ReadFile(const std::string& path);

// A certificate or key file a TLS setting names: INVALID_ARGUMENT naming `setting` and the path
// when it cannot be read or holds no PEM block.
Result<std::string> ReadPemFile(std::string_view setting, const std::string& path);

// All of data written to fd (retrying EINTR and short writes). For pipes and stdout.
Status WriteAllFd(int fd, std::string_view data);

// How a WriteFileAtomic lasts. kDurable: the file and then its directory are fsync'ed, so the
// new content survives a crash. kCache: neither is, for a file whose loss only costs time (a
// cache): after a crash it may hold the old content, or nothing, and its readers must cope.
enum class Durability { kDurable, kCache };

// Writes `data` to `path` atomically: a temp file in the same directory is written with `mode`
// and renamed over `path` (with kDurable, after an fsync, and the directory fsync'ed after).
// Readers see the old content or the new, never a torn file.
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode = 0600,
                       Durability durability = Durability::kDurable);

// Removes `path` and fsyncs its directory. A missing file is success.
Status RemoveFileDurable(const std::string& path);

// mkdir -p; directories that this call creates get `mode`. Existing ones are left as they are.
Status MakeDirs(const std::string& path, mode_t mode = 0700);

// Names of the entries in `dir` (no "." or ".."). NOT_FOUND if the directory is missing.
Result<std::vector<std::string>> ListDir(const std::string& dir);

// Exclusive flock(2) on a lock file, released on destruction. Acquire() retries when the file it
// locked was unlinked meanwhile (so a holder may remove the lock file when it is done with it, and
// waiters never hold a lock on an orphaned inode).
class FileLock {
 public:
  FileLock() = default;
  static Result<FileLock> Acquire(const std::string& path, mode_t mode = 0600);
  // Unlinks the lock file while still holding the lock, then releases it.
  Status ReleaseAndRemove();
  bool held() const { return fd_.valid(); }
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

// What identifies one version of a file: a rewrite in place changes its times or size, a
// replacement (rename, a Kubernetes secret's symlink swap) its inode. All zero when absent.
struct FileVersion {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  friend bool operator==(const FileVersion&, const FileVersion&) = default;
  // "dev:ino:size:mtime:ctime", to compare versions kept in a file.
  std::string ToString() const;
};
FileVersion VersionOf(const std::string& path);

// Directory part and base part of a path ("a/b/c" -> "a/b", "c").
std::string DirName(const std::string& path);
std::string BaseName(const std::string& path);

}  // namespace mizarmp
