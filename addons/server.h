// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mizarmp-addons gRPC server framework: owns the grpc::Server, its listening endpoint, the
// standard health service (grpc.health.v1.Health, our own sync implementation in
// addons/health.h; gRPC's default one stays off, so this sync server runs no callback-queue
// threads) and server reflection. It knows no CSI-Addons service: each one implements
// addons::AddonsService (addons/service.h) and is registered with Register() before Start().
//
// Unix socket endpoints: the parent directory is created 0700 when missing; an existing one must
// be owned by this process's euid, not writable by group or others, and not a symlink
// (FAILED_PRECONDITION naming the directory and the problem). An existing path is replaced only
// when it is a socket nobody answers on (a live server makes Start() fail with ALREADY_EXISTS,
// a symlink or a non-socket with FAILED_PRECONDITION); the socket is created under umask 077
// and chmod'ed 0600, so it is never reachable by others; Shutdown() removes it (if it is still
// the one this server created).
// TCP endpoints: reachable by anyone on the network, so the clients must be authenticated: by
// client certificates signed by a CA (tls_client_ca_file) or by the secrets every request of
// the services carries (requests_need_secrets: a non-empty secretsFile). TLS with a server
// certificate, or plaintext only when explicitly allowed (insecure_tcp; tests only, and still
// with secrets).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "addons/metrics.h"
#include "addons/service.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/unix_socket.h"
#include "endpoint/endpoint.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace mizarmp::addons {

// The grpc.health.v1 name that is SERVING as long as the server serves, whether or not it is
// ready (HealthService::AddLivenessName): what a Kubernetes livenessProbe should ask. "" and the
// services' names follow SetServing(), which main feeds with readiness.
inline constexpr const char* kLivenessHealthName = "liveness";

// Why a tcp:// endpoint without client authentication is refused and how to fix it (naming the
// configuration keys): the one wording Server::Start() and the configuration check share.
std::string TcpWithoutClientAuthMessage(std::string_view endpoint);

struct ServerOptions {
  std::string endpoint = endpoint::kDefaultEndpoint;  // endpoint/endpoint.h's notation
  // A second tcp:// endpoint serving the same services with the same TLS and client
  // authentication, for clients on other machines while `endpoint` is a sidecar's unix socket
  // (the controller's node agents: publicationEndpoint). Empty: none.
  std::string additional_endpoint;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool insecure_tcp = false;
  // Whether the registered services refuse requests that lack the configured secrets (the
  // composer sets it from a non-empty secretsFile). A tcp:// endpoint needs this or
  // tls_client_ca_file: an unauthenticated network endpoint is refused by Start().
  bool requests_need_secrets = false;
  // How long Shutdown() lets in-flight calls finish before cancelling them.
  std::chrono::milliseconds shutdown_grace{10000};
  // How often an idle health Watch looks whether its client went away (HealthOptions).
  std::chrono::milliseconds health_watch_poll{1000};
  // "HOST:PORT" of a second, plaintext listener serving only grpc.health.v1 with the same
  // statuses (Kubernetes' grpc probes dial a TCP port); empty: none.
  std::string health_address;
  // "HOST:PORT" where Prometheus text is served at /metrics; empty: none.
  std::string metrics_address;

  // What Start() refuses before it binds anything: a bad endpoint or side listener address, a
  // TLS file without its pair, TLS on a unix socket, a tcp:// endpoint without TLS (unless
  // insecure_tcp) or without client authentication, an unreadable file. INVALID_ARGUMENT
  // naming the configuration key; the configuration check asks the same.
  Status Validate() const;
};

class HealthService;
class CallCounter;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Shutdown() if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves `service` (not owned; must outlive the Server) under its health_name(). Only before
  // Start().
  void Register(AddonsService& service);
  // Runs `component`, which serves no RPC, with the server: its metrics on the registry, its
  // Start() and Stop() in order with the services'. Not owned; only before Start().
  void Attach(AddonsComponent& component);

  // Validates the options (ServerOptions::Validate), prepares the endpoint, binds, starts
  // serving, then calls Start() of every registered service and attached component in that
  // order. Errors (none is started then): INVALID_ARGUMENT (Validate's; a TLS file that is not
  // PEM), ALREADY_EXISTS
  // (a live server answers on the socket), FAILED_PRECONDITION (the path exists and is not a
  // socket, or the socket directory is not safe: see above), UNAVAILABLE (bind failed).
  Status Start();

  // The address clients dial in gRPC notation ("unix:/run/x.sock", "127.0.0.1:40123"); for a
  // tcp:// endpoint with port 0 this carries the port picked. Valid after Start().
  std::string address() const;
  int port() const { return bound_port_; }                  // tcp: the bound port; unix: 0
  int additional_port() const { return additional_port_; }  // additional_endpoint's bound port
  // For tests: with metrics_address on port 0 the port is picked at bind time and only the
  // server knows it; a test that scrapes the metrics in-process asks for it here.
  int metrics_port() const { return metrics_.port(); }

  // Health status reported by grpc.health.v1.Health for "" and every registered service:
  // SERVING from Start() on unless set otherwise. May be called before Start() (the status
  // Start() then reports) and from any thread at any time: it never waits for Start() or
  // Shutdown(), so a component's thread may call it while Shutdown() waits for that thread.
  void SetServing(bool serving);

  // Reports NOT_SERVING and ends every health Watch, stops accepting calls, lets in-flight
  // calls run until `grace` (then cancels them), waits for the server to stop and removes the
  // unix socket; then calls Stop() of every service and component in reverse order.
  // Once no call is in flight, idle client connections are closed at once rather than left to
  // the HTTP/2 GOAWAY handshake (which can take the client seconds). Idempotent; safe from any
  // thread.
  void Shutdown(std::chrono::milliseconds grace);
  void Shutdown() { Shutdown(options_.shutdown_grace); }

  // For tests: whether Start() succeeded and Shutdown() has not run. Product code never
  // needs to ask (it owns the order of Start and Shutdown); tests of failed starts do.
  bool running() const;

 private:
  // Builds and starts the grpc::Server on `endpoint`; records the address and the socket.
  Status Bind(const endpoint::Endpoint& endpoint) MZ_REQUIRES(mu_);
  // The metrics HTTP listener and the probes' health listener, when configured.
  Status StartSideListeners() MZ_REQUIRES(mu_);
  // The health services whose statuses move together: the main one and the probes' one.
  std::vector<HealthService*> Healths() const;
  // The drain Shutdown() describes, up to removing the socket.
  void Drain(std::chrono::milliseconds grace) MZ_REQUIRES(mu_);
  void RemoveOwnSocket() MZ_REQUIRES(mu_);
  void AttachLocked(AddonsComponent& component) MZ_REQUIRES(mu_);

  ServerOptions options_;
  std::vector<AddonsService*> services_ MZ_GUARDED_BY(mu_);
  // The services too, in registration order.
  std::vector<AddonsComponent*> components_ MZ_GUARDED_BY(mu_);
  // Declared before server_: the grpc::Server refers to it until it is destroyed.
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<HealthService> probe_health_;  // with health_address only
  std::shared_ptr<CallCounter> calls_;           // shared with the interceptor factory gRPC owns
  Metrics metrics_;                              // the interceptors record into it
  std::unique_ptr<grpc::Server> server_ MZ_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> probe_server_ MZ_GUARDED_BY(mu_);
  // The bound ports: written by Start() (under mu_), read without it once Start() returned.
  int probe_port_ = 0;
  int bound_port_ = 0;
  int additional_port_ = 0;
  // SetServing()'s state, apart from mu_ (see SetServing()); Start() takes it inside mu_.
  Mutex serving_mu_ MZ_ACQUIRED_AFTER(mu_);
  bool serving_ MZ_GUARDED_BY(serving_mu_) = true;  // what "" and the services report once started
  // Start() has put serving_ on the health services.
  bool serving_reported_ MZ_GUARDED_BY(serving_mu_) = false;
  mutable Mutex mu_;
  bool started_ MZ_GUARDED_BY(mu_) = false;
  bool shut_down_ MZ_GUARDED_BY(mu_) = false;
  std::string address_ MZ_GUARDED_BY(mu_);
  BoundSocketFile socket_file_ MZ_GUARDED_BY(mu_);  // unix only
};

}  // namespace mizarmp::addons
