// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence store: what is fenced, durably, behind one interface so the FenceController does not
// know where its state lives.
//
// Two tables of CIDRs (canonical form, fence/cidrset.h):
//   fences:   pending  (written, not yet or not completely enforced at Mizar-MP) or
//             enforced (every port inside it was disabled at Mizar-MP at the last pass)
//   unfences: lifted fences whose ports may still need re-enabling (pending unfences)
// and, per fence, what it changed: the ids of the ports held down on its behalf (disabled by the
// fence service while the fence stood). A lifted fence keeps its record as a pending unfence, so
// an unfence re-enables exactly those ports (fence/plan.h) and never one that was down for
// another reason (an operator's quarantine). A fence stored before the records existed (an older
// store; tracked=false) has no record: its unfence re-enables every down port inside it, as
// before the records existed.
// A write that returned is durable: a crash at any later point loses no acknowledged fence, and
// a crash in the middle of a write leaves the state before it. Implementations are thread-safe.
//
// Backends: OpenFenceStore() (fence/etcd/backends.h) picks one from the configured location: a file
// path is kept in SQLite (fence/sqlite_store.h), "etcd://host:port,..." in an etcd cluster shared
// by several replicas (fence/etcd/store.h). The backend also chooses which replica enforces
// (JoinElection).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"
#include "fence/leadership.h"
#include "fence/port_index.h"

namespace mizarmp::fence {

enum class FenceState { kPending, kEnforced };
std::string_view FenceStateName(FenceState state);  // "pending" | "enforced"

struct FenceEntry {
  Cidr cidr;  // network form
  FenceState state = FenceState::kPending;
  std::string created_at;  // RFC 3339 UTC
  std::string updated_at;
  bool tracked = true;                  // false: stored without a record of ports (older store)
  std::vector<std::string> held_ports;  // ids of the ports held down on its behalf, sorted
  friend bool operator==(const FenceEntry&, const FenceEntry&) = default;
};

// A pending unfence: a lifted fence and its record.
struct UnfenceEntry {
  Cidr cidr;  // network form
  bool tracked = true;
  std::vector<std::string> held_ports;  // sorted
  friend bool operator==(const UnfenceEntry&, const UnfenceEntry&) = default;
};

// One (fence, port) pair of a record.
struct PortHold {
  Cidr fence;
  std::string port_id;
  friend bool operator==(const PortHold&, const PortHold&) = default;
};

// What one pass completed (FenceStore::RecordCompleted).
struct Completed {
  std::vector<Cidr> enforced;         // fences now completely enforced
  std::vector<std::string> released;  // ports no record should name any more
  std::vector<Cidr> unfenced;         // pending unfences now complete
  bool empty() const { return enforced.empty() && released.empty() && unfenced.empty(); }
};

struct StoreSnapshot {
  std::vector<FenceEntry> fences;      // sorted by CIDR (IPv4 first)
  std::vector<UnfenceEntry> unfences;  // pending unfences, sorted
  int64_t revision = 0;  // Revision() as of this snapshot: a shared store's (0 for SQLite's)
};

// How many fences by state, and pending unfences, a store holds (what its metrics show).
struct StoreCounts {
  size_t fences_pending = 0;
  size_t fences_enforced = 0;
  size_t unfences_pending = 0;
  friend bool operator==(const StoreCounts&, const StoreCounts&) = default;
};
StoreCounts CountStore(const StoreSnapshot& snapshot);

class FenceStore {
 public:
  virtual ~FenceStore() = default;

  // Adds fences (new ones pending and tracked; an existing one becomes pending again so the next
  // pass re-checks it) and drops any pending unfence of the same CIDRs, whose record (and tracked
  // flag) the fence takes back: those ports are still down on its behalf. All or nothing.
  virtual Status AddFences(const std::vector<Cidr>& cidrs) = 0;

  // Removes the listed fences (exact, canonical match: a wider CIDR does not lift narrower
  // fences, so a retried unfence never lifts a fence made since), recording each removed fence
  // as a pending unfence with its record, all or nothing. Unknown CIDRs are ignored. Returns the
  // removed ones, sorted.
  virtual Result<std::vector<Cidr>> RemoveFences(const std::vector<Cidr>& cidrs) = 0;

  // Adds each (fence, port) to the fence's record, all or nothing; pairs naming no stored fence
  // are ignored (the fence was lifted meanwhile).
  virtual Status RecordHeldPorts(const std::vector<PortHold>& holds) = 0;

  // Records what a pass completed, in this order and all or nothing: marks the `enforced` fences
  // enforced (those still stored; others are ignored), drops the `released` port ids from every
  // record (they are up again, or gone), forgets the `unfenced` pending unfences and their records
  // (their ports were re-enabled). Nothing to record writes nothing.
  virtual Status RecordCompleted(const Completed& done) = 0;

  // Every fence and pending unfence as of one point in time, including what other writers to
  // the same location committed.
  virtual Result<StoreSnapshot> Snapshot() const = 0;

  // The fences of Snapshot().
  virtual Result<std::vector<FenceEntry>> ListFences() const = 0;

  // A number that changes whenever Snapshot() may have changed, by this or any other writer;
  // cheap enough for the leader to read every few hundred milliseconds.
  virtual Result<int64_t> Revision() const = 0;

  // Asks whichever replica leads for a pass soon, by changing Revision() without changing what
  // Snapshot() holds. A store no other replica shares has nothing to do: its one server asks its
  // own loop.
  virtual Status RequestPass() { return Status::Ok(); }

  // The Revision() that this replica's own changes, each committed on top of the one before,
  // carried the store to from `from` (a snapshot's revision): a Revision() equal to it holds
  // nothing another writer changed since `from`. `from` itself when no change of this replica's
  // was committed on top of it (and always, for a store nobody else writes).
  virtual int64_t RevisionAfterOwnChanges(int64_t from) const { return from; }

  // This replica's candidacy for enforcing the store's fences, as `candidate` (its name); started
  // at once. The store must outlive it.
  virtual std::unique_ptr<Leadership> JoinElection(const std::string& candidate) = 0;
};

}  // namespace mizarmp::fence
