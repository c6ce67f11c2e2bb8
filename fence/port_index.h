// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index: the attachments each node agent published (address, port id, node), ordered by
// address so that the ports inside a CIDR are one range read, O(log n + m), instead of a list of
// every port at Mizar-MP (docs/decisions/2026-11-28-fencing-at-scale.md). Mizar-MP can find a
// port by id but not by address (Alcor's list filters only by equality on scalar members).
//
// Soft state: each node's entries are what its agent published last, and an agent publishes its
// whole set again whenever it (re)connects. The index names candidates only; a pass reads each
// one back from Mizar-MP (fence/port_finder.h), so a stale entry costs one read, never a wrong
// change. Implementations are thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/ipaddr.h"
#include "common/status.h"

namespace mizarmp::fence {

// One address of one port, as a node agent published it.
struct AddressedPort {
  IpAddress ip;
  std::string port_id;
  std::string pod;  // "namespace/name" from the plugin's record (K8S_POD_*); empty if unknown
  friend bool operator==(const AddressedPort&, const AddressedPort&) = default;
};

// An index entry: an address, its port and the node that published it.
struct IndexedPort {
  IpAddress ip;
  std::string port_id;
  std::string node;
  std::string pod;  // as published
  friend bool operator==(const IndexedPort&, const IndexedPort&) = default;
};

// When a node last published, how many entries it has, and the fence set it said it enforces
// then: the node's lease is live while `at` is recent (the controller's publication lease,
// fence/service/publication_service.h), and its `enforced` digest (fence/fence_set.h; "" for none) is its
// acknowledgement of the fence set it was given.
struct Publication {
  std::string node;
  std::chrono::system_clock::time_point at;
  size_t entries = 0;
  std::string enforced;
  friend bool operator==(const Publication&, const Publication&) = default;
};

class PortIndex {
 public:
  virtual ~PortIndex() = default;
  // Replaces whatever `node` published before with `ports` (all or nothing) and records `at` as
  // its publication time and `enforced` as the fence set it enforces. An empty list is a live
  // node without ports: it stays in Publications(). INVALID_ARGUMENT for an empty node name or
  // port id.
  virtual Status Publish(const std::string& node, const std::vector<AddressedPort>& ports,
                         std::chrono::system_clock::time_point at,
                         const std::string& enforced) = 0;
  // Records that `node` enforces the fence set `enforced` names, keeping the rest of its last
  // publication (its time, so an acknowledgement does not renew a lease). NOT_FOUND when `node`
  // has no publication: a node counts as live only once it published.
  virtual Status Acknowledge(const std::string& node, const std::string& enforced) = 0;
  // Every node that ever published (until Forget), sorted by node name.
  virtual Result<std::vector<Publication>> Publications() const = 0;
  // Drops `node`'s entries and its publication (a node the controller no longer knows). A node
  // that never published is no error.
  virtual Status Forget(const std::string& node) = 0;
  // The entries whose address is inside one of `cidrs`, each (address, port) once, sorted by
  // address, then port id.
  virtual Result<std::vector<IndexedPort>> Inside(const std::vector<Cidr>& cidrs) const = 0;
  // The addresses of the entries `node` published last (kept once its lease lapses, until
  // Forget), sorted, each once; none for a node that never published.
  virtual Result<std::vector<IpAddress>> AddressesOn(const std::string& node) const = 0;
};

// The index in a SQLite file of its own at `path` (absolute; created 0600 in a 0700 directory).
// Not the fence store's file: the index is rebuilt by publication and needs none of the store's
// durability or schema history.
Result<std::unique_ptr<PortIndex>> OpenSqlitePortIndex(const std::string& path);

}  // namespace mizarmp::fence
