// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Who made the call a handler of mizarmp-addons serves, as the fence audit records it
// (fence/audit.h): the request id every log line of the call carries, and the caller.
#pragma once

#include <string>

namespace grpc {
class ServerContext;
}  // namespace grpc

namespace mizarmp::addons {

// The id of the call this thread serves: the caller's "x-request-id", or the one the server gave
// it (addons/server.cc's interceptor sets it when the request arrives); "" outside a call.
std::string CurrentRequestId();
// Set by the server's interceptor only.
void SetCurrentRequestId(std::string id);

// The caller as gRPC knows it: its peer ("unix:", "ipv4:10.0.0.7:51234") and, when it
// authenticated by client certificate, the certificate's identity ("CN=...", or its SANs):
// "ipv4:10.0.0.7:51234 (node-7.example)".
std::string CallerOf(const grpc::ServerContext& context);

}  // namespace mizarmp::addons
