// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Key store files: the input written as a volume's record in a LocalKeyStore directory and read
// by Get and List; HexDecoded on the input. A record that reads must write back (Put) and read
// back the same; hex must round-trip.
#include <cstdint>
#include <memory>
#include <string>

#include "common/hex.h"
#include "keyrotation/keystore.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace keyrotation = mizarmp::keyrotation;
using mizarmp::fuzz::Require;

constexpr const char* kVolume = "pvc-0b9d0c38/vol 1";

mizarmp::fuzz::ScratchDir* g_dir = nullptr;
std::unique_ptr<keyrotation::LocalKeyStore> g_store;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  g_dir = new mizarmp::fuzz::ScratchDir();
  auto store = keyrotation::LocalKeyStore::Open(g_dir->Sub("keys"));
  Require(store.ok(), "harness could not open the key store");
  g_store = std::move(store).value();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(mizarmp::fuzz::AsText(data, size));
  auto decoded = mizarmp::HexDecoded(text);
  if (decoded.ok()) {
    auto again = mizarmp::HexDecoded(mizarmp::HexEncoded(*decoded));
    Require(again.ok() && *again == *decoded, "hex does not round-trip");
  }

  // Start from an empty store: a record Put under another volume id must not pile up.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_store->dir(), ec)) {
    std::filesystem::remove(entry.path(), ec);
  }
  mizarmp::fuzz::WriteFileOrDie(g_store->PathFor(kVolume), text);
  auto keys = g_store->Get(kVolume);
  (void)g_store->List();
  if (keys.ok()) {
    Require(g_store->Put(*keys).ok(), "a record that reads does not write back");
    auto again = g_store->Get(keys->volume_id);
    Require(again.ok() && *again == *keys, "a record changed through write + read");
  }
  return 0;
}
