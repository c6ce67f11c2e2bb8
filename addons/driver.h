// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the CSI-Addons driver mizarmp-addons presents itself as: its name and its mode. The mode
// decides which services the server runs (controller: FenceController; node:
// EncryptionKeyRotationController) and which service type Identity advertises.
#pragma once

#include <string_view>

#include "common/status.h"

namespace mizarmp::addons {

inline constexpr const char* kDefaultDriverName = "mizarmp.csi-addons.mizar.io";

enum class Mode { kController, kNode };

// "controller" | "node", as the configuration and the Identity manifest spell it.
std::string_view ModeName(Mode mode);

// The CSI-Addons driver-name rules: domain-name notation, at most 63 characters, a letter or
// digit at both ends, only letters, digits, '-' and '.'. INVALID_ARGUMENT saying which rule
// `name` breaks.
Status ValidateDriverName(std::string_view name);

}  // namespace mizarmp::addons
