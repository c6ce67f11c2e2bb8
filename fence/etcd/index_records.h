// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the etcd port index (fence/etcd/port_index.h) writes under its prefix, and how it reads it
// back: an entry's key name, a node's record (P n/<node>) and its lease (P l/<node>). Every value
// read is checked; one that does not decode is DATA_LOSS naming the field.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "fence/port_index.h"

namespace mizarmp::fence {

inline constexpr std::string_view kEntriesDir = "a/";
inline constexpr std::string_view kNodesDir = "n/";
inline constexpr std::string_view kLeasesDir = "l/";

// An entry's name: "<hex address key>/<encoded port id>", its key without the prefix and node.
std::string EntryName(const AddressedPort& port);
// The (address, port, node) a key's part after "P a/" names; DATA_LOSS saying why not.
Result<IndexedPort> EntryFromKeyName(std::string_view name);

// What P n/<node> holds: when the node last published and its entries' names.
struct NodeRecord {
  int64_t revision = 0;  // the node key's mod_revision; 0: absent
  int64_t at_ms = 0;
  std::vector<std::string> entries;
  // Written before a publication's batches: some entries may not have been put.
  bool partial = false;
  // When the node was last live: its lease key's time, else its node key's; none without either.
  std::optional<int64_t> live_at_ms;
  bool has_lease_key = false;
};
std::string RecordText(int64_t at_ms, const std::vector<std::string>& entries);
std::string PartialRecordText(int64_t at_ms, const std::vector<std::string>& entries);
// DATA_LOSS naming the field for a value that is not a node record.
Status ParseRecord(const std::string& value, NodeRecord& out);

// What P l/<node> holds: the node's lease and what it knows of the node key's entries.
struct LeaseRecord {
  int64_t revision = 0;  // the lease key's mod_revision; 0: absent
  int64_t at_ms = 0;
  int64_t entries = 0;
  // SetDigest of the node key's entries; empty while they may not all be in the index.
  std::string digest;
  // The node key's mod_revision the digest was checked against by a renewal; 0 when the lease
  // key was written in the same transaction as the node key (so their revisions are equal).
  int64_t of = 0;
  // The digest of the fence set the node enforces (Publication::enforced); empty for none.
  std::string enforced;
};
std::string LeaseText(int64_t at_ms, size_t entries, const std::string& digest, int64_t of,
                      const std::string& enforced);
// DATA_LOSS naming the field for a value that is not a lease record.
Status ParseLease(const std::string& value, LeaseRecord& out);

// Whether `lease` tells what the node key of mod_revision `node_revision` names: it carries a
// digest, and was written with that node key or checked against it since. A node key rewritten
// by anything else (a writer of the first layout, a batched publication under way, a hand) has
// moved on, and the lease's digest then says nothing.
bool DescribesNodeKey(const LeaseRecord& lease, int64_t node_revision);

// SHA-256 of a node's entry names in order, one per line (a name holds no control bytes), in
// hex: a renewal compares it with its lease key's instead of reading the node key's list.
std::string SetDigest(const std::set<std::string>& names);

std::chrono::system_clock::time_point FromUnixMillis(int64_t at_ms);
int64_t ToUnixMillis(std::chrono::system_clock::time_point at);

}  // namespace mizarmp::fence
