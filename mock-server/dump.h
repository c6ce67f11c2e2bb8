// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// JSON as the mock writes it on the wire and in messages (private to mock-server/).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mizarmp::mock {

// Compact JSON; bytes that are not UTF-8 (from a request that carried them) become U+FFFD
// instead of throwing.
inline std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mizarmp::mock
