// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CNI ADD result, printed in the shape of the config's cniVersion.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cni/config.h"
#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::cni {

struct InterfaceResult {
  std::string name;
  std::string mac;
  std::string sandbox;  // netns path; empty for host-side interfaces
  int mtu = 0;          // 0: not reported
};

struct IpResult {
  Cidr address;  // host bits kept: 10.240.0.5/16
  std::optional<IpAddress> gateway;
  std::optional<int> interface;  // index into interfaces
};

struct RouteResult {
  Cidr dst;
  std::optional<IpAddress> gw;
};

struct AddResult {
  std::vector<InterfaceResult> interfaces;
  std::vector<IpResult> ips;
  std::vector<RouteResult> routes;
  DnsConfig dns;
};

// 0.3.x/0.4.0: ips[].version ("4"/"6"); 1.0.0 drops it; interface "mtu" only from 1.1.0.
// `version` must be supported (see version.h). "dns" is omitted when empty, and so are its
// empty fields.
nlohmann::json ResultToJson(const AddResult& result, std::string_view version);

// Reads a result (a prevResult) of any supported version. INVALID_ARGUMENT naming the field.
Result<AddResult> ResultFromJson(const nlohmann::json& j);

}  // namespace mizarmp::cni
