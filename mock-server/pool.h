// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Address and MAC allocation for mizarmp-mock (private to mock-server/).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
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

  // UNAVAILABLE naming the subnet when every address is taken (a port must go first).
  Result<IpAddress> Allocate();
  // Takes a requested address: INVALID_ARGUMENT when it is outside the subnet or is the
  // network/broadcast address, ALREADY_EXISTS when it is the gateway or already allocated.
  Status Reserve(const IpAddress& ip);
  // Gives an address back; one that is not allocated is ignored.
  void Release(const IpAddress& ip);

  // Every address handed out, in address order.
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
  // UNAVAILABLE when every MAC of the range is taken.
  Result<std::string> Allocate();
  // Gives a MAC back; one that is not allocated is ignored.
  void Release(const std::string& mac);

 private:
  uint32_t counter_;
  std::set<std::string> used_;
};

// What one port holds in the pools: its addresses and its MAC. A lease gives everything back to
// the pools when it is destroyed, so a port whose build fails part-way through, a batch that is
// refused, and a port that is deleted all leave nothing allocated, without undo code. The pools
// must outlive the lease, and the lease is guarded by the pools' mutex.
class Lease {
 public:
  Lease() = default;
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  // The next free address of `pool`, held by this lease (see AddressPool::Allocate).
  Result<IpAddress> Allocate(AddressPool& pool);
  // `ip` from `pool`, held by this lease (see AddressPool::Reserve).
  Status Reserve(AddressPool& pool, const IpAddress& ip);
  // A fresh MAC from `macs`, held by this lease (see MacPool::Allocate). Called once per lease.
  Result<std::string> AllocateMac(MacPool& macs);

 private:
  void Release();

  std::vector<std::pair<AddressPool*, IpAddress>> addresses_;
  MacPool* macs_ = nullptr;  // set once the lease holds mac_
  std::string mac_;
};

}  // namespace mizarmp::mock
