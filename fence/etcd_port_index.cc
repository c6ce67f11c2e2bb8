// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index in etcd (fence/etcd_port_index.h: the key layout and the batch rule).
#include "fence/etcd_port_index.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/field_errors.h"
#include "common/hex.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/strings.h"
#include "etcd/client.h"
#include "fence/address_key.h"
#include "fence/etcd_util.h"

namespace mizarmp::fence {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Keys per range answer: some 100 KiB of entry keys, far below the client's receive limit.
constexpr int64_t kPageKeys = 1000;
constexpr std::string_view kEntriesDir = "a/";
constexpr std::string_view kNodesDir = "n/";
constexpr std::string_view kLeasesDir = "l/";
// The layout the keys follow, at P layout: "2" since the lease keys. An index without it is of
// the first layout (node keys only) and gets its lease keys when opened.
constexpr std::string_view kLayoutKey = "layout";
constexpr std::string_view kLayout = "2";
// The publication times read back: those a system_clock time point holds without overflow
// (about 292 years either side of 1970 with libstdc++'s nanoseconds).
constexpr int64_t kMaxUnixMillis = std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::duration::max())
                                       .count();

constexpr FieldErrors kRecordFields{Code::kDataLoss, nullptr};

// Which bytes of a port id stand for themselves in a key: printable ASCII but the separator
// '/' and the escape '%'. The rest are percent-encoded, so a key splits back into its parts and
// a node record, which names entries in JSON, holds only ASCII.
bool KeptInKey(unsigned char byte) {
  return byte > ' ' && byte < 0x7f && byte != '/' && byte != '%';
}

// An entry's name: "<hex address key>/<encoded port id>", its key without the prefix and node.
std::string EntryName(const AddressedPort& port) {
  return HexEncoded(AddressKey(port.ip)) + "/" + PercentEncoded(port.port_id, KeptInKey);
}

// The (address, port, node) a key's part after "P a/" names; DATA_LOSS saying why not.
Result<IndexedPort> EntryFromKeyName(std::string_view name) {
  const size_t address_end = name.find('/');
  if (address_end == std::string_view::npos) return DataLossError("no port id after the address");
  const size_t port_end = name.find('/', address_end + 1);
  if (port_end == std::string_view::npos) return DataLossError("no node after the port id");
  const std::string_view hex = name.substr(0, address_end);
  auto bytes = HexDecoded(hex);
  // Only the lower-case spelling sorts where its address does.
  if (!bytes.ok() || HexEncoded(*bytes) != hex) return DataLossError("the address is not hex");
  MZ_ASSIGN_OR_RETURN(const IpAddress ip, AddressFromKey(*bytes));
  auto port_id = PercentDecoded(name.substr(address_end + 1, port_end - address_end - 1));
  if (!port_id.ok() || port_id->empty()) return DataLossError("the port id is not encoded");
  std::string node(name.substr(port_end + 1));
  if (node.empty()) return DataLossError("no node after the port id");
  return IndexedPort{ip, std::move(*port_id), std::move(node)};
}

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

std::string RecordText(int64_t at_ms, const std::vector<std::string>& entries) {
  return json{{"at_ms", at_ms}, {"entries", entries}}.dump();
}

std::string PartialRecordText(int64_t at_ms, const std::vector<std::string>& entries) {
  return json{{"at_ms", at_ms}, {"entries", entries}, {"partial", true}}.dump();
}

// DATA_LOSS naming the field for a value that is not a node record.
Status ParseRecord(const std::string& value, NodeRecord& out) {
  json doc;
  if (!TooDeepJson(value)) doc = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return DataLossError("not a JSON object");
  const JsonFields fields(doc, kRecordFields);
  MZ_ASSIGN_OR_RETURN(out.at_ms, fields.RequiredInt("at_ms", -kMaxUnixMillis, kMaxUnixMillis));
  MZ_RETURN_IF_ERROR(fields.Strings("entries", &out.entries));
  return fields.Bool("partial", &out.partial);
}

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
                      const std::string& enforced) {
  json doc{{"at_ms", at_ms}, {"entries", entries}};
  if (!digest.empty()) doc["digest"] = digest;
  if (of != 0) doc["of"] = of;
  if (!enforced.empty()) doc["enforced"] = enforced;
  return doc.dump();
}

// DATA_LOSS naming the field for a value that is not a lease record.
Status ParseLease(const std::string& value, LeaseRecord& out) {
  json doc;
  if (!TooDeepJson(value)) doc = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return DataLossError("not a JSON object");
  const JsonFields fields(doc, kRecordFields);
  MZ_ASSIGN_OR_RETURN(out.at_ms, fields.RequiredInt("at_ms", -kMaxUnixMillis, kMaxUnixMillis));
  MZ_ASSIGN_OR_RETURN(out.entries,
                      fields.RequiredInt("entries", 0, std::numeric_limits<int64_t>::max()));
  MZ_RETURN_IF_ERROR(fields.String("digest", &out.digest));
  MZ_RETURN_IF_ERROR(fields.String("enforced", &out.enforced));
  return fields.Int("of", int64_t{0}, std::numeric_limits<int64_t>::max(), &out.of);
}

// Whether `lease` tells what the node key of mod_revision `node_revision` names: it carries a
// digest, and was written with that node key or checked against it since. A node key rewritten
// by anything else (a writer of the first layout, a batched publication under way, a hand) has
// moved on, and the lease's digest then says nothing.
bool DescribesNodeKey(const LeaseRecord& lease, int64_t node_revision) {
  if (lease.revision == 0 || lease.digest.empty() || node_revision == 0) return false;
  return (lease.of != 0 ? lease.of : lease.revision) == node_revision;
}

// SHA-256 of a node's entry names in order, one per line (a name holds no control bytes), in
// hex: a renewal compares it with its lease key's instead of reading the node key's list.
std::string SetDigest(const std::set<std::string>& names) {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  bool ok = context != nullptr && EVP_DigestInit_ex(context, EVP_sha256(), nullptr) == 1;
  for (const std::string& name : names) {
    ok = ok && EVP_DigestUpdate(context, name.data(), name.size()) == 1 &&
         EVP_DigestUpdate(context, "\n", 1) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(context, digest, &size) == 1;
  EVP_MD_CTX_free(context);
  // Without a digest a renewal takes the long way, which is always right.
  return ok ? HexEncoded(digest, size) : std::string();
}

std::chrono::system_clock::time_point FromUnixMillis(int64_t at_ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(at_ms));
}

int64_t ToUnixMillis(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

etcdserverpb::RequestOp PutOp(std::string key, std::string value) {
  etcdserverpb::RequestOp op;
  op.mutable_request_put()->set_key(std::move(key));
  op.mutable_request_put()->set_value(std::move(value));
  return op;
}

etcdserverpb::RequestOp DeleteOp(std::string key) {
  etcdserverpb::RequestOp op;
  op.mutable_request_delete_range()->set_key(std::move(key));
  return op;
}

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

// Whether one of `ops` puts `key`.
bool PutsKey(const Ops& ops, const std::string& key) {
  return std::any_of(ops.begin(), ops.end(), [&](const etcdserverpb::RequestOp& op) {
    return op.has_request_put() && op.request_put().key() == key;
  });
}

// Appends `ops` to `out` in order, in transactions of at most kMaxTxnOps.
void AppendInTransactions(Ops ops, Transactions& out) {
  for (size_t from = 0; from < ops.size(); from += kMaxTxnOps) {
    const size_t to = std::min(ops.size(), from + kMaxTxnOps);
    out.emplace_back(std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(from)),
                     std::make_move_iterator(ops.begin() + static_cast<std::ptrdiff_t>(to)));
  }
}

// A compare that holds while `key`'s mod_revision is `revision` (0: while the key is absent).
void RequireModRevision(etcdserverpb::TxnRequest& txn, const std::string& key, int64_t revision) {
  auto* compare = txn.add_compare();
  compare->set_key(key);
  compare->set_target(etcdserverpb::Compare::MOD);
  compare->set_result(etcdserverpb::Compare::EQUAL);
  compare->set_mod_revision(revision);
}

// A read of `key` inside a transaction: several keys read at one revision in one round trip.
etcdserverpb::RequestOp RangeOp(std::string key, bool keys_only) {
  etcdserverpb::RequestOp op;
  op.mutable_request_range()->set_key(std::move(key));
  op.mutable_request_range()->set_keys_only(keys_only);
  return op;
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
    auto layout = RetryingUntil(deadline, [&] { return client_->Range(range); });
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
    auto marked = RetryingUntil(deadline, [&] { return client_->Txn(mark); });
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
      auto state = RetryingUntil(deadline, [&] { return ReadLease(node); });
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
      auto answer = RetryingUntil(deadline, [&] { return client_->Txn(txn); });
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
                        RetryingUntil(RetryDeadline(options_), [&] { return ReadRecord(node); }));
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
    return RetryingUntil(deadline, [&] { return client_->Txn(txn); }).status();
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
                        RetryingUntil(deadline, [&] { return ReadLease(node); }));
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
                        RetryingUntil(deadline, [&] { return client_->Txn(txn); }));
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
      auto record = RetryingUntil(deadline, [&] { return ReadRecord(node); });
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
      auto answer = RetryingUntil(deadline, [&] { return client_->Txn(txn); });
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
      auto page = RetryingUntil(deadline, [&] { return client_->Range(range); });
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
