// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// keyrotation/secret.h: key material is overwritten, not just freed. Each check reads a buffer
// the string still owns after the wipe (Wipe keeps the buffer; a moved-from string keeps its
// inline one), so it sees exactly what a later reader of that memory would.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "keyrotation/keystore.h"
#include "keyrotation/secret.h"

namespace mizarmp::keyrotation {
namespace {

// Whether the `n` bytes at `p` are all zero.
bool AllZero(const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != '\0') return false;
  }
  return true;
}

// The string a SecretString holds, through the conversion the product's callers use.
const std::string& Held(const SecretString& secret) { return secret; }

TEST(KeyRotSecret, WipeZeroesTheWholeBufferNotJustTheSize) {
  for (size_t length : {5, 100}) {  // inline (short string) and on the heap
    SCOPED_TRACE(length);
    std::string s(length, 'k');
    s.resize(length / 2);  // the rest of the key is still in the buffer, past size()
    const char* buffer = s.data();
    const size_t capacity = s.capacity();
    Wipe(s);
    EXPECT_TRUE(s.empty());
    ASSERT_EQ(s.data(), buffer) << "the buffer was given back instead of wiped";
    EXPECT_TRUE(AllZero(buffer, capacity));
  }
}

TEST(KeyRotSecret, ClearWipes) {
  SecretString key(std::string(64, 'k'));
  const char* buffer = Held(key).data();
  const size_t capacity = Held(key).capacity();
  key.clear();
  EXPECT_TRUE(key.empty());
  ASSERT_EQ(Held(key).data(), buffer);
  EXPECT_TRUE(AllZero(buffer, capacity));
}

// A short key lives inside the string object and a move copies it: the source is wiped.
TEST(KeyRotSecret, MovesLeaveNoCopyBehind) {
  SecretString a("short-key");
  const char* inline_a = Held(a).data();
  SecretString b(std::move(a));
  EXPECT_EQ(b, "short-key");
  EXPECT_TRUE(AllZero(inline_a, 9));

  SecretString c;
  c = std::move(b);
  EXPECT_EQ(c, "short-key");
  EXPECT_TRUE(AllZero(Held(b).data(), 9));  // NOLINT(bugprone-use-after-move): checked on purpose

  std::string plain = "short-key";
  const char* inline_plain = plain.data();
  SecretString d(std::move(plain));
  EXPECT_EQ(d, "short-key");
  EXPECT_TRUE(AllZero(inline_plain, 9));
}

// Overwriting a key wipes the old one in place first.
TEST(KeyRotSecret, AssignmentWipesTheOldValue) {
  SecretString key(std::string(40, 'o'));
  const char* buffer = Held(key).data();
  key = SecretString("n");
  EXPECT_EQ(key, "n");
  // A short value is copied into the buffer the string already has (libstdc++), so the rest of
  // that buffer is what is left of the old key.
  ASSERT_EQ(Held(key).data(), buffer);
  EXPECT_TRUE(AllZero(buffer + 1, 39));
}

// The key store's record holds its keys as SecretString; comparisons and conversions work as
// on strings.
TEST(KeyRotSecret, VolumeKeysHoldSecrets) {
  VolumeKeys keys{"vol", "/dev/sdz", "current-key", std::string("pending"), ""};
  EXPECT_EQ(keys.current, "current-key");
  EXPECT_EQ(keys.pending, std::string("pending"));
  EXPECT_TRUE(keys.previous.empty());
  const std::string& bytes = keys.current;
  EXPECT_EQ(bytes.size(), 11u);
}

}  // namespace
}  // namespace mizarmp::keyrotation
