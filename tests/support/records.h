// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// An attachment record as the plugin writes it, for tests of what reads records (the fence
// clients, mizarmpctl). Header-only: its users link mizarmp_records themselves.
#pragma once

#include <string>
#include <vector>

#include "records/records.h"

namespace mizarmp::testing {

// A complete record of `container`'s eth0 on `host`, with `addresses` ("10.240.1.10/16").
inline records::Record CompleteRecord(const std::string& network, const std::string& container,
                                      const std::string& host,
                                      const std::vector<std::string>& addresses) {
  records::Record r;
  r.state = records::Record::State::kComplete;
  r.network = network;
  r.container_id = container;
  r.ifname = "eth0";
  r.netns = "/var/run/netns/" + container;
  r.port_id = "port-" + container;
  r.host_id = host;
  r.mac = "02:00:00:00:00:01";
  for (const auto& a : addresses) r.ips.push_back({a, ""});
  return r;
}

}  // namespace mizarmp::testing
