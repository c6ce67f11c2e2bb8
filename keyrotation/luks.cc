// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/luks.h"

#include <fcntl.h>
#include <libcryptsetup.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include "common/fd.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::keyrotation {

namespace {

void LogCallback(int level, const char* msg, void*) {
  if (msg == nullptr) return;
  const std::string text = Trim(msg);
  if (level == CRYPT_LOG_ERROR) {
    MZ_LOG(kWarn) << "libcryptsetup: " << text;
  } else {
    MZ_LOG(kDebug) << "libcryptsetup: " << text;
  }
}

std::string CryptError(const std::string& what, int rc) {
  return what + ": " + std::strerror(rc < 0 ? -rc : rc);
}

Status SetPbkdf(crypt_device* cd, const PbkdfOptions& pbkdf) {
  if (pbkdf.use_defaults) return Status::Ok();
  crypt_pbkdf_type type{};
  type.type = CRYPT_KDF_PBKDF2;
  type.hash = "sha256";
  type.iterations = pbkdf.pbkdf2_iterations;
  type.flags = CRYPT_PBKDF_NO_BENCHMARK;
  const int rc = crypt_set_pbkdf_type(cd, &type);
  if (rc < 0) return InternalError(CryptError("crypt_set_pbkdf_type(pbkdf2)", rc));
  return Status::Ok();
}

}  // namespace

void InstallCryptsetupLogging() {
  static std::once_flag once;
  std::call_once(once, [] { crypt_set_log_callback(nullptr, &LogCallback, nullptr); });
}

Result<LuksDevice> LuksDevice::Open(const std::string& device) {
  InstallCryptsetupLogging();
  struct stat st {};
  if (::stat(device.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      return NotFoundError("device " + Quoted(device) + " not found");
    }
    return ErrnoError("device " + Quoted(device), e);
  }
  if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
    return FailedPreconditionError(Quoted(device) +
                                   " is neither a block device nor an image file, so not a "
                                   "LUKS2 device");
  }
  crypt_device* cd = nullptr;
  int rc = crypt_init(&cd, device.c_str());
  if (rc < 0) return UnavailableError(CryptError("crypt_init(" + Quoted(device) + ")", rc));
  LuksDevice luks(cd, device);
  rc = crypt_load(cd, CRYPT_LUKS, nullptr);
  if (rc < 0) {
    return FailedPreconditionError(
        Quoted(device) + " is not a LUKS2 device (no LUKS header: " + std::strerror(-rc) + ")");
  }
  const char* type = crypt_get_type(cd);
  if (type == nullptr || std::strcmp(type, CRYPT_LUKS2) != 0) {
    return FailedPreconditionError(Quoted(device) + " is not a LUKS2 device (its header is " +
                                   (type != nullptr ? std::string(type) : "unknown") + ")");
  }
  return luks;
}

LuksDevice::LuksDevice(LuksDevice&& other) noexcept
    : cd_(std::exchange(other.cd_, nullptr)), path_(std::move(other.path_)) {}

LuksDevice& LuksDevice::operator=(LuksDevice&& other) noexcept {
  if (this != &other) {
    if (cd_ != nullptr) crypt_free(cd_);
    cd_ = std::exchange(other.cd_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

LuksDevice::~LuksDevice() {
  if (cd_ != nullptr) crypt_free(cd_);
}

std::string LuksDevice::Uuid() const {
  const char* uuid = crypt_get_uuid(cd_);
  return uuid != nullptr ? std::string(uuid) : std::string();
}

Result<std::optional<int>> LuksDevice::FindKeyslot(const std::string& passphrase) {
  if (passphrase.empty()) return InvalidArgumentError("empty passphrase");
  // A NULL name only checks the passphrase against the header; nothing is activated.
  const int rc = crypt_activate_by_passphrase(cd_, nullptr, CRYPT_ANY_SLOT, passphrase.data(),
                                              passphrase.size(), 0);
  if (rc >= 0) return std::optional<int>(rc);
  if (rc == -EPERM || rc == -ENOENT) return std::optional<int>();
  return UnavailableError(CryptError("checking a key against " + Quoted(path_), rc));
}

bool LuksDevice::Opens(const std::string& passphrase) {
  auto slot = FindKeyslot(passphrase);
  return slot.ok() && slot->has_value();
}

Result<int> LuksDevice::AddKeyslot(const std::string& existing_passphrase,
                                   const std::string& new_passphrase, const PbkdfOptions& pbkdf) {
  if (new_passphrase.empty()) return InvalidArgumentError("empty new passphrase");
  MZ_RETURN_IF_ERROR(SetPbkdf(cd_, pbkdf));
  const int rc = crypt_keyslot_add_by_passphrase(cd_, CRYPT_ANY_SLOT, existing_passphrase.data(),
                                                 existing_passphrase.size(), new_passphrase.data(),
                                                 new_passphrase.size());
  if (rc >= 0) return rc;
  if (rc == -EPERM) {
    return PermissionDeniedError("adding a keyslot to " + Quoted(path_) +
                                 ": the current key opens no keyslot");
  }
  if (rc == -ENOSPC || rc == -EINVAL) {
    return Status(Code::kResourceExhausted, CryptError("adding a keyslot to " + Quoted(path_), rc));
  }
  return UnavailableError(CryptError("adding a keyslot to " + Quoted(path_), rc));
}

Status LuksDevice::DestroyKeyslot(int slot) {
  const int rc = crypt_keyslot_destroy(cd_, slot);
  if (rc < 0) {
    return UnavailableError(
        CryptError("destroying keyslot " + std::to_string(slot) + " of " + Quoted(path_), rc));
  }
  return Status::Ok();
}

int LuksDevice::ActiveKeyslots() {
  int n = 0;
  const int max = crypt_keyslot_max(CRYPT_LUKS2);
  for (int i = 0; i < max; ++i) {
    const crypt_keyslot_info info = crypt_keyslot_status(cd_, i);
    if (info == CRYPT_SLOT_ACTIVE || info == CRYPT_SLOT_ACTIVE_LAST) ++n;
  }
  return n;
}

Status FormatLuks2(const std::string& device, const std::string& passphrase,
                   const PbkdfOptions& pbkdf) {
  InstallCryptsetupLogging();
  crypt_device* raw = nullptr;
  int rc = crypt_init(&raw, device.c_str());
  if (rc < 0) return UnavailableError(CryptError("crypt_init(" + Quoted(device) + ")", rc));
  std::unique_ptr<crypt_device, void (*)(crypt_device*)> cd(raw, &crypt_free);
  MZ_RETURN_IF_ERROR(SetPbkdf(cd.get(), pbkdf));
  crypt_params_luks2 params{};
  params.sector_size = 512;
  rc = crypt_format(cd.get(), CRYPT_LUKS2, "aes", "xts-plain64", nullptr, nullptr, 64, &params);
  if (rc < 0) {
    return UnavailableError(CryptError("crypt_format(" + Quoted(device) + ", LUKS2)", rc));
  }
  rc = crypt_keyslot_add_by_volume_key(cd.get(), CRYPT_ANY_SLOT, nullptr, 0, passphrase.data(),
                                       passphrase.size());
  if (rc < 0) {
    return UnavailableError(CryptError("adding the first keyslot to " + Quoted(device), rc));
  }
  return Status::Ok();
}

std::optional<std::string> PeekLuksUuid(const std::string& path) {
  // LUKS1 and LUKS2 both start with the magic "LUKS\xba\xbe" and keep the UUID, a
  // NUL-terminated string of at most 40 bytes, at offset 168.
  constexpr size_t kUuidOffset = 168;
  constexpr size_t kUuidSize = 40;
  // O_NONBLOCK: a removable drive without a medium must not hold the scan.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return std::nullopt;
  char header[kUuidOffset + kUuidSize] = {};
  size_t got = 0;
  while (got < sizeof(header)) {
    const ssize_t n = ::pread(fd.get(), header + got, sizeof(header) - got, got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<size_t>(n);
  }
  if (std::memcmp(header, "LUKS\xba\xbe", 6) != 0) return std::nullopt;
  const char* uuid = header + kUuidOffset;
  const std::string text(uuid, ::strnlen(uuid, kUuidSize));
  if (text.empty()) return std::nullopt;
  return text;
}

Result<std::string> CryptMappingDevice(const std::string& mapping_name) {
  InstallCryptsetupLogging();
  crypt_device* raw = nullptr;
  const int rc = crypt_init_by_name(&raw, mapping_name.c_str());
  if (rc < 0) {
    return NotFoundError(CryptError("no active dm-crypt mapping " + Quoted(mapping_name), rc));
  }
  std::unique_ptr<crypt_device, void (*)(crypt_device*)> cd(raw, &crypt_free);
  const char* dev = crypt_get_device_name(cd.get());
  if (dev == nullptr || *dev == '\0') {
    return NotFoundError("dm-crypt mapping " + Quoted(mapping_name) + " has no backing device");
  }
  return std::string(dev);
}

}  // namespace mizarmp::keyrotation
