// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/driver.h"

#include <cctype>
#include <string>

namespace mizarmp::addons {
namespace {

constexpr size_t kMaxDriverName = 63;

bool IsAlnum(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; }

}  // namespace

std::string_view ModeName(Mode mode) { return mode == Mode::kNode ? "node" : "controller"; }

Status ValidateDriverName(std::string_view name) {
  const std::string quoted = "drivername " + Quoted(name);
  if (name.empty()) return InvalidArgumentError("drivername: must not be empty");
  if (name.size() > kMaxDriverName) {
    return InvalidArgumentError(quoted + ": " + std::to_string(name.size()) +
                                " characters, at most 63 allowed");
  }
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) {
    return InvalidArgumentError(quoted + ": must begin and end with a letter or digit");
  }
  for (char ch : name) {
    if (!IsAlnum(ch) && ch != '-' && ch != '.') {
      return InvalidArgumentError(quoted + ": character '" + std::string(1, ch) +
                                  "' not allowed (only letters, digits, '-' and '.')");
    }
  }
  return Status::Ok();
}

}  // namespace mizarmp::addons
