// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/cidrset.h"

#include <algorithm>
#include <array>

namespace mizarmp::fence {
namespace {

// 128-bit unsigned arithmetic for IPv6 ranges (IPv4 uses the low 32 bits).
__extension__ typedef unsigned __int128 U128;

Cidr Normalized(const Cidr& c) { return Cidr(c.network(), c.prefix_len()); }

U128 ToInt(const IpAddress& ip) {
  U128 v = 0;
  for (int i = 0; i < ip.byte_length(); ++i) v = (v << 8) | ip.bytes()[i];
  return v;
}

IpAddress FromInt(U128 v, IpAddress::Family family) {
  if (family == IpAddress::Family::kV4) return IpAddress::V4(static_cast<uint32_t>(v));
  std::array<uint8_t, 16> bytes{};
  for (int i = 15; i >= 0; --i) {
    bytes[i] = static_cast<uint8_t>(v & 0xff);
    v >>= 8;
  }
  return IpAddress::V6(bytes);
}

// An inclusive range of addresses of one family.
struct Range {
  U128 first;
  U128 last;
};

// Appends the fewest prefixes covering exactly [first, last] of a family with `bits` bits.
void SplitRange(U128 first, U128 last, int bits, IpAddress::Family family, std::vector<Cidr>& out) {
  while (true) {
    // The largest block that starts at `first` (alignment) and ends no later than `last`.
    int host_bits = 0;
    while (host_bits < bits) {
      const int next = host_bits + 1;
      const U128 mask = next >= 128 ? ~U128{0} : ((U128{1} << next) - 1);
      if ((first & mask) != 0) break;  // not aligned to a block this size
      if (last - first < mask) break;  // the block would run past `last`
      host_bits = next;
    }
    out.emplace_back(FromInt(first, family), bits - host_bits);
    const U128 size_minus_one = host_bits >= 128 ? ~U128{0} : ((U128{1} << host_bits) - 1);
    if (last - first == size_minus_one) return;  // covered up to `last` (no overflow past it)
    first += size_minus_one + 1;
  }
}

void MergeFamily(std::vector<Range> ranges, int bits, IpAddress::Family family,
                 std::vector<Cidr>& out) {
  if (ranges.empty()) return;
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.first < b.first; });
  std::vector<Range> merged;
  for (const Range& r : ranges) {
    // Overlapping or adjacent (last + 1 == first; the last of the family cannot be followed).
    if (!merged.empty() && (r.first <= merged.back().last || (merged.back().last != ~U128{0} &&
                                                              r.first == merged.back().last + 1))) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  for (const Range& r : merged) SplitRange(r.first, r.last, bits, family, out);
}

}  // namespace

Result<Cidr> ParseFenceCidr(std::string_view text) {
  const std::string quoted = Quoted(text);
  if (text.empty()) return InvalidArgumentError("CIDR \"\": empty");
  if (text.find_first_of(" \t\r\n") != std::string_view::npos) {
    return InvalidArgumentError("CIDR " + quoted + ": contains whitespace");
  }
  auto parsed = Cidr::Parse(text, /*allow_bare=*/true);
  if (!parsed.ok()) {
    // Cidr::Parse's message already quotes the value ("invalid CIDR \"x\": bad address").
    return InvalidArgumentError(parsed.status().message());
  }
  if (parsed->has_host_bits()) {
    return InvalidArgumentError("CIDR " + quoted + ": host bits set (did you mean " +
                                CanonicalCidr(*parsed) + "?)");
  }
  return Normalized(*parsed);
}

std::string CanonicalCidr(const Cidr& cidr) { return Normalized(cidr).ToString(); }

bool CidrLess(const Cidr& a, const Cidr& b) { return Normalized(a) < Normalized(b); }

std::vector<Cidr> MergeCidrs(const std::vector<Cidr>& cidrs) {
  std::vector<Range> v4;
  std::vector<Range> v6;
  for (const Cidr& c : cidrs) {
    Range r{ToInt(c.network()), ToInt(c.last())};
    (c.address().is_v4() ? v4 : v6).push_back(r);
  }
  std::vector<Cidr> out;
  MergeFamily(std::move(v4), 32, IpAddress::Family::kV4, out);
  MergeFamily(std::move(v6), 128, IpAddress::Family::kV6, out);
  return out;
}

CidrSet::CidrSet(std::vector<Cidr> cidrs) {
  for (Cidr& c : cidrs) c = Normalized(c);
  std::sort(cidrs.begin(), cidrs.end());
  cidrs.erase(std::unique(cidrs.begin(), cidrs.end()), cidrs.end());
  cidrs_ = std::move(cidrs);
  for (const Cidr& c : cidrs_) Count(c, +1);
}

Result<CidrSet> CidrSet::Parse(const std::vector<std::string>& texts) {
  std::vector<Cidr> cidrs;
  cidrs.reserve(texts.size());
  for (const auto& t : texts) {
    MZ_ASSIGN_OR_RETURN(Cidr c, ParseFenceCidr(t));
    cidrs.push_back(c);
  }
  return CidrSet(std::move(cidrs));
}

void CidrSet::Count(const Cidr& member, int delta) {
  uint32_t& n = member.address().is_v4() ? v4_lengths_[member.prefix_len()]
                                         : v6_lengths_[member.prefix_len()];
  n += delta;
}

std::vector<int> CidrSet::LengthsOf(IpAddress::Family family) const {
  std::vector<int> out;
  if (family == IpAddress::Family::kV4) {
    for (int len = 0; len <= 32; ++len)
      if (v4_lengths_[len] > 0) out.push_back(len);
  } else {
    for (int len = 0; len <= 128; ++len)
      if (v6_lengths_[len] > 0) out.push_back(len);
  }
  return out;
}

bool CidrSet::Remove(const Cidr& cidr) {
  const Cidr n = Normalized(cidr);
  auto it = std::lower_bound(cidrs_.begin(), cidrs_.end(), n);
  if (it == cidrs_.end() || *it != n) return false;
  cidrs_.erase(it);
  Count(n, -1);
  return true;
}

// A member containing `ip` is the prefix of `ip` of the member's own length: one exact lookup
// per length present.
std::vector<Cidr> CidrSet::Covering(const IpAddress& ip) const {
  std::vector<Cidr> out;
  for (int len : LengthsOf(ip.family())) {
    const Cidr candidate(ip.Masked(len), len);
    if (std::binary_search(cidrs_.begin(), cidrs_.end(), candidate)) out.push_back(candidate);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool CidrSet::Contains(const IpAddress& ip) const {
  for (int len : LengthsOf(ip.family())) {
    if (std::binary_search(cidrs_.begin(), cidrs_.end(), Cidr(ip.Masked(len), len))) return true;
  }
  return false;
}

bool CidrSet::Contains(const Cidr& cidr) const {
  const IpAddress ip = cidr.network();
  for (int len : LengthsOf(ip.family())) {
    if (len > cidr.prefix_len()) break;
    if (std::binary_search(cidrs_.begin(), cidrs_.end(), Cidr(ip.Masked(len), len))) return true;
  }
  return false;
}

bool CidrSet::Has(const Cidr& cidr) const {
  return std::binary_search(cidrs_.begin(), cidrs_.end(), Normalized(cidr));
}

std::vector<std::string> CidrSet::Strings() const {
  std::vector<std::string> out;
  out.reserve(cidrs_.size());
  for (const auto& c : cidrs_) out.push_back(c.ToString());
  return out;
}

}  // namespace mizarmp::fence
