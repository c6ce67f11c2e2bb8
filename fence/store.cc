#include "fence/store.h"

#include "fence/etcd_store.h"
#include "fence/sqlite_store.h"

namespace mizarmp::fence {

std::string_view FenceStateName(FenceState state) {
  return state == FenceState::kEnforced ? "enforced" : "pending";
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

}  // namespace mizarmp::fence
