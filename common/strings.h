// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Small string helpers every component shares, so no folder grows its own copy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mizarmp {

// `s` in double quotes, for naming a value in an error message.
std::string Quoted(std::string_view s);

// The parts (any range of strings or string_views) with `sep` between them, for listing values
// in a message: Joined(names, ", ").
template <typename Range>
std::string Joined(const Range& parts, std::string_view sep) {
  // Built by appending (see Quoted()).
  std::string out;
  bool first = true;
  for (const auto& part : parts) {
    if (!first) out += sep;
    out += std::string_view(part);
    first = false;
  }
  return out;
}

// At most `limit` of `items` joined with ", ", then how many more there are: for a message that
// names what may be thousands of things.
std::string JoinedAtMost(const std::vector<std::string>& items, size_t limit = 20);

// The parts of `s` between the `sep` characters, empty ones included ("a,,b" -> "a", "", "b";
// "" -> one empty part).
std::vector<std::string> Split(std::string_view s, char sep);

// `url` with any userinfo ("user:password@") replaced by "***@"; anything else is unchanged. How
// a URL appears in logs, error messages and the Identity manifest.
std::string RedactUrl(std::string_view url);

// ASCII lower case (MAC addresses, status words, header names); other bytes are kept.
std::string AsciiLower(std::string_view s);

// `s` without leading and trailing ASCII white space (" \t\r\n\v\f").
std::string Trim(std::string_view s);

// Whether `given` equals `secret`, in a time that depends only on given's length (which whoever
// sent it knows): neither the position of the first difference nor the secret's length shows
// in it. For secrets and tokens.
bool ConstantTimeEqual(std::string_view given, std::string_view secret);

// Whether `s` is well-formed UTF-8 (no stray continuation bytes, cut-off sequences, overlong
// forms, surrogates or code points past U+10FFFF): what a JSON document may carry.
bool IsValidUtf8(std::string_view s);

// `s` made safe to put in one log line, in double quotes: '"' and '\\' escaped, control
// characters as \n, \r, \t or \xNN, and every byte that is not part of valid UTF-8 as \xNN. A
// value from outside (the environment, a controller) can then neither split a log line nor
// forge one.
std::string LogEscaped(std::string_view s);

// The deepest nesting of JSON arrays and objects in `text` (brackets inside strings do not
// count), scanned without parsing. The scan stops as soon as the depth passes `limit` and then
// returns limit + 1, so a hostile document costs at most one pass. Lets a caller refuse a
// document too deep to handle before building a tree of it (a recursive copy, dump or
// destructor of a tree 100,000 levels deep overflows the stack).
size_t JsonNestingDepth(std::string_view text, size_t limit);

// How deep a JSON document read from a file may nest (records, key store, the server's config
// and secrets): far beyond any real one, far below what overflows the stack.
inline constexpr size_t kMaxFileJsonDepth = 64;

// Whether `text` nests deeper than kMaxFileJsonDepth (see JsonNestingDepth).
inline bool TooDeepJson(std::string_view text) {
  return JsonNestingDepth(text, kMaxFileJsonDepth) > kMaxFileJsonDepth;
}

}  // namespace mizarmp
