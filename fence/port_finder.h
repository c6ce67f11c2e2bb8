// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// How a pass finds the ports it must look at through the port index (fence/port_index.h)
// instead of listing every port at Mizar-MP.
#pragma once

#include "common/status.h"
#include "fence/connections.h"
#include "fence/port_index.h"
#include "fence/store.h"
#include "mizarmp-client/types.h"

namespace mizarmp::fence {

// The indexed ports inside the snapshot's fences and pending unfences, and the ports their
// records name, each read back from Mizar-MP with GET /ports/{id} (a key lookup there, where any
// list scans every port) over `connections`, sorted by id. Mizar-MP's answer is what the plan
// sees: a candidate whose addresses left the CIDR is a port outside it, one gone at Mizar-MP is
// left out (nothing to change). A read that failed is an unreadable entry naming the port, so
// the plan completes nothing (fence/plan.h), as for a list with holes. An error only when the
// index cannot be read.
// Nodes in `lapsed` (whose agents stopped publishing or never did: fence/listed_nodes.h) are
// covered by one list of each node's ports (`binding:host_id`, below the row limit
// however many ports the cluster has); a failed list is an unreadable entry naming the node.
// The plan over these ports equals the plan over the whole list whenever the index holds every
// port inside the CIDRs of the nodes not in `lapsed`: every other port is inside no fence and
// named by no record, so the plan leaves it alone.
Result<client::PortList> FindFencedPorts(const StoreSnapshot& snapshot, const PortIndex& index,
                                         const std::vector<std::string>& lapsed,
                                         const PassConnections& connections);

}  // namespace mizarmp::fence
