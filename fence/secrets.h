// The `secrets` check every CSI-Addons service of mizarmp-addons applies (FenceController,
// EncryptionKeyRotationController): the server is configured with the secrets a request must
// carry (secretsFile); a request passes when it carries every one of them with the same value.
// Extra keys in the request are ignored. No expected secrets: every request passes.
//
// The error is UNAUTHENTICATED and names the missing or mismatched key, never a value; values
// are compared in constant time. Nothing here logs.
#pragma once

#include <google/protobuf/map.h>

#include <map>
#include <string>

#include "common/status.h"

namespace mizarmp::fence {

Status CheckSecrets(const google::protobuf::Map<std::string, std::string>& got,
                    const std::map<std::string, std::string>& expected);

// Equality that takes the same time for every pair of equal-length inputs.
bool ConstantTimeEqual(const std::string& a, const std::string& b);

}  // namespace mizarmp::fence
