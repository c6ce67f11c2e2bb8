// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "records/records.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <utility>

#include "common/json_fields.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::records {

using nlohmann::json;

namespace {

constexpr std::string_view kRecordSuffix = ".json";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string RecordField(std::string_view path) { return "record field " + Quoted(path); }

// A record's fields: errors name them as `record field "ips[0].address"`.
constexpr FieldErrors kRecordFields{Code::kInvalidArgument, RecordField};

Result<Record::State> ReadState(const JsonFields& record) {
  std::string state;
  MZ_RETURN_IF_ERROR(record.RequiredString("state", &state));
  if (state == "intent") return Record::State::kIntent;
  if (state == "complete") return Record::State::kComplete;
  return record.Invalid("state", "is " + Quoted(state) + ", want \"intent\" or \"complete\"");
}

Status ReadIps(const JsonFields& record, std::vector<RecordIp>* out) {
  MZ_ASSIGN_OR_RETURN(const std::vector<JsonFields> ips, record.Objects("ips"));
  for (const JsonFields& jip : ips) {
    RecordIp ip;
    MZ_RETURN_IF_ERROR(jip.RequiredString("address", &ip.address));
    MZ_RETURN_IF_ERROR(jip.String("gateway", &ip.gateway));
    out->push_back(std::move(ip));
  }
  return Status::Ok();
}

// "ovs", when plug mode wrote it: every member required.
Status ReadOvsPlug(const JsonFields& record, OvsPlug* out) {
  MZ_ASSIGN_OR_RETURN(const std::optional<JsonFields> ovs, record.Object("ovs"));
  if (!ovs) return Status::Ok();
  MZ_RETURN_IF_ERROR(ovs->RequiredString("socket", &out->socket));
  MZ_RETURN_IF_ERROR(ovs->RequiredString("bridge", &out->bridge));
  return ovs->RequiredString("port", &out->port);
}

// The container id and interface name as parts of a file name: the container id without ':'
// (it ends at the first one) and neither with '/' (one path component), so names are unique.
Status CheckNameParts(std::string_view container_id, std::string_view ifname) {
  if (container_id.empty() || container_id.find_first_of(":/") != std::string_view::npos) {
    return InvalidArgumentError("attachment record: container id " + LogEscaped(container_id) +
                                " is empty or holds ':' or '/'");
  }
  if (ifname.empty() || ifname.find('/') != std::string_view::npos) {
    return InvalidArgumentError("attachment record: interface name " + LogEscaped(ifname) +
                                " is empty or holds '/'");
  }
  return Status::Ok();
}

RecordLookup Corrupt(std::string problem) {
  return RecordLookup{RecordLookup::Kind::kCorrupt, {}, std::move(problem)};
}

}  // namespace

std::string Rfc3339(std::chrono::system_clock::time_point at) {
  const time_t seconds = std::chrono::system_clock::to_time_t(at);
  tm utc{};
  ::gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string NowRfc3339() { return Rfc3339(std::chrono::system_clock::now()); }

json RecordToJson(const Record& r) {
  json ips = json::array();
  for (const RecordIp& ip : r.ips) {
    json jip = {{"address", ip.address}};
    if (!ip.gateway.empty()) jip["gateway"] = ip.gateway;
    ips.push_back(std::move(jip));
  }
  json j{{"schema", r.schema},      {"state", r.complete() ? "complete" : "intent"},
         {"network", r.network},    {"containerId", r.container_id},
         {"ifname", r.ifname},      {"netns", r.netns},
         {"portId", r.port_id},     {"projectId", r.project_id},
         {"subnetId", r.subnet_id}, {"hostId", r.host_id},
         {"mpurl", r.mpurl},        {"mac", r.mac},
         {"ips", std::move(ips)},   {"podNamespace", r.pod_namespace},
         {"podName", r.pod_name},   {"createdAt", r.created_at}};
  // Only when set: a build from before plug mode reads every other record unchanged.
  if (!r.ovs.empty()) {
    j["ovs"] = {{"socket", r.ovs.socket}, {"bridge", r.ovs.bridge}, {"port", r.ovs.port}};
  }
  return j;
}

Result<Record> RecordFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgumentError("record is not a JSON object");
  const JsonFields record(j, kRecordFields);
  Record r;
  MZ_ASSIGN_OR_RETURN(const int64_t schema,
                      record.RequiredInt("schema", std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max()));
  if (schema != kRecordSchema) {
    return record.Invalid("schema", "is " + std::to_string(schema) + ", this build reads " +
                                        std::to_string(kRecordSchema));
  }
  r.schema = kRecordSchema;
  MZ_ASSIGN_OR_RETURN(r.state, ReadState(record));
  const std::pair<const char*, std::string*> required[] = {{"network", &r.network},
                                                           {"containerId", &r.container_id},
                                                           {"ifname", &r.ifname},
                                                           {"portId", &r.port_id}};
  for (const auto& [key, out] : required) MZ_RETURN_IF_ERROR(record.RequiredString(key, out));
  const std::pair<const char*, std::string*> optional[] = {{"netns", &r.netns},
                                                           {"projectId", &r.project_id},
                                                           {"subnetId", &r.subnet_id},
                                                           {"hostId", &r.host_id},
                                                           {"mpurl", &r.mpurl},
                                                           {"mac", &r.mac},
                                                           {"podNamespace", &r.pod_namespace},
                                                           {"podName", &r.pod_name},
                                                           {"createdAt", &r.created_at}};
  for (const auto& [key, out] : optional) MZ_RETURN_IF_ERROR(record.String(key, out));
  MZ_RETURN_IF_ERROR(ReadIps(record, &r.ips));
  MZ_RETURN_IF_ERROR(ReadOvsPlug(record, &r.ovs));
  if (r.complete() && r.mac.empty()) return record.Invalid("mac", "is empty in a complete record");
  return r;
}

std::string RecordStore::NetworkDir(std::string_view network) const {
  return state_dir_ + "/" + std::string(network);
}

std::string RecordStore::RecordPath(std::string_view network, std::string_view container_id,
                                    std::string_view ifname) const {
  return NetworkDir(network) + "/" + std::string(container_id) + ":" + std::string(ifname) +
         std::string(kRecordSuffix);
}

std::string RecordStore::LegacyRecordPath(std::string_view network, std::string_view container_id,
                                          std::string_view ifname) const {
  return NetworkDir(network) + "/" + std::string(container_id) + "_" + std::string(ifname) +
         std::string(kRecordSuffix);
}

std::string RecordStore::LockPath(std::string_view network, std::string_view container_id,
                                  std::string_view ifname) const {
  return RecordPath(network, container_id, ifname) + ".lock";
}

Result<FileLock> RecordStore::Lock(std::string_view network, std::string_view container_id,
                                   std::string_view ifname) const {
  MZ_RETURN_IF_ERROR(CheckNameParts(container_id, ifname));
  MZ_RETURN_IF_ERROR(MakeDirs(NetworkDir(network), 0700));
  return FileLock::Acquire(LockPath(network, container_id, ifname), 0600);
}

Result<RecordLookup> RecordStore::FindPath(const std::string& path) const {
  auto text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().IsNotFound()) return RecordLookup{};
    return text.status();
  }
  if (TooDeepJson(*text)) {
    return Corrupt("attachment record " + path + " nests deeper than " +
                   std::to_string(kMaxFileJsonDepth) + " levels");
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt("attachment record " + path + " is not valid JSON");
  auto rec = RecordFromJson(j);
  if (!rec.ok()) return Corrupt("attachment record " + path + ": " + rec.status().message());
  return RecordLookup{RecordLookup::Kind::kValid, std::move(rec).value(), {}};
}

Result<RecordLookup> RecordStore::FindLegacy(std::string_view network,
                                             std::string_view container_id,
                                             std::string_view ifname) const {
  MZ_ASSIGN_OR_RETURN(RecordLookup found,
                      FindPath(LegacyRecordPath(network, container_id, ifname)));
  // The legacy name is shared by attachments whose ids differ in where '_' splits them: only
  // a record that names this attachment is its.
  if (found.valid() && found.record.container_id == container_id && found.record.ifname == ifname) {
    return found;
  }
  return RecordLookup{};
}

Result<RecordLookup> RecordStore::Find(std::string_view network, std::string_view container_id,
                                       std::string_view ifname) const {
  MZ_ASSIGN_OR_RETURN(RecordLookup found, FindPath(RecordPath(network, container_id, ifname)));
  if (!found.absent()) return found;
  return FindLegacy(network, container_id, ifname);
}

Result<Record> RecordStore::Read(std::string_view network, std::string_view container_id,
                                 std::string_view ifname) const {
  const std::string path = RecordPath(network, container_id, ifname);
  MZ_ASSIGN_OR_RETURN(RecordLookup found, Find(network, container_id, ifname));
  switch (found.kind) {
    case RecordLookup::Kind::kAbsent:
      return NotFoundError("no attachment record " + path);
    case RecordLookup::Kind::kCorrupt:
      return DataLossError(found.problem);
    case RecordLookup::Kind::kValid:
      break;
  }
  return std::move(found.record);
}

Status RecordStore::Write(const Record& record) const {
  MZ_RETURN_IF_ERROR(CheckNameParts(record.container_id, record.ifname));
  MZ_RETURN_IF_ERROR(MakeDirs(NetworkDir(record.network), 0700));
  MZ_RETURN_IF_ERROR(WriteFileAtomic(
      RecordPath(record.network, record.container_id, record.ifname),
      // Invalid UTF-8 is replaced, never thrown on: the values came from outside.
      RecordToJson(record).dump(2, ' ', false, json::error_handler_t::replace) + "\n", 0600));
  return RemoveLegacy(record.network, record.container_id, record.ifname);
}

Status RecordStore::RemoveLegacy(std::string_view network, std::string_view container_id,
                                 std::string_view ifname) const {
  MZ_ASSIGN_OR_RETURN(RecordLookup legacy, FindLegacy(network, container_id, ifname));
  if (legacy.absent()) return Status::Ok();
  return RemoveFileDurable(LegacyRecordPath(network, container_id, ifname));
}

Status RecordStore::Remove(std::string_view network, std::string_view container_id,
                           std::string_view ifname) const {
  MZ_RETURN_IF_ERROR(RemoveFileDurable(RecordPath(network, container_id, ifname)));
  return RemoveLegacy(network, container_id, ifname);
}

Result<std::vector<Record>> RecordStore::List(std::string_view network) const {
  std::vector<Record> out;
  const std::string dir = NetworkDir(network);
  auto names = ListDir(dir);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return out;
    return names.status();
  }
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    // Temp files of atomic writes start with '.'; lock files end in ".lock".
    if (name.empty() || name[0] == '.' || !EndsWith(name, kRecordSuffix)) continue;
    const std::string path = dir + "/" + name;
    auto found = FindPath(path);
    if (!found.ok()) {
      MZ_LOG(kWarn) << "skipping " << path << ": " << LogEscaped(found.status().message());
    } else if (found->corrupt()) {
      MZ_LOG(kWarn) << "skipping " << path << ": " << LogEscaped(found->problem);
    } else if (found->valid() && found->record.network != network) {
      MZ_LOG(kWarn) << "skipping " << path << ": it names network "
                    << LogEscaped(found->record.network);
    } else if (found->valid()) {
      out.push_back(std::move(found->record));
    }
    // An absent file was removed since the directory was listed: nothing to skip or keep.
  }
  return out;
}

namespace {

constexpr std::string_view kLockSuffix = ".lock";

// Whether `path` was last modified more than `min_age` ago (false if it cannot be stat'ed).
bool OlderThan(const std::string& path, std::chrono::seconds min_age) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  return ::time(nullptr) - st.st_mtime > min_age.count();
}

// A temp file of WriteFileAtomic: ".<record name>.tmp.<pid>.<random>".
bool IsTempFile(std::string_view name) {
  return name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string_view::npos;
}

// Removes the lock file at `path` if nobody holds it and no record is beside it, under the same
// protocol as FileLock (lock, check the path still names the locked file, unlink while
// holding): a command that opened it meanwhile notices the unlink and starts over.
Result<bool> RemoveOrphanLock(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (errno == ENOENT) return false;
    return ErrnoError("open lock " + path, errno);
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK || errno == EINTR) return false;  // held: a command is running
    return ErrnoError("flock " + path, errno);
  }
  struct stat held {
  }, now{};
  if (::fstat(fd.get(), &held) != 0 || ::stat(path.c_str(), &now) != 0 ||
      now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
    return false;  // replaced or removed meanwhile
  }
  const std::string record = path.substr(0, path.size() - kLockSuffix.size());
  struct stat rec {};
  if (::lstat(record.c_str(), &rec) == 0 || errno != ENOENT) return false;  // a record is there
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return false;
    return ErrnoError("remove lock " + path, errno);
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> RecordStore::SweepStale(std::string_view network,
                                                         std::chrono::seconds min_age) const {
  std::vector<std::string> removed;
  const std::string dir = NetworkDir(network);
  auto names = ListDir(dir);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return removed;
    return names.status();
  }
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    const std::string path = dir + "/" + name;
    const bool temp = IsTempFile(name);
    const bool lock =
        !temp && EndsWith(name, std::string(kRecordSuffix) + std::string(kLockSuffix));
    if ((!temp && !lock) || !OlderThan(path, min_age)) continue;
    if (temp) {
      if (::unlink(path.c_str()) == 0) {
        removed.push_back(name);
      } else if (errno != ENOENT) {
        MZ_LOG(kWarn) << "cannot remove stale temp file " << LogEscaped(path) << ": "
                      << std::strerror(errno);
      }
      continue;
    }
    auto gone = RemoveOrphanLock(path);
    if (!gone.ok()) {
      MZ_LOG(kWarn) << "cannot sweep lock file " << LogEscaped(path) << ": "
                    << gone.status().message();
    } else if (*gone) {
      removed.push_back(name);
    }
  }
  return removed;
}

Result<std::vector<std::string>> RecordStore::ListNetworks() const {
  auto names = ListDir(state_dir_);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return std::vector<std::string>{};
    return names.status();
  }
  std::erase_if(*names, [](const std::string& n) { return n.empty() || n[0] == '.'; });
  std::sort(names->begin(), names->end());
  return names;
}

Result<std::vector<Record>> RecordStore::ListAll() const {
  std::vector<Record> out;
  MZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNetworks());
  for (const std::string& name : names) {
    auto recs = List(name);
    if (!recs.ok()) {
      // Not a directory (a stray file) or unreadable: skip it.
      MZ_LOG(kDebug) << "skipping " << state_dir_ << "/" << name << ": " << recs.status().message();
      continue;
    }
    for (Record& r : *recs) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace mizarmp::records
