// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "relay/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/system_error.hpp>
#include <condition_variable>
#include <cstring>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/fd.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "common/unix_socket.h"
#include "relay/client_stream.h"
#include "relay/request.h"

namespace mizarmp::relay {

const char* OutcomeName(RelayOutcome outcome) {
  switch (outcome) {
    case RelayOutcome::kRelayed:
      return "relayed";
    case RelayOutcome::kOtherController:
      return "other_controller";
    case RelayOutcome::kMethod:
      return "method";
    case RelayOutcome::kMalformed:
      return "malformed";
    case RelayOutcome::kTooLarge:
      return "too_large";
    case RelayOutcome::kUpstreamFailed:
      return "upstream_failed";
  }
  return "unknown";
}

using std::chrono::milliseconds;

struct Relay::Impl {
  // A client connection, served by its own thread. `fd` stays open until the thread is joined,
  // so Stop() can shut it down at any moment.
  struct Connection {
    UniqueFd fd;
    std::thread thread;
    bool done MZ_GUARDED_BY(&Impl::mu) = false;  // the thread has finished
  };

  Impl(RelayOptions o, client::Endpoint ep) : options(std::move(o)), endpoint(std::move(ep)) {
    base = client::TrimmedBaseUrl(options.upstream.base_url);
  }

  const RelayOptions options;
  const client::Endpoint endpoint;
  std::string base;  // the upstream base_url without trailing '/': what kRelayToHeader must say

  UniqueFd listener;
  UniqueFd wake_read, wake_write;  // a byte written by Stop() ends the accept loop's poll
  mutable Mutex socket_mu;
  // So Stop() removes the one bound only, and Check() sees it go.
  BoundSocketFile socket_file MZ_GUARDED_BY(socket_mu);
  std::thread acceptor;

  Mutex mu;
  std::condition_variable changed;  // a connection ended, or stopping
  bool stopping MZ_GUARDED_BY(mu) = false;
  int active MZ_GUARDED_BY(mu) = 0;
  std::list<Connection> connections MZ_GUARDED_BY(mu);

  Mutex pool_mu;
  // Kept-alive upstream connections.
  std::vector<std::unique_ptr<client::Transport>> idle MZ_GUARDED_BY(pool_mu);

  // Held through the whole of Stop(), which takes the others inside it.
  Mutex stop_mu MZ_ACQUIRED_BEFORE(mu, pool_mu, socket_mu);
  bool stopped MZ_GUARDED_BY(stop_mu) = false;

  std::atomic<uint64_t> relayed{0};
  std::atomic<uint64_t> refused{0};

  // scheme://host[:port] of the controller, for log lines (a base URL's path is left out).
  std::string Upstream() const {
    return std::string(endpoint.https ? "https://" : "http://") + endpoint.host_header;
  }

  Status Listen();
  void AcceptLoop();
  bool WaitForClient();
  void ReapFinished();
  void Serve(Connection& connection);
  bool Handle(ClientStream& stream, const Request& req);
  std::optional<client::TransportFailure> Forward(const Request& req, client::HttpReply* reply);
  client::HttpRequest Forwarded(const Request& req) const;
  bool Refuse(ClientStream& stream, unsigned version, bool keep_alive, RelayOutcome outcome,
              const std::string& reason);
  // Counts one request's outcome and tells the observer.
  void Observe(RelayOutcome outcome, std::chrono::nanoseconds upstream_time);
  void Stop() MZ_EXCLUDES(stop_mu);
  void RemoveOwnSocket() MZ_EXCLUDES(socket_mu);
};

Status Relay::Impl::Listen() {
  const std::string& path = options.socket_path;
  MZ_RETURN_IF_ERROR(PrepareUnixSocket(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return ErrnoError("socket(AF_UNIX)", errno);
  // Linux gives the socket file the socket's own mode (less the umask): 0600 from bind() on,
  // not only after the chmod() below.
  (void)::fchmod(fd.get(), 0600);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoError("bind \"" + path + "\"", errno);
  }
  if (::chmod(path.c_str(), 0600) != 0) {
    Status s = ErrnoError("chmod 0600 \"" + path + "\"", errno);
    ::unlink(path.c_str());
    return s;
  }
  auto bound = BoundSocketFile::At(path);
  if (!bound.ok()) {
    ::unlink(path.c_str());
    return bound.status();
  }
  {
    MutexLock lock(socket_mu);  // nobody else has the relay yet
    socket_file = std::move(*bound);
  }
  int pipe_fds[2];
  if (::listen(fd.get(), SOMAXCONN) != 0 || ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    Status s = ErrnoError("listen on \"" + path + "\"", errno);
    RemoveOwnSocket();
    return s;
  }
  wake_read.reset(pipe_fds[0]);
  wake_write.reset(pipe_fds[1]);
  listener = std::move(fd);
  return Status::Ok();
}

// Accepts clients, one thread each, at most max_connections at once: at the limit it accepts
// nothing until one ends, and the next clients wait in the listen backlog.
void Relay::Impl::AcceptLoop() {
  for (;;) {
    ReapFinished();
    {
      MutexLock lock(mu);
      lock.Wait(changed,
                [&]() MZ_REQUIRES(mu) { return stopping || active < options.max_connections; });
      if (stopping) return;
    }
    if (!WaitForClient()) return;
    UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      // Out of descriptors or memory: the client waits in the backlog while others end.
      MZ_LOG(kWarn) << "relay: accept on " << options.socket_path << ": " << std::strerror(errno);
      pollfd p{wake_read.get(), POLLIN, 0};
      ::poll(&p, 1, 100);
      continue;
    }
    // Belt and braces under ClientStream's deadlines (which poll(2) before every call).
    const auto ms = options.idle_timeout.count();
    const timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    MutexLock lock(mu);
    if (stopping) return;
    Connection& connection = connections.emplace_back();
    connection.fd = std::move(fd);
    ++active;
    connection.thread = std::thread([this, &connection] { Serve(connection); });
  }
}

// Waits until a client is waiting to be accepted: false when Stop() woke the loop instead.
bool Relay::Impl::WaitForClient() {
  for (;;) {
    pollfd p[2] = {{listener.get(), POLLIN, 0}, {wake_read.get(), POLLIN, 0}};
    const int rc = ::poll(p, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || p[1].revents != 0) return false;
    if (p[0].revents != 0) return true;
  }
}

// Joins the threads of the connections that ended, and closes their sockets.
void Relay::Impl::ReapFinished() {
  std::list<Connection> finished;
  {
    MutexLock lock(mu);
    for (auto it = connections.begin(); it != connections.end();) {
      auto next = std::next(it);
      if (it->done) finished.splice(finished.end(), connections, it);
      it = next;
    }
  }
  for (Connection& c : finished) c.thread.join();
}

// One client connection: its requests one after the other, until it closes, stays idle past
// idle_timeout, sends what is not HTTP or asks to close.
void Relay::Impl::Serve(Connection& connection) {
  ClientStream stream(connection.fd.get());
  beast::flat_buffer buffer;
  for (;;) {
    stream.set_deadline(Clock::now() + options.idle_timeout);
    http::request_parser<http::string_body> parser;
    std::string error;
    const ReadOutcome read = ReadRequest(stream, buffer, options.max_request_bytes, parser, &error);
    if (read == ReadOutcome::kClosed) break;
    if (read == ReadOutcome::kMalformed) {
      MZ_LOG(kWarn) << "relay: a request that is not HTTP (" << error << "); closing";
      Refuse(stream, 11, false, RelayOutcome::kMalformed, "malformed HTTP request: " + error);
      break;
    }
    if (read == ReadOutcome::kTooLarge) {
      MZ_LOG(kWarn) << "relay: a request over " << options.max_request_bytes << " bytes; closing";
      Refuse(stream, 11, false, RelayOutcome::kTooLarge,
             "the request is larger than " + std::to_string(options.max_request_bytes) + " bytes");
      break;
    }
    if (!Handle(stream, parser.get())) break;
  }
  // The client sees the end now; the descriptor itself is closed when the thread is joined
  // (until then Stop() may still shut it down).
  ::shutdown(connection.fd.get(), SHUT_RDWR);
  MutexLock lock(mu);
  connection.done = true;
  --active;
  changed.notify_all();
}

// Answers one request (relayed or refused); false when the connection is to be closed.
bool Relay::Impl::Handle(ClientStream& stream, const Request& req) {
  const unsigned version = req.version();
  const bool keep_alive = req.keep_alive();
  std::string refusal;
  RelayOutcome refusal_outcome = RelayOutcome::kOtherController;
  if (req.count(kRelayToHeader) != 1 ||
      client::TrimmedBaseUrl(std::string(req[kRelayToHeader])) != base) {
    // Never anywhere else: a relay that went where a request said would be an open proxy.
    refusal = "this relay serves " + base + " only";
  } else if (!Relayable(req.method())) {
    refusal_outcome = RelayOutcome::kMethod;
    refusal = "the relay does not forward " + std::string(req.method_string()) + " requests";
  }
  if (refusal.empty()) {
    client::HttpReply reply;
    const auto sent = Clock::now();
    const auto failure = Forward(req, &reply);
    if (!failure) {
      Observe(RelayOutcome::kRelayed, Clock::now() - sent);
      http::response<http::string_body> res;
      res.version(version);
      res.result(static_cast<unsigned>(reply.status));
      if (MayHaveBody(res.result_int()) && !reply.body.empty()) {
        res.set(http::field::content_type, "application/json");
        res.body() = std::move(reply.body);
      }
      res.keep_alive(keep_alive);
      res.prepare_payload();
      stream.set_deadline(Clock::now() + options.idle_timeout);
      error_code ec;
      http::write(stream, res, ec);
      return !ec && keep_alive;
    }
    refusal_outcome = RelayOutcome::kUpstreamFailed;
    refusal = failure->text;
  }
  MZ_LOG(kWarn) << "relay: " << req.method_string() << " " << LogEscaped(Std(req.target()))
                << ": not relayed: " << refusal;
  return Refuse(stream, version, keep_alive, refusal_outcome, refusal);
}

// Sends `req` on over a pooled connection to the controller: one kept from an earlier request
// when there is one, else a new one. It is kept again after a complete answer only.
std::optional<client::TransportFailure> Relay::Impl::Forward(const Request& req,
                                                             client::HttpReply* reply) {
  std::unique_ptr<client::Transport> transport;
  {
    MutexLock lock(pool_mu);
    if (!idle.empty()) {
      transport = std::move(idle.back());
      idle.pop_back();
    }
  }
  if (transport == nullptr) {
    const client::ClientConfig& up = options.upstream;
    transport = std::make_unique<client::Transport>(endpoint, up.tls, up.connect_timeout,
                                                    up.max_response_bytes);
  }
  const client::HttpRequest forwarded = Forwarded(req);
  auto failure = transport->Send(forwarded, options.upstream.request_timeout, reply);
  if (!failure) {
    MutexLock lock(pool_mu);
    idle.push_back(std::move(transport));
  }
  return failure;
}

// `req` as the controller is sent it: method, target, headers and body as received, but for
// the hop-by-hop headers and kRelayToHeader.
client::HttpRequest Relay::Impl::Forwarded(const Request& req) const {
  client::HttpRequest out;
  out.method = std::string(req.method_string());
  out.target = std::string(req.target());
  const std::vector<std::string> connection_named = NamedByConnection(req);
  bool has_host = false;
  for (const auto& field : req) {
    const beast::string_view name = field.name_string();
    if (HopByHop(name) || beast::iequals(name, kRelayToHeader) ||
        std::any_of(connection_named.begin(), connection_named.end(),
                    [&](const std::string& named) { return beast::iequals(name, named); })) {
      continue;
    }
    has_host = has_host || beast::iequals(name, "Host");
    out.headers.emplace_back(std::string(name), std::string(field.value()));
  }
  if (!has_host) out.headers.emplace_back("Host", endpoint.host_header);  // HTTP/1.1 needs one
  const bool bodiless = req.method() == http::verb::get || req.method() == http::verb::delete_;
  if (!(req.body().empty() && bodiless)) out.body = &req.body();
  return out;
}

// Answers `status` for the relay itself, saying why in kRelayErrorHeader (and in a JSON body);
// false when the connection is to be closed.
bool Relay::Impl::Refuse(ClientStream& stream, unsigned version, bool keep_alive,
                         RelayOutcome outcome, const std::string& reason) {
  Observe(outcome, std::chrono::nanoseconds(0));
  http::response<http::string_body> res{StatusOf(outcome), version};
  res.set(kRelayErrorHeader, HeaderValue(reason));
  res.set(http::field::content_type, "application/json");
  res.body() = nlohmann::json{{"error", reason}}.dump(-1, ' ', false,
                                                      nlohmann::json::error_handler_t::replace);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  stream.set_deadline(Clock::now() + options.idle_timeout);
  error_code ec;
  http::write(stream, res, ec);
  return !ec && keep_alive;
}

void Relay::Impl::Stop() {
  MutexLock stop_lock(stop_mu);
  if (stopped) return;
  stopped = true;
  {
    MutexLock lock(mu);
    stopping = true;
    changed.notify_all();
  }
  if (wake_write.valid()) {
    const char byte = 1;
    (void)!::write(wake_write.get(), &byte, 1);
  }
  if (acceptor.joinable()) acceptor.join();
  listener.reset();  // clients still in the backlog see the connection reset
  RemoveOwnSocket();
  // shutdown(2) ends a connection thread's wait for its client at once (a request being relayed
  // finishes first, within request_timeout); the sockets close when the threads are joined.
  std::list<Connection> all;
  {
    MutexLock lock(mu);
    all.splice(all.end(), connections);
    for (Connection& c : all) ::shutdown(c.fd.get(), SHUT_RDWR);
  }
  for (Connection& c : all) c.thread.join();
  all.clear();
  MutexLock lock(pool_mu);
  idle.clear();
}

void Relay::Impl::RemoveOwnSocket() {
  MutexLock lock(socket_mu);
  socket_file.RemoveIfStillThere();
}

void Relay::Impl::Observe(RelayOutcome outcome, std::chrono::nanoseconds upstream_time) {
  ++(outcome == RelayOutcome::kRelayed ? relayed : refused);
  if (options.observer) options.observer({outcome, upstream_time});
}

namespace {

// The upstream checked as the client checks it (URL, timeouts, TLS files), but for the fields
// the relay does not use.
Status CheckUpstream(client::ClientConfig upstream) {
  upstream.token_file.clear();
  upstream.observer = nullptr;
  upstream.relay_socket.clear();
  if (upstream.project_id.empty()) upstream.project_id = client::kDefaultProjectId;
  upstream.max_attempts = std::max(upstream.max_attempts, 1);
  return client::Client::Create(std::move(upstream)).status().WithContext("mpurl");
}

Status CheckSocketPath(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return InvalidArgumentError("relaySocket " + Quoted(path) + ": must be an absolute path");
  }
  if (path.size() > kMaxUnixPath) {
    return InvalidArgumentError("relaySocket " + Quoted(path) + ": longer than " +
                                std::to_string(kMaxUnixPath) + " bytes (a unix socket's limit)");
  }
  return Status::Ok();
}

// The limits mizarmp-addons leaves at their defaults: named as the fields they are.
Status CheckLimits(const RelayOptions& o) {
  if (o.max_connections < 1) {
    return InvalidArgumentError("relay max_connections must be at least 1, got " +
                                std::to_string(o.max_connections));
  }
  if (o.idle_timeout.count() <= 0) {
    return InvalidArgumentError("relay idle_timeout must be positive");
  }
  if (o.max_request_bytes == 0) {
    return InvalidArgumentError("relay max_request_bytes must be positive");
  }
  return Status::Ok();
}

}  // namespace

Status RelayOptions::Validate() const {
  MZ_RETURN_IF_ERROR(CheckSocketPath(socket_path));
  if (upstream.base_url.empty()) {
    return InvalidArgumentError("relaySocket: needs mpurl, the controller it relays to");
  }
  MZ_RETURN_IF_ERROR(CheckLimits(*this));
  return CheckUpstream(upstream);
}

Relay::Relay(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Relay::~Relay() { Stop(); }

Result<std::unique_ptr<Relay>> Relay::Start(RelayOptions options) {
  MZ_RETURN_IF_ERROR(options.Validate());
  MZ_ASSIGN_OR_RETURN(client::Endpoint endpoint, client::ParseBaseUrl(options.upstream.base_url));
  auto impl = std::make_unique<Impl>(std::move(options), std::move(endpoint));
  MZ_RETURN_IF_ERROR(impl->Listen());
  Impl* serving = impl.get();
  serving->acceptor = std::thread([serving] { serving->AcceptLoop(); });
  MZ_LOG(kInfo) << "relay: serving " << serving->options.socket_path << " for "
                << serving->Upstream();
  return std::unique_ptr<Relay>(new Relay(std::move(impl)));
}

void Relay::Stop() { impl_->Stop(); }

Status Relay::Check() const {
  MutexLock lock(impl_->socket_mu);
  if (impl_->socket_file.StillThere()) return Status::Ok();
  return FailedPreconditionError("the relay socket " + Quoted(impl_->options.socket_path) +
                                 " is gone or another server's (plugins go to the controller "
                                 "directly); restart this server to serve it again");
}

uint64_t Relay::relayed() const { return impl_->relayed.load(); }

uint64_t Relay::refused() const { return impl_->refused.load(); }

}  // namespace mizarmp::relay
