// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// CNI spec versions this plugin speaks, and comparisons between version strings.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp::cni {

inline constexpr std::array<std::string_view, 5> kSupportedVersions = {"0.3.0", "0.3.1", "0.4.0",
                                                                       "1.0.0", "1.1.0"};
inline constexpr std::string_view kLatestVersion = "1.1.0";
// What a configuration without "cniVersion" means (the spec's original version).
inline constexpr std::string_view kImplicitVersion = "0.1.0";

struct SemVer {
  int major = 0, minor = 0, patch = 0;
  friend auto operator<=>(const SemVer&, const SemVer&) = default;
};

// "X.Y.Z" with decimal components. INVALID_ARGUMENT naming the text otherwise.
Result<SemVer> ParseVersion(std::string_view text);
bool IsSupported(std::string_view version);
// OK for a supported version; INVALID_ARGUMENT naming it and listing the supported ones.
Status CheckSupported(std::string_view version);
// version >= minimum (both must parse; false if either does not).
bool AtLeast(std::string_view version, std::string_view minimum);
// "0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"
std::string SupportedList();
// The VERSION command's answer: {"cniVersion":"1.1.0","supportedVersions":[...]}.
std::string VersionResultJson();
// How the running plugin has its libraries: inside its own file, or the host's shared ones.
enum class Linkage { kStatic, kDynamic };

// What a person running the plugin by hand is told (`--version`, or no CNI_COMMAND), as the
// reference plugins do: "CNI mizarmp plugin 0.1.0 (commit ...)" and a line listing the CNI
// versions it speaks; then the versions of OpenSSL, libnl and glibc it runs on. A static
// plugin carries them in its file, where a host's security updates never reach: the line says
// so, and tells an operator which fixes need a new plugin.
std::string AboutText(Linkage linkage);

}  // namespace mizarmp::cni
