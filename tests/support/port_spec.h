// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port a test asks Mizar-MP for when only its id matters: header-only, for the tests (and
// fuzz harnesses) that link mizarmp-client.
#pragma once

#include <string>

#include "mizarmp-client/types.h"

namespace mizarmp::testing {

// Port `id` ("k8s_<id>") on the default project and subnet, eth0 in `netns` on `host`.
inline client::PortSpec PortSpecFor(const std::string& id,
                                    const std::string& netns = "/var/run/netns/none",
                                    const std::string& host = "node-a") {
  client::PortSpec spec;
  spec.project_id = client::kDefaultProjectId;
  spec.id = id;
  spec.name = "k8s_" + id;
  spec.network_id = client::kDefaultSubnetId;
  spec.veth_name = "eth0";
  spec.network_ns = netns;
  spec.host_id = host;
  return spec;
}

}  // namespace mizarmp::testing
