// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/secret.h"

#include <string.h>

#include <utility>

namespace mizarmp::keyrotation {

void Wipe(std::string& s) {
  // data() has capacity() + 1 bytes (the terminator), whether on the heap or inline.
  ::explicit_bzero(s.data(), s.capacity());
  s.clear();
}

SecretString::SecretString(std::string&& value) : value_(std::move(value)) {
  // A short string is copied, not stolen, by the move: its bytes are still in `value`.
  Wipe(value);
}

SecretString::SecretString(SecretString&& other) noexcept : value_(std::move(other.value_)) {
  // A short string is copied, not stolen, by the move: its bytes are still in `other`.
  Wipe(other.value_);
}

SecretString& SecretString::operator=(const SecretString& other) {
  if (this != &other) {
    Wipe(value_);
    value_ = other.value_;
  }
  return *this;
}

SecretString& SecretString::operator=(SecretString&& other) noexcept {
  if (this != &other) {
    Wipe(value_);
    value_ = std::move(other.value_);
    Wipe(other.value_);
  }
  return *this;
}

}  // namespace mizarmp::keyrotation
