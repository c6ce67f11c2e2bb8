// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Mizar-MP REST client (nlohmann_json over Boost.Beast + OpenSSL, see transport.h).
//
// One Client owns one HTTP connection (kept alive, TLS session included), so calls made through
// it reuse the connection. A Client is not thread-safe; use one per thread (or guard it).
// Errors name the call, the HTTP status and a short excerpt of the body, e.g.
//   UNAVAILABLE: GET /project/p/ports/x: HTTP 503: {"error":"overloaded"...
// Codes: connection failures and timeouts after retries -> UNAVAILABLE (DEADLINE_EXCEEDED for
// the poll deadline); 400 -> INVALID_ARGUMENT; 401 -> UNAUTHENTICATED; 403 -> PERMISSION_DENIED;
// 404 / {"port":null} -> NOT_FOUND; 409 -> ALREADY_EXISTS; other 4xx -> FAILED_PRECONDITION;
// 5xx after retries -> UNAVAILABLE, but a 5xx whose Spring error body names a configuration
// error (an unknown VPC, subnet or host: see kConfigurationErrors) -> FAILED_PRECONDITION at
// once, not retried; a body that is not the JSON expected, is larger than max_response_bytes or
// nests deeper than kMaxResponseDepth -> INTERNAL. A Spring error body's "message" is what the
// error quotes of the body.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "mizarmp-client/types.h"

namespace mizarmp::client {

struct TlsConfig {
  std::string ca_file;    // verify the server against this CA bundle (else the system store)
  std::string cert_file;  // client certificate for mutual TLS
  std::string key_file;   // its private key
  bool insecure_skip_verify = false;
  // Where TLS sessions are kept between processes, so that a later process resumes one rather
  // than making a full handshake (tls_session.h); empty: none are kept. For a short-lived
  // process (the plugin: its state dir); a long-lived one keeps its connections instead. Not
  // used with insecure_skip_verify.
  std::string session_dir;
};

// The TLS handshakes a client made: full ones, ones that resumed a kept session, and kept
// sessions the server failed a handshake over (each followed by a full one).
struct TlsHandshakes {
  uint64_t full = 0;
  uint64_t resumed = 0;
  uint64_t refused = 0;
};

// One REST call as an observer sees it (after its retries), for metrics.
struct CallObservation {
  // The method and the path's shape, ids replaced: "PUT /ports/{id}", "GET /ports".
  std::string call;
  // "ok" for a 2xx answer, "http_<code>" for another answer (a 5xx the last retry still got
  // included), else the lower-case status code of the failure ("unavailable",
  // "deadline_exceeded", "internal" for a garbled 2xx).
  std::string outcome;
  std::chrono::nanoseconds elapsed{0};  // all attempts and the backoff between them
  int attempts = 0;                     // requests sent (0: the deadline allowed none)
};

struct ClientConfig {
  std::string base_url;  // "http://127.0.0.1:9090"; "/project/<id>/..." is appended
  std::string project_id = kDefaultProjectId;
  // The subnet whose ports ListPorts reads from a v0.1 controller, whose only port list is a
  // subnet's (GET /project/{p}/subnet/{s}/ports).
  std::string subnet_id;
  // kAuto: found out on the first call that needs it (ListPorts, UpdatePort, CreatePorts): a
  // controller that answers a port list with 405 is v0.1, one that lists is Alcor's.
  Dialect dialect = Dialect::kAuto;
  // With kAuto: what an earlier Client of the same controller found out (generation_found()),
  // so that one long-lived process asks once; kAuto: not known.
  Dialect known_generation = Dialect::kAuto;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{5000};  // per HTTP request
  // Idempotent calls (GET, PUT, DELETE, and POST of a client-chosen id) are retried on connection
  // errors and 5xx, at most max_attempts in all, with exponential backoff from retry_backoff.
  int max_attempts = 3;
  std::chrono::milliseconds retry_backoff{20};
  TlsConfig tls;
  // Optional token, read by Create() and again whenever the file changes (rotation); never
  // logged. Sent as "X-Auth-Token" to Alcor (its API gateway reads that header with Keystone on:
  // services/api_gateway KeystoneAuthGwFilter), as "Authorization: Bearer" to a v0.1 controller,
  // and as both with kAuto.
  std::string token_file;
  // The User-Agent of every request; empty: "mizarmp/<version>". A server replica names itself
  // here, so the controller's request log tells replicas apart.
  std::string user_agent;
  // The largest response body read: a controller sending more gets the call failed (INTERNAL,
  // naming the bound, not retried) rather than the process's memory.
  size_t max_response_bytes = size_t{64} << 20;
  // Called once per REST call after its retries (empty: nothing is observed, nothing costs).
  // Runs on the calling thread; must not block.
  std::function<void(const CallObservation&)> observer;
  // A node's relay (relay/relay.h) for an https:// base_url: the requests go to this unix socket
  // as plain HTTP, and the relay sends them on over its kept TLS connections, so a short-lived
  // process makes no TLS set-up of its own. A relay that cannot be reached, fails a request or
  // does not serve base_url is given up for the rest of the Client's life, and that request
  // and the next go to the controller directly, with `tls`. Empty, or an http:// base_url: none.
  std::string relay_socket;
};

// JSON responses nesting arrays and objects deeper than this are refused (INTERNAL) before a
// tree is built: no controller answer has a reason to, and deep trees make recursive walks
// overflow the stack.
inline constexpr size_t kMaxResponseDepth = 64;

// What a wait for a sign of readiness saw (PollOptions::wait_until).
enum class ReadinessSign {
  kNone,     // nothing until the time given
  kEarlier,  // a sign that came before the wait began: the agent has had a while since
  kJustNow,  // a sign that came during the wait: the agent may still be finishing
};

struct PollOptions {
  std::chrono::milliseconds initial{5};  // first re-poll this soon after the first GET
  // The interval grows by `factor` up to this cap, so a port that becomes ready within the first
  // second or so is seen at most `max` late. Past that the cap rises with the time already
  // waited (`max_fraction` of it): lateness stays a small share of the wait, and a port that
  // takes a minute costs the controller hundreds of GETs rather than thousands.
  std::chrono::milliseconds max{5};
  double max_fraction = 0.01;
  double factor = 2.0;
  std::chrono::milliseconds deadline{60000};  // overall, from the call
  // Checked between polls; when it returns true the wait ends with CANCELLED.
  std::function<bool()> cancelled;
  // Waits between polls until the given time, or less when a sign says the port may be ready now
  // (the plugin: the pod's NIC appearing in its namespace, which the agent places just before
  // the controller reports the port ready). Unset: sleeps.
  std::function<ReadinessSign(std::chrono::steady_clock::time_point)> wait_until;
  // After a sign the next poll is at once when the sign came before the wait began (it is at
  // least a poll's round trip old), or `after_sign` later when it came during the wait: the
  // controller takes a moment to report what its agent just did, and a poll at that very moment
  // would be one GET wasted. Re-polls grow from `after_sign` as above. At most `max_signs` signs
  // are followed, so a flapping link cannot make the polls a flood.
  std::chrono::milliseconds after_sign{1};
  int max_signs = 3;
};

class Client {
 public:
  // INVALID_ARGUMENT for a bad URL or unreadable token/TLS files (naming the file).
  static Result<std::unique_ptr<Client>> Create(ClientConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // POST /project/{p}/ports {"port":{...}} -> 201. Both real generations write a POST of an
  // existing id over the port with new addresses, so a POST whose answer was lost is never sent
  // blindly again: the id is looked up first, and a port found is the one that POST made. A
  // seed-shaped controller answers 409 for a taken id: ALREADY_EXISTS (unless a retry of this
  // same call hit it: then the existing port is fetched and returned).
  Result<Port> CreatePort(const PortSpec& spec);
  // Bulk create: Alcor POST /project/{p}/ports/bulk {"ports":[...]}; a v0.1 controller gets one
  // POST per port (its /portgroup answers 500 as shipped: app/onebox/OneBoxConfig.java).
  Result<std::vector<Port>> CreatePorts(const std::vector<PortSpec>& specs);
  // GET /project/{p}/ports/{id}. NOT_FOUND for 404 or 200 {"port":null}.
  Result<Port> GetPort(const std::string& port_id);
  // Polls GetPort until ready. FAILED_PRECONDITION when the port reports failed/ERROR (fast),
  // NOT_FOUND if it disappears, DEADLINE_EXCEEDED at the deadline, CANCELLED if cancelled.
  Result<Port> WaitPortReady(const std::string& port_id, const PollOptions& options);
  // GET /project/{p}/subnets/{id}
  Result<Subnet> GetSubnet(const std::string& subnet_id);
  // DELETE /project/{p}/ports/{id}. A port that is already gone (404, {"port":null}) is success.
  Status DeletePort(const std::string& port_id);
  // The project's ports matching `filters`, e.g. {{"binding:host_id", "node-a"}}: Alcor's
  // GET /project/{p}/ports?k=v&..., whose answer holds every project's ports (the port manager
  // does not filter on the URL's project), so the other projects' are dropped here; from a v0.1
  // controller, GET /project/{p}/subnet/{s}/ports (its only list, an object keyed by port id) of
  // ClientConfig::subnet_id, filtered here. An entry that does not parse as a port does not fail
  // the list: it is named in `unreadable`, and the caller decides what a list with holes may be
  // trusted for.
  // `fields` asks for only those members of each port (`&fields=id&fields=fixed_ips`, Neutron's
  // and Alcor's field selection; project_id is added): the ports then leave every other member
  // at its default. A controller without field selection answers whole ports, which read the
  // same.
  Result<PortList> ListPorts(const std::map<std::string, std::string>& filters = {},
                             const std::vector<std::string>& fields = {});
  // Alcor's node manager, GET /nodes: every registered node.
  // Alcor's port manager refuses a port bound to a node it does not know, so every node a port
  // names is here. A controller without the node manager (v0.1) answers 404 or 405:
  // UNIMPLEMENTED.
  Result<std::vector<Node>> ListNodes();
  // PUT /project/{p}/ports/{id}, changing `fields` (e.g. {"admin_state_up": false}) and nothing
  // else. v0.1 replaces the whole record with the body (web/PortController.java at 5ca01ef0),
  // so its port is read, changed and written back whole. Alcor merges what the body leaves
  // null but defaults port_security_enabled to true (PortEntity), so the body names it null
  // unless `fields` sets it. The updated port; a controller that answers 204 or a 2xx with an
  // empty body has done the update, and the port is then read back with GET (an error then says
  // the update itself went through).
  Result<Port> UpdatePort(const std::string& port_id, const nlohmann::json& fields);

  // The controller's generation: the configured one, or the one found out (a GET of the port
  // list with a filter that matches nothing, once per Client).
  Result<Dialect> Generation();
  // The generation as far as this Client knows it without asking: configured, given, or found
  // out by a call so far; kAuto when none of these.
  Dialect generation_found() const;

  // HTTP requests sent so far (every attempt counts), for benchmarks and tests.
  uint64_t requests_sent() const { return requests_sent_; }
  // TLS handshakes made so far, for benchmarks and tests.
  TlsHandshakes tls_handshakes() const;

 private:
  explicit Client(ClientConfig config);
  // One POST of one port, not repeated (CreatePort looks up a lost answer first).
  Result<Port> PostPort(const PortSpec& spec);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ClientConfig config_;
  uint64_t requests_sent_ = 0;
};

}  // namespace mizarmp::client
