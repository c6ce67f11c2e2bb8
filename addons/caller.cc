// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/caller.h"

#include <grpcpp/security/auth_context.h>
#include <grpcpp/server_context.h>

namespace mizarmp::addons {
namespace {

thread_local std::string current_request_id;

}  // namespace

std::string CurrentRequestId() { return current_request_id; }

void SetCurrentRequestId(std::string id) { current_request_id = std::move(id); }

std::string CallerOf(const grpc::ServerContext& context) {
  std::string caller = context.peer();
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return caller;
  std::string identity;
  for (const grpc::string_ref& name : auth->GetPeerIdentity()) {
    identity += (identity.empty() ? "" : ", ") + std::string(name.data(), name.size());
  }
  return identity.empty() ? caller : caller + " (" + identity + ")";
}

}  // namespace mizarmp::addons
