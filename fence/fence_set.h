// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The standing fence set as the controller hands it to node agents (mizarmp.v1.PortIndex/Publish)
// and as each node enforces it (fence/host_filter.h): the fenced CIDRs, and a digest that names
// the set, so that a node reports which set it holds and the controller sends the CIDRs only to
// a node that holds another one.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"
#include "fence/cidrset.h"

namespace mizarmp::fence {

// The addresses a set may hold for the pods of the nodes its fences cover (CoveredNodes): a
// node's agent publishes at most a few hundred.
inline constexpr size_t kMaxCoveredAddresses = 8192;
// As many CIDRs as the store may hold fences (DESIGN.md, "Fence store"), and the covered pods'.
inline constexpr size_t kMaxFenceSetCidrs = 65536 + kMaxCoveredAddresses;

struct FenceSet {
  std::vector<Cidr> cidrs;  // network form, sorted, no duplicates
  std::string digest;       // "<count>-<16 hex digits>": FNV-1a 64 of the CIDRs' text, in order
  friend bool operator==(const FenceSet&, const FenceSet&) = default;
};

// The set of `cidrs`, put in order.
FenceSet MakeFenceSet(std::vector<Cidr> cidrs);

// The nodes of `node_addresses` (host id -> addresses, as configured: fence/service/clients.h) with an
// address, or a whole block, inside one of `fences`. A fence of a node's address covers the
// node's pods too, as GetFenceClients reports them together for the node.
std::vector<std::string> CoveredNodes(
    const CidrSet& fences, const std::map<std::string, std::vector<std::string>>& node_addresses);

// The set a controller sent (its bytes are the network's): each entry a CIDR in network form, at
// most kMaxFenceSetCidrs of them, or INVALID_ARGUMENT naming `field`[i].
Result<FenceSet> ParseFenceSet(const std::vector<std::string>& texts, const std::string& field);

}  // namespace mizarmp::fence
