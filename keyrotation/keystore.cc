// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/keystore.h"

#include <sys/stat.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "common/fileutil.h"
#include "common/hex.h"
#include "common/strings.h"

namespace mizarmp::keyrotation {

namespace {

using json = nlohmann::json;

constexpr const char* kPrefix = "vol-";

bool SafeChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string EscapeId(const std::string& id) { return PercentEncoded(id, SafeChar); }

// A key as it is stored, in hex. Takes the key as std::string, the one type a SecretString
// converts to.
std::string KeyHex(const std::string& key) { return HexEncoded(key); }

Result<std::string> UnescapeId(const std::string& name) {
  auto id = PercentDecoded(name);
  if (!id.ok()) return InvalidArgumentError("bad escape in key store file name " + Quoted(name));
  return id;
}

}  // namespace

Result<std::unique_ptr<LocalKeyStore>> LocalKeyStore::Open(const std::string& dir) {
  if (dir.empty()) return InvalidArgumentError("key store directory: empty path");
  MZ_RETURN_IF_ERROR(MakeDirs(dir, 0700).WithContext("key store directory " + Quoted(dir)));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return ErrnoError("key store directory " + Quoted(dir) + ": stat", errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError("key store directory " + Quoted(dir) + " is not a directory");
  }
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0) {
    return ErrnoError("key store directory " + Quoted(dir) + ": chmod 0700", errno);
  }
  return std::unique_ptr<LocalKeyStore>(new LocalKeyStore(dir));
}

std::string LocalKeyStore::PathFor(const std::string& volume_id) const {
  return dir_ + "/" + kPrefix + EscapeId(volume_id);
}

namespace {

// Wipes the key strings of a key store document (hex of the keys).
void WipeKeyFields(json& doc) {
  if (!doc.is_object()) return;
  for (const char* name : {"current", "pending", "previous"}) {
    auto it = doc.find(name);
    if (it != doc.end() && it->is_string()) Wipe(it->get_ref<std::string&>());
  }
}

// Wipes what Get and Put hold while they work on a record: the file's text and the document.
class WipeOnExit {
 public:
  WipeOnExit(std::string& text, json& doc) : text_(text), doc_(doc) {}
  WipeOnExit(const WipeOnExit&) = delete;
  WipeOnExit& operator=(const WipeOnExit&) = delete;
  ~WipeOnExit() {
    Wipe(text_);
    WipeKeyFields(doc_);
  }

 private:
  std::string& text_;
  json& doc_;
};

}  // namespace

Result<VolumeKeys> LocalKeyStore::Get(const std::string& volume_id) {
  const std::string path = PathFor(volume_id);
  auto read = ReadFile(path);
  if (!read.ok()) {
    if (read.status().IsNotFound()) {
      return NotFoundError("no key stored for volume " + Quoted(volume_id));
    }
    return read.status().WithContext("key store");
  }
  std::string text = std::move(*read);
  Wipe(*read);
  if (TooDeepJson(text)) {
    Wipe(text);
    return DataLossError("key store file " + Quoted(path) + " nests deeper than " +
                         std::to_string(kMaxFileJsonDepth) + " levels");
  }
  json doc = json::parse(text, nullptr, false);
  WipeOnExit wipe(text, doc);
  if (doc.is_discarded() || !doc.is_object()) {
    return DataLossError("key store file " + Quoted(path) + " is not a JSON object");
  }
  VolumeKeys keys;
  keys.volume_id = volume_id;
  auto field = [&](const char* name, std::string& out) -> Status {
    auto it = doc.find(name);
    if (it == doc.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) {
      return DataLossError("key store file " + Quoted(path) + ": " + Quoted(name) +
                           " is not a string");
    }
    out = it->get<std::string>();
    return Status::Ok();
  };
  auto key_field = [&](const char* name, SecretString& out) -> Status {
    std::string hex;
    Status s = field(name, hex);
    if (s.ok() && !hex.empty()) {
      auto bytes = HexDecoded(hex);
      if (bytes.ok()) {
        out = SecretString(std::move(*bytes));
      } else {
        s = DataLossError("key store file " + Quoted(path) + ": " + Quoted(name) + ": " +
                          bytes.status().message());
      }
    }
    Wipe(hex);
    return s;
  };
  MZ_RETURN_IF_ERROR(field("device", keys.device));
  MZ_RETURN_IF_ERROR(field("luksUuid", keys.luks_uuid));
  MZ_RETURN_IF_ERROR(key_field("current", keys.current));
  MZ_RETURN_IF_ERROR(key_field("pending", keys.pending));
  MZ_RETURN_IF_ERROR(key_field("previous", keys.previous));
  if (keys.current.empty()) {
    return DataLossError("key store file " + Quoted(path) + " has no \"current\" key");
  }
  return keys;
}

Status LocalKeyStore::Put(const VolumeKeys& keys) {
  if (keys.volume_id.empty()) return InvalidArgumentError("key store: empty volume id");
  json doc = json::object();
  std::string text;
  WipeOnExit wipe(text, doc);
  doc["volumeId"] = keys.volume_id;
  doc["device"] = keys.device;
  if (!keys.luks_uuid.empty()) doc["luksUuid"] = keys.luks_uuid;
  // Moved into the document, so the only copy of each hex string is the one wiped on exit.
  doc["current"] = KeyHex(keys.current);
  if (!keys.pending.empty()) doc["pending"] = KeyHex(keys.pending);
  if (!keys.previous.empty()) doc["previous"] = KeyHex(keys.previous);
  text = doc.dump(2) + "\n";
  const std::string path = PathFor(keys.volume_id);
  return WriteFileAtomic(path, text, 0600).WithContext("key store");
}

Status LocalKeyStore::Remove(const std::string& volume_id) {
  return RemoveFileDurable(PathFor(volume_id)).WithContext("key store");
}

Result<std::vector<std::string>> LocalKeyStore::List() {
  MZ_ASSIGN_OR_RETURN(auto names, ListDir(dir_));
  std::vector<std::string> ids;
  const std::string prefix = kPrefix;
  for (const auto& name : names) {
    if (name.size() <= prefix.size() || !name.starts_with(prefix)) continue;
    // Temp files of atomic writes start with '.', so they never match the prefix.
    auto id = UnescapeId(name.substr(prefix.size()));
    if (id.ok()) ids.push_back(std::move(*id));
  }
  return ids;
}

}  // namespace mizarmp::keyrotation
