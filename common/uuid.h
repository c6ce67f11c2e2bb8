// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// UUIDs: name-based (RFC 4122 version 5, SHA-1) for deterministic port ids, random (version 4).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp {

// The namespace every mizarmp port id is derived in. Fixed forever: changing it would orphan
// the ports of every attachment made before the change.
inline constexpr std::string_view kPortIdNamespace = "6b1c3f0e-52a4-4c8e-9a57-0d3c2f6e8b41";

// RFC 4122 §4.3 version-5 UUID of `name` in `namespace_uuid`, lower-case canonical text.
Result<std::string> UuidV5(std::string_view namespace_uuid, std::string_view name);
// A random version-4 UUID from the kernel's CSPRNG.
std::string UuidV4();
// True for the canonical 8-4-4-4-12 hex form (either case).
bool IsUuid(std::string_view text);

}  // namespace mizarmp
