// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "endpoint/secrets_file.h"

#include <nlohmann/json.hpp>

#include "common/fileutil.h"
#include "common/strings.h"

namespace mizarmp::endpoint {

Result<std::map<std::string, std::string>> ReadSecretsFile(const std::string& path) {
  const std::string named = Quoted(path) + ": ";
  auto text = ReadFile(path);
  if (!text.ok()) return InvalidArgumentError(named + text.status().message());
  if (TooDeepJson(*text)) {
    return InvalidArgumentError(named + "nests deeper than " + std::to_string(kMaxFileJsonDepth) +
                                " levels");
  }
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError(named + "want a JSON object of strings");
  }
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : doc.items()) {
    // Name the key, never the value.
    if (!value.is_string()) {
      return InvalidArgumentError(named + "the value of " + Quoted(key) + " is not a string");
    }
    out[key] = value.get<std::string>();
  }
  return out;
}

}  // namespace mizarmp::endpoint
