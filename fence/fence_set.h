// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The standing fence set as the controller hands it to node agents (mizarmp.v1.PortIndex/Publish)
// and as each node enforces it (fence/host_filter.h): the fenced CIDRs, and a digest that names
// the set, so that a node reports which set it holds and the controller sends the CIDRs only to
// a node that holds another one.
#pragma once

#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::fence {

// As many CIDRs as the store may hold fences (DESIGN.md, "Fence store").
inline constexpr size_t kMaxFenceSetCidrs = 65536;

struct FenceSet {
  std::vector<Cidr> cidrs;  // network form, sorted, no duplicates
  std::string digest;       // "<count>-<16 hex digits>": FNV-1a 64 of the CIDRs' text, in order
  friend bool operator==(const FenceSet&, const FenceSet&) = default;
};

// The set of `cidrs`, put in order.
FenceSet MakeFenceSet(std::vector<Cidr> cidrs);

// The set a controller sent (its bytes are the network's): each entry a CIDR in network form, at
// most kMaxFenceSetCidrs of them, or INVALID_ARGUMENT naming `field`[i].
Result<FenceSet> ParseFenceSet(const std::vector<std::string>& texts, const std::string& field);

}  // namespace mizarmp::fence
