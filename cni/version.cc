// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/version.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/version.h"
#include "mizarmp-client/transport.h"
#include "netns/netns.h"

namespace mizarmp::cni {

Result<SemVer> ParseVersion(std::string_view text) {
  SemVer v;
  int* parts[3] = {&v.major, &v.minor, &v.patch};
  std::string_view rest = text;
  for (int i = 0; i < 3; ++i) {
    size_t end = i < 2 ? rest.find('.') : rest.size();
    if (end == std::string_view::npos || end == 0) break;
    std::string_view num = rest.substr(0, end);
    // from_chars takes a leading '-'; a version component is digits only.
    if (num.front() < '0' || num.front() > '9') break;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), *parts[i]);
    if (ec != std::errc() || ptr != num.data() + num.size()) break;
    if (i == 2) return v;
    rest.remove_prefix(end + 1);
  }
  return InvalidArgumentError(Quoted(text) + " is not a version (want X.Y.Z)");
}

bool IsSupported(std::string_view version) {
  for (auto v : kSupportedVersions) {
    if (v == version) return true;
  }
  return false;
}

std::string SupportedList() { return Joined(kSupportedVersions, ", "); }

std::string AboutText(Linkage linkage) {
  const std::string libraries =
      client::TlsLibraryVersion() + ", " + netns::NetlinkLibraryVersion() + ", " + LibcVersion();
  return "CNI mizarmp plugin " + std::string(Version()) + " (commit " + std::string(GitCommit()) +
         ")\nCNI protocol versions supported: " + SupportedList() + "\n" +
         (linkage == Linkage::kStatic
              ? "Linked into this file (a host's updates of them do not reach it): "
              : "Linked with the host's: ") +
         libraries + "\n";
}

Status CheckSupported(std::string_view version) {
  if (IsSupported(version)) return Status::Ok();
  return InvalidArgumentError("CNI version " + std::string(version) +
                              " is not supported (supported: " + SupportedList() + ")");
}

bool AtLeast(std::string_view version, std::string_view minimum) {
  auto a = ParseVersion(version);
  auto b = ParseVersion(minimum);
  return a.ok() && b.ok() && *a >= *b;
}

std::string VersionResultJson() {
  nlohmann::json versions = nlohmann::json::array();
  for (auto v : kSupportedVersions) versions.push_back(std::string(v));
  return nlohmann::json{{"cniVersion", std::string(kLatestVersion)},
                        {"supportedVersions", std::move(versions)}}
      .dump();
}

}  // namespace mizarmp::cni
