// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/fence_set.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace mizarmp::fence {
namespace {

// FNV-1a, 64 bits: a name for a set, not a secret (a node only compares it with its own).
uint64_t Fnv1a(uint64_t hash, std::string_view bytes) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string DigestOf(const std::vector<Cidr>& cidrs) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const Cidr& c : cidrs) hash = Fnv1a(hash, c.ToString() + "\n");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return std::to_string(cidrs.size()) + "-" + hex;
}

}  // namespace

FenceSet MakeFenceSet(std::vector<Cidr> cidrs) {
  std::sort(cidrs.begin(), cidrs.end());
  cidrs.erase(std::unique(cidrs.begin(), cidrs.end()), cidrs.end());
  FenceSet set;
  set.digest = DigestOf(cidrs);
  set.cidrs = std::move(cidrs);
  return set;
}

std::vector<std::string> CoveredNodes(
    const CidrSet& fences, const std::map<std::string, std::vector<std::string>>& node_addresses) {
  std::vector<std::string> covered;
  if (fences.empty()) return covered;
  const auto inside = [&fences](const std::string& text) {
    auto configured = Cidr::Parse(text, /*allow_bare=*/true);
    if (!configured.ok()) return false;  // validated with the configuration
    // "10.0.0.5/24" is the address alone; "10.0.0.0/24" the block.
    const Cidr block = configured->has_host_bits()
                           ? Cidr(configured->address(), configured->address().bits())
                           : *configured;
    const std::vector<Cidr> around = fences.Covering(block.network());
    return std::any_of(around.begin(), around.end(),
                       [&](const Cidr& f) { return f.prefix_len() <= block.prefix_len(); });
  };
  for (const auto& [node, addresses] : node_addresses) {
    if (std::any_of(addresses.begin(), addresses.end(), inside)) covered.push_back(node);
  }
  return covered;
}

Result<FenceSet> ParseFenceSet(const std::vector<std::string>& texts, const std::string& field) {
  if (texts.size() > kMaxFenceSetCidrs) {
    return InvalidArgumentError(field + ": " + std::to_string(texts.size()) +
                                " CIDRs, more than the " + std::to_string(kMaxFenceSetCidrs) +
                                " a set holds");
  }
  std::vector<Cidr> cidrs;
  cidrs.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto cidr = Cidr::ParseNetwork(texts[i]);
    if (!cidr.ok()) {
      return InvalidArgumentError(field + "[" + std::to_string(i) +
                                  "]: " + cidr.status().message());
    }
    cidrs.push_back(*cidr);
  }
  return MakeFenceSet(std::move(cidrs));
}

}  // namespace mizarmp::fence
