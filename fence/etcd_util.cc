// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/etcd_util.h"

namespace mizarmp::fence {

Result<std::unique_ptr<etcd::Client>> ConnectToLocation(const std::string& location,
                                                        etcd::Options& options) {
  MZ_ASSIGN_OR_RETURN(options.endpoints, etcd::ParseEndpoints(location));
  return etcd::Client::Connect(options);
}

std::string PrefixEnd(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

bool RefusedUnapplied(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument:
    case Code::kFailedPrecondition:
    case Code::kResourceExhausted:
    case Code::kPermissionDenied:
    case Code::kUnauthenticated:
    case Code::kOutOfRange:
      return true;
    default:
      return false;
  }
}

bool TooLargeForEtcd(const Status& s) {
  return (s.code() == Code::kInvalidArgument &&
          s.message().find("request is too large") != std::string::npos) ||
         (s.code() == Code::kResourceExhausted &&
          s.message().find("larger than max") != std::string::npos);
}

}  // namespace mizarmp::fence
