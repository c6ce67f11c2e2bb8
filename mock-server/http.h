// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's cpp-httplib server (private to mock-server/): plain HTTP or TLS (optionally
// requiring client certificates), its thread pool and timeouts, a widened listen backlog and
// the thread that serves. It knows no route: Start() takes the function that installs them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "mock-server/mock.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace mizarmp::mock {

class HttpServer {
 public:
  // Checks the listen port and the TLS options (a certificate and a key together, a client CA
  // only with them, every file readable); binds nothing. INVALID_ARGUMENT or the read error.
  static Result<std::unique_ptr<HttpServer>> Create(const Options& options);
  ~HttpServer();  // Stop()

  // Builds the server, lets `install` add the routes, binds and serves on a background thread;
  // returns once it is listening. INVALID_ARGUMENT when the TLS files do not make a server,
  // UNAVAILABLE when the address cannot be bound, INTERNAL when serving does not start.
  Status Start(const std::function<void(httplib::Server&)>& install);
  // Stops serving; returns once every request in progress has been answered. Idempotent.
  void Stop();

  int port() const { return port_; }  // the bound port; 0 before Start()
  // "http://HOST:PORT", https:// with TLS, an IPv6 host in brackets.
  std::string base_url() const;

 private:
  explicit HttpServer(const Options& options);
  Status Bind(httplib::Server& server);

  const Options options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Closes the client's connection of `request` before any byte of an answer is sent (the
// close_connections fault). False when the connection's socket is not found.
bool DropConnection(const httplib::Request& request);

}  // namespace mizarmp::mock
