// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/http.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/fd.h"
#include "common/fileutil.h"
#include "common/log.h"

namespace mizarmp::mock {

namespace {

using Clock = std::chrono::steady_clock;

// How many requests are handled at once; more wait in the queue.
constexpr size_t kThreads = 32;
constexpr size_t kRequestsPerConnection = 1000;
constexpr auto kStartTimeout = std::chrono::seconds(10);

Status CheckTls(const Options& o) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return InvalidArgumentError("mock: TLS needs both a certificate and a key file");
  }
  if (!o.tls_client_ca_file.empty() && o.tls_cert_file.empty()) {
    return InvalidArgumentError("mock: a TLS client CA needs a server certificate and key");
  }
  for (const std::string* f : {&o.tls_cert_file, &o.tls_key_file, &o.tls_client_ca_file}) {
    if (f->empty()) continue;
    auto data = ReadFile(*f);
    if (!data.ok()) return data.status().WithContext("mock: TLS file");
  }
  return Status::Ok();
}

// A plain server, or a TLS one from the options' files.
Result<std::unique_ptr<httplib::Server>> NewServer(const Options& o) {
  if (o.tls_cert_file.empty()) return std::make_unique<httplib::Server>();
  auto ssl = std::make_unique<httplib::SSLServer>(
      o.tls_cert_file.c_str(), o.tls_key_file.c_str(),
      o.tls_client_ca_file.empty() ? nullptr : o.tls_client_ca_file.c_str());
  if (!ssl->is_valid()) {
    return InvalidArgumentError(
        "mock: TLS setup failed: cannot use certificate " + o.tls_cert_file + " with key " +
        o.tls_key_file +
        (o.tls_client_ca_file.empty() ? "" : " and client CA " + o.tls_client_ca_file));
  }
  return std::unique_ptr<httplib::Server>(std::move(ssl));
}

std::string SockaddrIp(const sockaddr_storage& ss, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    *port = ntohs(a->sin_port);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    *port = ntohs(a->sin6_port);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
  } else {
    *port = -1;
  }
  return buf;
}

// Whether `fd` is the server side of the connection `req` arrived on: its local port is the
// request's local port and its peer the request's remote address and port.
bool IsConnectionOf(int fd, const httplib::Request& req) {
  sockaddr_storage local{}, peer{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return false;
  int local_port = -1;
  SockaddrIp(local, &local_port);
  if (local_port != req.local_port) return false;
  len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
  int peer_port = -1;
  const std::string peer_ip = SockaddrIp(peer, &peer_port);
  if (peer_port != req.remote_port) return false;
  return peer_ip == req.remote_addr || peer_ip == "::ffff:" + req.remote_addr;
}

// cpp-httplib does not hand a handler its socket: find it among the process's descriptors.
int FindConnectionFd(const httplib::Request& req) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
  if (!dir) return -1;
  const int self = dirfd(dir.get());
  while (dirent* e = readdir(dir.get())) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    if (IsConnectionOf(static_cast<int>(fd), req)) return static_cast<int>(fd);
  }
  return -1;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Create(const Options& options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgumentError("mock: port " + std::to_string(options.port) +
                                " is outside 0..65535");
  }
  MZ_RETURN_IF_ERROR(CheckTls(options));
  return std::unique_ptr<HttpServer>(new HttpServer(options));
}

HttpServer::HttpServer(const Options& options) : options_(options) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::function<void(httplib::Server&)>& install) {
  MZ_ASSIGN_OR_RETURN(server_, NewServer(options_));
  httplib::Server& s = *server_;
  s.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  s.set_keep_alive_timeout(1);
  // cpp-httplib closes a connection after 5 requests by default, so a client updating 1,000
  // ports over kept-alive connections would reconnect 200 times. A controller behind nginx keeps
  // one for 1,000 requests (keepalive_requests), Go's net/http for any number.
  s.set_keep_alive_max_count(kRequestsPerConnection);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  // Small JSON replies on kept-alive connections: without TCP_NODELAY each one waits out the
  // client's delayed ACK (~40 ms) behind Nagle. Set on the listening socket, Linux hands it on
  // to every accepted one.
  s.set_tcp_nodelay(true);
  install(s);
  if (Status st = Bind(s); !st.ok()) {
    server_.reset();
    return st;
  }
  thread_ = std::thread([&s] { s.listen_after_bind(); });
  const auto deadline = Clock::now() + kStartTimeout;
  while (!s.is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!s.is_running()) {
    Stop();
    server_.reset();
    return InternalError("mock: the HTTP server did not start within 10 s");
  }
  return Status::Ok();
}

Status HttpServer::Bind(httplib::Server& s) {
  // The packaged library listens with a backlog of 5 (a compile-time constant), which drops SYNs
  // when a burst of plugins connects at once. Keep the listening socket so it can be widened.
  int listen_fd = -1;
  s.set_socket_options([&listen_fd](int fd) {
    httplib::default_socket_options(fd);
    listen_fd = fd;
  });
  int port = options_.port;
  if (port == 0) {
    port = s.bind_to_any_port(options_.host);
  } else if (!s.bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return UnavailableError("mock: cannot listen on " + options_.host + ":" +
                            std::to_string(options_.port) + " (address in use or not local?)");
  }
  port_ = port;
  // listen() again on a listening socket only resizes its accept queue (capped by somaxconn).
  if (listen_fd >= 0 && ::listen(listen_fd, SOMAXCONN) != 0) {
    MZ_LOG(kWarn) << "mock: cannot widen the listen backlog: " << std::strerror(errno);
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string HttpServer::base_url() const {
  std::string host = options_.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(options_.tls_cert_file.empty() ? "http://" : "https://") + host + ":" +
         std::to_string(port_);
}

// The socket is shut down (the client sees the connection close with no response) and its
// descriptor number is pointed at /dev/null, so the server thread that still owns the number
// writes its answer nowhere and closes it as usual, with no SIGPIPE and no descriptor confusion.
bool DropConnection(const httplib::Request& req) {
  const int fd = FindConnectionFd(req);
  if (fd < 0) return false;
  ::shutdown(fd, SHUT_RDWR);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (null.valid()) ::dup3(null.get(), fd, O_CLOEXEC);
  return true;
}

}  // namespace mizarmp::mock
