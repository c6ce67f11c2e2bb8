// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The one mapping from mizarmp::Status to what a gRPC client sees.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace mizarmp::addons {

// mizarmp::Code values equal gRPC's canonical codes (common/status.h), so the code carries over
// unchanged and the message goes with it.
inline grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

}  // namespace mizarmp::addons
