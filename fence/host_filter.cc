// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/host_filter.h"

#include <nftables/libnftables.h>

#include <memory>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::fence {
namespace {

// Before conntrack (raw, -300): a fenced peer's packets make no connection state either, and
// an established connection is cut like a new one.
constexpr const char* kHookPriority = "-300";

struct Family {
  const char* match;  // "ip" or "ip6"
  const char* set;    // the set's name
  const char* type;   // its element type
  bool v4;
};
constexpr Family kFamilies[] = {{"ip", "fenced4", "ipv4_addr", true},
                                {"ip6", "fenced6", "ipv6_addr", false}};

std::string Elements(const FenceSet& set, bool v4) {
  std::string out;
  for (const Cidr& c : set.cidrs) {
    if (c.address().is_v4() != v4) continue;
    out += (out.empty() ? "" : ", ") + c.ToString();
  }
  return out;
}

// "accept" rules for the kept peers of one family, in one direction (`dir`: "d" for output,
// "s" for input).
std::string KeepRules(const std::vector<KeptPeer>& keep, const Family& f, const char* dir) {
  std::string out;
  for (const KeptPeer& k : keep) {
    if (k.address.is_v4() != f.v4) continue;
    out += std::string("    ") + f.match + " " + dir + "addr " + k.address.ToString() + " tcp " +
           (dir[0] == 'd' ? "dport " : "sport ") + std::to_string(k.port) + " accept\n";
  }
  return out;
}

// One base chain: drops what comes from (`from`) or goes to (`to`) a fenced address, after
// accepting the kept peers.
std::string Chain(const char* hook, const std::vector<KeptPeer>& keep, bool from, bool to) {
  std::string out = std::string("  chain ") + hook + " {\n    type filter hook " + hook +
                    " priority " + kHookPriority + "; policy accept;\n";
  for (const Family& f : kFamilies) {
    if (from) out += KeepRules(keep, f, "s");
    if (to) out += KeepRules(keep, f, "d");
  }
  for (const Family& f : kFamilies) {
    if (from) out += std::string("    ") + f.match + " saddr @" + f.set + " drop\n";
    if (to) out += std::string("    ") + f.match + " daddr @" + f.set + " drop\n";
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
  for (const Family& f : kFamilies) {
    out += std::string("  set ") + f.set + " {\n    type " + f.type +
           "; flags interval; auto-merge;\n";
    const std::string elements = Elements(set, f.v4);
    if (!elements.empty()) out += "    elements = { " + elements + " }\n";
    out += "  }\n";
  }
  out += Chain("input", keep, /*from=*/true, /*to=*/false);
  out += Chain("forward", {}, /*from=*/true, /*to=*/true);
  out += Chain("output", keep, /*from=*/false, /*to=*/true);
  return out + "}\n";
}

Status HostFilter::Apply(const FenceSet& set) {
  MZ_RETURN_IF_ERROR(RunNft(HostFilterScript(set, keep_)));
  enforced_ = set;
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
  MZ_ASSIGN_OR_RETURN(const FenceSet set, ParseFenceSet(lines, state_file_));
  return Apply(set);
}

Status HostFilter::Repair() {
  if (enforced_.cidrs.empty()) return Status::Ok();  // no table is wanted
  const std::string table = std::string("inet ") + kHostFilterTable;
  if (RunNft("list chain " + table + " input").ok()) return Status::Ok();
  const FenceSet wanted = enforced_;
  MZ_RETURN_IF_ERROR(Apply(wanted));
  // Said once it is true: whoever reads the log may rely on the cut being in place.
  MZ_LOG(kWarn) << "fence: nftables table " << table
                << " was gone (a flush of the ruleset?); the fence set is back";
  return Status::Ok();
}

}  // namespace mizarmp::fence
