#include "common/uuid.h"

#include <openssl/evp.h>
#include <sys/random.h>

#include <array>
#include <cctype>
#include <cstdint>

namespace mizarmp {
namespace {

std::string Format(const uint8_t* b) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 0xf];
  }
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool IsUuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (t[i] != '-') return false;
    } else if (HexValue(t[i]) < 0) {
      return false;
    }
  }
  return true;
}

Result<std::string> UuidV5(std::string_view namespace_uuid, std::string_view name) {
  if (!IsUuid(namespace_uuid)) {
    return InvalidArgumentError("invalid namespace UUID \"" + std::string(namespace_uuid) + "\"");
  }
  std::array<uint8_t, 16> ns{};
  for (size_t i = 0, j = 0; i < namespace_uuid.size(); ++i) {
    if (namespace_uuid[i] == '-') continue;
    ns[j / 2] = static_cast<uint8_t>((ns[j / 2] << 4) | HexValue(namespace_uuid[i]));
    ++j;
  }
  std::string input(reinterpret_cast<const char*>(ns.data()), ns.size());
  input.append(name);
  uint8_t digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &digest_len, EVP_sha1(), nullptr) != 1 ||
      digest_len < 16) {
    return InternalError("SHA-1 digest failed");
  }
  digest[6] = static_cast<uint8_t>((digest[6] & 0x0f) | 0x50);  // version 5
  digest[8] = static_cast<uint8_t>((digest[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return Format(digest);
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
