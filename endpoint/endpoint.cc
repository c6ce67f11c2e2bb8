// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "endpoint/endpoint.h"

#include <charconv>

#include "common/strings.h"
#include "common/unix_socket.h"

namespace mizarmp::endpoint {

std::string Endpoint::GrpcAddress() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(std::string_view text) {
  const std::string quoted = Quoted(text);
  Endpoint ep;
  if (text.starts_with("unix://")) {
    ep.kind = Endpoint::Kind::kUnix;
    ep.path = std::string(text.substr(7));
    if (ep.path.empty() || ep.path[0] != '/') {
      return InvalidArgumentError("endpoint " + quoted +
                                  ": the socket path must be absolute (unix:///path/to.sock)");
    }
    if (ep.path.size() > kMaxUnixPath) {
      return InvalidArgumentError("endpoint " + quoted + ": socket path longer than " +
                                  std::to_string(kMaxUnixPath) + " bytes");
    }
    if (ep.path.back() == '/') {
      return InvalidArgumentError("endpoint " + quoted + ": the socket path names a directory");
    }
    return ep;
  }
  if (text.starts_with("tcp://")) {
    ep.kind = Endpoint::Kind::kTcp;
    std::string_view rest = text.substr(6);
    std::string_view port_text;
    if (rest.starts_with("[")) {
      const size_t close = rest.find(']');
      if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
        return InvalidArgumentError("endpoint " + quoted + ": want tcp://[IPv6]:PORT");
      }
      ep.host = std::string(rest.substr(1, close - 1));
      port_text = rest.substr(close + 2);
    } else {
      const size_t colon = rest.rfind(':');
      if (colon == std::string_view::npos || rest.find(':') != colon) {
        return InvalidArgumentError("endpoint " + quoted + ": want tcp://HOST:PORT");
      }
      ep.host = std::string(rest.substr(0, colon));
      port_text = rest.substr(colon + 1);
    }
    if (ep.host.empty()) return InvalidArgumentError("endpoint " + quoted + ": empty host");
    int port = -1;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 0 ||
        port > 65535 || port_text.empty()) {
      return InvalidArgumentError("endpoint " + quoted + ": port \"" + std::string(port_text) +
                                  "\" is not a number in 0..65535");
    }
    ep.port = port;
    return ep;
  }
  return InvalidArgumentError("endpoint " + quoted +
                              ": want unix:///ABSOLUTE/PATH or tcp://HOST:PORT");
}

}  // namespace mizarmp::endpoint
