// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence audit: every fence and unfence request (who asked, with which request id, for which
// CIDRs) and every pass that changed ports at Mizar-MP (exactly the ports it set down and up, and
// the fences and unfences it did that for), kept beside the fence store and bounded, so that an
// operator can tell afterwards what a fence cut off and who asked for it (mizarmpctl audit).
//
// A request and the port changes it leads to are separate entries because they are separate
// events: a follower stores a fence that the leader's pass enforces, one pass serves several
// requests, and a port created later inside a fence is cut off by a pass no request started.
// A pass entry names the CIDRs its changes served; the request entries before it name theirs.
//
// The log is not transactional with the store: a request is recorded before it is stored (a
// request that failed to store is still a request made), a pass after its changes were made
// (only the changes Mizar-MP accepted). A crash between a change and its entry loses the entry,
// not the change; Mizar-MP's own logs have it.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace mizarmp::fence {

struct AuditEntry {
  uint64_t sequence = 0;   // assigned by the log: increasing in the order entries were appended
  std::string time;        // RFC 3339 UTC, when it was appended
  std::string action;      // "fence" or "unfence" (a request), "pass" (port changes)
  std::string replica;     // the mizarmp-addons replica that appended it
  std::string request_id;  // a request's x-request-id (or the id the server gave it)
  std::string caller;      // a request's gRPC peer, and its client certificate's subject if any
  std::vector<std::string> cidrs;     // a request's CIDRs; a pass's fences and unfences served
  std::vector<std::string> disabled;  // a pass: the port ids it set admin_state_up=false
  std::vector<std::string> enabled;   // a pass: the port ids it set admin_state_up=true
  friend bool operator==(const AuditEntry&, const AuditEntry&) = default;
};

nlohmann::json AuditEntryToJson(const AuditEntry& entry);
// INVALID_ARGUMENT naming the field for a document of the wrong shape.
Result<AuditEntry> AuditEntryFromJson(const nlohmann::json& doc);

// How many entries a log keeps: the oldest go first. A pass entry names each port it changed,
// so a fence of a thousand ports is about 40 kB; the bound keeps a busy store's log in MiBs.
inline constexpr size_t kAuditCapacity = 2000;
// How many entries one read returns at most (mizarmpctl audit --limit).
inline constexpr size_t kMaxAuditRead = 500;

class AuditLog {
 public:
  virtual ~AuditLog() = default;
  // Appends `entry` (its sequence and time are the log's to set) and drops the oldest entries
  // beyond the log's capacity (kAuditCapacity unless a test chose another).
  virtual Status Append(AuditEntry entry) = 0;
  // The newest `limit` entries (at most kMaxAuditRead), oldest first.
  virtual Result<std::vector<AuditEntry>> Recent(size_t limit) const = 0;
};

// The SQLite log in the file `path` (0600, in a 0700 directory).
Result<std::unique_ptr<AuditLog>> OpenSqliteAuditLog(const std::string& path,
                                                     size_t capacity = kAuditCapacity);

}  // namespace mizarmp::fence
