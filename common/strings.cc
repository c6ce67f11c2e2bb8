// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/strings.h"

#include <algorithm>
#include <cctype>
#include <span>

#include "common/hex.h"

namespace mizarmp {

std::string Quoted(std::string_view s) {
  // Built by appending: g++ 12 at -O3 warns falsely (-Wrestrict, GCC bug 105329) on the
  // equivalent "\"" + std::string(s) + "\"".
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

std::string RedactUrl(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t host_start = scheme + 3;
  const size_t host_end = url.find_first_of("/?#", host_start);
  const std::string_view authority =
      url.substr(host_start, host_end == std::string_view::npos ? std::string_view::npos
                                                                : host_end - host_start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host_start)) + "***" + std::string(url.substr(host_start + at));
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t end = s.find(sep); end != std::string_view::npos; end = s.find(sep, begin)) {
    out.emplace_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  out.emplace_back(s.substr(begin));
  return out;
}

std::string Trim(std::string_view s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return std::string(s.substr(begin, end - begin));
}

bool ConstantTimeEqual(std::string_view given, std::string_view secret) {
  // One pass over `given`: each byte is compared with the secret's byte at the same place (the
  // secret is read cyclically, so no branch depends on where it ends), and the length
  // difference folds into the same accumulator.
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  if (secret.empty()) return given.empty();
  for (size_t i = 0; i < given.size(); ++i) {
    const unsigned char want = static_cast<unsigned char>(secret[i % secret.size()]);
    diff = static_cast<unsigned char>(diff | (static_cast<unsigned char>(given[i]) ^ want));
  }
  return diff == 0;
}

namespace {

// The length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629 table 3-7), 0 if the
// bytes there are not one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return len;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string LogEscaped(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = Utf8SequenceLength(s, i);
    if (len > 1) {
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    ++i;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (len == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      AppendHexByte(&out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

size_t JsonNestingDepth(std::string_view text, size_t limit) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return limit + 1;
      deepest = std::max(deepest, depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::string JoinedAtMost(const std::vector<std::string>& items, size_t limit) {
  if (items.size() <= limit) return Joined(items, ", ");
  std::string out = Joined(std::span(items).first(limit), ", ");
  out += ", ... (" + std::to_string(items.size() - limit) + " more)";
  return out;
}

}  // namespace mizarmp
