// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Where the fence store and the port index live: a file path is kept in SQLite, and
// "etcd://host:port,..." in an etcd cluster shared by several replicas. Apart from fence/store.h
// because choosing needs the etcd backends, whose client is gRPC: the store's interface and its
// SQLite backend stay in the transport-free core (mizarmp_fence_core), the openers in
// mizarmp_fence_etcd.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "etcd/options.h"
#include "fence/audit.h"
#include "fence/port_index.h"
#include "fence/store.h"

namespace mizarmp::fence {

// An etcd fence store (fenceStore "etcd://host:port,..."): how to reach the cluster (endpoints
// come from the location), where the state lives in it, and the leader's lease.
struct EtcdStoreOptions {
  etcd::Options client;                    // TLS and user authentication files, call timeout
  std::string prefix = "/mizarmp/fence/";  // every key of the store starts with it
  std::chrono::seconds lease_ttl{15};      // the leader's lease (etcd/election.h)
};

// Checks a fence store's location and its etcd settings as the configuration names them
// (fenceStore, etcd*, leaseTtlSeconds): an etcd:// location's endpoints, its TLS and user file
// pairs (readable), its prefix (/SOME/PATH/), and that the leader's lease covers `update` (the
// longest port update: Mizar-MP's connect + request timeouts); for a SQLite store, an absolute
// path and no etcd setting, which would be silently ignored. INVALID_ARGUMENT naming the key.
Status ValidateFenceStore(const std::string& location, const EtcdStoreOptions& etcd,
                          std::chrono::milliseconds update);

// Opens (creating when missing) the store at `location`; `etcd` configures an etcd:// location.
// Errors name the location: INVALID_ARGUMENT for a location no backend accepts, otherwise the
// backend's (see fence/sqlite_store.h, fence/etcd/store.h). A new backend is one FenceStore
// class and one line here.
Result<std::unique_ptr<FenceStore>> OpenFenceStore(const std::string& location,
                                                   const EtcdStoreOptions& etcd = {});

// The port index kept beside the store at `location` (fence/port_index.h): for a SQLite store,
// the file kPortIndexFile in the store's directory; for etcd, the keys under PortIndexPrefix
// (fence/etcd/port_index.h), so that every replica reads what node agents published through any
// of them.
inline constexpr const char* kPortIndexFile = "ports.db";
inline constexpr const char* kPortIndexSuffix = "-index/";
// "/mizarmp/fence/" -> "/mizarmp/fence-index/": beside the store's prefix, not under it, since
// the store reads and counts every key under its prefix (fence/etcd/store.h) and the index holds
// one key per published address.
std::string PortIndexPrefix(const std::string& store_prefix);
Result<std::unique_ptr<PortIndex>> OpenPortIndex(const std::string& location,
                                                 const EtcdStoreOptions& etcd);

// The fence audit (fence/audit.h) kept beside the store at `location`: for a SQLite store, the
// file kAuditFile in the store's directory; for etcd, the keys under AuditPrefix, beside the
// store's prefix for the same reason as the index's.
inline constexpr const char* kAuditFile = "audit.db";
inline constexpr const char* kAuditSuffix = "-audit/";
std::string AuditPrefix(const std::string& store_prefix);
Result<std::unique_ptr<AuditLog>> OpenAuditLog(const std::string& location,
                                               const EtcdStoreOptions& etcd);

}  // namespace mizarmp::fence
