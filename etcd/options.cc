// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "etcd/options.h"

#include "common/strings.h"

namespace mizarmp::etcd {

bool IsEtcdLocation(std::string_view location) { return location.starts_with(kLocationScheme); }

Result<std::vector<std::string>> ParseEndpoints(std::string_view location) {
  const std::string quoted = Quoted(location);
  if (!IsEtcdLocation(location)) {
    return InvalidArgumentError("etcd location " + quoted + ": must start with etcd://");
  }
  std::vector<std::string> out;
  for (const std::string& entry : Split(location.substr(kLocationScheme.size()), ',')) {
    const size_t colon = entry.rfind(':');
    const bool has_port = colon != std::string::npos && colon + 1 < entry.size() &&
                          entry.find_first_not_of("0123456789", colon + 1) == std::string::npos;
    if (entry.empty() || colon == 0 || !has_port || entry.find('/') != std::string::npos) {
      return InvalidArgumentError("etcd location " + quoted + ": \"" + entry +
                                  "\" is not host:port");
    }
    out.push_back(entry);
  }
  return out;
}

}  // namespace mizarmp::etcd
