// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Attachment records: RecordFromJson on the input, and the input as the file on disk read back
// through RecordStore (Find, Read, List, ListAll) and RecordCache, as the plugin and the fencing
// server read it. A record that parses must print (RecordToJson) and read back the same.
#include <cstdint>
#include <memory>
#include <string>

#include "records/cache.h"
#include "records/records.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using mizarmp::fuzz::Require;
namespace records = mizarmp::records;

constexpr const char* kNetwork = "fuzznet";
constexpr const char* kContainer = "c0ffee";
constexpr const char* kIfname = "eth0";

mizarmp::fuzz::ScratchDir* g_dir = nullptr;

void CheckRoundTrip(const records::Record& record) {
  nlohmann::json printed = records::RecordToJson(record);
  (void)printed.dump();
  auto again = records::RecordFromJson(printed);
  Require(again.ok(), "a printed record does not read back");
  Require(again->port_id == record.port_id && again->container_id == record.container_id &&
              again->ifname == record.ifname && again->ips == record.ips &&
              again->state == record.state && again->mac == record.mac,
          "a record changed through print + read");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  g_dir = new mizarmp::fuzz::ScratchDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = mizarmp::fuzz::AsText(data, size);
  nlohmann::json doc = mizarmp::fuzz::ParseJson(text);
  if (!doc.is_discarded()) {
    auto record = records::RecordFromJson(doc);
    if (record.ok()) CheckRoundTrip(*record);
  }

  g_dir->Clear();
  records::RecordStore store(g_dir->path());
  {
    auto lock = store.Lock(kNetwork, kContainer, kIfname);
    Require(lock.ok(), "harness could not create the network directory");
  }
  mizarmp::fuzz::WriteFileOrDie(store.RecordPath(kNetwork, kContainer, kIfname), text);
  auto found = store.Find(kNetwork, kContainer, kIfname);
  Require(found.ok(), "Find failed on a readable file");
  auto read = store.Read(kNetwork, kContainer, kIfname);
  Require(read.ok() == found->valid(), "Read and Find disagree");
  if (found->valid()) CheckRoundTrip(found->record);
  (void)store.List(kNetwork);
  (void)store.ListAll();
  records::RecordCache cache(g_dir->path());
  (void)cache.Snapshot();
  return 0;
}
