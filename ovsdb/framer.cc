// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "ovsdb/framer.h"

#include "common/hex.h"

namespace mizarmp::ovsdb {

namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

Result<std::optional<std::string>> Framer::Next() {
  if (!started_) {
    // Whitespace between messages is allowed (RFC 8259); anything but an object is not a
    // JSON-RPC message.
    size_t skip = 0;
    while (skip < buf_.size() && IsJsonSpace(buf_[skip])) ++skip;
    buf_.erase(0, skip);
    if (buf_.empty()) return std::optional<std::string>();
    if (buf_[0] != '{') {
      return InternalError("the peer sent something that is not a JSON object (first byte 0x" +
                           HexEncoded(buf_.substr(0, 1)) + ")");
    }
    started_ = true;
    depth_ = 0;
    pos_ = 0;
    in_string_ = false;
    escaped_ = false;
  }
  for (; pos_ < buf_.size(); ++pos_) {
    const char c = buf_[pos_];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      if (++depth_ > kMaxDepth) {
        return InternalError("a message nests deeper than " + std::to_string(kMaxDepth) +
                             " levels");
      }
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        std::string message = buf_.substr(0, pos_ + 1);
        buf_.erase(0, pos_ + 1);
        started_ = false;
        pos_ = 0;
        return std::optional<std::string>(std::move(message));
      }
    }
  }
  if (buf_.size() > kMaxMessageBytes) {
    return InternalError("a message is larger than " + std::to_string(kMaxMessageBytes >> 20) +
                         " MiB");
  }
  return std::optional<std::string>();
}

}  // namespace mizarmp::ovsdb
