// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The secrets file: a JSON object of string values. The same file feeds both ends of the
// CSI-Addons `secrets` check: the server's secretsFile (what requests must carry,
// addons/secrets.h) and mizarmpctl's --secrets-file (what its requests carry).
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace mizarmp::endpoint {

// INVALID_ARGUMENT naming the file (and a key, never a value) unless it is a JSON object of
// strings.
Result<std::map<std::string, std::string>> ReadSecretsFile(const std::string& path);

}  // namespace mizarmp::endpoint
