// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Leader election on etcd: a key held under a lease. The candidate whose transaction creates the
// key leads for as long as its lease lives; when the leader dies or loses etcd, its lease runs
// out and the next candidate's attempt succeeds. No two candidates lead at once:
//   - etcd deletes the key only when the lease has gone unrenewed for its whole TTL, counted from
//     when a member received the last renewal;
//   - a candidate counts its own lead from just before it sent that renewal, with a tenth of the
//     TTL taken off for clocks that run at slightly different rates, so its LeadingUntil() is
//     always before etcd could hand the key to anyone else. A leader that cannot renew (etcd
//     down, its member cut off) stops leading at LeadingUntil() without having to reach anyone.
// Work that must not overlap between leaders starts only when LeadsFor(how long it may take).
//
// Rounds run every TTL/3 on a thread of the election: renew (or take a new lease), then try to
// create the key. A new leader is therefore elected within TTL + TTL/3 of the old one's last
// renewal. Stop() resigns: the key and lease are deleted so the next candidate takes over at
// its next round instead of after a TTL.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/mutex.h"
#include "common/worker.h"
#include "etcd/client.h"

namespace mizarmp::etcd {

class Election {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::string key;        // the key the leader holds, e.g. "/mizarmp/fence/leader"
    std::string candidate;  // this candidate's name, the key's value while it leads
    std::chrono::seconds lease_ttl{15};
  };

  // `client` must outlive the election.
  Election(Client& client, Options options);
  ~Election();  // Stop()
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  // Starts the rounds on a thread of the election. Returns at once.
  void Start();
  // Stops leading at once, ends the rounds and resigns (best effort: an unreachable etcd drops
  // the key when the lease runs out).
  void Stop();

  // Until when this candidate may act as the leader; Clock's epoch when it does not lead.
  Clock::time_point LeadingUntil() const;
  // Whether this candidate leads for at least `needed` from now.
  bool LeadsFor(Clock::duration needed) const;
  // How many times this candidate became the leader; a change means a new term.
  uint64_t terms() const { return terms_.load(); }
  // The leader as of the last round ("" when none was seen).
  std::string leader() const;

 private:
  // One round: renew the lease (or get one) and campaign; `interval` is the rounds' pace, for
  // the log.
  void Round(std::chrono::milliseconds interval);
  Status RenewLease(Clock::time_point sent);
  Status Campaign();
  void Resign();
  void StepDown(const std::string& why);
  void Lead(const std::string& leader, bool leading);

  Client& client_;
  const Options options_;

  mutable Mutex mu_;
  int64_t lease_ MZ_GUARDED_BY(mu_) = 0;  // 0: none
  // Our conservative view of the lease's end.
  Clock::time_point lease_valid_until_ MZ_GUARDED_BY(mu_);
  Clock::time_point leading_until_ MZ_GUARDED_BY(mu_);  // epoch: not leading
  std::string leader_ MZ_GUARDED_BY(mu_);
  std::atomic<uint64_t> terms_{0};

  bool failing_ = false;  // the rounds' own: the last round failed
  Worker rounds_;
};

}  // namespace mizarmp::etcd
