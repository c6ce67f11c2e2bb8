// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/host_filter.h"

#include <nftables/libnftables.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <memory>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"
#include "fence/cidrset.h"

namespace mizarmp::fence {
namespace {

// Before conntrack (raw, -300): a fenced peer's packets make no connection state either, and
// an established connection is cut like a new one.
constexpr const char* kHookPriority = "-300";

// The table's sets: a fenced address (/32, /128) in a hash set, one lookup whatever the number
// of fences; a wider CIDR in an interval set, merged first (MergeCidrs) so that none overlaps
// another and each element is one the next change can name. Each element stays as written, so
// a change is a delta of elements (auto-merge would join 10.0.0.1 and 10.0.0.2 into a range
// neither could then be deleted from).
struct TableSet {
  const char* match;  // "ip" or "ip6"
  const char* name;
  const char* type;   // the element type
  bool v4;
  bool hosts;  // addresses; else merged CIDRs, "flags interval"
};
constexpr TableSet kSets[] = {{"ip", "hosts4", "ipv4_addr", true, true},
                              {"ip", "nets4", "ipv4_addr", true, false},
                              {"ip6", "hosts6", "ipv6_addr", false, true},
                              {"ip6", "nets6", "ipv6_addr", false, false}};
constexpr size_t kSetCount = std::size(kSets);

// Each table set's elements, sorted.
using Elements = std::array<std::vector<Cidr>, kSetCount>;

// `set`'s elements, as each table set holds them (`set.cidrs` is sorted, so each list is too).
Elements ElementsOf(const FenceSet& set) {
  Elements out;
  std::vector<Cidr> nets;
  for (const Cidr& c : set.cidrs) {
    if (c.prefix_len() == c.address().bits()) {
      out[c.address().is_v4() ? 0 : 2].push_back(c);
    } else {
      nets.push_back(c);
    }
  }
  for (const Cidr& c : MergeCidrs(nets)) out[c.address().is_v4() ? 1 : 3].push_back(c);
  return out;
}

// "{ a, b }" as nftables reads the elements of `set`.
std::string ElementList(const std::vector<Cidr>& elements, const TableSet& set) {
  std::string out = "{ ";
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) out += ", ";
    out += set.hosts ? elements[i].address().ToString() : elements[i].ToString();
  }
  return out + " }";
}

// "accept" rules for the kept peers of one family, in one direction (`dir`: "d" for output,
// "s" for input).
std::string KeepRules(const std::vector<KeptPeer>& keep, bool v4, const char* match,
                      const char* dir) {
  std::string out;
  for (const KeptPeer& k : keep) {
    if (k.address.is_v4() != v4) continue;
    out += std::string("    ") + match + " " + dir + "addr " + k.address.ToString() + " tcp " +
           (dir[0] == 'd' ? "dport " : "sport ") + std::to_string(k.port) + " accept\n";
  }
  return out;
}

// One base chain: drops what comes from (`from`) or goes to (`to`) a fenced address, after
// accepting the kept peers.
std::string Chain(const char* hook, const std::vector<KeptPeer>& keep, bool from, bool to) {
  std::string out = std::string("  chain ") + hook + " {\n    type filter hook " + hook +
                    " priority " + kHookPriority + "; policy accept;\n";
  for (const bool v4 : {true, false}) {
    const char* match = v4 ? "ip" : "ip6";
    if (from) out += KeepRules(keep, v4, match, "s");
    if (to) out += KeepRules(keep, v4, match, "d");
  }
  for (const TableSet& f : kSets) {
    if (from) out += std::string("    ") + f.match + " saddr @" + f.name + " drop\n";
    if (to) out += std::string("    ") + f.match + " daddr @" + f.name + " drop\n";
  }
  return out + "  }\n";
}

struct NftContextFree {
  void operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }
};

// Runs `script` as one nftables transaction in this thread's network namespace.
Status RunNft(const std::string& script) {
  std::unique_ptr<nft_ctx, NftContextFree> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return InternalError("nftables: no context");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  if (nft_run_cmd_from_buffer(ctx.get(), script.c_str()) == 0) return Status::Ok();
  const char* error = nft_ctx_get_error_buffer(ctx.get());
  return UnavailableError("nftables refused the fence set: " +
                          Trim(error != nullptr ? error : "(no message)"));
}

}  // namespace

std::string HostFilterScript(const FenceSet& set, const std::vector<KeptPeer>& keep) {
  const std::string table = std::string("inet ") + kHostFilterTable;
  // "add" then "delete": removes the table whether or not it exists, in the same transaction.
  std::string out = "add table " + table + "\ndelete table " + table + "\n";
  if (set.cidrs.empty()) return out;
  out += "table " + table + " {\n";
  const Elements elements = ElementsOf(set);
  for (size_t i = 0; i < kSetCount; ++i) {
    out += std::string("  set ") + kSets[i].name + " {\n    type " + kSets[i].type + ";" +
           (kSets[i].hosts ? "" : " flags interval;") + "\n";
    if (!elements[i].empty()) out += "    elements = " + ElementList(elements[i], kSets[i]) + "\n";
    out += "  }\n";
  }
  out += Chain("input", keep, /*from=*/true, /*to=*/false);
  out += Chain("forward", {}, /*from=*/true, /*to=*/true);
  out += Chain("output", keep, /*from=*/false, /*to=*/true);
  return out + "}\n";
}

std::string HostFilterDelta(const FenceSet& from, const FenceSet& to) {
  const Elements before = ElementsOf(from), after = ElementsOf(to);
  std::string deletes, adds;
  const std::string table = std::string(" inet ") + kHostFilterTable + " ";
  for (size_t i = 0; i < kSetCount; ++i) {
    std::vector<Cidr> gone, come;
    std::set_difference(before[i].begin(), before[i].end(), after[i].begin(), after[i].end(),
                        std::back_inserter(gone));
    std::set_difference(after[i].begin(), after[i].end(), before[i].begin(), before[i].end(),
                        std::back_inserter(come));
    // Deletions first: a merged CIDR may replace an old one it overlaps.
    const std::string set = table + kSets[i].name + " ";
    if (!gone.empty()) deletes += "delete element" + set + ElementList(gone, kSets[i]) + "\n";
    if (!come.empty()) adds += "add element" + set + ElementList(come, kSets[i]) + "\n";
  }
  return deletes + adds;
}

Status HostFilter::Apply(const FenceSet& set) {
  return Apply(std::make_shared<const FenceSet>(set));
}

Status HostFilter::Apply(std::shared_ptr<const FenceSet> set) {
  const bool whole = enforced_->cidrs.empty();
  return Change(std::move(set), whole);
}

Status HostFilter::Change(std::shared_ptr<const FenceSet> wanted, bool whole) {
  const FenceSet& set = *wanted;
  Status applied = Status::Ok();
  if (whole || set.cidrs.empty()) {
    applied = RunNft(HostFilterScript(set, keep_));
  } else if (const std::string delta = HostFilterDelta(*enforced_, set); !delta.empty()) {
    // The table as this agent left it takes the change alone; one changed behind its back (a
    // flush, an element removed by hand) is built whole again.
    applied = RunNft(delta);
    if (!applied.ok()) applied = RunNft(HostFilterScript(set, keep_));
  }
  MZ_RETURN_IF_ERROR(applied);
  enforced_ = std::move(wanted);
  if (state_file_.empty()) return Status::Ok();
  std::string text;
  for (const Cidr& c : set.cidrs) text += c.ToString() + "\n";
  return WriteFileAtomic(state_file_, text, 0600).WithContext("keeping the fence set");
}

Status HostFilter::Restore() {
  auto text = ReadFile(state_file_);
  if (!text.ok()) {
    return text.status().IsNotFound() ? Status::Ok()
                                      : text.status().WithContext("reading the fence set");
  }
  std::vector<std::string> lines;
  for (std::string& line : Split(*text, '\n')) {
    if (!line.empty()) lines.push_back(std::move(line));
  }
  MZ_ASSIGN_OR_RETURN(FenceSet set, ParseFenceSet(lines, state_file_));
  // Whatever the kernel holds now.
  return Change(std::make_shared<const FenceSet>(std::move(set)), /*whole=*/true);
}

Status HostFilter::Repair() {
  if (enforced_->cidrs.empty()) return Status::Ok();  // no table is wanted
  const std::string table = std::string("inet ") + kHostFilterTable;
  if (RunNft("list chain " + table + " input").ok()) return Status::Ok();
  MZ_RETURN_IF_ERROR(Change(enforced_, /*whole=*/true));
  // Said once it is true: whoever reads the log may rely on the cut being in place.
  MZ_LOG(kWarn) << "fence: nftables table " << table
                << " was gone (a flush of the ruleset?); the fence set is back";
  return Status::Ok();
}

}  // namespace mizarmp::fence
