// Helpers for the key rotation tests: LUKS2 image files made with libcryptsetup (cheap PBKDF2),
// and checks of which keys open a header.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/fd.h"
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

}  // namespace mizarmp::keyrotation::testing
