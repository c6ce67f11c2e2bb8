// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/ipaddr.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace mizarmp {

IpAddress IpAddress::V4(uint32_t host_order) {
  IpAddress a;
  a.family_ = Family::kV4;
  a.bytes_[0] = static_cast<uint8_t>(host_order >> 24);
  a.bytes_[1] = static_cast<uint8_t>(host_order >> 16);
  a.bytes_[2] = static_cast<uint8_t>(host_order >> 8);
  a.bytes_[3] = static_cast<uint8_t>(host_order);
  return a;
}

IpAddress IpAddress::V6(const std::array<uint8_t, 16>& bytes) {
  IpAddress a;
  a.family_ = Family::kV6;
  a.bytes_ = bytes;
  return a;
}

Result<IpAddress> IpAddress::Parse(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) {
    return InvalidArgumentError("invalid IP address \"" + std::string(text) + "\"");
  }
  std::string s(text);
  IpAddress a;
  if (s.find(':') == std::string::npos) {
    in_addr v4{};
    // inet_pton accepts only the strict dotted-quad form (no octal, no short forms).
    if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
      a.family_ = Family::kV4;
      std::memcpy(a.bytes_.data(), &v4, 4);
      return a;
    }
  } else {
    in6_addr v6{};
    if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
      a.family_ = Family::kV6;
      std::memcpy(a.bytes_.data(), &v6, 16);
      return a;
    }
  }
  return InvalidArgumentError("invalid IP address \"" + s + "\"");
}

uint32_t IpAddress::v4_host_order() const {
  return (uint32_t{bytes_[0]} << 24) | (uint32_t{bytes_[1]} << 16) | (uint32_t{bytes_[2]} << 8) |
         uint32_t{bytes_[3]};
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(is_v4() ? AF_INET : AF_INET6, bytes_.data(), buf, sizeof(buf));
  return buf;
}

IpAddress IpAddress::Masked(int prefix_len) const {
  IpAddress r = *this;
  for (int i = prefix_len; i < bits(); ++i)
    r.bytes_[i / 8] &= static_cast<uint8_t>(~(0x80 >> (i % 8)));
  return r;
}

IpAddress IpAddress::LastInPrefix(int prefix_len) const {
  IpAddress r = *this;
  for (int i = prefix_len; i < bits(); ++i)
    r.bytes_[i / 8] |= static_cast<uint8_t>(0x80 >> (i % 8));
  return r;
}

IpAddress IpAddress::Plus(uint64_t n) const {
  IpAddress r = *this;
  unsigned carry = 0;
  for (int i = byte_length() - 1; i >= 0; --i) {
    unsigned sum = r.bytes_[i] + static_cast<unsigned>(n & 0xff) + carry;
    r.bytes_[i] = static_cast<uint8_t>(sum);
    carry = sum >> 8;
    n >>= 8;
  }
  return r;
}

Result<Cidr> Cidr::Parse(std::string_view text, bool allow_bare) {
  auto slash = text.find('/');
  std::string_view addr_text = text.substr(0, slash);
  auto addr = IpAddress::Parse(addr_text);
  if (!addr.ok()) {
    return InvalidArgumentError("invalid CIDR \"" + std::string(text) + "\": bad address");
  }
  int len = addr->bits();
  if (slash == std::string_view::npos) {
    if (!allow_bare) {
      return InvalidArgumentError("invalid CIDR \"" + std::string(text) + "\": missing /prefix");
    }
  } else {
    std::string_view len_text = text.substr(slash + 1);
    auto [ptr, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
    if (len_text.empty() || ec != std::errc() || ptr != len_text.data() + len_text.size() ||
        len < 0 || len > addr->bits() || (len_text.size() > 1 && len_text[0] == '0')) {
      return InvalidArgumentError("invalid CIDR \"" + std::string(text) + "\": bad prefix length");
    }
  }
  return Cidr(*addr, len);
}

Result<Cidr> Cidr::ParseNetwork(std::string_view text, bool allow_bare) {
  MZ_ASSIGN_OR_RETURN(Cidr c, Parse(text, allow_bare));
  if (c.has_host_bits()) {
    return InvalidArgumentError("invalid CIDR \"" + std::string(text) +
                                "\": host bits set (did you mean " +
                                Cidr(c.network(), c.prefix_len()).ToString() + "?)");
  }
  return c;
}

bool Cidr::Contains(const IpAddress& ip) const {
  return ip.family() == address_.family() && ip.Masked(prefix_len_) == network();
}

bool Cidr::Contains(const Cidr& other) const {
  return other.prefix_len_ >= prefix_len_ && Contains(other.address_);
}

std::string Cidr::ToString() const {
  return address_.ToString() + "/" + std::to_string(prefix_len_);
}

}  // namespace mizarmp
