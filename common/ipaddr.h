// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// IPv4/IPv6 addresses and CIDR prefixes, parsed strictly and printed canonically.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp {

class IpAddress {
 public:
  enum class Family : uint8_t { kV4 = 4, kV6 = 6 };

  IpAddress() = default;  // 0.0.0.0
  static IpAddress V4(uint32_t host_order);
  static IpAddress V6(const std::array<uint8_t, 16>& bytes);
  // Accepts dotted-quad IPv4 or RFC 4291 text IPv6 (no zone, no brackets, no prefix).
  static Result<IpAddress> Parse(std::string_view text);

  Family family() const { return family_; }
  bool is_v4() const { return family_ == Family::kV4; }
  bool is_v6() const { return family_ == Family::kV6; }
  int bits() const { return is_v4() ? 32 : 128; }
  // Network byte order; 4 meaningful bytes for IPv4, 16 for IPv6.
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  int byte_length() const { return is_v4() ? 4 : 16; }
  uint32_t v4_host_order() const;

  // Canonical text (RFC 5952 for IPv6).
  std::string ToString() const;

  // This address with every bit from `prefix_len` on cleared (mask) or set (broadcast).
  IpAddress Masked(int prefix_len) const;
  IpAddress LastInPrefix(int prefix_len) const;
  // address + n within the family, wrapping; used for allocation and iteration.
  IpAddress Plus(uint64_t n) const;

  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;

 private:
  Family family_ = Family::kV4;
  std::array<uint8_t, 16> bytes_{};
};

// A prefix: an address and a length. `Parse` keeps host bits as written so an interface
// address such as 10.0.0.5/24 can be represented; `ParseNetwork` rejects host bits.
class Cidr {
 public:
  Cidr() = default;
  Cidr(IpAddress address, int prefix_len) : address_(address), prefix_len_(prefix_len) {}

  // "a.b.c.d/n" or "x::y/n". With allow_bare, an address without "/n" is its host prefix.
  static Result<Cidr> Parse(std::string_view text, bool allow_bare = false);
  // Like Parse but host bits must be zero ("10.0.0.1/24" is INVALID_ARGUMENT naming it).
  static Result<Cidr> ParseNetwork(std::string_view text, bool allow_bare = false);

  const IpAddress& address() const { return address_; }
  int prefix_len() const { return prefix_len_; }
  IpAddress network() const { return address_.Masked(prefix_len_); }
  IpAddress last() const { return address_.LastInPrefix(prefix_len_); }
  bool Contains(const IpAddress& ip) const;
  bool Contains(const Cidr& other) const;
  bool has_host_bits() const { return network() != address_; }

  std::string ToString() const;  // "address/len", address as stored
  friend auto operator<=>(const Cidr&, const Cidr&) = default;

 private:
  IpAddress address_;
  int prefix_len_ = 0;
};

}  // namespace mizarmp
