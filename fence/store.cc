#include "fence/store.h"

#include "common/fileutil.h"
#include "fence/etcd_store.h"
#include "fence/sqlite_store.h"

namespace mizarmp::fence {

std::string_view FenceStateName(FenceState state) {
  return state == FenceState::kEnforced ? "enforced" : "pending";
}

StoreCounts CountStore(const StoreSnapshot& snapshot) {
  StoreCounts counts;
  for (const FenceEntry& e : snapshot.fences) {
    ++(e.state == FenceState::kPending ? counts.fences_pending : counts.fences_enforced);
  }
  counts.unfences_pending = snapshot.unfences.size();
  return counts;
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

Result<std::unique_ptr<PortIndex>> OpenPortIndex(const std::string& location,
                                                 const EtcdStoreOptions& etcd) {
  if (etcd::IsEtcdLocation(location)) {
    (void)etcd;
    return FailedPreconditionError(
        "portIndex: the port index is kept in a SQLite fence store only for now; fenceStore \"" +
        location + "\" is etcd");
  }
  return OpenSqlitePortIndex(DirName(location) + "/" + kPortIndexFile);
}

}  // namespace mizarmp::fence
