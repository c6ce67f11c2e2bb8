// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// An address as the port index's backends order it: one byte of family (4 or 6), then the
// address's bytes in network order. Within a family, byte order is address order, so the
// addresses of a CIDR are the keys from its network's to its last address's; and every IPv4 key
// sorts before every IPv6 one.
#pragma once

#include <string>
#include <string_view>

#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::fence {

std::string AddressKey(const IpAddress& ip);
// DATA_LOSS naming the length for bytes that are not an address key.
Result<IpAddress> AddressFromKey(std::string_view key);

}  // namespace mizarmp::fence
