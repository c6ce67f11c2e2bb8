// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/file_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/strings.h"

namespace mizarmp {

Status CheckReadableFile(const std::string& key, const std::string& path) {
  if (path.empty()) return Status::Ok();
  if (::access(path.c_str(), R_OK) != 0) {
    return InvalidArgumentError(key + ": cannot read " + Quoted(path) + ": " +
                                std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace mizarmp
