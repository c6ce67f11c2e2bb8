// The fence store: what is fenced, durably, behind one interface so the FenceController does not
// know where its state lives.
//
// Two tables of CIDRs (canonical form, fence/cidrset.h):
//   fences:   pending  (written, not yet or not completely enforced at Mizar-MP) or
//             enforced (every port inside it was disabled at Mizar-MP at the last pass)
//   unfences: lifted fences whose ports may still need re-enabling (pending unfences)
// A write that returned is durable: a crash at any later point loses no acknowledged fence, and
// a crash in the middle of a write leaves the state before it. Implementations are thread-safe.
//
// Backends: OpenFenceStore() picks one from the configured location; today every location is a
// file path, kept in SQLite (fence/sqlite_store.h). A new backend is one FenceStore class and
// one line in OpenFenceStore().
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::fence {

enum class FenceState { kPending, kEnforced };
std::string_view FenceStateName(FenceState state);  // "pending" | "enforced"

struct FenceEntry {
  Cidr cidr;  // network form
  FenceState state = FenceState::kPending;
  std::string created_at;  // RFC 3339 UTC
  std::string updated_at;
  friend bool operator==(const FenceEntry&, const FenceEntry&) = default;
};

struct StoreSnapshot {
  std::vector<FenceEntry> fences;  // sorted by CIDR (IPv4 first)
  std::vector<Cidr> unfences;      // pending unfences, sorted
};

class FenceStore {
 public:
  virtual ~FenceStore() = default;

  // Adds fences (new ones pending; an existing one becomes pending again so the next pass
  // re-checks it) and drops any pending unfence of the same CIDRs, all or nothing.
  virtual Status AddFences(const std::vector<Cidr>& cidrs) = 0;

  // Removes the listed fences (exact, canonical match: a wider CIDR does not lift narrower
  // fences, so a retried unfence never lifts a fence made since), recording each removed fence
  // as a pending unfence, all or nothing. Unknown CIDRs are ignored. Returns the removed ones,
  // sorted.
  virtual Result<std::vector<Cidr>> RemoveFences(const std::vector<Cidr>& cidrs) = 0;

  // Marks the listed fences enforced (those still stored; others are ignored).
  virtual Status MarkEnforced(const std::vector<Cidr>& cidrs) = 0;

  // Forgets the listed pending unfences (their ports were re-enabled).
  virtual Status CompleteUnfences(const std::vector<Cidr>& cidrs) = 0;

  // Every fence and pending unfence as of one point in time, including what other writers to
  // the same location committed.
  virtual Result<StoreSnapshot> Snapshot() const = 0;

  // The fences of Snapshot().
  virtual Result<std::vector<FenceEntry>> ListFences() const = 0;

  // A cheap check that the store still answers.
  virtual Status Check() const = 0;
};

// Opens (creating when missing) the store at `location`. Errors name the location:
// INVALID_ARGUMENT for a location no backend accepts, otherwise the backend's (see
// fence/sqlite_store.h).
Result<std::unique_ptr<FenceStore>> OpenFenceStore(const std::string& location);

}  // namespace mizarmp::fence
