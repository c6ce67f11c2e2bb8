// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The `secrets` check every CSI-Addons service of mizarmp-addons applies (FenceController,
// EncryptionKeyRotationController): the server is configured with the secrets a request must
// carry (secretsFile); a request passes when it carries every one of them with the same value.
// Extra keys in the request are ignored. No expected secrets: every request passes.
//
// The error is UNAUTHENTICATED and names the missing or mismatched key, never a value; values
// are compared in constant time (common/strings.h). Nothing here logs.
//
// The expected secrets come from the secrets file (endpoint/secrets_file.h), which mizarmpctl
// reads too, for what its requests carry.
#pragma once

#include <google/protobuf/map.h>

#include <map>
#include <string>

#include "common/status.h"

namespace mizarmp::addons {

Status CheckSecrets(const google::protobuf::Map<std::string, std::string>& got,
                    const std::map<std::string, std::string>& expected);

}  // namespace mizarmp::addons
