// The port index in etcd (fence/etcd_port_index.h: the key layout and the batch rule).
#include "fence/etcd_port_index.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <nlohmann/json.hpp>
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

// etcd's --max-txn-ops default (DefaultMaxTxnOps in etcd-io/etcd server/embed/config.go): the
// most operations each of a transaction's compare, success and failure lists may hold.
constexpr size_t kMaxTxnOps = 128;
// Keys per range answer: some 100 KiB of entry keys, far below the client's receive limit.
constexpr int64_t kPageKeys = 1000;
constexpr int kMaxRaces = 50;
constexpr std::string_view kEntriesDir = "a/";
constexpr std::string_view kNodesDir = "n/";
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

// Whether one of ops[from, to) puts `key`.
bool PutsKey(const std::vector<etcdserverpb::RequestOp>& ops, size_t from, size_t to,
             const std::string& key) {
  return std::any_of(ops.begin() + static_cast<std::ptrdiff_t>(from),
                     ops.begin() + static_cast<std::ptrdiff_t>(to),
                     [&](const etcdserverpb::RequestOp& op) {
                       return op.has_request_put() && op.request_put().key() == key;
                     });
}

class EtcdPortIndex final : public PortIndex {
 public:
  EtcdPortIndex(std::string location, etcd::Options options, std::string prefix,
                std::unique_ptr<etcd::Client> client)
      : location_(std::move(location)),
        options_(std::move(options)),
        prefix_(std::move(prefix)),
        client_(std::move(client)) {}

  Status Publish(const std::string& node, const std::vector<AddressedPort>& ports,
                 std::chrono::system_clock::time_point at) override {
    if (node.empty()) return InvalidArgumentError("port index: a publication names no node");
    std::set<std::string> wanted;
    for (const AddressedPort& p : ports) {
      if (p.port_id.empty()) {
        return InvalidArgumentError("port index: node " + node + " published an address (" +
                                    p.ip.ToString() + ") without a port id");
      }
      wanted.insert(EntryName(p));
    }
    const int64_t at_ms = ToUnixMillis(at);
    const std::string record =
        RecordText(at_ms, std::vector<std::string>(wanted.begin(), wanted.end()));
    return Rewrite(node, "publishing node " + node, [&](const NodeRecord& old) {
      std::set<std::string> listed(old.entries.begin(), old.entries.end());
      std::vector<etcdserverpb::RequestOp> puts;
      std::vector<etcdserverpb::RequestOp> deletes;
      // Only what changed: the renewal of an unchanged set (every node, every third of its
      // lease) writes the node key alone. A partial record's entries may be missing: all are put.
      for (const std::string& name : wanted) {
        if (old.partial || !listed.contains(name)) puts.push_back(PutOp(EntryKey(name, node), ""));
      }
      for (const std::string& name : listed) {
        if (!wanted.contains(name)) deletes.push_back(DeleteOp(EntryKey(name, node)));
      }
      std::vector<etcdserverpb::RequestOp> ops;
      if (puts.size() + deletes.size() + 1 > kMaxTxnOps) {
        // Several transactions: the node key first lists every entry this publication may
        // leave behind, so that one interrupted leaves none the next publication (or Forget)
        // does not know to delete, and says that some may be missing, so the next publication
        // puts them all. Its time stays the last finished publication's.
        listed.insert(wanted.begin(), wanted.end());
        ops.push_back(PutOp(NodeKey(node), PartialRecordText(old.revision != 0 ? old.at_ms : at_ms,
                                                             {listed.begin(), listed.end()})));
      }
      std::move(puts.begin(), puts.end(), std::back_inserter(ops));
      std::move(deletes.begin(), deletes.end(), std::back_inserter(ops));
      ops.push_back(PutOp(NodeKey(node), record));
      return ops;
    });
  }

  Status Forget(const std::string& node) override {
    return Rewrite(node, "forgetting node " + node, [&](const NodeRecord& old) {
      std::vector<etcdserverpb::RequestOp> ops;
      if (old.revision == 0) return ops;  // it never published
      for (const std::string& name :
           std::set<std::string>(old.entries.begin(), old.entries.end())) {
        ops.push_back(DeleteOp(EntryKey(name, node)));
      }
      ops.push_back(DeleteOp(NodeKey(node)));
      return ops;
    });
  }

  Result<std::vector<Publication>> Publications() const override {
    const std::string nodes = Key(kNodesDir);
    std::vector<Publication> found;
    MZ_RETURN_IF_ERROR(
        ForEachKey(nodes, PrefixEnd(nodes), /*keys_only=*/false, "reading the publications",
                   [&](const etcdserverpb::KeyValue& kv) {
                     NodeRecord record;
                     const std::string node = kv.key().substr(nodes.size());
                     const Status parsed = node.empty() ? DataLossError("no node name")
                                                        : ParseRecord(kv.value(), record);
                     if (!parsed.ok()) {
                       Skip(kv.key(), parsed);
                       return;
                     }
                     found.push_back({node, FromUnixMillis(record.at_ms), record.entries.size()});
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
          start, end, /*keys_only=*/true, "reading the ports inside " + cidr.ToString(),
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
            found.emplace_back(std::move(*entry), kv.mod_revision());
          }));
    }
    SortAndKeepLatest(found);
    std::vector<IndexedPort> out;
    out.reserve(found.size());
    for (auto& [port, revision] : found) out.push_back(std::move(port));
    return out;
  }

 private:
  std::string Key(std::string_view name) const { return prefix_ + std::string(name); }
  std::string NodeKey(const std::string& node) const { return Key(kNodesDir) + node; }
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

  // The node's record as etcd holds it now. A record that does not decode is logged and read as
  // one without entries: a publication then replaces it, leaving its entries stale, not missing.
  Result<NodeRecord> ReadRecord(const std::string& node) const {
    etcdserverpb::RangeRequest range;
    range.set_key(NodeKey(node));
    MZ_ASSIGN_OR_RETURN(const auto answer, client_->Range(range));
    NodeRecord record;
    if (answer.kvs().empty()) return record;
    const Status parsed = ParseRecord(answer.kvs(0).value(), record);
    if (!parsed.ok()) {
      Skip(answer.kvs(0).key(), parsed);
      record = NodeRecord{};
    }
    record.revision = answer.kvs(0).mod_revision();
    return record;
  }

  // Reads `node`'s record, builds the writes from it and sends them in transactions of at most
  // kMaxTxnOps, each only while the node key is as read; starts over from a fresh read when
  // another writer of the node key came in between.
  template <typename BuildOps>
  Status Rewrite(const std::string& node, const std::string& what, BuildOps build) {
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

  // Sends `ops` in order, in transactions of at most kMaxTxnOps that each compare `guard_key`'s
  // mod_revision with `revision`, or with the revision of this write's own last transaction that
  // put it; false as soon as one finds it moved.
  Result<bool> WriteWhileUnchanged(const std::string& guard_key, int64_t revision,
                                   const std::vector<etcdserverpb::RequestOp>& ops,
                                   Clock::time_point deadline) {
    for (size_t from = 0; from < ops.size(); from += kMaxTxnOps) {
      etcdserverpb::TxnRequest txn;
      auto* unchanged = txn.add_compare();
      unchanged->set_key(guard_key);
      unchanged->set_target(etcdserverpb::Compare::MOD);
      unchanged->set_result(etcdserverpb::Compare::EQUAL);
      unchanged->set_mod_revision(revision);  // 0 matches an absent key
      const size_t to = std::min(ops.size(), from + kMaxTxnOps);
      for (size_t i = from; i < to; ++i) *txn.add_success() = ops[i];
      // Re-sent after a lost answer, unlike the client's own rule: each transaction is guarded
      // and its puts and deletes repeat to the same keys; one that did commit and moved the node
      // key fails its compare when re-sent, and the whole write starts over from a fresh read.
      auto answer = RetryingUntil(deadline, [&] { return client_->Txn(txn); });
      if (!answer.ok()) return WriteError(answer.status(), from, ops.size());
      if (!answer->succeeded()) return false;
      if (PutsKey(ops, from, to, guard_key)) revision = answer->header().revision();
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
  return std::unique_ptr<PortIndex>(
      new EtcdPortIndex(location, std::move(options), prefix, std::move(*connected)));
}

}  // namespace mizarmp::fence
