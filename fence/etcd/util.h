// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the fence's etcd users share (the fence store, fence/etcd/store.h, the port index,
// fence/etcd/port_index.h, and the audit, fence/etcd/audit.h): connecting to a location, prefix
// ranges, the transaction size limit, the operations a transaction is built of, and which errors
// mean that etcd could not answer or that a write was refused before it was applied.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "etcd/client.h"
#include "etcd/options.h"

namespace mizarmp::fence {

// The client of the cluster that `location` ("etcd://host:port,...") names, with the TLS,
// authentication and timeout settings of `options`, whose endpoints become the location's
// (RetryDeadline counts them).
Result<std::unique_ptr<etcd::Client>> ConnectToLocation(const std::string& location,
                                                        etcd::Options& options);

// etcd's --max-txn-ops default (DefaultMaxTxnOps in etcd-io/etcd server/embed/config.go): the
// most operations each of a transaction's compare, success and failure lists may hold.
inline constexpr size_t kMaxTxnOps = 128;

// How many times in a row a read-modify-write transaction may lose its compare to another
// writer before it gives up: far beyond any real contention, short of a livelock.
inline constexpr int kMaxRaces = 50;

// The key just past every key that starts with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(std::string prefix);

// Whether a Txn failed with an error etcd raises before applying anything (a bad, oversized or
// forbidden request); any other failure may have lost the answer to a committed transaction.
bool RefusedUnapplied(const Status& s);

// etcd's refusal of a request over --max-request-bytes ("request is too large"), or gRPC's on
// etcd's side of one over that limit plus 512 KiB ("received message larger than max").
bool TooLargeForEtcd(const Status& s);

// When a call that keeps failing transiently gives up (common/retry.h): each member may take the call timeout to
// fail, and at least two rounds ride out an election.
inline std::chrono::steady_clock::time_point RetryDeadline(const etcd::Options& options) {
  return std::chrono::steady_clock::now() +
         options.call_timeout * std::max<size_t>(2, options.endpoints.size());
}

// A transaction's operations: a put, a delete and a read of one key (several keys read at one
// revision in one round trip).
etcdserverpb::RequestOp PutOp(std::string key, std::string value);
etcdserverpb::RequestOp DeleteOp(std::string key);
etcdserverpb::RequestOp RangeOp(std::string key, bool keys_only);
// Whether one of `ops` puts `key`.
bool PutsKey(const std::vector<etcdserverpb::RequestOp>& ops, const std::string& key);
// A compare that holds while `key`'s mod_revision is `revision` (0: while the key is absent).
void RequireModRevision(etcdserverpb::TxnRequest& txn, const std::string& key, int64_t revision);

}  // namespace mizarmp::fence
