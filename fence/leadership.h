// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Which replica enforces. Every replica of mizarmp-addons stores fences and answers RPCs, but only
// the leader changes ports at Mizar-MP (the reconcile and the enforcement passes), so two replicas
// never flip the same port. The fence store's backend decides how the leader is chosen
// (FenceStore::JoinElection): an embedded store has one replica, always the leader; etcd elects
// one through a lease (etcd/election.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mizarmp::fence {

class Leadership {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Leadership() = default;

  // Whether this replica leads for at least `needed` from now: no other replica can start
  // enforcing within that time.
  virtual bool LeadsFor(Clock::duration needed) const = 0;
  // How many times this replica became the leader; a change means a new term (the new leader's
  // first pass then runs at once).
  virtual uint64_t terms() const = 0;
  // The leading replica as far as this one knows ("" when none is known).
  virtual std::string leader() const = 0;
  // Whether this replica is the only one there can be (nobody else writes the store).
  virtual bool sole() const = 0;
};

// The only replica there is (an embedded store): always the leader.
class SoleLeadership final : public Leadership {
 public:
  explicit SoleLeadership(std::string name) : name_(std::move(name)) {}
  bool LeadsFor(Clock::duration) const override { return true; }
  uint64_t terms() const override { return 1; }
  std::string leader() const override { return name_; }
  bool sole() const override { return true; }

 private:
  std::string name_;
};

}  // namespace mizarmp::fence
