// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/etcd/backends.h"

#include "common/file_check.h"
#include "common/fileutil.h"
#include "common/strings.h"
#include "fence/etcd/audit.h"
#include "fence/etcd/port_index.h"
#include "fence/etcd/store.h"
#include "fence/sqlite_store.h"

namespace mizarmp::fence {

namespace {

// The etcd settings of a file store: one would be silently ignored, so it is an error.
Status NoEtcdSettings(const EtcdStoreOptions& e) {
  const EtcdStoreOptions defaults;
  const std::pair<const char*, bool> set[] = {
      {"etcdCaFile", !e.client.ca_file.empty()},
      {"etcdCertFile", !e.client.cert_file.empty()},
      {"etcdKeyFile", !e.client.key_file.empty()},
      {"etcdUsername", !e.client.username.empty()},
      {"etcdPasswordFile", !e.client.password_file.empty()},
      {"etcdPrefix", e.prefix != defaults.prefix},
  };
  for (const auto& [key, given] : set) {
    if (given) return InvalidArgumentError(std::string(key) + ": only for an etcd:// fenceStore");
  }
  return Status::Ok();
}

// A leader starts a port update only while its lease covers the update (fence_service.h); the
// lease is renewed every third of its TTL and counted at nine tenths, so what it covers right
// before a renewal is 0.9 - 1/3 of the TTL. That must exceed one update's connect + request.
Status CheckLeaseCoversAnUpdate(std::chrono::seconds lease_ttl, std::chrono::milliseconds update) {
  const auto ttl = std::chrono::duration_cast<std::chrono::milliseconds>(lease_ttl);
  const auto covered = ttl * 9 / 10 - ttl / 3;
  if (covered > update) return Status::Ok();
  const int64_t need_s = (update.count() * 30 / 17 + 999) / 1000 + 1;
  return InvalidArgumentError(
      "leaseTtlSeconds " + std::to_string(lease_ttl.count()) +
      ": too short for Mizar-MP's connect + request timeouts (" + std::to_string(update.count()) +
      " ms): a leader must be able to finish a port update within its lease; use at least " +
      std::to_string(need_s) + " or shorten mpConnectTimeoutMs/mpRequestTimeoutMs");
}

Status ValidateEtcdStore(const std::string& location, const EtcdStoreOptions& etcd) {
  MZ_RETURN_IF_ERROR(etcd::ParseEndpoints(location).status().WithContext("fenceStore"));
  const etcd::Options& e = etcd.client;
  if (e.cert_file.empty() != e.key_file.empty()) {
    return InvalidArgumentError("etcdCertFile/etcdKeyFile: set both or neither");
  }
  if (e.username.empty() != e.password_file.empty()) {
    return InvalidArgumentError("etcdUsername/etcdPasswordFile: set both or neither");
  }
  MZ_RETURN_IF_ERROR(CheckReadableFile("etcdCaFile", e.ca_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("etcdCertFile", e.cert_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("etcdKeyFile", e.key_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("etcdPasswordFile", e.password_file));
  const std::string& p = etcd.prefix;
  if (p.size() < 2 || p.front() != '/' || p.back() != '/') {
    return InvalidArgumentError("etcdPrefix " + Quoted(p) +
                                ": want /SOME/PATH/ (slash first and last)");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateFenceStore(const std::string& location, const EtcdStoreOptions& etcd,
                          std::chrono::milliseconds update) {
  if (etcd::IsEtcdLocation(location)) {
    MZ_RETURN_IF_ERROR(ValidateEtcdStore(location, etcd));
    return CheckLeaseCoversAnUpdate(etcd.lease_ttl, update);
  }
  if (location.empty() || location[0] != '/') {
    return InvalidArgumentError("fenceStore " + Quoted(location) +
                                ": must be an absolute path or etcd://HOST:PORT,...");
  }
  return NoEtcdSettings(etcd);
}

Result<std::unique_ptr<FenceStore>> OpenFenceStore(const std::string& location,
                                                   const EtcdStoreOptions& etcd) {
  if (etcd::IsEtcdLocation(location)) {
    MZ_ASSIGN_OR_RETURN(std::unique_ptr<EtcdFenceStore> shared,
                        EtcdFenceStore::Open(location, etcd));
    return std::unique_ptr<FenceStore>(std::move(shared));
  }
  MZ_ASSIGN_OR_RETURN(std::unique_ptr<SqliteFenceStore> sqlite, SqliteFenceStore::Open(location));
  return std::unique_ptr<FenceStore>(std::move(sqlite));
}

namespace {

// "/mizarmp/fence/" and "-index/" -> "/mizarmp/fence-index/".
std::string BesidePrefix(const std::string& store_prefix, const char* suffix) {
  std::string prefix = store_prefix;
  if (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix + suffix;
}

}  // namespace

std::string PortIndexPrefix(const std::string& store_prefix) {
  return BesidePrefix(store_prefix, kPortIndexSuffix);
}

std::string AuditPrefix(const std::string& store_prefix) {
  return BesidePrefix(store_prefix, kAuditSuffix);
}

Result<std::unique_ptr<PortIndex>> OpenPortIndex(const std::string& location,
                                                 const EtcdStoreOptions& etcd) {
  if (etcd::IsEtcdLocation(location)) {
    return OpenEtcdPortIndex(location, etcd.client, PortIndexPrefix(etcd.prefix));
  }
  return OpenSqlitePortIndex(DirName(location) + "/" + kPortIndexFile);
}

Result<std::unique_ptr<AuditLog>> OpenAuditLog(const std::string& location,
                                               const EtcdStoreOptions& etcd) {
  if (etcd::IsEtcdLocation(location)) {
    return OpenEtcdAuditLog(location, etcd.client, AuditPrefix(etcd.prefix));
  }
  return OpenSqliteAuditLog(DirName(location) + "/" + kAuditFile);
}

}  // namespace mizarmp::fence
