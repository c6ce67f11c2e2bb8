#include "records/records.h"

#include <sys/time.h>

#include <algorithm>
#include <ctime>

#include "common/log.h"

namespace mizarmp::records {

using nlohmann::json;

namespace {

constexpr std::string_view kRecordSuffix = ".json";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Status Bad(const std::string& field, const std::string& why) {
  return InvalidArgumentError("record field \"" + field + "\" " + why);
}

Status ReadString(const json& j, const char* key, bool required, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? Bad(key, "is missing") : Status::Ok();
  }
  if (!it->is_string())
    return Bad(key, std::string("is not a string (got ") + it->type_name() + ")");
  *out = it->get<std::string>();
  if (required && out->empty()) return Bad(key, "is empty");
  return Status::Ok();
}

RecordLookup Corrupt(std::string problem) {
  return RecordLookup{RecordLookup::Kind::kCorrupt, {}, std::move(problem)};
}

}  // namespace

std::string NowRfc3339() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  ::gmtime_r(&ts.tv_sec, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

json RecordToJson(const Record& r) {
  json ips = json::array();
  for (const RecordIp& ip : r.ips) {
    json jip = {{"address", ip.address}};
    if (!ip.gateway.empty()) jip["gateway"] = ip.gateway;
    ips.push_back(std::move(jip));
  }
  return json{{"schema", r.schema},      {"state", r.complete() ? "complete" : "intent"},
              {"network", r.network},    {"containerId", r.container_id},
              {"ifname", r.ifname},      {"netns", r.netns},
              {"portId", r.port_id},     {"projectId", r.project_id},
              {"subnetId", r.subnet_id}, {"hostId", r.host_id},
              {"mpurl", r.mpurl},        {"mac", r.mac},
              {"ips", std::move(ips)},   {"podNamespace", r.pod_namespace},
              {"podName", r.pod_name},   {"createdAt", r.created_at}};
}

Result<Record> RecordFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgumentError("record is not a JSON object");
  Record r;
  auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_number_integer()) return Bad("schema", "is not an integer");
  r.schema = schema->get<int>();
  if (r.schema != kRecordSchema) {
    return Bad("schema", "is " + std::to_string(r.schema) + ", this build reads " +
                             std::to_string(kRecordSchema));
  }
  std::string state;
  MZ_RETURN_IF_ERROR(ReadString(j, "state", true, &state));
  if (state == "intent") {
    r.state = Record::State::kIntent;
  } else if (state == "complete") {
    r.state = Record::State::kComplete;
  } else {
    return Bad("state", "is \"" + state + "\", want \"intent\" or \"complete\"");
  }
  MZ_RETURN_IF_ERROR(ReadString(j, "network", true, &r.network));
  MZ_RETURN_IF_ERROR(ReadString(j, "containerId", true, &r.container_id));
  MZ_RETURN_IF_ERROR(ReadString(j, "ifname", true, &r.ifname));
  MZ_RETURN_IF_ERROR(ReadString(j, "portId", true, &r.port_id));
  MZ_RETURN_IF_ERROR(ReadString(j, "netns", false, &r.netns));
  MZ_RETURN_IF_ERROR(ReadString(j, "projectId", false, &r.project_id));
  MZ_RETURN_IF_ERROR(ReadString(j, "subnetId", false, &r.subnet_id));
  MZ_RETURN_IF_ERROR(ReadString(j, "hostId", false, &r.host_id));
  MZ_RETURN_IF_ERROR(ReadString(j, "mpurl", false, &r.mpurl));
  MZ_RETURN_IF_ERROR(ReadString(j, "mac", false, &r.mac));
  MZ_RETURN_IF_ERROR(ReadString(j, "podNamespace", false, &r.pod_namespace));
  MZ_RETURN_IF_ERROR(ReadString(j, "podName", false, &r.pod_name));
  MZ_RETURN_IF_ERROR(ReadString(j, "createdAt", false, &r.created_at));
  if (auto it = j.find("ips"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Bad("ips", "is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& jip = (*it)[i];
      if (!jip.is_object()) return Bad("ips[" + std::to_string(i) + "]", "is not an object");
      RecordIp ip;
      MZ_RETURN_IF_ERROR(ReadString(jip, "address", true, &ip.address));
      MZ_RETURN_IF_ERROR(ReadString(jip, "gateway", false, &ip.gateway));
      r.ips.push_back(std::move(ip));
    }
  }
  if (r.complete() && r.mac.empty()) return Bad("mac", "is empty in a complete record");
  return r;
}

std::string RecordStore::NetworkDir(std::string_view network) const {
  return state_dir_ + "/" + std::string(network);
}

std::string RecordStore::RecordPath(std::string_view network, std::string_view container_id,
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
  MZ_RETURN_IF_ERROR(MakeDirs(NetworkDir(network), 0700));
  return FileLock::Acquire(LockPath(network, container_id, ifname), 0600);
}

Result<RecordLookup> RecordStore::FindPath(const std::string& path) const {
  auto text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().IsNotFound()) return RecordLookup{};
    return text.status();
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt("attachment record " + path + " is not valid JSON");
  auto rec = RecordFromJson(j);
  if (!rec.ok()) return Corrupt("attachment record " + path + ": " + rec.status().message());
  return RecordLookup{RecordLookup::Kind::kValid, std::move(rec).value(), {}};
}

Result<RecordLookup> RecordStore::Find(std::string_view network, std::string_view container_id,
                                       std::string_view ifname) const {
  return FindPath(RecordPath(network, container_id, ifname));
}

Result<Record> RecordStore::Read(std::string_view network, std::string_view container_id,
                                 std::string_view ifname) const {
  const std::string path = RecordPath(network, container_id, ifname);
  MZ_ASSIGN_OR_RETURN(RecordLookup found, FindPath(path));
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
  MZ_RETURN_IF_ERROR(MakeDirs(NetworkDir(record.network), 0700));
  return WriteFileAtomic(RecordPath(record.network, record.container_id, record.ifname),
                         RecordToJson(record).dump(2) + "\n", 0600);
}

Status RecordStore::Remove(std::string_view network, std::string_view container_id,
                           std::string_view ifname) const {
  return RemoveFileDurable(RecordPath(network, container_id, ifname));
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
      MZ_LOG(kWarn) << "skipping " << path << ": " << found.status().message();
    } else if (found->corrupt()) {
      MZ_LOG(kWarn) << "skipping " << path << ": " << found->problem;
    } else if (found->valid() && found->record.network != network) {
      MZ_LOG(kWarn) << "skipping " << path << ": it names network \"" << found->record.network
                    << "\"";
    } else if (found->valid()) {
      out.push_back(std::move(found->record));
    }
    // An absent file was removed since the directory was listed: nothing to skip or keep.
  }
  return out;
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
