// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/etcd/index_records.h"

#include <openssl/evp.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "common/field_errors.h"
#include "common/hex.h"
#include "common/json_fields.h"
#include "fence/address_key.h"

namespace mizarmp::fence {

namespace {

using nlohmann::json;

// The publication times read back: those a system_clock time point holds without overflow
// (about 292 years either side of 1970 with libstdc++'s nanoseconds).
constexpr int64_t kMaxUnixMillis = std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::duration::max())
                                       .count();

constexpr FieldErrors kRecordFields{Code::kDataLoss, nullptr};

// Which bytes of a port id stand for themselves in a key: printable ASCII but the separator
// '/' and the escape '%'. The rest are percent-encoded, so a key splits back into its parts and
// a node record, which names entries in JSON, holds only ASCII.
bool KeptInKey(unsigned char byte) {
  return byte > ' ' && byte < 0x7f && byte != '/' && byte != '%';
}

}  // namespace

std::string EntryName(const AddressedPort& port) {
  return HexEncoded(AddressKey(port.ip)) + "/" + PercentEncoded(port.port_id, KeptInKey);
}

Result<IndexedPort> EntryFromKeyName(std::string_view name) {
  const size_t address_end = name.find('/');
  if (address_end == std::string_view::npos) return DataLossError("no port id after the address");
  const size_t port_end = name.find('/', address_end + 1);
  if (port_end == std::string_view::npos) return DataLossError("no node after the port id");
  const std::string_view hex = name.substr(0, address_end);
  auto bytes = HexDecoded(hex);
  // Only the lower-case spelling sorts where its address does.
  if (!bytes.ok() || HexEncoded(*bytes) != hex) return DataLossError("the address is not hex");
  MZ_ASSIGN_OR_RETURN(const IpAddress ip, AddressFromKey(*bytes));
  auto port_id = PercentDecoded(name.substr(address_end + 1, port_end - address_end - 1));
  if (!port_id.ok() || port_id->empty()) return DataLossError("the port id is not encoded");
  std::string node(name.substr(port_end + 1));
  if (node.empty()) return DataLossError("no node after the port id");
  return IndexedPort{ip, std::move(*port_id), std::move(node)};
}

std::string RecordText(int64_t at_ms, const std::vector<std::string>& entries) {
  return json{{"at_ms", at_ms}, {"entries", entries}}.dump();
}

std::string PartialRecordText(int64_t at_ms, const std::vector<std::string>& entries) {
  return json{{"at_ms", at_ms}, {"entries", entries}, {"partial", true}}.dump();
}

Status ParseRecord(const std::string& value, NodeRecord& out) {
  json doc;
  if (!TooDeepJson(value)) doc = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return DataLossError("not a JSON object");
  const JsonFields fields(doc, kRecordFields);
  MZ_ASSIGN_OR_RETURN(out.at_ms, fields.RequiredInt("at_ms", -kMaxUnixMillis, kMaxUnixMillis));
  MZ_RETURN_IF_ERROR(fields.Strings("entries", &out.entries));
  return fields.Bool("partial", &out.partial);
}

std::string LeaseText(int64_t at_ms, size_t entries, const std::string& digest, int64_t of,
                      const std::string& enforced) {
  json doc{{"at_ms", at_ms}, {"entries", entries}};
  if (!digest.empty()) doc["digest"] = digest;
  if (of != 0) doc["of"] = of;
  if (!enforced.empty()) doc["enforced"] = enforced;
  return doc.dump();
}

Status ParseLease(const std::string& value, LeaseRecord& out) {
  json doc;
  if (!TooDeepJson(value)) doc = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return DataLossError("not a JSON object");
  const JsonFields fields(doc, kRecordFields);
  MZ_ASSIGN_OR_RETURN(out.at_ms, fields.RequiredInt("at_ms", -kMaxUnixMillis, kMaxUnixMillis));
  MZ_ASSIGN_OR_RETURN(out.entries,
                      fields.RequiredInt("entries", 0, std::numeric_limits<int64_t>::max()));
  MZ_RETURN_IF_ERROR(fields.String("digest", &out.digest));
  MZ_RETURN_IF_ERROR(fields.String("enforced", &out.enforced));
  return fields.Int("of", int64_t{0}, std::numeric_limits<int64_t>::max(), &out.of);
}

bool DescribesNodeKey(const LeaseRecord& lease, int64_t node_revision) {
  if (lease.revision == 0 || lease.digest.empty() || node_revision == 0) return false;
  return (lease.of != 0 ? lease.of : lease.revision) == node_revision;
}

std::string SetDigest(const std::set<std::string>& names) {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  bool ok = context != nullptr && EVP_DigestInit_ex(context, EVP_sha256(), nullptr) == 1;
  for (const std::string& name : names) {
    ok = ok && EVP_DigestUpdate(context, name.data(), name.size()) == 1 &&
         EVP_DigestUpdate(context, "\n", 1) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(context, digest, &size) == 1;
  EVP_MD_CTX_free(context);
  // Without a digest a renewal takes the long way, which is always right.
  return ok ? HexEncoded(digest, size) : std::string();
}

std::chrono::system_clock::time_point FromUnixMillis(int64_t at_ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(at_ms));
}

int64_t ToUnixMillis(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

}  // namespace mizarmp::fence
