// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Where the mizarmp-addons server listens, in the notation its configuration and mizarmpctl's
// --endpoint share. Both ends parse it here, so the CLI links this and not the server.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp::endpoint {

// The server's default and so the CLI's: the packaged node and controller configs override it.
inline constexpr const char* kDefaultEndpoint = "unix:///run/mizarmp/csi-addons.sock";

// A parsed listening endpoint.
struct Endpoint {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;  // kUnix: absolute socket path
  std::string host;  // kTcp: host name or address (IPv6 without brackets)
  int port = 0;      // kTcp: 0 picks a free port
  // The address in gRPC's notation: "unix:/abs/path" or "host:port" / "[v6]:port".
  std::string GrpcAddress() const;
};

// "unix:///abs/path" or "tcp://HOST:PORT" ("tcp://[::1]:PORT" for IPv6). INVALID_ARGUMENT
// naming the value otherwise (relative or too long socket paths included).
Result<Endpoint> ParseEndpoint(std::string_view text);

}  // namespace mizarmp::endpoint
