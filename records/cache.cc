// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "records/cache.h"

#include <sys/stat.h>
#include <time.h>

#include "common/log.h"

namespace mizarmp::records {
namespace {

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

int64_t RealtimeNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

Result<std::vector<RecordCache::Records>> RecordCache::Snapshot() {
  std::vector<Records> out;
  const std::string& root = store_.state_dir();
  MZ_ASSIGN_OR_RETURN(std::vector<std::string> names, store_.ListNetworks());
  MutexLock lock(mu_);
  std::map<std::string, Entry> next;
  const int64_t settled_before = RealtimeNowNs() - std::chrono::nanoseconds(kSettle).count();
  for (const std::string& name : names) {
    struct stat st {};
    if (::stat((root + "/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    auto cached = cache_.find(name);
    if (cached != cache_.end() && cached->second.dev == st.st_dev &&
        cached->second.ino == st.st_ino && cached->second.mtime_ns == MtimeNs(st)) {
      out.push_back(cached->second.records);
      next.emplace(name, std::move(cached->second));
      continue;
    }
    auto records = store_.List(name);
    ++reads_;
    if (!records.ok()) {
      MZ_LOG(kDebug) << "skipping " << root << "/" << name << ": " << records.status().message();
      continue;
    }
    Entry e{st.st_dev, st.st_ino, MtimeNs(st),
            std::make_shared<const std::vector<Record>>(std::move(records).value())};
    out.push_back(e.records);
    // Cached only once settled: a change within the same mtime tick would go unseen otherwise.
    if (e.mtime_ns < settled_before) next.emplace(name, std::move(e));
  }
  cache_ = std::move(next);  // directories that went away are forgotten
  return out;
}

uint64_t RecordCache::directory_reads() const {
  MutexLock lock(mu_);
  return reads_;
}

}  // namespace mizarmp::records
