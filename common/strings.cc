#include "common/strings.h"

#include <cctype>

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

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
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

}  // namespace mizarmp
