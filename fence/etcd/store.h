// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The fence store in an etcd cluster (etcd/client.h): the backend for "etcd://host:port,...",
// shared by every replica of mizarmp-addons that names the same cluster and prefix.
//
// Keys, under the prefix P (etcdPrefix, default "/mizarmp/fence/"):
//   P meta         {"schema":1,"shards":64}, written by the first replica to open the store; a
//                  store of another schema or shard count is refused (FAILED_PRECONDITION)
//   P shards/NN    NN = 00..63, the shard of a CIDR being a hash of its canonical text: one JSON
//                  document of that shard's fences and pending unfences with their records,
//                  {"fences":{"10.0.0.0/24":{"state":"pending","created_at":..,"updated_at":..,
//                  "tracked":true,"held_ports":[..]}},"unfences":{"..":{"created_at":..,
//                  "tracked":true,"held_ports":[..]}}}; a lifted fence keeps its CIDR, so its
//                  record stays in its shard. A shard with nothing in it is deleted.
//   P revision     the guard: rewritten by every change, so its mod_revision moves with each
//   P revision/pass  rewritten by RequestPass(): a replica that took a publication inside a
//                  fence asks the leader, which watches Revision(), for a pass
//   P leader       the leader's key (etcd/election.h, JoinElection)
// Why 64 shards: etcd refuses a transaction of more than 128 operations (--max-txn-ops) or a
// request over 1.5 MiB (--max-request-bytes). One key per fence would cap a fence RPC at ~60
// CIDRs; one key for everything would rewrite the whole store on every change. With 64 shards
// any change is at most 64 puts and the guard, so a fence of 1,000 CIDRs is one transaction.
//
// Every change is one transaction: the state of the whole prefix (every shard and the guard, at
// one revision), the change applied to it in memory with exactly the SQLite store's semantics
// (fence/store.h), then a Txn that writes the changed shards and the guard only if the guard's
// mod_revision, and each written shard's, are still the state's. The state is the one this
// replica's last read or commit left (a pass's changes follow its read and each other, so they
// read nothing more), or else one linearizable Range. If another replica wrote in between, the
// compare fails and the change is re-applied to a fresh read: no read-modify-write race between
// replicas, and no lock; comparing the written shards too means a writer that went around the
// guard (an operator's etcdctl) is re-read rather than overwritten. A transaction whose answer
// was lost (a member died under it) may or may not have committed; it is re-run from a fresh
// read, which is safe because every change is idempotent on a state that already has it. A
// write that changes nothing sends nothing. A read (Snapshot, ListFences) whose last state is
// still what etcd holds costs one linearizable keys-only Range of the keys changed since that
// state was read whole (each must be one this replica wrote, at the revision it wrote it) and of
// the prefix's key count (a deleted key lowers it); any other writer's change, or any other
// difference, reads the whole prefix again. What a transaction returned is committed by a
// quorum of etcd members, each of which has fsynced it: losing a minority of members loses no
// acknowledged fence.
//
// Errors name the store ("fence store etcd://..."): UNAVAILABLE when etcd has no quorum or no
// member answers, after retrying for the call timeout times the number of endpoints, at least
// twice (etcd drops proposals made during an election, which look like timeouts); a failed
// change says whether a transaction of it went out unanswered ("may or may not have been
// stored") or none did ("nothing of it was stored"). ABORTED after 50 lost races in a row;
// RESOURCE_EXHAUSTED naming --max-request-bytes when a change is over etcd's request limit;
// DATA_LOSS for a shard that is not a JSON object. An entry of a shard that does not parse (a bad
// CIDR, a field of the wrong type) is logged and skipped, and kept as it is when the shard is
// written again.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "etcd/client.h"
#include "fence/etcd/backends.h"
#include "fence/store.h"

namespace mizarmp::fence {

class EtcdFenceStore final : public FenceStore {
 public:
  // Connects (TLS, authentication) and checks or writes P meta. Errors name the location;
  // INVALID_ARGUMENT for a prefix that does not end with '/'.
  static Result<std::unique_ptr<EtcdFenceStore>> Open(const std::string& location,
                                                      const EtcdStoreOptions& options);
  ~EtcdFenceStore() override;

  Status AddFences(const std::vector<Cidr>& cidrs) override;
  Result<std::vector<Cidr>> RemoveFences(const std::vector<Cidr>& cidrs) override;
  Status RecordHeldPorts(const std::vector<PortHold>& holds) override;
  Status RecordCompleted(const Completed& done) override;
  Result<StoreSnapshot> Snapshot() const override;
  Result<std::vector<FenceEntry>> ListFences() const override;
  // The later mod_revision of the guard and of P revision/pass (0 before either is written).
  Result<int64_t> Revision() const override;
  // Rewrites P revision/pass.
  Status RequestPass() override;
  int64_t RevisionAfterOwnChanges(int64_t from) const override;
  // An etcd::Election on P leader with the configured lease.
  std::unique_ptr<Leadership> JoinElection(const std::string& candidate) override;

  struct State;  // the whole store in memory (etcd_store.cc)

 private:
  EtcdFenceStore(std::string location, EtcdStoreOptions options,
                 std::unique_ptr<etcd::Client> client);

  Status EnsureMeta();
  // A state is shared, never changed: the last one seen is kept without a copy.
  using StatePtr = std::shared_ptr<const State>;
  // One read of the whole prefix, parsed; remembered as the last state seen.
  Result<StatePtr> Load() const;
  // Whether etcd still holds exactly `state`: one keys-only read of what changed since the state
  // was read, every key of which must be one this replica wrote as `state` has it, and the
  // prefix's key count (which shows a deleted key).
  Result<bool> Unchanged(const State& state) const;
  // The store as it is now: the last state seen when Unchanged(), else Load().
  Result<StatePtr> Current() const;
  // The last state this replica read or committed (with its guard revision), which the next
  // change starts from; taken, so a change that fails starts the one after from a fresh read.
  void Remember(StatePtr state) const;
  StatePtr TakeLast() const;
  // Records that this replica's change moved the guard from revision `from` to `to`.
  void NoteOwnCommit(int64_t from, int64_t to);
  // Applies `change` to a fresh read and commits it (see above); `what` names it in errors.
  template <typename Change>
  Status Mutate(const std::string& what, Change&& change);
  Status Named(const Status& s) const;
  std::string Key(const std::string& name) const { return options_.prefix + name; }

  const std::string location_;
  const EtcdStoreOptions options_;
  std::unique_ptr<etcd::Client> client_;
  mutable Mutex last_mu_;
  mutable StatePtr last_ MZ_GUARDED_BY(last_mu_);
  // Guard revision from -> to.
  std::map<int64_t, int64_t> own_commits_ MZ_GUARDED_BY(last_mu_);
};

}  // namespace mizarmp::fence
