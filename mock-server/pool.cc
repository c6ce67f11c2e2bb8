// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/pool.h"

#include <array>
#include <cstdio>
#include <utility>

namespace mizarmp::mock {

namespace {

uint64_t Load64(const std::array<uint8_t, 16>& b, int from) {
  uint64_t v = 0;
  for (int i = from; i < from + 8; ++i) v = (v << 8) | b[i];
  return v;
}

// ip - base, when it fits in 64 bits (ip >= base is the caller's business).
bool Offset(const IpAddress& base, const IpAddress& ip, uint64_t* out) {
  if (base.family() != ip.family()) return false;
  if (ip.is_v4()) {
    *out = static_cast<uint64_t>(ip.v4_host_order()) - base.v4_host_order();
    return ip.v4_host_order() >= base.v4_host_order();
  }
  const uint64_t ih = Load64(ip.bytes(), 0), il = Load64(ip.bytes(), 8);
  const uint64_t bh = Load64(base.bytes(), 0), bl = Load64(base.bytes(), 8);
  const uint64_t borrow = il < bl ? 1 : 0;
  if (ih < bh || ih - bh != borrow) return false;
  *out = il - bl;
  return true;
}

}  // namespace

Result<AddressPool> AddressPool::Create(const Cidr& network, const IpAddress& gateway) {
  AddressPool p;
  p.network_ = network;
  p.gateway_ = gateway;
  if (network.has_host_bits()) {
    return InvalidArgumentError("subnet " + network.ToString() + " has host bits set");
  }
  const int host_bits = network.address().bits() - network.prefix_len();
  if (network.address().is_v4()) {
    if (host_bits < 2) {
      return InvalidArgumentError("subnet " + network.ToString() +
                                  " is too small: a /30 or larger is needed (network, gateway, "
                                  "one host, broadcast)");
    }
    p.first_ = 1;
    p.count_ = (uint64_t{1} << host_bits) - 2;
  } else {
    if (host_bits < 2) {
      return InvalidArgumentError("subnet " + network.ToString() +
                                  " is too small: a /126 or "
                                  "larger is needed");
    }
    p.first_ = 1;
    p.count_ = host_bits >= 33 ? (uint64_t{1} << 32) : (uint64_t{1} << host_bits) - 1;
  }
  std::string why;
  if (!p.IsHostOffsetAddress(gateway, &why)) {
    return InvalidArgumentError("gateway " + gateway.ToString() + " " + why);
  }
  return p;
}

bool AddressPool::IsHostOffsetAddress(const IpAddress& ip, std::string* why) const {
  if (!network_.Contains(ip)) {
    *why = "is not inside subnet " + network_.ToString();
    return false;
  }
  uint64_t off = 0;
  if (!Offset(network_.network(), ip, &off) || off < first_ || off - first_ >= count_) {
    if (ip == network_.network()) {
      *why = "is the network address of " + network_.ToString();
    } else if (ip.is_v4() && ip == network_.last()) {
      *why = "is the broadcast address of " + network_.ToString();
    } else {
      *why = "is outside the host range this mock allocates from in " + network_.ToString();
    }
    return false;
  }
  return true;
}

Result<IpAddress> AddressPool::Allocate() {
  if (used_.size() + 1 >= count_) {
    return UnavailableError("subnet " + network_.ToString() + " has no free address: all " +
                            std::to_string(capacity()) + " host addresses are allocated");
  }
  for (uint64_t i = 0; i < count_; ++i) {
    const uint64_t rel = (next_ + i) % count_;
    const IpAddress ip = At(first_ + rel);
    if (ip == gateway_ || used_.count(ip) != 0) continue;
    used_.insert(ip);
    next_ = (rel + 1) % count_;
    return ip;
  }
  return UnavailableError("subnet " + network_.ToString() + " has no free address");
}

Status AddressPool::Reserve(const IpAddress& ip) {
  std::string why;
  if (!IsHostOffsetAddress(ip, &why)) {
    return InvalidArgumentError("requested address " + ip.ToString() + " " + why);
  }
  if (ip == gateway_) {
    return AlreadyExistsError("requested address " + ip.ToString() + " is the gateway of " +
                              network_.ToString());
  }
  if (!used_.insert(ip).second) {
    return AlreadyExistsError("requested address " + ip.ToString() +
                              " is already allocated to another port");
  }
  return Status::Ok();
}

void AddressPool::Release(const IpAddress& ip) { used_.erase(ip); }

MacPool::MacPool(uint32_t seed) : counter_(seed & 0xffffff) {}

Result<std::string> MacPool::Allocate() {
  if (used_.size() >= 0xffffff) {
    return UnavailableError("no free MAC address in fa:16:3e:00:00:00/24");
  }
  for (;;) {
    counter_ = (counter_ + 1) & 0xffffff;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "fa:16:3e:%02x:%02x:%02x", (counter_ >> 16) & 0xff,
                  (counter_ >> 8) & 0xff, counter_ & 0xff);
    if (used_.insert(buf).second) return std::string(buf);
  }
}

void MacPool::Release(const std::string& mac) { used_.erase(mac); }

Lease::Lease(Lease&& other) noexcept
    : addresses_(std::exchange(other.addresses_, {})),
      macs_(std::exchange(other.macs_, nullptr)),
      mac_(std::exchange(other.mac_, {})) {}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    addresses_ = std::exchange(other.addresses_, {});
    macs_ = std::exchange(other.macs_, nullptr);
    mac_ = std::exchange(other.mac_, {});
  }
  return *this;
}

Lease::~Lease() { Release(); }

Result<IpAddress> Lease::Allocate(AddressPool& pool) {
  MZ_ASSIGN_OR_RETURN(IpAddress ip, pool.Allocate());
  addresses_.emplace_back(&pool, ip);
  return ip;
}

Status Lease::Reserve(AddressPool& pool, const IpAddress& ip) {
  MZ_RETURN_IF_ERROR(pool.Reserve(ip));
  addresses_.emplace_back(&pool, ip);
  return Status::Ok();
}

Result<std::string> Lease::AllocateMac(MacPool& macs) {
  MZ_ASSIGN_OR_RETURN(mac_, macs.Allocate());
  macs_ = &macs;
  return mac_;
}

void Lease::Release() {
  for (const auto& [pool, ip] : addresses_) pool->Release(ip);
  addresses_.clear();
  if (macs_ != nullptr) macs_->Release(mac_);
  macs_ = nullptr;
  mac_.clear();
}

}  // namespace mizarmp::mock
