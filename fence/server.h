// The mizarmp-addons gRPC server: owns the grpc::Server, its listening endpoint, the standard
// health service (grpc.health.v1.Health, our own sync implementation in fence/health.h; gRPC's
// default one stays off, so this sync server runs no callback-queue threads) and server
// reflection. CSI-Addons services (Identity, FenceController, EncryptionKeyRotationController)
// are plugged in with AddService() before Start().
//
// Unix socket endpoints: the parent directory is created 0700 when missing; an existing path is
// replaced only when it is a socket nobody answers on (a live server makes Start() fail with
// ALREADY_EXISTS, a non-socket with FAILED_PRECONDITION); the socket is created under umask 077
// and chmod'ed 0600, so it is never reachable by others; Shutdown() removes it (if it is still
// the one this server created).
// TCP endpoints: TLS (optionally requiring client certificates signed by a CA), or plaintext
// only when explicitly allowed (insecure_tcp; tests only).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "fence/config.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace mizarmp::fence {

class HealthService;
class CallCounter;

struct ServerOptions {
  std::string endpoint = kDefaultEndpoint;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool insecure_tcp = false;
  // How long Shutdown() lets in-flight calls finish before cancelling them.
  std::chrono::milliseconds shutdown_grace{10000};
  // How often an idle health Watch looks whether its client went away (HealthOptions).
  std::chrono::milliseconds health_watch_poll{1000};

  static ServerOptions FromConfig(const ServerConfig& config);
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Shutdown() if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers a service (not owned; must outlive the Server). Only before Start().
  // `health_name` is the name the health service reports it under, normally the generated
  // class's service_full_name() (e.g. "identity.Identity"); empty: only the overall "" status.
  void AddService(grpc::Service* service, std::string health_name = {});

  // Prepares the endpoint, binds and starts serving. Errors: INVALID_ARGUMENT (endpoint, TLS
  // files), ALREADY_EXISTS (a live server answers on the socket), FAILED_PRECONDITION (the
  // path exists and is not a socket), UNAVAILABLE (bind failed).
  Status Start();

  // The address clients dial in gRPC notation ("unix:/run/x.sock", "127.0.0.1:40123"); for a
  // tcp:// endpoint with port 0 this carries the port picked. Valid after Start().
  std::string address() const;
  int port() const { return bound_port_; }  // tcp: the bound port; unix: 0

  // Health status reported by grpc.health.v1.Health for "" and every registered service
  // (SERVING from Start() on).
  void SetServing(bool serving);

  // Reports NOT_SERVING and ends every health Watch, stops accepting calls, lets in-flight
  // calls run until `grace` (then cancels them), waits for the server to stop and removes the
  // unix socket. Once no call is in flight, idle client connections are closed at once rather
  // than left to the HTTP/2 GOAWAY handshake (which can take the client seconds). Idempotent;
  // safe from any thread.
  void Shutdown(std::chrono::milliseconds grace);
  void Shutdown() { Shutdown(options_.shutdown_grace); }

  // Blocks until Shutdown() completed (from another thread).
  void Wait();

  bool running() const;

 private:
  Status PrepareUnixSocket(const std::string& path);
  void RemoveOwnSocket();

  ServerOptions options_;
  std::vector<grpc::Service*> services_;
  // Declared before server_: the grpc::Server refers to it until it is destroyed.
  std::unique_ptr<HealthService> health_;
  std::shared_ptr<CallCounter> calls_;  // shared with the interceptor factory gRPC owns
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  bool started_ = false;
  bool shut_down_ = false;
  std::string address_;
  int bound_port_ = 0;
  std::string socket_path_;  // unix only
  dev_t socket_dev_ = 0;
  ino_t socket_ino_ = 0;
};

// Blocks SIGTERM and SIGINT (and ignores SIGPIPE) in the calling thread. Construct it in main()
// before any thread is started (gRPC's threads inherit the mask), then call Wait(), which
// sigwait()s for one of them: no work ever runs in a signal handler.
class TerminationSignals {
 public:
  TerminationSignals();
  ~TerminationSignals();  // restores the previous mask
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;
  int Wait();  // the signal received

 private:
  sigset_t set_;
  sigset_t old_;
};

}  // namespace mizarmp::fence
