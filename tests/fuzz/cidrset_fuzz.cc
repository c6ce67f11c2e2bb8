// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The FenceController's CIDRs: ParseFenceCidr on every line of the input, then MergeCidrs and a
// CidrSet over what parsed. Checked: a canonical CIDR parses back to itself; the merged blocks
// cover every input and nothing else (they are disjoint, cover each input's first and last
// address, and hold exactly as many addresses as the union of the inputs); the set holds and
// contains every member and forgets a removed one.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fence/cidrset.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace fence = mizarmp::fence;
using mizarmp::Cidr;
using mizarmp::IpAddress;
using mizarmp::fuzz::Require;

bool Covered(const std::vector<Cidr>& cidrs, const IpAddress& ip) {
  for (const Cidr& c : cidrs) {
    if (c.Contains(ip)) return true;
  }
  return false;
}

// How many addresses `c` holds, modulo 2^128 (::/0 counts as 0: only the sums are compared, and
// both sides are empty or not together).
unsigned __int128 Size(const Cidr& c) {
  const int host_bits = c.address().bits() - c.prefix_len();
  return host_bits >= 128 ? 0 : static_cast<unsigned __int128>(1) << host_bits;
}

// The number of addresses in the union of `cidrs` per family (CIDRs nest or are disjoint, so the
// union is the sum over the ones no other one contains).
unsigned __int128 UnionSize(const std::vector<Cidr>& cidrs, bool v4) {
  std::vector<Cidr> nets;
  for (const Cidr& c : cidrs) {
    if (c.address().is_v4() == v4) nets.push_back(Cidr(c.network(), c.prefix_len()));
  }
  std::sort(nets.begin(), nets.end(), fence::CidrLess);
  nets.erase(std::unique(nets.begin(), nets.end()), nets.end());
  unsigned __int128 total = 0;
  for (size_t i = 0; i < nets.size(); ++i) {
    bool inside_other = false;
    for (size_t j = 0; j < nets.size() && !inside_other; ++j) {
      inside_other = j != i && nets[j].Contains(nets[i]);
    }
    if (!inside_other) total += Size(nets[i]);
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = mizarmp::fuzz::AsText(data, size);
  std::vector<Cidr> parsed;
  std::vector<std::string> texts;
  while (!text.empty() && parsed.size() < 256) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    auto cidr = fence::ParseFenceCidr(line);
    if (!cidr.ok()) continue;
    const std::string canonical = fence::CanonicalCidr(*cidr);
    auto again = fence::ParseFenceCidr(canonical);
    Require(again.ok() && fence::CanonicalCidr(*again) == canonical,
            "a canonical CIDR does not parse back to itself");
    parsed.push_back(*cidr);
    texts.push_back(std::string(line));
  }

  const std::vector<Cidr> merged = fence::MergeCidrs(parsed);
  Require(merged.size() <= parsed.size(), "merging made more blocks than inputs");
  for (const Cidr& c : parsed) {
    Require(Covered(merged, c.network()) && Covered(merged, c.last()),
            "a merged set does not cover an input");
  }
  for (const Cidr& m : merged) {
    Require(Covered(parsed, m.network()) && Covered(parsed, m.last()),
            "a merged block covers an address outside the inputs");
  }
  for (size_t i = 0; i + 1 < merged.size(); ++i) {
    Require(!merged[i].Contains(merged[i + 1]) && !merged[i + 1].Contains(merged[i]),
            "merged blocks overlap");
  }
  for (bool v4 : {true, false}) {
    Require(UnionSize(merged, v4) == UnionSize(parsed, v4),
            "merged blocks do not hold exactly the addresses of the inputs");
  }

  auto set = fence::CidrSet::Parse(texts);
  Require(set.ok(), "CidrSet::Parse refused texts ParseFenceCidr accepted");
  for (const Cidr& c : parsed) {
    Require(set->Has(c) && set->Contains(c) && set->Contains(c.network()),
            "a CidrSet does not hold a member");
  }
  (void)set->Strings();
  if (!parsed.empty()) {
    fence::CidrSet copy = *set;
    Require(copy.Remove(parsed.front()) && !copy.Has(parsed.front()),
            "a removed member is still in the set");
    Require(copy.size() + 1 == set->size(), "Remove dropped more than one member");
  }
  return 0;
}
