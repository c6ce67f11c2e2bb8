// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence audit (fence/audit.h) in etcd, beside an etcd fence store: every replica appends to
// one log, so it holds what any of them was asked and did.
//
// Keys, under the prefix P (AuditPrefix of the fence store's: beside it, not under it, since the
// store reads every key under its prefix at each snapshot):
//   P e/<unix ns, 20 digits>-<replica>   one entry, its JSON document (fence/audit.h)
// Key order is time order, which the replicas' clocks set; an entry's sequence is the etcd
// revision that created it, which orders entries exactly. Each append is one put; once the log
// holds more than its capacity the oldest go in one range delete.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "etcd/options.h"
#include "fence/audit.h"

namespace mizarmp::fence {

Result<std::unique_ptr<AuditLog>> OpenEtcdAuditLog(const std::string& location,
                                                   const etcd::Options& client,
                                                   const std::string& prefix,
                                                   size_t capacity = kAuditCapacity);

}  // namespace mizarmp::fence
