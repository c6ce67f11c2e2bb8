// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Splits the byte stream of an RFC 7047 connection into whole JSON-RPC messages. ovsdb-server
// sends one JSON object after another with nothing in between to mark where one ends (no
// newline, no length), so the end of a message is found by tracking the nesting depth of
// brackets outside strings. The scan resumes where the last read stopped, so a large reply
// arriving in many reads is scanned once.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/status.h"

namespace mizarmp::ovsdb {

// Bounds on what a peer may send: a reply larger than this, or nested deeper, is refused
// (INTERNAL) rather than buffered or parsed. The largest real reply (every Interface row of a
// busy node, statistics included) is a few MiB; the schema nests five levels at most.
inline constexpr size_t kMaxMessageBytes = size_t{64} << 20;
inline constexpr int kMaxDepth = 64;

class Framer {
 public:
  void Append(const char* data, size_t size) { buf_.append(data, size); }
  // The next whole message's text, nullopt while it is incomplete; INTERNAL when the stream is
  // not a sequence of JSON objects or breaks the bounds above. After an error the stream is
  // lost: the caller drops the connection.
  Result<std::optional<std::string>> Next();

 private:
  std::string buf_;
  size_t pos_ = 0;        // next byte to scan
  bool started_ = false;  // the current message's '{' was seen at buf_[0]
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;  // the previous byte in a string was a backslash
};

}  // namespace mizarmp::ovsdb
