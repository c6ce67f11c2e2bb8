// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/kubelet.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "common/fd.h"
#include "common/fileutil.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/strings.h"
#include "keyrotation/luks.h"

namespace mizarmp::keyrotation {

namespace {

using nlohmann::json;

constexpr const char* kCsiPluginDir = "/plugins/kubernetes.io/csi";
constexpr const char* kVolumeDataFile = "vol_data.json";
// Places that name the volume but hold no device, listed in a NOT_FOUND message.
constexpr size_t kMaxUnresolvedNotes = 4;

// A path or a value read from disk, quoted and made safe for a message (entry names may hold
// any byte but '/' and NUL).
std::string Shown(std::string_view s) { return LogEscaped(s); }

// A value from a vol_data.json in a message: escaped and cut short.
std::string ShownValue(std::string_view s) {
  constexpr size_t kMax = 128;
  if (s.size() <= kMax) return LogEscaped(s);
  return LogEscaped(s.substr(0, kMax)) + "...";
}

struct Listing {
  std::vector<std::string> names;  // sorted
  bool truncated = false;          // the directory has more than kMaxDirEntries entries
};

// The names in `dir` (no "." or ".."), at most kMaxDirEntries of them. NOT_FOUND when it is
// missing or not a directory.
Result<Listing> ListBounded(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (d == nullptr) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) return NotFoundError("no directory " + Shown(dir));
    return ErrnoError("directory " + Shown(dir), e);
  }
  Listing out;
  while (const dirent* entry = ::readdir(d.get())) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (out.names.size() == kMaxDirEntries) {
      out.truncated = true;
      break;
    }
    out.names.emplace_back(name);
  }
  std::sort(out.names.begin(), out.names.end());
  return out;
}

// What makes two paths one device: the device number of a block device, the inode of a file;
// the path itself when it cannot be examined.
std::string DeviceKeyOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "path " + path;
  if (S_ISBLK(st.st_mode)) return "block " + std::to_string(st.st_rdev);
  return "file " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

// One search for a volume, and what it saw on the way (for the answer when nothing is found).
class Search {
 public:
  Search(const std::string& volume_id, const ResolveOptions& options)
      : volume_id_(volume_id), options_(options), base_(options.kubelet_dir + kCsiPluginDir) {}

  Result<StagedVolume> Run(AccessType access) {
    if (access != AccessType::kBlock) {
      if (auto hashed = Hashed()) return std::move(*hashed);
      Scan(base_ + "/pv", "/" + std::string(kVolumeDataFile), [this](const std::string& dir) {
        return Filesystem(dir + "/globalmount", dir + "/" + kVolumeDataFile);
      });
    }
    if (access != AccessType::kMount) {
      const std::string data = "/data/" + std::string(kVolumeDataFile);
      Scan(base_ + "/volumeDevices", data,
           [this, &data](const std::string& dir) { return Block(BaseName(dir), dir + data); });
    }
    return Answer();
  }

 private:
  // The hashed directory of Kubernetes >= 1.24: the volume when its vol_data.json names it and
  // something is mounted on its globalmount.
  std::optional<Result<StagedVolume>> Hashed() {
    const std::string dir = base_ + "/" + options_.driver_name + "/" + VolumeHandleHash(volume_id_);
    const std::string data = dir + "/" + kVolumeDataFile;
    auto named = Names(data);
    if (!named.ok()) {
      if (!named.status().IsNotFound()) hashed_failure_ = named.status();
      notes_.push_back(named.status().message());
      return std::nullopt;
    }
    if (!named->empty()) {
      notes_.push_back(Shown(data) + ": " + *named);
      return std::nullopt;
    }
    auto found = Filesystem(dir + "/globalmount", data);
    if (found.ok()) return found;
    Unresolved(found.status());
    return std::nullopt;
  }

  // Each entry E of `dir` whose E<data_suffix> names the volume is handed to `take`
  // (dir/E); an unusable one of another PV is counted and skipped.
  template <typename Take>
  void Scan(const std::string& dir, const std::string& data_suffix, Take take) {
    const std::string pattern = Shown(dir + "/*" + data_suffix);
    auto listing = ListBounded(dir);
    if (!listing.ok()) {
      notes_.push_back(pattern + ": " + listing.status().message());
      return;
    }
    size_t read = 0, unusable = 0, named = 0;
    std::string first_unusable;
    for (const std::string& name : listing->names) {
      const std::string entry = dir + "/" + name;
      auto names = Names(entry + data_suffix);
      if (!names.ok()) {
        if (names.status().IsNotFound()) continue;
        if (unusable++ == 0) first_unusable = names.status().message();
        continue;
      }
      ++read;
      if (!names->empty()) continue;
      ++named;
      auto found = take(entry);
      if (found.ok()) {
        found_.push_back(std::move(*found));
      } else {
        Unresolved(found.status());
      }
    }
    std::string note =
        pattern + ": " + std::to_string(read) + " read, " + std::to_string(named) + " naming it";
    if (unusable > 0) {
      note += ", " + std::to_string(unusable) + " unusable skipped (" + first_unusable + ")";
    }
    if (listing->truncated) {
      note += "; " + Shown(dir) + " has more than " + std::to_string(kMaxDirEntries) +
              " entries and only " + std::to_string(kMaxDirEntries) + " were read";
    }
    notes_.push_back(std::move(note));
  }

  // Whether the vol_data.json at `path` names this volume of this driver: "" when it does,
  // else what it names. Errors as ReadVolumeData.
  Result<std::string> Names(const std::string& path) const {
    MZ_ASSIGN_OR_RETURN(const VolumeData data, ReadVolumeData(path));
    if (data.volume_handle == volume_id_ && data.driver_name == options_.driver_name) {
      return std::string();
    }
    return "names volumeHandle " + ShownValue(data.volume_handle) + " of driver " +
           ShownValue(data.driver_name);
  }

  // A filesystem volume staged at `globalmount`: the device mounted there.
  Result<StagedVolume> Filesystem(const std::string& globalmount, const std::string& data) const {
    auto device = ResolveLuksDevice(globalmount, AccessType::kMount, options_);
    if (!device.ok()) return device.status().WithContext(Shown(data) + " names it");
    return StagedVolume{std::move(*device), globalmount, data};
  }

  // A block volume of the PV `pv`: the device bound at its publish paths (a file per pod) and in
  // its staging directory, which must all be one device.
  Result<StagedVolume> Block(const std::string& pv, const std::string& data) const {
    const std::string publish = base_ + "/volumeDevices/publish/" + pv;
    const std::string staging = base_ + "/volumeDevices/staging/" + pv;
    std::vector<std::string> files;
    for (const std::string& dir : {publish, staging}) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0) continue;
      if (!S_ISDIR(st.st_mode)) {
        files.push_back(dir);  // an older kubelet's publish path: the file itself
        continue;
      }
      auto listing = ListBounded(dir);
      if (!listing.ok()) continue;
      for (const std::string& name : listing->names) files.push_back(dir + "/" + name);
    }
    std::vector<StagedVolume> devices;
    std::vector<std::string> seen;
    Status failure;
    for (const std::string& file : files) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0) continue;
      // A placeholder file nothing is bound on is no device; a LUKS image file is one.
      if (!S_ISBLK(st.st_mode) && !(S_ISREG(st.st_mode) && PeekLuksUuid(file))) continue;
      auto device = ResolveLuksDevice(file, AccessType::kBlock, options_);
      if (!device.ok()) {
        if (failure.ok()) failure = device.status().WithContext(Shown(file));
        continue;
      }
      std::string id = DeviceKeyOf(*device);
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
      seen.push_back(std::move(id));
      devices.push_back({std::move(*device), file, data});
    }
    if (devices.size() == 1) return std::move(devices.front());
    if (devices.size() > 1) {
      std::vector<std::string> listed;
      for (const StagedVolume& v : devices) {
        listed.push_back(Shown(v.staging_path) + " -> " + Shown(v.device));
      }
      return FailedPreconditionError(Shown(data) + " names it, but its publish and staging paths " +
                                     "hold different devices (" + Joined(listed, ", ") +
                                     "); refusing to guess");
    }
    if (!failure.ok()) return failure.WithContext(Shown(data) + " names it");
    return NotFoundError(Shown(data) + " names it, but no block device is bound in " +
                         Shown(publish) + " or " + Shown(staging));
  }

  // A place names the volume but holds no usable device: remembered for the answer.
  void Unresolved(const Status& status) {
    if (!status.IsNotFound() && !named_failure_) named_failure_ = status;
    if (unresolved_++ < kMaxUnresolvedNotes) notes_.push_back(status.message());
  }

  Result<StagedVolume> Answer() {
    if (found_.size() == 1) return std::move(found_.front());
    if (found_.size() > 1) {
      // The same device twice (a legacy and a block entry, say) is still one answer.
      const std::string first = DeviceKeyOf(found_.front().device);
      std::vector<std::string> listed;
      for (const StagedVolume& v : found_) {
        if (DeviceKeyOf(v.device) != first) listed.push_back(Shown(v.volume_data));
      }
      if (listed.empty()) return std::move(found_.front());
      listed.insert(listed.begin(), Shown(found_.front().volume_data));
      return FailedPreconditionError(Volume() + " is named by several staged volumes on " +
                                     "different devices (" + Joined(listed, ", ") +
                                     "); refusing to guess");
    }
    if (named_failure_) return named_failure_->WithContext(Volume());
    if (hashed_failure_) return hashed_failure_->WithContext(Volume());
    return NotFoundError(Volume() + " is not staged on this node: " + Joined(notes_, "; "));
  }

  std::string Volume() const {
    return "volume " + Quoted(volume_id_) + " of CSI driver " + Quoted(options_.driver_name);
  }

  const std::string& volume_id_;
  const ResolveOptions& options_;
  const std::string base_;  // <kubelet_dir>/plugins/kubernetes.io/csi
  std::vector<StagedVolume> found_;
  std::vector<std::string> notes_;        // what was looked at, for NOT_FOUND
  std::optional<Status> named_failure_;   // a place names the volume; its device failed
  std::optional<Status> hashed_failure_;  // the hashed directory's vol_data.json is unusable
  size_t unresolved_ = 0;                 // places that name the volume but hold no device
};

}  // namespace

Result<VolumeData> ParseVolumeData(std::string_view text) {
  if (TooDeepJson(text)) {
    return InvalidArgumentError("nests deeper than " + std::to_string(kMaxFileJsonDepth) +
                                " levels");
  }
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("not JSON");
  if (!doc.is_object()) return InvalidArgumentError("not a JSON object");
  VolumeData out;
  const std::pair<const char*, std::string*> fields[] = {{"volumeHandle", &out.volume_handle},
                                                         {"driverName", &out.driver_name}};
  for (const auto& [key, field] : fields) {
    const auto it = doc.find(key);
    if (it == doc.end()) return InvalidArgumentError(std::string("no \"") + key + "\"");
    if (!it->is_string()) {
      return InvalidArgumentError(std::string("\"") + key + "\" is " + it->type_name() +
                                  ", not a string");
    }
    *field = it->get<std::string>();
  }
  return out;
}

Result<VolumeData> ReadVolumeData(const std::string& path) {
  // O_NOFOLLOW: kubelet writes a file, never a link; O_NONBLOCK: a FIFO must not hold the read.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) return NotFoundError(Shown(path) + ": no such file");
    if (e == ELOOP) {
      return InvalidArgumentError(Shown(path) + ": a symbolic link, not the file kubelet writes");
    }
    return ErrnoError(Shown(path), e);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(Shown(path), errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError(Shown(path) + ": not a regular file");
  const auto too_large = [&path](const std::string& size) {
    return InvalidArgumentError(Shown(path) + ": " + size + " bytes, more than the " +
                                std::to_string(kMaxVolumeDataBytes) + " a vol_data.json may have");
  };
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > kMaxVolumeDataBytes) {
    return too_large(std::to_string(st.st_size));
  }
  // One byte more than allowed, to see a file that grew since fstat.
  std::string text(kMaxVolumeDataBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(Shown(path), errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxVolumeDataBytes) return too_large("over " + std::to_string(kMaxVolumeDataBytes));
  text.resize(got);
  auto data = ParseVolumeData(text);
  if (!data.ok()) return data.status().WithContext(Shown(path));
  return data;
}

std::string VolumeHandleHash(std::string_view volume_id) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(volume_id.data(), volume_id.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    return std::string();  // never for SHA-256; an empty name matches no directory
  }
  return HexEncoded(digest, size);
}

Result<StagedVolume> FindStagedVolume(const std::string& volume_id, AccessType access,
                                      const ResolveOptions& options) {
  if (volume_id.empty()) return InvalidArgumentError("volume_id: required");
  const std::string& driver = options.driver_name;
  if (driver.empty() || driver.find('/') != std::string::npos || driver == "." || driver == "..") {
    return NotFoundError("volume " + Quoted(volume_id) +
                         ": kubelet's staging directories were not searched (no usable CSI "
                         "driver name is configured: " +
                         Quoted(driver) + ")");
  }
  Search search(volume_id, options);
  auto found = search.Run(access);
  if (found.ok()) {
    MZ_LOG(kInfo) << "volume " << Quoted(volume_id) << ": staged by kubelet at "
                  << Shown(found->staging_path) << " (" << Shown(found->volume_data) << "), device "
                  << Shown(found->device);
  }
  return found;
}

}  // namespace mizarmp::keyrotation
