// Small string helpers every component shares, so no folder grows its own copy.
#pragma once

#include <string>
#include <string_view>

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

// ASCII lower case (MAC addresses, status words, header names); other bytes are kept.
std::string AsciiLower(std::string_view s);

// `s` without leading and trailing ASCII white space (" \t\r\n\v\f").
std::string Trim(std::string_view s);

// Whether `given` equals `secret`, in a time that depends only on given's length (which whoever
// sent it knows): neither the position of the first difference nor the secret's length shows
// in it. For secrets and tokens.
bool ConstantTimeEqual(std::string_view given, std::string_view secret);

}  // namespace mizarmp
