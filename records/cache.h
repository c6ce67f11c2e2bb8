// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The plugin's attachment records as GetFenceClients reads them, kept between calls.
//
// The plugin changes a record only by renaming a complete file into its network directory or
// by unlinking it (records/records.h), and both change that directory's mtime. So a network
// directory whose device, inode and mtime are what they were when it was last read holds the
// same records, and its files are neither listed nor parsed again: a call over 10,000 unchanged
// records costs one stat per network directory instead of 10,000 reads and JSON parses.
//
// Directory mtimes come from a coarse kernel clock, so two changes a few milliseconds apart can
// leave the same mtime. A directory changed within the last kSettle is therefore read afresh on
// every call and only cached once its mtime is older than that (as git treats "racily clean"
// index entries).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "records/records.h"

namespace mizarmp::records {

class RecordCache {
 public:
  using Records = std::shared_ptr<const std::vector<Record>>;
  static constexpr std::chrono::seconds kSettle{2};

  explicit RecordCache(std::string state_dir) : store_(std::move(state_dir)) {}

  // Every readable record under the state dir, one list per network directory, in the order
  // and with the skipping rules of RecordStore::ListAll(). A missing state dir is empty.
  // Thread-safe.
  Result<std::vector<Records>> Snapshot();

  // How many network directories were read (listed and parsed) so far, for tests.
  uint64_t directory_reads() const;

 private:
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t mtime_ns = 0;
    Records records;
  };

  RecordStore store_;
  mutable Mutex mu_;
  // Network name -> its directory as last read.
  std::map<std::string, Entry> cache_ MZ_GUARDED_BY(mu_);
  uint64_t reads_ MZ_GUARDED_BY(mu_) = 0;
};

}  // namespace mizarmp::records
