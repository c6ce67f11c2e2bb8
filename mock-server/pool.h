// Address and MAC allocation for mizarmp-mock (private to mock-server/).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::mock {

// The host addresses of one subnet, handed out next-fit: the search for a free address starts
// after the one handed out last, so an address that was just released is not reused at once.
// IPv4: the network and broadcast addresses and the gateway are never handed out.
// IPv6: the subnet-router anycast address (offset 0) and the gateway are never handed out; only
// the first 2^32 host offsets are used.
// Not thread-safe: the mock guards it with its port-table mutex.
class AddressPool {
 public:
  AddressPool() = default;
  // `network` must have no host bits; `gateway` must be a host address inside it.
  static Result<AddressPool> Create(const Cidr& network, const IpAddress& gateway);

  // RESOURCE_EXHAUSTED naming the subnet when every address is taken.
  Result<IpAddress> Allocate();
  // Takes a requested address: INVALID_ARGUMENT when it is outside the subnet or is the
  // network/broadcast address, ALREADY_EXISTS when it is the gateway or already allocated.
  Status Reserve(const IpAddress& ip);
  void Release(const IpAddress& ip);
  void Clear();

  bool Contains(const IpAddress& ip) const { return network_.Contains(ip); }
  const Cidr& network() const { return network_; }
  const IpAddress& gateway() const { return gateway_; }
  size_t allocated_count() const { return used_.size(); }
  std::vector<IpAddress> allocated() const { return {used_.begin(), used_.end()}; }
  // How many addresses can be handed out in all (gateway excluded).
  uint64_t capacity() const { return count_ - 1; }

 private:
  IpAddress At(uint64_t offset) const { return network_.network().Plus(offset); }
  bool IsHostOffsetAddress(const IpAddress& ip, std::string* why) const;

  Cidr network_;
  IpAddress gateway_;
  uint64_t first_ = 1;  // first candidate host offset
  uint64_t count_ = 0;  // number of candidate offsets (the gateway among them)
  uint64_t next_ = 0;   // next-fit cursor, relative to first_
  std::set<IpAddress> used_;
};

// Locally administered unicast MACs "fa:16:3e:xx:yy:zz", unique among those handed out.
class MacPool {
 public:
  explicit MacPool(uint32_t seed);
  Result<std::string> Allocate();
  void Release(const std::string& mac);
  void Clear() { used_.clear(); }

 private:
  uint32_t counter_;
  std::set<std::string> used_;
};

}  // namespace mizarmp::mock
