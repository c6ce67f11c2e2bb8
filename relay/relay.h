// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's Mizar-MP relay: a small HTTP/1.1 server on a 0600 unix socket that sends every
// request it receives on to ONE configured controller (usually https://) over kept-alive
// connections, and returns the controller's answer.
//
// Why: the CNI plugin is a new process per pod operation, and OpenSSL 3's per-process set-up
// (SSL_CTX_new alone is some 6M instructions) makes each https ADD 1.75x slower than http.
// Through the relay the plugin speaks plain HTTP to a long-lived process (mizarmp-addons on the
// node) that holds the TLS connections (ClientConfig::relay_socket, mizarmp-client/client.h).
//
// The relay is no open proxy: a request names the controller it is for (kRelayToHeader), and
// any other is refused. It forwards requests as they are, Authorization included, and never logs
// a header's value or a body.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "mizarmp-client/client.h"
#include "mizarmp-client/transport.h"

namespace mizarmp::relay {

// The header a client names the controller it wants with: its base URL, without a trailing '/'.
// (The client's own constant: one spelling for both ends.)
inline constexpr const char* kRelayToHeader = client::kRelayToHeader;
// The header of an answer the relay made itself (not the controller's): why it did not relay.
// A client seeing it goes to the controller directly.
inline constexpr const char* kRelayErrorHeader = client::kRelayErrorHeader;

// What the relay did with one request.
enum class RelayOutcome {
  kRelayed,          // the controller answered (whatever its status)
  kOtherController,  // 421: kRelayToHeader names another controller (or none)
  kMethod,           // 405: a method the relay does not forward
  kMalformed,        // 400: not an HTTP request
  kTooLarge,         // 413: over max_request_bytes
  kUpstreamFailed,   // 502: no answer from the controller (connect, TLS, timeout, a cut reply)
};
inline constexpr RelayOutcome kRelayOutcomes[] = {
    RelayOutcome::kRelayed,   RelayOutcome::kOtherController, RelayOutcome::kMethod,
    RelayOutcome::kMalformed, RelayOutcome::kTooLarge,        RelayOutcome::kUpstreamFailed};
// "relayed", "other_controller", "method", "malformed", "too_large", "upstream_failed".
const char* OutcomeName(RelayOutcome outcome);

// One request's outcome, for metrics (RelayOptions::observer).
struct RelayObservation {
  RelayOutcome outcome;
  // kRelayed: from sending the request on to the controller's whole answer; else 0.
  std::chrono::nanoseconds upstream_time{0};
};

struct RelayOptions {
  // Absolute; its directory is checked (or created 0700) by PrepareUnixSocket; the socket 0600.
  std::string socket_path;
  // base_url, tls, connect_timeout, request_timeout, max_response_bytes. token_file, observer
  // and relay_socket are not used: requests carry their own Authorization.
  client::ClientConfig upstream;
  // Client connections served at once; more wait in the listen backlog.
  int max_connections = 64;
  // A client connection idle (or sending a request) longer than this is closed.
  std::chrono::milliseconds idle_timeout{30000};
  // The limit of one request's header and body together.
  size_t max_request_bytes = size_t{1} << 20;
  // Called once per request, on the thread serving its connection: must be thread-safe and
  // cheap. Empty: none.
  std::function<void(const RelayObservation&)> observer;

  // What Start() refuses before it binds anything, INVALID_ARGUMENT naming the configuration
  // key: relaySocket not absolute or too long for a unix socket, no mpurl to relay to, an
  // upstream the client would refuse (prefixed "mpurl"). The fields mizarmp-addons does not
  // configure are named as fields ("relay max_connections"). The configuration check asks the
  // same.
  Status Validate() const;
};

class Relay {
 public:
  // Checks the options (RelayOptions::Validate), prepares and binds the socket
  // (PrepareUnixSocket's errors as they are: ALREADY_EXISTS when another server listens on it)
  // and starts serving.
  static Result<std::unique_ptr<Relay>> Start(RelayOptions options);
  ~Relay();  // Stop()
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Stops accepting, closes the client connections (a request being relayed finishes first,
  // within upstream.request_timeout), joins every thread and removes the socket file.
  // Idempotent.
  void Stop();

  // OK while the relay serves its socket. FAILED_PRECONDITION naming the socket once its path
  // no longer leads to this relay (removed, or replaced by another server: plugins then go to
  // the controller directly) or after Stop(). One lstat(2): cheap enough for every Probe.
  Status Check() const;

  uint64_t relayed() const;  // requests the controller answered (any status)
  uint64_t refused() const;  // answers the relay made itself (the kRelayErrorHeader ones)

 private:
  struct Impl;
  explicit Relay(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mizarmp::relay
