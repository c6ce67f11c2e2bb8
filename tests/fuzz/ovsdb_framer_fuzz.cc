// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// ovsdb-server's byte stream (ovsdb/framer.h): the input, read by the connection in pieces whose
// sizes its first byte chooses, is split into messages, each then parsed as the connection does.
// Reading it whole or in pieces must give the same messages, and no message may pass the bounds.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ovsdb/framer.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using mizarmp::fuzz::Require;
using mizarmp::ovsdb::Framer;

// The messages of `text` given to a Framer `piece` bytes at a time (0: all at once), and whether
// the stream ended in an error.
std::vector<std::string> Frame(std::string_view text, size_t piece, bool* failed) {
  Framer framer;
  std::vector<std::string> messages;
  *failed = false;
  size_t at = 0;
  do {
    const size_t n = piece == 0 ? text.size() : std::min(piece, text.size() - at);
    framer.Append(text.data() + at, n);
    at += n;
    for (;;) {
      auto next = framer.Next();
      if (!next.ok()) {
        *failed = true;
        return messages;
      }
      if (!next->has_value()) break;
      Require((*next)->size() <= mizarmp::ovsdb::kMaxMessageBytes, "a message past the bound");
      messages.push_back(std::move(**next));
    }
  } while (at < text.size());
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 16;
  std::string_view text = mizarmp::fuzz::AsText(data + 1, size - 1);
  bool whole_failed = false;
  bool pieces_failed = false;
  const std::vector<std::string> whole = Frame(text, 0, &whole_failed);
  const std::vector<std::string> pieces = Frame(text, piece, &pieces_failed);
  Require(whole == pieces, "reading in pieces changed the messages");
  Require(whole_failed == pieces_failed, "reading in pieces changed whether the stream failed");
  for (const std::string& message : whole) {
    Require(!message.empty() && message.front() == '{', "a message that is not an object");
    (void)mizarmp::fuzz::ParseJson(message);
  }
  return 0;
}
