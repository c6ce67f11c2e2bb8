// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Helpers for the key rotation tests: LUKS2 image files made with libcryptsetup (cheap PBKDF2),
// loop devices over them, checks of which keys open a header and how a keyslot derives its
// key, and RotationHooks a test fills in.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <libcryptsetup.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "common/fd.h"
#include "keyrotation/hooks.h"
#include "keyrotation/luks.h"

namespace mizarmp::keyrotation::testing {

// A sparse image file large enough for a LUKS2 header (16 MiB of metadata and keyslots) and a
// little data.
inline void MakeImageFile(const std::string& path, off_t size = 20 << 20) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid()) << path;
  ASSERT_EQ(::ftruncate(fd.get(), size), 0) << path;
}

// An image with a LUKS2 header whose only keyslot opens with `passphrase`.
inline void MakeLuksImage(const std::string& path, const std::string& passphrase) {
  MakeImageFile(path);
  const Status s = FormatLuks2(path, passphrase, PbkdfOptions::CheapForTests());
  ASSERT_TRUE(s.ok()) << s.ToString();
}

// `image` attached to a free loop device (root and the loop driver), detached when this is
// destroyed or the process dies (LO_FLAGS_AUTOCLEAR). device() is empty and error() says why
// when it could not be attached.
class ScopedLoopDevice {
 public:
  explicit ScopedLoopDevice(const std::string& image) {
    if (::geteuid() != 0) {
      error_ = "not root";
      return;
    }
    UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
    if (!control.valid()) {
      error_ = std::string("/dev/loop-control: ") + std::strerror(errno);
      return;
    }
    UniqueFd backing(::open(image.c_str(), O_RDWR | O_CLOEXEC));
    if (!backing.valid()) {
      error_ = image + ": " + std::strerror(errno);
      return;
    }
    for (int attempt = 0; attempt < 16; ++attempt) {  // another process may take the free one
      const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
      if (n < 0) {
        error_ = std::string("LOOP_CTL_GET_FREE: ") + std::strerror(errno);
        return;
      }
      const std::string device = "/dev/loop" + std::to_string(n);
      UniqueFd fd(::open(device.c_str(), O_RDWR | O_CLOEXEC));
      if (!fd.valid()) {
        error_ = device + ": " + std::strerror(errno);
        return;
      }
      if (::ioctl(fd.get(), LOOP_SET_FD, backing.get()) != 0) {
        if (errno == EBUSY) continue;
        error_ = "LOOP_SET_FD " + device + ": " + std::strerror(errno);
        return;
      }
      loop_info64 info{};
      info.lo_flags = LO_FLAGS_AUTOCLEAR;
      if (::ioctl(fd.get(), LOOP_SET_STATUS64, &info) != 0) {
        error_ = "LOOP_SET_STATUS64 " + device + ": " + std::strerror(errno);
        ::ioctl(fd.get(), LOOP_CLR_FD, 0);
        return;
      }
      fd_ = std::move(fd);
      device_ = device;
      return;
    }
    error_ = "no free loop device";
  }
  ~ScopedLoopDevice() {
    if (fd_.valid()) ::ioctl(fd_.get(), LOOP_CLR_FD, 0);
  }
  ScopedLoopDevice(const ScopedLoopDevice&) = delete;
  ScopedLoopDevice& operator=(const ScopedLoopDevice&) = delete;

  const std::string& device() const { return device_; }
  const std::string& error() const { return error_; }

 private:
  UniqueFd fd_;
  std::string device_;
  std::string error_;
};

// Whether `key` opens the LUKS2 header of `path` (a fresh libcryptsetup context each time).
inline bool Opens(const std::string& path, const std::string& key) {
  auto luks = LuksDevice::Open(path);
  if (!luks.ok()) return false;
  return luks->Opens(key);
}

inline int ActiveKeyslots(const std::string& path) {
  auto luks = LuksDevice::Open(path);
  if (!luks.ok()) return -1;
  return luks->ActiveKeyslots();
}

// How a keyslot derives its key: the PBKDF type ("pbkdf2", "argon2id", ...) and its cost.
struct KeyslotKdf {
  std::string type;
  uint32_t iterations = 0;
};

// How the keyslot `key` opens on the LUKS2 header of `path` derives its key, read through
// libcryptsetup (crypt_keyslot_get_pbkdf); nullopt when the header or the keyslot cannot be read.
inline std::optional<KeyslotKdf> KeyslotPbkdf(const std::string& path, const std::string& key) {
  crypt_device* cd = nullptr;
  if (crypt_init(&cd, path.c_str()) < 0) return std::nullopt;
  std::optional<KeyslotKdf> result;
  if (crypt_load(cd, CRYPT_LUKS2, nullptr) == 0) {
    const int slot =
        crypt_activate_by_passphrase(cd, nullptr, CRYPT_ANY_SLOT, key.data(), key.size(), 0);
    crypt_pbkdf_type pbkdf{};
    // pbkdf.type points into `cd`: copied before crypt_free.
    if (slot >= 0 && crypt_keyslot_get_pbkdf(cd, slot, &pbkdf) == 0 && pbkdf.type != nullptr) {
      result = KeyslotKdf{pbkdf.type, pbkdf.iterations};
    }
  }
  crypt_free(cd);
  return result;
}

// RotationHooks whose behaviour the test sets: `after_step` runs after each step (e.g. to
// watch the store or hold a rotation open), `pbkdf` replaces the rotator's for new keyslots.
struct CallbackHooks final : RotationHooks {
  std::function<void(Step, const std::string&)> after_step;
  std::optional<PbkdfOptions> pbkdf;

  void AfterStep(Step step, const std::string& volume_id) override {
    if (after_step) after_step(step, volume_id);
  }
  std::optional<PbkdfOptions> NewKeyslotPbkdf() const override { return pbkdf; }
};

}  // namespace mizarmp::keyrotation::testing
