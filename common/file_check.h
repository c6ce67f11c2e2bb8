// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Whether a file a configuration key names can be read, checked when the configuration is, so a
// typo fails at start-up naming the key rather than at first use.
#pragma once

#include <string>

#include "common/status.h"

namespace mizarmp {

// OK for an empty `path` (the key is unset) or a readable file; else INVALID_ARGUMENT
// "KEY: cannot read "PATH": REASON".
Status CheckReadableFile(const std::string& key, const std::string& path);

}  // namespace mizarmp
