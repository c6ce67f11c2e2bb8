// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/secrets.h"

#include "common/strings.h"

namespace mizarmp::addons {

Status CheckSecrets(const google::protobuf::Map<std::string, std::string>& got,
                    const std::map<std::string, std::string>& expected) {
  for (const auto& [key, want] : expected) {
    auto it = got.find(key);
    if (it == got.end()) {
      return UnauthenticatedError("secrets: " + Quoted(key) + " is missing");
    }
    // The order matters and no test can see it (the result is symmetric): ConstantTimeEqual
    // runs in time that depends only on its first argument, so that must be the request's
    // value, which the caller knows anyway; swapped, the time would reveal the secret's length.
    if (!ConstantTimeEqual(/*given=*/it->second, /*secret=*/want)) {
      return UnauthenticatedError("secrets: " + Quoted(key) + " does not match");
    }
  }
  return Status::Ok();
}

}  // namespace mizarmp::addons
