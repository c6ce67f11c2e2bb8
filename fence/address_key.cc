// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/address_key.h"

#include <algorithm>
#include <array>

namespace mizarmp::fence {
namespace {

constexpr char kV4Family = '\x04';
constexpr char kV6Family = '\x06';

}  // namespace

std::string AddressKey(const IpAddress& ip) {
  std::string key(1, ip.is_v4() ? kV4Family : kV6Family);
  key.append(reinterpret_cast<const char*>(ip.bytes().data()), ip.byte_length());
  return key;
}

Result<IpAddress> AddressFromKey(std::string_view key) {
  std::array<uint8_t, 16> bytes{};
  if (key.size() == 5 && key[0] == kV4Family) {
    std::copy(key.begin() + 1, key.end(), bytes.begin());
    return IpAddress::V4((uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) |
                         (uint32_t{bytes[2]} << 8) | bytes[3]);
  }
  if (key.size() == 17 && key[0] == kV6Family) {
    std::copy(key.begin() + 1, key.end(), bytes.begin());
    return IpAddress::V6(bytes);
  }
  return DataLossError("an address key of " + std::to_string(key.size()) + " bytes");
}

}  // namespace mizarmp::fence
