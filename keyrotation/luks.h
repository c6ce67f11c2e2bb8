// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A LUKS2 header through libcryptsetup (no cryptsetup binary is ever run).
//
// Passphrases are opaque bytes; nothing here logs them. libcryptsetup's own messages are routed
// to MZ_LOG (errors as warnings, the rest at debug); it never prints passphrases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

struct crypt_device;

namespace mizarmp::keyrotation {

// How new keyslots derive their key from the passphrase. Production uses libcryptsetup's
// defaults (argon2id, benchmarked); tests ask for cheap PBKDF2 so each keyslot costs
// milliseconds.
struct PbkdfOptions {
  bool use_defaults = true;
  uint32_t pbkdf2_iterations = 1000;  // when !use_defaults: PBKDF2-SHA256, no benchmark

  static PbkdfOptions CheapForTests(uint32_t iterations = 1000) { return {false, iterations}; }
};

class LuksDevice {
 public:
  // Loads the header on `device` (a block device or an image file). NOT_FOUND when the path
  // does not exist; FAILED_PRECONDITION saying "not a LUKS2 device" (or that it is LUKS1)
  // when the header is not LUKS2.
  static Result<LuksDevice> Open(const std::string& device);

  LuksDevice(LuksDevice&& other) noexcept;
  LuksDevice& operator=(LuksDevice&& other) noexcept;
  LuksDevice(const LuksDevice&) = delete;
  LuksDevice& operator=(const LuksDevice&) = delete;
  ~LuksDevice();

  const std::string& path() const { return path_; }

  // The header's UUID (what /dev/disk/by-uuid names it by); it survives a rename of the device
  // node or the image file, so the key store records it to find the volume again.
  std::string Uuid() const;

  // The keyslot `passphrase` opens, or nullopt when it opens none (checked against the header,
  // nothing activated). Errors are failures to check: INVALID_ARGUMENT for an empty
  // passphrase, UNAVAILABLE from libcryptsetup.
  Result<std::optional<int>> FindKeyslot(const std::string& passphrase);

  // Whether `passphrase` is known to open a keyslot: false when it opens none and also when
  // the check fails, for decisions that may only rely on a key that was seen to open.
  bool Opens(const std::string& passphrase);

  // Adds a keyslot for `new_passphrase`, unlocked with `existing_passphrase`. Returns the slot.
  Result<int> AddKeyslot(const std::string& existing_passphrase, const std::string& new_passphrase,
                         const PbkdfOptions& pbkdf);

  // Wipes a keyslot.
  Status DestroyKeyslot(int slot);

  // For tests: the number of active keyslots. The rotation tracks its slots by number and never
  // counts them; a test counts them to show that no slot was left behind, and that needs the
  // open crypt_device this class keeps to itself.
  int ActiveKeyslots();

 private:
  LuksDevice(crypt_device* cd, std::string path) : cd_(cd), path_(std::move(path)) {}
  crypt_device* cd_ = nullptr;
  std::string path_;
};

// For tests: writes a fresh LUKS2 header (aes-xts-plain64, random volume key) with one keyslot
// for `passphrase` onto `device`. The rotation never formats anything; it stays beside
// LuksDevice so that the one place linking libcryptsetup also makes the images tests rotate.
Status FormatLuks2(const std::string& device, const std::string& passphrase,
                   const PbkdfOptions& pbkdf);

// The device underneath an active device-mapper crypt mapping (e.g. "luks-abc" for
// /dev/mapper/luks-abc). NOT_FOUND when no such mapping is active.
Result<std::string> CryptMappingDevice(const std::string& mapping_name);

// The UUID in the LUKS (1 or 2) binary header at the start of `path`, read directly (no
// libcryptsetup, so scanning devices that are not LUKS logs nothing); nullopt when `path`
// cannot be read or has no LUKS header. Only a hint: LuksDevice::Open() and Uuid() confirm it.
std::optional<std::string> PeekLuksUuid(const std::string& path);

// Routes libcryptsetup's messages to MZ_LOG. Idempotent; called by the functions above.
void InstallCryptsetupLogging();

}  // namespace mizarmp::keyrotation
