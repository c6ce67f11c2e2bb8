#include "fence/store.h"

#include "fence/sqlite_store.h"

namespace mizarmp::fence {

std::string_view FenceStateName(FenceState state) {
  return state == FenceState::kEnforced ? "enforced" : "pending";
}

Result<std::unique_ptr<FenceStore>> OpenFenceStore(const std::string& location) {
  // Every backend but SQLite is recognised by its location's form (e.g. "etcd://..."), here.
  MZ_ASSIGN_OR_RETURN(std::unique_ptr<SqliteFenceStore> sqlite, SqliteFenceStore::Open(location));
  return std::unique_ptr<FenceStore>(std::move(sqlite));
}

}  // namespace mizarmp::fence
