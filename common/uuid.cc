// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/uuid.h"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>

#include "common/hex.h"

namespace mizarmp {
namespace {

std::string Format(const uint8_t* b) {
  std::string s;
  s.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    AppendHexByte(&s, b[i]);
  }
  return s;
}

// SHA-1 (FIPS 180-4 §6.1), for version-5 UUIDs only: not used for anything that needs a secure
// hash. Kept here rather than taken from OpenSSL because an EVP digest makes OpenSSL 3 set up its
// library context and fetch the algorithm from a provider, which costs the plugin's short-lived
// process ~0.4 ms and 3 M instructions per ADD/DEL for 64 bytes of input.
class Sha1 {
 public:
  void Update(const uint8_t* p, size_t n) {
    total_ += n;
    while (n > 0) {
      const size_t take = std::min(n, sizeof(block_) - used_);
      std::memcpy(block_ + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
      if (used_ == sizeof(block_)) {
        Compress();
        used_ = 0;
      }
    }
  }

  std::array<uint8_t, 20> Final() {
    const uint64_t bits = total_ * 8;
    const uint8_t pad = 0x80;
    Update(&pad, 1);
    const uint8_t zero = 0;
    while (used_ != 56) Update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    Update(len, sizeof(len));
    std::array<uint8_t, 20> out{};
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
    }
    return out;
  }

 private:
  static uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

  void Compress() {
    uint32_t w[80];
    for (int t = 0; t < 16; ++t) {
      w[t] = (uint32_t{block_[4 * t]} << 24) | (uint32_t{block_[4 * t + 1]} << 16) |
             (uint32_t{block_[4 * t + 2]} << 8) | uint32_t{block_[4 * t + 3]};
    }
    for (int t = 16; t < 80; ++t) w[t] = Rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (int t = 0; t < 80; ++t) {
      uint32_t f, k;
      if (t < 20) {
        f = (b & c) | (~b & d);
        k = 0x5a827999;
      } else if (t < 40) {
        f = b ^ c ^ d;
        k = 0x6ed9eba1;
      } else if (t < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d;
        k = 0xca62c1d6;
      }
      const uint32_t tmp = Rotl(a, 5) + f + e + k + w[t];
      e = d;
      d = c;
      c = Rotl(b, 30);
      b = a;
      a = tmp;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
  }

  uint32_t h_[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  uint8_t block_[64] = {};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

bool IsUuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (t[i] != '-') return false;
    } else if (!IsHexDigit(t[i])) {
      return false;
    }
  }
  return true;
}

Result<std::string> UuidV5(std::string_view namespace_uuid, std::string_view name) {
  if (!IsUuid(namespace_uuid)) {
    return InvalidArgumentError("invalid namespace UUID " + Quoted(namespace_uuid));
  }
  std::array<uint8_t, 16> ns{};
  for (size_t i = 0, j = 0; i < namespace_uuid.size(); ++i) {
    if (namespace_uuid[i] == '-') continue;
    ns[j / 2] = static_cast<uint8_t>((ns[j / 2] << 4) | HexDigitValue(namespace_uuid[i]));
    ++j;
  }
  Sha1 sha;
  sha.Update(ns.data(), ns.size());
  sha.Update(reinterpret_cast<const uint8_t*>(name.data()), name.size());
  std::array<uint8_t, 20> digest = sha.Final();
  digest[6] = static_cast<uint8_t>((digest[6] & 0x0f) | 0x50);  // version 5
  digest[8] = static_cast<uint8_t>((digest[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return Format(digest.data());
}

std::string UuidV4() {
  uint8_t b[16];
  size_t got = 0;
  while (got < sizeof(b)) {
    ssize_t n = ::getrandom(b + got, sizeof(b) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);
  return Format(b);
}

}  // namespace mizarmp
