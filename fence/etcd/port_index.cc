// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index in etcd (fence/etcd/port_index.h: the key layout and the batch rule).
#include "fence/etcd/port_index.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/hex.h"
#include "common/log.h"
#include "common/retry.h"
#include "common/strings.h"
#include "etcd/client.h"
#include "fence/address_key.h"
#include "fence/etcd/index_records.h"
#include "fence/etcd/util.h"

namespace mizarmp::fence {
namespace {

using Clock = std::chrono::steady_clock;

// Keys per range answer: some 100 KiB of entry keys, far below the client's receive limit.
constexpr int64_t kPageKeys = 1000;
// The layout the keys follow, at P layout: "2" since the lease keys. An index without it is of
// the first layout (node keys only) and gets its lease keys when opened.
constexpr std::string_view kLayoutKey = "layout";
constexpr std::string_view kLayout = "2";
// Sorts like the SQLite index (address, then port id) and keeps each (address, port) once: the
// entry written last, as SQLite's INSERT OR REPLACE would have it.
void SortAndKeepLatest(std::vector<std::pair<IndexedPort, int64_t>>& found) {
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.ip, a.first.port_id, b.second) <
           std::tie(b.first.ip, b.first.port_id, a.second);
  });
  found.erase(std::unique(found.begin(), found.end(),
                          [](const auto& a, const auto& b) {
                            return a.first.ip == b.first.ip && a.first.port_id == b.first.port_id;
                          }),
              found.end());
}

using Ops = std::vector<etcdserverpb::RequestOp>;
// The transactions of one write, sent in order.
using Transactions = std::vector<Ops>;

// Appends `ops` to `out` in order, in transactions of at most kMaxTxnOps.
void AppendInTransactions(Ops ops, Transactions& out) {
  for (size_t from = 0; from < ops.size(); from += kMaxTxnOps) {
    const size_t to = std::min(ops.size(), from + kMaxTxnOps);
    out.emplace_back(std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(from)),
                     std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(to)));
  }
}

class EtcdPortIndex final : public PortIndex {
 public:
  EtcdPortIndex(std::string location, etcd::Options options, std::string prefix,
                std::unique_ptr<etcd::Client> client)
      : location_(std::move(location)),
        options_(std::move(options)),
        prefix_(std::move(prefix)),
        client_(std::move(client)) {}

  // Gives each node key of an index of the first layout its lease key, then marks the layout:
  // without a lease key a node is missing from Publications(), so a node that died before this
  // server came would never lapse, and its ports would never be listed for a fence. Once, with
  // one read of every node key; any number of replicas may do it at once.
  Status UpgradeLayout() {
    const Clock::time_point deadline = RetryDeadline(options_);
    etcdserverpb::RangeRequest range;
    range.set_key(Key(kLayoutKey));
    auto layout = RetryWhileTransient(deadline, [&] { return client_->Range(range); });
    if (!layout.ok()) return Named(layout.status().WithContext("reading the layout"));
    if (!layout->kvs().empty() && layout->kvs(0).value() == kLayout) return Status::Ok();
    const std::string nodes = Key(kNodesDir);
    Status written = Status::Ok();
    size_t leased = 0;
    MZ_RETURN_IF_ERROR(
        ForEachKey(nodes, PrefixEnd(nodes), /*keys_only=*/false, "reading the node keys to upgrade",
                   [&](const etcdserverpb::KeyValue& kv) {
                     if (!written.ok()) return;
                     NodeRecord record;
                     const std::string node = kv.key().substr(nodes.size());
                     const Status parsed = node.empty() ? DataLossError("no node name")
                                                        : ParseRecord(kv.value(), record);
                     if (!parsed.ok()) {  // its next publication replaces it, with a lease key
                       Skip(kv.key(), parsed);
                       return;
                     }
                     written = AddLease(node, record, kv.mod_revision(), deadline);
                     if (written.ok()) ++leased;
                   }));
    if (!written.ok()) return Named(written.WithContext("upgrading the layout"));
    etcdserverpb::TxnRequest mark;
    *mark.add_success() = PutOp(Key(kLayoutKey), std::string(kLayout));
    auto marked = RetryWhileTransient(deadline, [&] { return client_->Txn(mark); });
    if (!marked.ok()) return Named(marked.status().WithContext("writing the layout"));
    MZ_LOG(kInfo) << "port index " << location_ << ": layout " << kLayout << ": " << leased
                  << " node keys of the first layout got their lease keys";
    return Status::Ok();
  }

  Status Publish(const std::string& node, const std::vector<AddressedPort>& ports,
                 std::chrono::system_clock::time_point at, const std::string& enforced) override {
    if (node.empty()) return InvalidArgumentError("port index: a publication names no node");
    std::set<std::string> wanted;
    std::map<std::string, std::string> pods;  // by entry name
    for (const AddressedPort& p : ports) {
      if (p.port_id.empty()) {
        return InvalidArgumentError("port index: node " + node + " published an address (" +
                                    p.ip.ToString() + ") without a port id");
      }
      wanted.insert(EntryName(p));
      if (!p.pod.empty()) pods[EntryName(p)] = p.pod;
    }
    const int64_t at_ms = ToUnixMillis(at);
    const std::string digest = SetDigest(wanted);
    auto renewed = Renew(node, at_ms, wanted.size(), digest, enforced);
    if (!renewed.ok()) return Named(renewed.status().WithContext("renewing node " + node));
    if (*renewed) return Status::Ok();
    const std::string record =
        RecordText(at_ms, std::vector<std::string>(wanted.begin(), wanted.end()));
    const std::string lease = LeaseText(at_ms, wanted.size(), digest, /*of=*/0, enforced);
    return Rewrite(node, "publishing node " + node, [&](const NodeRecord& old) {
      std::set<std::string> listed(old.entries.begin(), old.entries.end());
      Ops changes;
      // Only what changed. A partial record's entries may be missing: all are put.
      for (const std::string& name : wanted) {
        if (old.partial || !listed.contains(name)) {
          const auto pod = pods.find(name);
          changes.push_back(PutOp(EntryKey(name, node), pod == pods.end() ? "" : pod->second));
        }
      }
      for (const std::string& name : listed) {
        if (!wanted.contains(name)) changes.push_back(DeleteOp(EntryKey(name, node)));
      }
      Ops finish = {PutOp(NodeKey(node), record), PutOp(LeaseKey(node), lease)};
      Transactions txns;
      if (changes.size() + finish.size() <= kMaxTxnOps) {
        std::move(finish.begin(), finish.end(), std::back_inserter(changes));
        txns.push_back(std::move(changes));
        return txns;
      }
      // Several transactions: the node key first lists every entry this publication may
      // leave behind, so that one interrupted leaves none the next publication (or Forget)
      // does not know to delete, and says that some may be missing, so the next publication
      // puts them all; the lease key, without a digest, sends the next renewal the long way.
      // Their time stays the last finished publication's.
      listed.insert(wanted.begin(), wanted.end());
      const int64_t kept_at = old.live_at_ms.value_or(at_ms);
      txns.push_back(
          {PutOp(NodeKey(node), PartialRecordText(kept_at, {listed.begin(), listed.end()})),
           PutOp(LeaseKey(node), LeaseText(kept_at, listed.size(), "", 0, ""))});
      AppendInTransactions(std::move(changes), txns);
      txns.push_back(std::move(finish));  // together: the lease's digest is the node key's
      return txns;
    });
  }

  Status Forget(const std::string& node) override {
    return Rewrite(node, "forgetting node " + node, [&](const NodeRecord& old) {
      Transactions txns;
      if (old.revision == 0 && !old.has_lease_key) return txns;  // it never published
      Ops deletes;
      for (const std::string& name :
           std::set<std::string>(old.entries.begin(), old.entries.end())) {
        deletes.push_back(DeleteOp(EntryKey(name, node)));
      }
      AppendInTransactions(std::move(deletes), txns);
      txns.push_back({DeleteOp(NodeKey(node)), DeleteOp(LeaseKey(node))});
      return txns;
    });
  }

  // Rewrites the lease key's "enforced" alone (its time stays: an acknowledgement is no
  // renewal), while neither the lease key nor the node key moved; a lost race reads again. A
  // lease that vouched for the node key names its revision in "of" from then on; one that did
  // not loses its digest, so the next renewal takes the long way.
  Status Acknowledge(const std::string& node, const std::string& enforced) override {
    const std::string what = "recording the acknowledgement of node " + node;
    const Clock::time_point deadline = RetryDeadline(options_);
    for (int races = 0; races < kMaxRaces; ++races) {
      auto state = RetryWhileTransient(deadline, [&] { return ReadLease(node); });
      if (!state.ok()) return Named(state.status().WithContext(what));
      const LeaseRecord& lease = state->lease;
      if (lease.revision == 0) return NotFoundError("port index: node " + node + " has not published");
      if (lease.enforced == enforced) return Status::Ok();
      const bool vouches = DescribesNodeKey(lease, state->node_revision);
      etcdserverpb::TxnRequest txn;
      RequireModRevision(txn, LeaseKey(node), lease.revision);
      RequireModRevision(txn, NodeKey(node), state->node_revision);
      *txn.add_success() =
          PutOp(LeaseKey(node), LeaseText(lease.at_ms, static_cast<size_t>(lease.entries),
                                          vouches ? lease.digest : "",
                                          vouches ? state->node_revision : 0, enforced));
      auto answer = RetryWhileTransient(deadline, [&] { return client_->Txn(txn); });
      if (!answer.ok()) return Named(answer.status().WithContext(what));
      if (answer->succeeded()) return Status::Ok();
    }
    return Named(AbortedError(what + ": lost the race against other writers of the node " +
                              std::to_string(kMaxRaces) + " times in a row"));
  }

  // The lease keys alone: one small value per node, whatever the node published.
  Result<std::vector<Publication>> Publications() const override {
    const std::string leases = Key(kLeasesDir);
    std::vector<Publication> found;
    MZ_RETURN_IF_ERROR(ForEachKey(
        leases, PrefixEnd(leases), /*keys_only=*/false, "reading the publications",
        [&](const etcdserverpb::KeyValue& kv) {
          LeaseRecord lease;
          const std::string node = kv.key().substr(leases.size());
          const Status parsed =
              node.empty() ? DataLossError("no node name") : ParseLease(kv.value(), lease);
          if (!parsed.ok()) {
            Skip(kv.key(), parsed);
            return;
          }
          found.push_back({node, FromUnixMillis(lease.at_ms), static_cast<size_t>(lease.entries),
                           lease.enforced});
        }));
    return found;
  }

  Result<std::vector<IndexedPort>> Inside(const std::vector<Cidr>& cidrs) const override {
    const std::string entries = Key(kEntriesDir);
    std::vector<std::pair<IndexedPort, int64_t>> found;  // with the key's mod_revision
    for (const Cidr& cidr : cidrs) {
      // '0' is the byte after '/': the end is past every key of the last address.
      const std::string start = entries + HexEncoded(AddressKey(cidr.network())) + "/";
      const std::string end = entries + HexEncoded(AddressKey(cidr.last())) + "0";
      MZ_RETURN_IF_ERROR(ForEachKey(
          start, end, /*keys_only=*/false, "reading the ports inside " + cidr.ToString(),
          [&](const etcdserverpb::KeyValue& kv) {
            auto entry = EntryFromKeyName(std::string_view(kv.key()).substr(entries.size()));
            if (!entry.ok()) {
              Skip(kv.key(), entry.status());
              return;
            }
            if (!cidr.Contains(entry->ip)) {  // a hand-made key only: keys sort by address
              Skip(kv.key(), DataLossError("the address is not in " + cidr.ToString()));
              return;
            }
            entry->pod = kv.value();  // the pod its node published, if any
            found.emplace_back(std::move(*entry), kv.mod_revision());
          }));
    }
    SortAndKeepLatest(found);
    std::vector<IndexedPort> out;
    out.reserve(found.size());
    for (auto& [port, revision] : found) out.push_back(std::move(port));
    return out;
  }

  // The node key alone: its entries' names hold their addresses.
  Result<std::vector<IpAddress>> AddressesOn(const std::string& node) const override {
    MZ_ASSIGN_OR_RETURN(const NodeRecord record,
                        RetryWhileTransient(RetryDeadline(options_), [&] { return ReadRecord(node); }));
    std::vector<IpAddress> found;
    for (const std::string& name : record.entries) {
      auto entry = EntryFromKeyName(name + "/" + node);
      if (!entry.ok()) {
        Skip(NodeKey(node), entry.status());
        continue;
      }
      found.push_back(entry->ip);
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    return found;
  }

 private:
  std::string Key(std::string_view name) const { return prefix_ + std::string(name); }
  std::string NodeKey(const std::string& node) const { return Key(kNodesDir) + node; }
  std::string LeaseKey(const std::string& node) const { return Key(kLeasesDir) + node; }
  std::string EntryKey(const std::string& name, const std::string& node) const {
    return Key(kEntriesDir) + name + "/" + node;
  }

  Status Named(const Status& s) const {
    if (s.ok()) return s;
    return Status(s.code(), "port index " + location_ + ": " + s.message());
  }

  void Skip(const std::string& key, const Status& why) const {
    MZ_LOG(kWarn) << "port index " << location_ << ": skipping key " << LogEscaped(key) << ": "
                  << why.message();
  }

  // The lease key of a node key of the first layout (read at `node_revision`), as if a renewal
  // had checked it; nothing when the node has a lease key already or its node key moved since
  // (a publication wrote both meanwhile).
  Status AddLease(const std::string& node, const NodeRecord& record, int64_t node_revision,
                  Clock::time_point deadline) {
    const std::set<std::string> names(record.entries.begin(), record.entries.end());
    etcdserverpb::TxnRequest txn;
    RequireModRevision(txn, NodeKey(node), node_revision);
    RequireModRevision(txn, LeaseKey(node), 0);
    *txn.add_success() =
        PutOp(LeaseKey(node), LeaseText(record.at_ms, names.size(),
                                        record.partial ? "" : SetDigest(names), node_revision,
                                        ""));
    return RetryWhileTransient(deadline, [&] { return client_->Txn(txn); }).status();
  }

  // The lease key's record and the node key's mod_revision (not its value, which lists every
  // entry): what a renewal needs to know that the set is unchanged.
  struct LeaseState {
    LeaseRecord lease;
    int64_t node_revision = 0;  // 0: no node key
  };

  Result<LeaseState> ReadLease(const std::string& node) const {
    etcdserverpb::TxnRequest txn;
    *txn.add_success() = RangeOp(LeaseKey(node), /*keys_only=*/false);
    *txn.add_success() = RangeOp(NodeKey(node), /*keys_only=*/true);
    MZ_ASSIGN_OR_RETURN(const auto answer, client_->Txn(txn));
    if (answer.responses_size() != 2) return DataLossError("etcd did not answer both reads");
    LeaseState state;
    const auto& lease = answer.responses(0).response_range();
    if (!lease.kvs().empty()) {
      const Status parsed = ParseLease(lease.kvs(0).value(), state.lease);
      if (!parsed.ok()) {
        Skip(lease.kvs(0).key(), parsed);
        state.lease = LeaseRecord{};
      }
      state.lease.revision = lease.kvs(0).mod_revision();
    }
    const auto& record = answer.responses(1).response_range();
    if (!record.kvs().empty()) state.node_revision = record.kvs(0).mod_revision();
    return state;
  }

  // The renewal of an unchanged set (every node, every third of its lease): when the lease key
  // vouches for the node key's set and its digest is `digest`, rewrites the lease key alone,
  // while neither key moved. False when it does not vouch, or another writer came in between:
  // the caller then takes the long way, which is always right.
  Result<bool> Renew(const std::string& node, int64_t at_ms, size_t entries,
                     const std::string& digest, const std::string& enforced) {
    if (digest.empty()) return false;
    const Clock::time_point deadline = RetryDeadline(options_);
    MZ_ASSIGN_OR_RETURN(const LeaseState state,
                        RetryWhileTransient(deadline, [&] { return ReadLease(node); }));
    if (!DescribesNodeKey(state.lease, state.node_revision) || state.lease.digest != digest) {
      return false;
    }
    etcdserverpb::TxnRequest txn;
    RequireModRevision(txn, LeaseKey(node), state.lease.revision);
    RequireModRevision(txn, NodeKey(node), state.node_revision);
    *txn.add_success() =
        PutOp(LeaseKey(node), LeaseText(at_ms, entries, digest, state.node_revision, enforced));
    // A lost answer re-sent: had it committed, its compare now fails, and the long way follows.
    MZ_ASSIGN_OR_RETURN(const auto answer,
                        RetryWhileTransient(deadline, [&] { return client_->Txn(txn); }));
    return answer.succeeded();
  }

  // The node's record as etcd holds it now, with the time of its lease key. A record that does
  // not decode is logged and read as one without entries: a publication then replaces it,
  // leaving its entries stale, not missing.
  Result<NodeRecord> ReadRecord(const std::string& node) const {
    etcdserverpb::TxnRequest txn;
    *txn.add_success() = RangeOp(NodeKey(node), /*keys_only=*/false);
    *txn.add_success() = RangeOp(LeaseKey(node), /*keys_only=*/false);
    MZ_ASSIGN_OR_RETURN(const auto answer, client_->Txn(txn));
    if (answer.responses_size() != 2) return DataLossError("etcd did not answer both reads");
    NodeRecord record;
    const auto& found = answer.responses(0).response_range();
    if (!found.kvs().empty()) {
      const Status parsed = ParseRecord(found.kvs(0).value(), record);
      if (!parsed.ok()) {
        Skip(found.kvs(0).key(), parsed);
        record = NodeRecord{};
      } else {
        record.live_at_ms = record.at_ms;
      }
      record.revision = found.kvs(0).mod_revision();
    }
    const auto& lease = answer.responses(1).response_range();
    if (!lease.kvs().empty()) {
      record.has_lease_key = true;
      LeaseRecord lease_record;
      if (const Status parsed = ParseLease(lease.kvs(0).value(), lease_record); parsed.ok()) {
        record.live_at_ms = lease_record.at_ms;
      } else {
        Skip(lease.kvs(0).key(), parsed);
      }
    }
    return record;
  }

  // Reads `node`'s record, builds the transactions from it and sends them in order, each only
  // while the node key is as read; starts over from a fresh read when another writer of the
  // node key came in between.
  template <typename BuildTransactions>
  Status Rewrite(const std::string& node, const std::string& what, BuildTransactions build) {
    const Clock::time_point deadline = RetryDeadline(options_);
    for (int races = 0; races < kMaxRaces; ++races) {
      auto record = RetryWhileTransient(deadline, [&] { return ReadRecord(node); });
      if (!record.ok()) return Named(record.status().WithContext(what));
      auto committed =
          WriteWhileUnchanged(NodeKey(node), record->revision, build(*record), deadline);
      if (!committed.ok()) return Named(committed.status().WithContext(what));
      if (*committed) return Status::Ok();
    }
    return Named(AbortedError(what + ": lost the race against other writers of the node " +
                              std::to_string(kMaxRaces) + " times in a row"));
  }

  // Sends `txns` in order, each comparing `guard_key`'s mod_revision with `revision`, or with
  // the revision of this write's own last transaction that put it; false as soon as one finds
  // it moved.
  Result<bool> WriteWhileUnchanged(const std::string& guard_key, int64_t revision,
                                   const Transactions& txns, Clock::time_point deadline) {
    size_t total = 0;
    for (const Ops& ops : txns) total += ops.size();
    size_t written = 0;
    for (const Ops& ops : txns) {
      etcdserverpb::TxnRequest txn;
      RequireModRevision(txn, guard_key, revision);
      for (const etcdserverpb::RequestOp& op : ops) *txn.add_success() = op;
      // Re-sent after a lost answer, unlike the client's own rule: each transaction is guarded
      // and its puts and deletes repeat to the same keys; one that did commit and moved the node
      // key fails its compare when re-sent, and the whole write starts over from a fresh read.
      auto answer = RetryWhileTransient(deadline, [&] { return client_->Txn(txn); });
      if (!answer.ok()) return WriteError(answer.status(), written, total);
      if (!answer->succeeded()) return false;
      if (PutsKey(ops, guard_key)) revision = answer->header().revision();
      written += ops.size();
    }
    return true;
  }

  static Status WriteError(const Status& s, size_t written, size_t total) {
    const std::string done =
        std::to_string(written) + " of " + std::to_string(total) + " writes were done before";
    if (TooLargeForEtcd(s)) {
      return Status(Code::kResourceExhausted,
                    "larger than etcd accepts in one request (etcd --max-request-bytes; " + done +
                        "): " + s.message());
    }
    return s.WithContext(done);
  }

  // Calls `visit` with each key of [start, end) in key order, kPageKeys at a time.
  template <typename Visit>
  Status ForEachKey(std::string start, const std::string& end, bool keys_only,
                    const std::string& what, Visit visit) const {
    const Clock::time_point deadline = RetryDeadline(options_);
    for (;;) {
      etcdserverpb::RangeRequest range;
      range.set_key(start);
      range.set_range_end(end);
      range.set_limit(kPageKeys);
      range.set_keys_only(keys_only);
      auto page = RetryWhileTransient(deadline, [&] { return client_->Range(range); });
      if (!page.ok()) return Named(page.status().WithContext(what));
      for (const auto& kv : page->kvs()) visit(kv);
      if (!page->more() || page->kvs().empty()) return Status::Ok();
      start = page->kvs(page->kvs_size() - 1).key() + '\0';  // the next key after the last
    }
  }

  const std::string location_;
  const etcd::Options options_;
  const std::string prefix_;
  const std::unique_ptr<etcd::Client> client_;
};

}  // namespace

Result<std::unique_ptr<PortIndex>> OpenEtcdPortIndex(const std::string& location,
                                                     const etcd::Options& client,
                                                     const std::string& prefix) {
  auto named = [&](const Status& s) {
    return Status(s.code(), "port index " + location + ": " + s.message());
  };
  if (prefix.empty() || prefix.back() != '/') {
    return named(InvalidArgumentError("key prefix " + Quoted(prefix) + " does not end with '/'"));
  }
  etcd::Options options = client;
  auto connected = ConnectToLocation(location, options);
  if (!connected.ok()) return named(connected.status());
  auto index =
      std::make_unique<EtcdPortIndex>(location, std::move(options), prefix, std::move(*connected));
  MZ_RETURN_IF_ERROR(index->UpgradeLayout());
  return std::unique_ptr<PortIndex>(std::move(index));
}

}  // namespace mizarmp::fence
