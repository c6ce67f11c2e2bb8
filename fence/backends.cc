// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/backends.h"

#include "common/fileutil.h"
#include "fence/etcd_port_index.h"
#include "fence/etcd_store.h"
#include "fence/sqlite_store.h"

namespace mizarmp::fence {

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

std::string PortIndexPrefix(const std::string& store_prefix) {
  std::string prefix = store_prefix;
  if (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix + kPortIndexSuffix;
}

Result<std::unique_ptr<PortIndex>> OpenPortIndex(const std::string& location,
                                                 const EtcdStoreOptions& etcd) {
  if (etcd::IsEtcdLocation(location)) {
    return OpenEtcdPortIndex(location, etcd.client, PortIndexPrefix(etcd.prefix));
  }
  return OpenSqlitePortIndex(DirName(location) + "/" + kPortIndexFile);
}

}  // namespace mizarmp::fence
