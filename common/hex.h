// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Hexadecimal digits: bytes as hex text and back, and percent-encoding (RFC 3986 §2.1), so that
// every folder spells a byte the same way and reads one back with the same checks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp {

// Which letters stand for 10..15. Digests and ids are lower case; percent-encoding is upper
// case (what RFC 3986 recommends, and what names already on disk use).
enum class HexCase { kLower, kUpper };

// Appends the two digits of `byte`, high nibble first.
void AppendHexByte(std::string* out, unsigned char byte, HexCase letters = HexCase::kLower);

// Every byte as two digits: "\x01\xab" -> "01ab".
std::string HexEncoded(std::string_view bytes, HexCase letters = HexCase::kLower);
std::string HexEncoded(const unsigned char* bytes, size_t size, HexCase letters = HexCase::kLower);

// 0..15 for a hex digit of either case, -1 for any other character.
int HexDigitValue(char c);
inline bool IsHexDigit(char c) { return HexDigitValue(c) >= 0; }

// The bytes two digits each (either case) spell. INVALID_ARGUMENT for an odd length or a
// character that is not a hex digit; the message does not quote the text, which may be a key.
Result<std::string> HexDecoded(std::string_view hex);

// `text` with every byte that `keep` refuses written as "%XX" (upper case).
template <typename KeepByte>
std::string PercentEncoded(std::string_view text, KeepByte keep) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (keep(byte)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      AppendHexByte(&out, byte, HexCase::kUpper);
    }
  }
  return out;
}

// `text` with each "%XX" (either case) replaced by its byte. INVALID_ARGUMENT for a '%' that
// two hex digits do not follow.
Result<std::string> PercentDecoded(std::string_view text);

}  // namespace mizarmp
