// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/etcd/audit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/retry.h"
#include "common/strings.h"
#include "fence/etcd/util.h"
#include "records/records.h"

namespace mizarmp::fence {
namespace {

using nlohmann::json;

class EtcdAuditLog final : public AuditLog {
 public:
  EtcdAuditLog(std::string location, std::string prefix, size_t capacity, etcd::Options options,
               std::unique_ptr<etcd::Client> client)
      : location_(std::move(location)),
        entries_(prefix + "e/"),
        capacity_(capacity),
        options_(std::move(options)),
        client_(std::move(client)) {}

  Status Append(AuditEntry entry) override {
    entry.sequence = 0;  // the revision that creates the key
    entry.time = records::NowRfc3339();
    etcdserverpb::TxnRequest txn;
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(EntryKey(entry.replica));
    put->set_value(AuditEntryToJson(entry).dump());
    // As long as the store's own writes would wait out an election: the put of one key with one
    // value may safely go again, also after an answer was lost.
    auto answer = RetryWhileTransient(RetryDeadline(options_), [&] { return client_->Txn(txn); });
    if (!answer.ok()) return Named(answer.status().WithContext("appending"));
    // The entry is in: dropping old ones is housekeeping, which the next append tries again.
    if (const Status dropped = DropOldest(); !dropped.ok()) {
      MZ_LOG(kWarn) << dropped.ToString();
    }
    return Status::Ok();
  }

  Result<std::vector<AuditEntry>> Recent(size_t limit) const override {
    etcdserverpb::RangeRequest range;
    range.set_key(entries_);
    range.set_range_end(PrefixEnd(entries_));
    range.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
    range.set_sort_target(etcdserverpb::RangeRequest::CREATE);
    range.set_limit(static_cast<int64_t>(std::min(limit, kMaxAuditRead)));
    auto answer = client_->Range(range);
    if (!answer.ok()) return Named(answer.status().WithContext("reading"));
    std::vector<AuditEntry> entries;
    for (auto kv = answer->kvs().rbegin(); kv != answer->kvs().rend(); ++kv) {
      const json doc = json::parse(kv->value(), nullptr, /*allow_exceptions=*/false);
      auto entry = AuditEntryFromJson(doc);
      if (!entry.ok()) {
        return Named(
            DataLossError("key " + LogEscaped(kv->key()) + ": " + entry.status().message()));
      }
      entry->sequence = static_cast<uint64_t>(kv->create_revision());
      entries.push_back(std::move(*entry));
    }
    return entries;
  }

 private:
  // Time first, so key order is time order; the replica keeps two replicas' keys apart.
  std::string EntryKey(const std::string& replica) const {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    char stamp[32];
    std::snprintf(stamp, sizeof(stamp), "%020lld", static_cast<long long>(ns));
    return entries_ + stamp + "-" + replica;
  }

  // Beyond the capacity, the oldest entries go: one count, and when over, one read of the
  // surplus keys' names in order of creation (as Recent() orders them: two replicas' clocks may
  // disagree, so their keys' times need not) and one transaction deleting them.
  Status DropOldest() {
    etcdserverpb::RangeRequest count;
    count.set_key(entries_);
    count.set_range_end(PrefixEnd(entries_));
    count.set_count_only(true);
    auto counted = client_->Range(count);
    if (!counted.ok()) return Named(counted.status().WithContext("counting entries"));
    const int64_t surplus = counted->count() - static_cast<int64_t>(capacity_);
    if (surplus <= 0) return Status::Ok();
    etcdserverpb::RangeRequest oldest;
    oldest.set_key(entries_);
    oldest.set_range_end(PrefixEnd(entries_));
    oldest.set_keys_only(true);
    oldest.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
    oldest.set_sort_target(etcdserverpb::RangeRequest::CREATE);
    // One transaction's worth; a larger surplus (a lowered capacity) goes over the next appends.
    oldest.set_limit(std::min(surplus, static_cast<int64_t>(kMaxTxnOps)));
    auto found = client_->Range(oldest);
    if (!found.ok()) return Named(found.status().WithContext("finding old entries"));
    etcdserverpb::TxnRequest txn;
    for (const etcdserverpb::KeyValue& kv : found->kvs()) {
      txn.add_success()->mutable_request_delete_range()->set_key(kv.key());
    }
    if (txn.success().empty()) return Status::Ok();
    auto dropped = client_->Txn(txn);
    if (!dropped.ok()) return Named(dropped.status().WithContext("dropping old entries"));
    return Status::Ok();
  }

  Status Named(const Status& s) const {
    if (s.ok()) return s;
    return Status(s.code(), "fence audit " + location_ + " (" + entries_ + "): " + s.message());
  }

  const std::string location_;
  const std::string entries_;
  const size_t capacity_;
  const etcd::Options options_;  // with the location's endpoints: RetryDeadline counts them
  std::unique_ptr<etcd::Client> client_;
};

}  // namespace

Result<std::unique_ptr<AuditLog>> OpenEtcdAuditLog(const std::string& location,
                                                   const etcd::Options& client,
                                                   const std::string& prefix, size_t capacity) {
  if (prefix.empty() || prefix.back() != '/') {
    return InvalidArgumentError("fence audit " + location + ": key prefix " + Quoted(prefix) +
                                " does not end with '/'");
  }
  etcd::Options options = client;
  MZ_ASSIGN_OR_RETURN(auto connected, ConnectToLocation(location, options));
  return std::unique_ptr<AuditLog>(
      std::make_unique<EtcdAuditLog>(location, prefix, capacity, options, std::move(connected)));
}

}  // namespace mizarmp::fence
