// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/etcd/store.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/retry.h"
#include "common/strings.h"
#include "etcd/election.h"
#include "fence/cidrset.h"
#include "fence/etcd/util.h"
#include "records/records.h"

namespace mizarmp::fence {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kShards = 64;
constexpr int kSchema = 1;
constexpr size_t kShownMetaBytes = 200;  // of a foreign P meta, in the error refusing it
// Own commits remembered for RevisionAfterOwnChanges(): more than a pass makes (three changes),
// few enough to look through at every leader's tick.
constexpr size_t kOwnCommitsKept = 16;
// RequestPass()'s key, under the guard's name so that one range read gives Revision().
constexpr char kPassRequest[] = "revision/pass";

// FNV-1a: stable across builds and machines, so every replica puts a CIDR in the same shard.
int ShardOf(const std::string& canonical) {
  uint32_t h = 2166136261u;
  for (unsigned char c : canonical) h = (h ^ c) * 16777619u;
  return static_cast<int>(h % kShards);
}

std::string ShardName(int shard) {
  char name[16];
  std::snprintf(name, sizeof(name), "shards/%02d", shard);
  return name;
}

// The shard a key's name under the prefix ("shards/NN", as ShardName writes it) stands for; -1
// for any other name. Read, not compared with every shard's name: a read probe passes each key
// it gets here.
int ShardIndex(std::string_view name) {
  constexpr std::string_view kShardsDir = "shards/";
  if (name.size() != kShardsDir.size() + 2 || !name.starts_with(kShardsDir)) return -1;
  const char tens = name[kShardsDir.size()];
  const char ones = name[kShardsDir.size() + 1];
  if (tens < '0' || tens > '9' || ones < '0' || ones > '9') return -1;
  const int shard = (tens - '0') * 10 + (ones - '0');
  return shard < kShards ? shard : -1;
}

}  // namespace

// One CIDR's entry: a fence or a pending unfence, with its record.
struct StoredEntry {
  Cidr cidr;
  bool fence = true;
  FenceState state = FenceState::kPending;
  std::string created_at;
  std::string updated_at;
  bool tracked = true;
  std::set<std::string> held;
};

struct EtcdFenceStore::State {
  int64_t read_revision = 0;   // the store's revision when the prefix was last read whole
  int64_t key_count = 0;       // keys under the prefix, as that read and later commits left them
  int64_t guard_revision = 0;  // the guard's mod_revision; 0: absent
  std::map<std::string, StoredEntry> entries;     // canonical CIDR -> entry
  std::array<json, kShards> unreadable;           // per shard: entries that did not parse
  std::array<std::string, kShards> text;          // each shard as read ("" absent)
  std::array<int64_t, kShards> shard_revision{};  // each shard's mod_revision (0 absent)
};

namespace {

using State = EtcdFenceStore::State;

json EntryJson(const StoredEntry& e) {
  json j = {{"created_at", e.created_at}, {"tracked", e.tracked}, {"held_ports", e.held}};
  if (e.fence) {
    j["state"] = std::string(FenceStateName(e.state));
    j["updated_at"] = e.updated_at;
  }
  return j;
}

// Every shard's document as it is written; "" for a shard with nothing in it (deleted). One pass
// over the entries, each hashed once.
std::array<std::string, kShards> ShardTexts(const State& state) {
  std::array<json, kShards> docs;
  for (int shard = 0; shard < kShards; ++shard) {
    docs[shard] = {{"fences", json::object()}, {"unfences", json::object()}};
    if (!state.unreadable[shard].is_null()) {
      docs[shard].update(state.unreadable[shard], /*merge=*/true);
    }
  }
  for (const auto& [text, e] : state.entries) {
    docs[ShardOf(text)][e.fence ? "fences" : "unfences"][text] = EntryJson(e);
  }
  std::array<std::string, kShards> texts;
  for (int shard = 0; shard < kShards; ++shard) {
    const json& doc = docs[shard];
    if (!doc["fences"].empty() || !doc["unfences"].empty()) texts[shard] = doc.dump();
  }
  return texts;
}

// Reads one entry; false when it does not parse.
bool ParseEntry(const std::string& text, const json& v, bool fence, StoredEntry& out) {
  auto cidr = Cidr::Parse(text);
  if (!cidr.ok() || CanonicalCidr(*cidr) != text || !v.is_object()) return false;
  out.cidr = *cidr;
  out.fence = fence;
  auto string_field = [&](const char* name, std::string& field) {
    if (!v.contains(name)) return true;
    if (!v[name].is_string()) return false;
    field = v[name].get<std::string>();
    return true;
  };
  if (!string_field("created_at", out.created_at) || !string_field("updated_at", out.updated_at)) {
    return false;
  }
  if (v.contains("tracked")) {
    if (!v["tracked"].is_boolean()) return false;
    out.tracked = v["tracked"].get<bool>();
  }
  if (v.contains("held_ports")) {
    if (!v["held_ports"].is_array()) return false;
    for (const auto& id : v["held_ports"]) {
      if (!id.is_string()) return false;
      out.held.insert(id.get<std::string>());
    }
  }
  if (fence) {
    std::string state = "pending";
    if (!string_field("state", state)) return false;
    if (state != "pending" && state != "enforced") return false;
    out.state = state == "enforced" ? FenceState::kEnforced : FenceState::kPending;
  }
  return true;
}

// Adds one shard's entries to `state`. DATA_LOSS naming the key when it is not a shard at all.
Status ParseShard(const std::string& key, int shard, const std::string& value, State& state) {
  state.text[shard] = value;
  json doc;
  if (!TooDeepJson(value)) doc = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return DataLossError("key " + Quoted(key) + " is not a JSON object of fences and unfences");
  }
  for (const char* table : {"fences", "unfences"}) {
    if (!doc.contains(table)) continue;
    if (!doc[table].is_object()) {
      return DataLossError("key " + Quoted(key) + ": \"" + table + "\" is not an object");
    }
    const bool fence = std::string(table) == "fences";
    for (const auto& [text, v] : doc[table].items()) {
      StoredEntry e;
      if (ParseEntry(text, v, fence, e) && !state.entries.contains(text) &&
          ShardOf(text) == shard) {
        state.entries.emplace(text, std::move(e));
        continue;
      }
      MZ_LOG(kWarn) << "fence store: key " << key << ": skipping unreadable " << table << " entry "
                    << LogEscaped(text);
      state.unreadable[shard][table][text] = v;
    }
  }
  return Status::Ok();
}

StoreSnapshot ToSnapshot(const State& state) {
  StoreSnapshot snap;
  snap.revision = state.guard_revision;
  for (const auto& [text, e] : state.entries) {
    std::vector<std::string> held(e.held.begin(), e.held.end());
    if (e.fence) {
      snap.fences.push_back({e.cidr, e.state, e.created_at, e.updated_at, e.tracked, held});
    } else {
      snap.unfences.push_back({e.cidr, e.tracked, held});
    }
  }
  std::sort(snap.fences.begin(), snap.fences.end(),
            [](const FenceEntry& a, const FenceEntry& b) { return CidrLess(a.cidr, b.cidr); });
  std::sort(snap.unfences.begin(), snap.unfences.end(),
            [](const UnfenceEntry& a, const UnfenceEntry& b) { return CidrLess(a.cidr, b.cidr); });
  return snap;
}

// Leadership through an etcd::Election on the store's client.
class EtcdLeadership final : public Leadership {
 public:
  EtcdLeadership(etcd::Client& client, etcd::Election::Options options)
      : election_(client, std::move(options)) {
    election_.Start();
  }
  bool LeadsFor(Clock::duration needed) const override { return election_.LeadsFor(needed); }
  uint64_t terms() const override { return election_.terms(); }
  std::string leader() const override { return election_.leader(); }
  bool sole() const override { return false; }

 private:
  etcd::Election election_;
};

// The transaction that writes `texts` over `read`: each shard that changed put (or deleted,
// when empty) while it is as read, so a writer that went around the guard (an operator's
// etcdctl) is re-read rather than overwritten, and the guard rewritten while it is as read.
// `written` gets the shards it writes; none: nothing changes.
etcdserverpb::TxnRequest CommitOf(const State& read, const std::array<std::string, kShards>& texts,
                                  const std::string& prefix, std::vector<int>* written) {
  etcdserverpb::TxnRequest txn;
  RequireModRevision(txn, prefix + "revision", read.guard_revision);
  for (int shard = 0; shard < kShards; ++shard) {
    if (texts[shard] == read.text[shard]) continue;
    written->push_back(shard);
    const std::string key = prefix + ShardName(shard);
    RequireModRevision(txn, key, read.shard_revision[shard]);
    *txn.add_success() = texts[shard].empty() ? DeleteOp(key) : PutOp(key, texts[shard]);
  }
  *txn.add_success() = PutOp(prefix + "revision", records::NowRfc3339());
  return txn;
}

// What etcd holds once CommitOf(read, texts) committed at `revision`: the shards as written
// (each created or deleted one counted), the guard at that revision.
State Committed(State next, const State& read, const std::array<std::string, kShards>& texts,
                const std::vector<int>& written, int64_t revision) {
  next.text = texts;
  next.guard_revision = revision;
  next.key_count += read.guard_revision == 0 ? 1 : 0;
  for (int shard : written) {
    next.shard_revision[shard] = texts[shard].empty() ? 0 : revision;
    next.key_count += (read.text[shard].empty() ? 1 : 0) - (texts[shard].empty() ? 1 : 0);
  }
  return next;
}

}  // namespace

EtcdFenceStore::EtcdFenceStore(std::string location, EtcdStoreOptions options,
                               std::unique_ptr<etcd::Client> client)
    : location_(std::move(location)), options_(std::move(options)), client_(std::move(client)) {}

EtcdFenceStore::~EtcdFenceStore() = default;

Result<std::unique_ptr<EtcdFenceStore>> EtcdFenceStore::Open(const std::string& location,
                                                             const EtcdStoreOptions& options) {
  auto named = [&](const Status& s) {
    return Status(s.code(), "fence store " + location + ": " + s.message());
  };
  if (options.prefix.empty() || options.prefix.back() != '/') {
    return named(
        InvalidArgumentError("key prefix " + Quoted(options.prefix) + " does not end with '/'"));
  }
  EtcdStoreOptions opts = options;
  auto client = ConnectToLocation(location, opts.client);
  if (!client.ok()) return named(client.status());
  std::unique_ptr<EtcdFenceStore> store(
      new EtcdFenceStore(location, std::move(opts), std::move(*client)));
  MZ_RETURN_IF_ERROR(store->EnsureMeta());
  return store;
}

Status EtcdFenceStore::Named(const Status& s) const {
  if (s.ok()) return s;
  return Status(s.code(), "fence store " + location_ + ": " + s.message());
}

Status EtcdFenceStore::EnsureMeta() {
  const json meta = {{"schema", kSchema}, {"shards", kShards}};
  etcdserverpb::TxnRequest txn;
  auto* absent = txn.add_compare();
  absent->set_key(Key("meta"));
  absent->set_target(etcdserverpb::Compare::CREATE);
  absent->set_result(etcdserverpb::Compare::EQUAL);
  absent->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(Key("meta"));
  put->set_value(meta.dump());
  txn.add_failure()->mutable_request_range()->set_key(Key("meta"));
  // Creating meta is idempotent, so a lost answer may be re-sent.
  auto answer = RetryWhileTransient(RetryDeadline(options_.client), [&] { return client_->Txn(txn); });
  if (!answer.ok()) return Named(answer.status().WithContext("writing " + Key("meta")));
  if (answer->succeeded()) return Status::Ok();
  const auto& kvs = answer->responses(0).response_range().kvs();
  const std::string found = kvs.empty() ? "" : kvs[0].value();
  json stored;
  if (!TooDeepJson(found)) stored = json::parse(found, nullptr, /*allow_exceptions=*/false);
  // Spelled out: nlohmann's != is false for a value that did not parse (discarded), as is ==.
  if (stored.is_discarded() || !(stored == meta)) {
    const std::string shown = found.size() > kShownMetaBytes
                                  ? LogEscaped(found.substr(0, kShownMetaBytes)) + "..."
                                  : LogEscaped(found);
    return Named(FailedPreconditionError("key " + Quoted(Key("meta")) + " holds " + shown +
                                         ", not this version's " + meta.dump() +
                                         "; refusing a store of another layout"));
  }
  return Status::Ok();
}

Result<EtcdFenceStore::StatePtr> EtcdFenceStore::Load() const {
  etcdserverpb::RangeRequest range;
  range.set_key(options_.prefix);
  range.set_range_end(PrefixEnd(options_.prefix));
  MZ_ASSIGN_OR_RETURN(const auto answer, client_->Range(range));
  State state;
  state.read_revision = answer.header().revision();
  state.key_count = answer.count();
  const std::string shards = Key("shards/");
  for (const auto& kv : answer.kvs()) {
    const std::string& key = kv.key();
    if (key == Key("revision")) {
      state.guard_revision = kv.mod_revision();
      continue;
    }
    if (!key.starts_with(shards)) continue;  // meta, the leader's key, the pass request
    const int shard = ShardIndex(key.substr(options_.prefix.size()));
    if (shard < 0) {
      MZ_LOG(kWarn) << "fence store " << location_ << ": ignoring unknown key " << LogEscaped(key);
      continue;
    }
    MZ_RETURN_IF_ERROR(ParseShard(key, shard, kv.value(), state));
    state.shard_revision[shard] = kv.mod_revision();
  }
  auto read = std::make_shared<const State>(std::move(state));
  Remember(read);
  return read;
}

Result<bool> EtcdFenceStore::Unchanged(const State& state) const {
  etcdserverpb::RangeRequest probe;
  probe.set_key(options_.prefix);
  probe.set_range_end(PrefixEnd(options_.prefix));
  probe.set_keys_only(true);
  probe.set_min_mod_revision(state.read_revision + 1);
  MZ_ASSIGN_OR_RETURN(const auto answer, client_->Range(probe));
  // etcd counts every key of the range, before the revision filter: a deleted key shows here.
  if (answer.count() != state.key_count) return false;
  for (const auto& kv : answer.kvs()) {
    const std::string name = kv.key().substr(options_.prefix.size());
    const int shard = ShardIndex(name);
    const int64_t known = name == "revision" ? state.guard_revision
                          : shard >= 0
                              ? state.shard_revision[shard]
                              : -1;  // meta, the leader's key, the pass request, an unknown key
    if (kv.mod_revision() != known) return false;
  }
  return true;
}

Result<EtcdFenceStore::StatePtr> EtcdFenceStore::Current() const {
  StatePtr last;
  {
    MutexLock lock(last_mu_);
    last = last_;
  }
  if (last != nullptr) {
    MZ_ASSIGN_OR_RETURN(const bool unchanged, Unchanged(*last));
    if (unchanged) return last;
  }
  return Load();
}

void EtcdFenceStore::Remember(StatePtr state) const {
  MutexLock lock(last_mu_);
  last_ = std::move(state);
}

EtcdFenceStore::StatePtr EtcdFenceStore::TakeLast() const {
  MutexLock lock(last_mu_);
  return std::move(last_);
}

template <typename Change>
Status EtcdFenceStore::Mutate(const std::string& what, Change&& change) {
  const TransientRetry retry(RetryDeadline(options_.client));
  bool maybe_stored = false;  // a transaction of this change went out and its answer was lost
  auto outcome = [&] {
    return what +
           (maybe_stored ? ": it may or may not have been stored" : ": nothing of it was stored");
  };
  // The state this replica last read or committed, if any: when nobody wrote since, the change
  // commits without reading the store first; when somebody did, the compare below fails and the
  // change is applied to a fresh read.
  StatePtr read = TakeLast();
  for (int races = 0; races < kMaxRaces;) {
    const bool from_last = read != nullptr;
    if (!from_last) {
      auto loaded = Load();
      if (!loaded.ok()) {
        if (retry.Again(loaded.status())) continue;
        return Named(loaded.status().WithContext(outcome()));
      }
      read = std::move(loaded).value();
    }
    State next = *read;
    change(next);

    const std::array<std::string, kShards> texts = ShardTexts(next);
    std::vector<int> written;
    const etcdserverpb::TxnRequest txn = CommitOf(*read, texts, options_.prefix, &written);
    if (written.empty()) {  // nothing changes
      Remember(std::move(read));
      return Status::Ok();
    }

    auto answer = client_->Txn(txn);
    if (answer.ok() && answer->succeeded()) {
      const int64_t revision = answer->header().revision();
      next = Committed(std::move(next), *read, texts, written, revision);
      NoteOwnCommit(read->guard_revision, revision);
      Remember(std::make_shared<const State>(std::move(next)));
      return Status::Ok();
    }
    read = nullptr;  // whatever happened next, the change goes on from a fresh read
    if (answer.ok()) {
      // Another replica wrote since the read (or since this replica's last read or commit):
      // apply the change to what it wrote. Only a fresh read that lost counts as a race.
      if (!from_last) ++races;
      continue;
    }
    if (!RefusedUnapplied(answer.status())) maybe_stored = true;
    if (TooLargeForEtcd(answer.status())) {
      return Named(Status(Code::kResourceExhausted,
                          outcome() +
                              ": the change is larger than etcd accepts in one request (etcd "
                              "--max-request-bytes): " +
                              answer.status().message()));
    }
    // A lost answer: re-run from a fresh read, on which a committed one changes nothing more.
    if (retry.Again(answer.status())) continue;
    return Named(answer.status().WithContext(outcome()));
  }
  return Named(AbortedError(outcome() + ": lost the race against other writers " +
                            std::to_string(kMaxRaces) + " times in a row"));
}

Status EtcdFenceStore::AddFences(const std::vector<Cidr>& cidrs) {
  return Mutate("storing " + std::to_string(cidrs.size()) + " fence(s)", [&](State& s) {
    const std::string now = records::NowRfc3339();
    for (const Cidr& cidr : cidrs) {
      const std::string text = CanonicalCidr(cidr);
      auto [it, added] = s.entries.try_emplace(text);
      StoredEntry& e = it->second;
      if (added || !e.fence) {  // new, or fenced again from a pending unfence (keeps its record)
        e.cidr = cidr;
        e.fence = true;
        e.created_at = now;
      }
      e.state = FenceState::kPending;
      e.updated_at = now;
    }
  });
}

Result<std::vector<Cidr>> EtcdFenceStore::RemoveFences(const std::vector<Cidr>& cidrs) {
  // Kept across attempts: after a lost answer the re-read may show this change committed, and
  // the fences it lifted are still the ones this call removed.
  std::map<std::string, Cidr> removed;
  MZ_RETURN_IF_ERROR(Mutate("removing fence(s)", [&](State& s) {
    const std::string now = records::NowRfc3339();
    const CidrSet wanted(cidrs);  // each CIDR once
    for (const Cidr& cidr : wanted.cidrs()) {
      auto it = s.entries.find(CanonicalCidr(cidr));
      if (it == s.entries.end() || !it->second.fence) continue;
      it->second.fence = false;  // a pending unfence with the fence's record and tracked flag
      it->second.created_at = now;
      removed.emplace(it->first, it->second.cidr);
    }
  }));
  std::vector<Cidr> out;
  for (const auto& [text, cidr] : removed) out.push_back(cidr);
  std::sort(out.begin(), out.end(), CidrLess);
  return out;
}

Status EtcdFenceStore::RecordHeldPorts(const std::vector<PortHold>& holds) {
  if (holds.empty()) return Status::Ok();
  return Mutate("recording held ports", [&](State& s) {
    for (const PortHold& h : holds) {
      auto it = s.entries.find(CanonicalCidr(h.fence));
      if (it != s.entries.end() && it->second.fence) it->second.held.insert(h.port_id);
    }
  });
}

Status EtcdFenceStore::RecordCompleted(const Completed& done) {
  if (done.empty()) return Status::Ok();
  return Mutate("recording what a pass completed", [&](State& s) {
    const std::string now = records::NowRfc3339();
    for (const Cidr& cidr : done.enforced) {
      auto it = s.entries.find(CanonicalCidr(cidr));
      if (it == s.entries.end() || !it->second.fence) continue;
      if (it->second.state == FenceState::kEnforced) continue;
      it->second.state = FenceState::kEnforced;
      it->second.updated_at = now;
    }
    for (auto& [text, e] : s.entries) {
      for (const std::string& id : done.released) e.held.erase(id);
    }
    for (const Cidr& cidr : done.unfenced) {
      auto it = s.entries.find(CanonicalCidr(cidr));
      // A CIDR fenced again keeps its record: it is the fence's now.
      if (it != s.entries.end() && !it->second.fence) s.entries.erase(it);
    }
  });
}

Result<StoreSnapshot> EtcdFenceStore::Snapshot() const {
  auto state = RetryWhileTransient(RetryDeadline(options_.client), [&] { return Current(); });
  if (!state.ok()) return Named(state.status().WithContext("reading"));
  return ToSnapshot(**state);
}

Result<std::vector<FenceEntry>> EtcdFenceStore::ListFences() const {
  MZ_ASSIGN_OR_RETURN(StoreSnapshot snap, Snapshot());
  return std::move(snap.fences);
}

Result<int64_t> EtcdFenceStore::Revision() const {
  etcdserverpb::RangeRequest range;
  range.set_key(Key("revision"));
  range.set_range_end(PrefixEnd(Key("revision")));
  auto answer = client_->Range(range);
  if (!answer.ok()) return Named(answer.status().WithContext("reading the revision"));
  int64_t latest = 0;
  for (const auto& kv : answer->kvs()) latest = std::max(latest, kv.mod_revision());
  return latest;
}

// A key of its own, not the guard: writing the guard would fail the writers' guarded commits.
Status EtcdFenceStore::RequestPass() {
  etcdserverpb::TxnRequest txn;
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(Key(kPassRequest));
  put->set_value("pass");
  const auto answer = client_->Txn(txn);
  if (!answer.ok()) return Named(answer.status().WithContext("requesting a pass"));
  return Status::Ok();
}

void EtcdFenceStore::NoteOwnCommit(int64_t from, int64_t to) {
  MutexLock lock(last_mu_);
  own_commits_[from] = to;
  while (own_commits_.size() > kOwnCommitsKept) own_commits_.erase(own_commits_.begin());
}

int64_t EtcdFenceStore::RevisionAfterOwnChanges(int64_t from) const {
  MutexLock lock(last_mu_);
  for (auto it = own_commits_.find(from); it != own_commits_.end(); it = own_commits_.find(from)) {
    from = it->second;
  }
  return from;
}

std::unique_ptr<Leadership> EtcdFenceStore::JoinElection(const std::string& candidate) {
  return std::make_unique<EtcdLeadership>(
      *client_, etcd::Election::Options{Key("leader"), candidate, options_.lease_ttl});
}

}  // namespace mizarmp::fence
