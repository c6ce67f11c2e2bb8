// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Key material in memory: passphrases and keys are held in SecretString, whose bytes are
// overwritten (explicit_bzero, which the compiler may not drop) when it is destroyed, cleared,
// overwritten or moved from, so a key does not linger in freed heap memory or a core dump
// after use. Deliberately no operator<<: a SecretString cannot be logged by accident.
//
// What it cannot reach: copies libraries make (libcryptsetup wipes its own; the gRPC request's
// protobuf string and its wire buffers belong to gRPC).
#pragma once

#include <cstddef>
#include <string>

namespace mizarmp::keyrotation {

// Overwrites every byte `s` owns (its whole capacity, not just its size) with zeros, then
// empties it. The buffer is kept, so nothing unwiped is freed.
void Wipe(std::string& s);

class SecretString {
 public:
  SecretString() = default;
  // Implicit: holds a key. A string moved in is wiped (a short one is copied, not stolen, by a
  // move, so its bytes would stay behind); one copied in stays the caller's to wipe.
  SecretString(std::string&& value);                         // NOLINT(runtime/explicit)
  SecretString(const std::string& value) : value_(value) {}  // NOLINT(runtime/explicit)
  SecretString(const char* value) : value_(value) {}         // NOLINT(runtime/explicit)
  SecretString(const SecretString& other) : value_(other.value_) {}
  SecretString(SecretString&& other) noexcept;
  SecretString& operator=(const SecretString& other);
  SecretString& operator=(SecretString&& other) noexcept;
  ~SecretString() { Wipe(value_); }

  // The bytes, for the functions that take a passphrase (LuksDevice) or encode it (key store).
  operator const std::string&() const { return value_; }  // NOLINT(runtime/explicit)

  bool empty() const { return value_.empty(); }
  size_t size() const { return value_.size(); }
  // Wipes and empties.
  void clear() { Wipe(value_); }

  friend bool operator==(const SecretString& a, const SecretString& b) {
    return a.value_ == b.value_;
  }
  friend bool operator==(const SecretString& a, const std::string& b) { return a.value_ == b; }
  friend bool operator==(const SecretString& a, const char* b) { return a.value_ == b; }

 private:
  std::string value_;
};

}  // namespace mizarmp::keyrotation
