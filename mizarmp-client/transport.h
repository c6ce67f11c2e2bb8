// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Mizar-MP client's HTTP transport (Boost.Beast + Boost.Asio over OpenSSL): one HTTP/1.1
// exchange at a time over one kept-alive connection, each bounded by a deadline. It knows
// nothing of REST: client.cc builds the requests and reads their answers.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mizarmp-client/client.h"

namespace mizarmp::client {

// Where base_url points: scheme, host, port and an optional path prefix.
struct Endpoint {
  bool https = false;
  std::string host;  // without IPv6 brackets, as getaddrinfo wants it
  int port = 0;
  std::string host_header;  // "host", "host:port", "[v6]:port"
  std::string prefix;       // "" or "/api", never ending in '/'
  // Set: plain HTTP over this unix socket (a node's relay, relay/relay.h) rather than to host.
  std::string unix_socket;
};

// A request through a relay names the controller it is for in this header (its base URL,
// TrimmedBaseUrl); a relay serves the one it is configured for only.
inline constexpr const char* kRelayToHeader = "Mizarmp-Relay-To";
// An answer the relay made itself, not the controller, carries this header: why it relayed
// nothing. The client then goes to the controller directly.
inline constexpr const char* kRelayErrorHeader = "Mizarmp-Relay-Error";

// "OpenSSL 3.0.19 27 Jan 2026": the OpenSSL the transport runs on.
std::string TlsLibraryVersion();

// base_url without its trailing '/'s: how a base URL is compared and logged.
std::string TrimmedBaseUrl(std::string base_url);

// Splits a base URL into scheme, host, port and path prefix (INVALID_ARGUMENT naming the
// problem). Credentials in the URL are refused before anything else, so no error echoes them.
Result<Endpoint> ParseBaseUrl(const std::string& base_url);

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", "DELETE"
  std::string target;  // the path and query, already percent-encoded
  std::vector<std::pair<std::string, std::string>> headers;  // may hold the token: never log
  const std::string* body = nullptr;                         // nullptr: no body
};

// A complete answer, or, when an exchange failed, what arrived of it.
struct HttpReply {
  int status = 0;    // 0 until a status line arrived
  std::string body;  // on failure: what arrived of a body cut short (empty if it was too large)
  std::string relay_error;  // the kRelayErrorHeader of an answer a relay made itself
};

// How one HTTP exchange ended when it produced no complete response.
struct TransportFailure {
  std::string text;          // "cannot connect to 127.0.0.1:9090", "TLS: ..."
  bool retryable = false;    // the server may not have seen or answered the request
  bool timed_out = false;    // the attempt's time ran out
  int partial_http = 0;      // the status line arrived, then the body was cut short
  bool too_large = false;    // the body passed max_response_bytes
  bool tls_refused = false;  // the server ended the TLS handshake (an alert), not the network
};

class Transport {
 public:
  // Nothing is opened yet: the first Send connects (and sets TLS up).
  Transport(Endpoint endpoint, TlsConfig tls, std::chrono::milliseconds connect_timeout,
            size_t max_response_bytes);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const Endpoint& endpoint() const { return endpoint_; }
  const TlsHandshakes& handshakes() const;

  // Sends `request` over the kept connection (opened, or re-opened if the server closed it) and
  // reads the whole answer into *reply, all within `timeout`: connecting and the TLS handshake
  // within min(connect_timeout, timeout), and the whole exchange, a trickled body included,
  // within `timeout`. nullopt on a complete answer (any status); otherwise why not, with
  // *reply holding what arrived. A connection that failed or that the server ends is closed.
  std::optional<TransportFailure> Send(const HttpRequest& request,
                                       std::chrono::milliseconds timeout, HttpReply* reply);

 private:
  struct Impl;
  Endpoint endpoint_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mizarmp::client
