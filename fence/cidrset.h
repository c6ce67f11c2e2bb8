// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// CIDR handling for the FenceController: parsing what a CSI-Addons request carries, the
// canonical form the server stores and answers with, and exact merging of address sets.
//
// Parsing (ParseFenceCidr): IPv4 "a.b.c.d/n" or IPv6 "x::y/n"; a bare address is its host CIDR
// (/32 or /128); host bits set ("10.0.0.1/24"), a bad address or prefix, an empty string: all
// INVALID_ARGUMENT naming the value. Canonical form: the network address in its canonical text
// (dotted quad; RFC 5952 for IPv6) + "/" + the prefix length, e.g. "2001:db8::/32".
//
// Merging (MergeCidrs): the fewest CIDR blocks whose union is exactly the union of the inputs,
// per family (128-bit arithmetic for IPv6), sorted IPv4 first then by address. Nothing outside
// the inputs is ever covered, so {10.0.0.1, 10.0.0.2} stays two blocks (10.0.0.1/32 and
// 10.0.0.2/32) while {10.0.0.2, 10.0.0.3} becomes 10.0.0.2/31.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::fence {

// One CIDR of a request. Errors are INVALID_ARGUMENT and quote `text`.
Result<Cidr> ParseFenceCidr(std::string_view text);

// The canonical text of a network CIDR (host bits are cleared first).
std::string CanonicalCidr(const Cidr& cidr);

// The fewest CIDR blocks covering exactly the union of `cidrs` (host bits ignored: each input
// stands for its whole prefix). Sorted: IPv4 before IPv6, then by address.
std::vector<Cidr> MergeCidrs(const std::vector<Cidr>& cidrs);

// A set of network CIDRs: duplicates collapse, kept sorted and canonical; members are kept as
// given (not merged), so the set answers with exactly what was fenced.
//
// Cost (n members): building from a list is O(n log n); a lookup is one binary search per
// distinct prefix length among the members (at most 33 + 129), so O(log n) however many members
// there are. Removing one member shifts the sorted vector (O(n)): build large sets at once.
class CidrSet {
 public:
  CidrSet() = default;
  // The set of `cidrs` (host bits cleared, duplicates collapsed), in O(n log n).
  explicit CidrSet(std::vector<Cidr> cidrs);

  // Parses every text with ParseFenceCidr; the first bad one fails the whole call.
  static Result<CidrSet> Parse(const std::vector<std::string>& texts);

  // For tests: removes `cidr` (host bits cleared); returns whether it was a member. The
  // per-length counts that every lookup relies on are private, so only a member function can
  // show that they follow a removal.
  bool Remove(const Cidr& cidr);

  // For tests: whether some member contains the address / the whole prefix. The product asks
  // Covering(); these check the same per-length lookup against a scan of every member.
  bool Contains(const IpAddress& ip) const;
  bool Contains(const Cidr& cidr) const;
  // Every member containing the address, sorted (CidrLess).
  std::vector<Cidr> Covering(const IpAddress& ip) const;
  // Exact membership.
  bool Has(const Cidr& cidr) const;

  bool empty() const { return cidrs_.empty(); }
  size_t size() const { return cidrs_.size(); }
  const std::vector<Cidr>& cidrs() const { return cidrs_; }
  std::vector<std::string> Strings() const;  // canonical texts, in order

  friend bool operator==(const CidrSet& a, const CidrSet& b) { return a.cidrs_ == b.cidrs_; }

 private:
  // The prefix lengths of `family` some member has, shortest first.
  std::vector<int> LengthsOf(IpAddress::Family family) const;
  void Count(const Cidr& member, int delta);

  std::vector<Cidr> cidrs_;  // sorted, unique, host bits cleared
  // How many members have each prefix length, per family: the lengths a lookup has to try.
  std::array<uint32_t, 33> v4_lengths_{};
  std::array<uint32_t, 129> v6_lengths_{};
};

// Orders IPv4 before IPv6, then by network address, then by prefix length.
bool CidrLess(const Cidr& a, const Cidr& b);

}  // namespace mizarmp::fence
