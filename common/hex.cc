// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/hex.h"

namespace mizarmp {

void AppendHexByte(std::string* out, unsigned char byte, HexCase letters) {
  const char* digits = letters == HexCase::kUpper ? "0123456789ABCDEF" : "0123456789abcdef";
  out->push_back(digits[byte >> 4]);
  out->push_back(digits[byte & 0xf]);
}

std::string HexEncoded(const unsigned char* bytes, size_t size, HexCase letters) {
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) AppendHexByte(&out, bytes[i], letters);
  return out;
}

std::string HexEncoded(std::string_view bytes, HexCase letters) {
  return HexEncoded(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), letters);
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> HexDecoded(std::string_view hex) {
  if (hex.size() % 2 != 0) return InvalidArgumentError("hex string of odd length");
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = HexDigitValue(hex[i]);
    const int low = HexDigitValue(hex[i + 1]);
    if (high < 0 || low < 0) return InvalidArgumentError("not a hex string");
    out.push_back(static_cast<char>(high * 16 + low));
  }
  return out;
}

Result<std::string> PercentDecoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const int high = i + 2 < text.size() ? HexDigitValue(text[i + 1]) : -1;
    const int low = high >= 0 ? HexDigitValue(text[i + 2]) : -1;
    if (low < 0) {
      return InvalidArgumentError("'%' at byte " + std::to_string(i) +
                                  " is not followed by two hex digits");
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

}  // namespace mizarmp
