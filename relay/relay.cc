// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "relay/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/system_error.hpp>
#include <condition_variable>
#include <cstring>
#include <limits>
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

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using beast::error_code;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Request = http::request<http::string_body>;

// Beast's string_view (Boost's in 1.74) as the standard one.
std::string_view Std(beast::string_view s) { return {s.data(), s.size()}; }

// Milliseconds from now until `deadline`, for poll(2): 0 once it has passed.
int MsUntil(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, std::numeric_limits<int>::max()));
}

// A client connection as Beast's SyncReadStream and SyncWriteStream, every read and write
// bounded by a deadline. Asio's own synchronous socket operations cannot be: after a recv(2)
// that SO_RCVTIMEO ends with EAGAIN they poll(2) the socket without a timeout, so a silent
// client would hold its thread forever. shutdown(2) of the socket (Stop) ends a wait at once.
class ClientStream {
 public:
  explicit ClientStream(int fd) : fd_(fd) {}

  // Every read and write until the next call must be done by `deadline`.
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, error_code& ec) {
    const asio::mutable_buffer b = FirstNonEmpty<asio::mutable_buffer>(buffers);
    ec = {};
    if (b.size() == 0) return 0;
    for (;;) {
      if (!Wait(POLLIN, ec)) return 0;
      const ssize_t n = ::recv(fd_, b.data(), b.size(), 0);
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) {
        ec = asio::error::eof;
        return 0;
      }
      if (errno != EINTR && errno != EAGAIN) return Failed(ec);
    }
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, error_code& ec) {
    iovec iov[16];
    size_t count = 0;
    for (auto it = asio::buffer_sequence_begin(buffers);
         it != asio::buffer_sequence_end(buffers) && count < std::size(iov); ++it) {
      const asio::const_buffer b(*it);
      if (b.size() == 0) continue;
      iov[count++] = iovec{const_cast<void*>(b.data()), b.size()};
    }
    ec = {};
    if (count == 0) return 0;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    for (;;) {
      if (!Wait(POLLOUT, ec)) return 0;
      // MSG_NOSIGNAL: a client gone away is an error here, not a SIGPIPE for the process.
      const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR && errno != EAGAIN) return Failed(ec);
    }
  }

  // The throwing forms the stream concepts ask for as well (Beast's calls use the above).
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    error_code ec;
    const size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  template <class Buffer, class Sequence>
  static Buffer FirstNonEmpty(const Sequence& buffers) {
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
         ++it) {
      Buffer b(*it);
      if (b.size() != 0) return b;
    }
    return Buffer();
  }

  // Waits until the socket is ready for `events`; false (ec set) when the deadline passed first.
  bool Wait(short events, error_code& ec) {
    for (;;) {
      pollfd p{fd_, events, 0};
      const int rc = ::poll(&p, 1, MsUntil(deadline_));
      if (rc > 0) return true;  // ready, or an error or hang-up the next call reports
      if (rc == 0) {
        ec = beast::error::timeout;
        return false;
      }
      if (errno != EINTR) {
        Failed(ec);
        return false;
      }
    }
  }

  static size_t Failed(error_code& ec) {
    ec = error_code(errno, boost::system::system_category());
    return 0;
  }

  int fd_;
  Clock::time_point deadline_ = Clock::now();
};

// How reading one request from a client ended.
enum class ReadOutcome {
  kRequest,    // a whole request
  kClosed,     // the client went away or stayed silent too long: nothing to answer
  kMalformed,  // not HTTP: answer 400 and close
  kTooLarge,   // over max_request_bytes: answer 413 and close
};

ReadOutcome ReadRequest(ClientStream& stream, beast::flat_buffer& buffer, size_t max_bytes,
                        http::request_parser<http::string_body>& parser, std::string* error) {
  parser.header_limit(
      static_cast<uint32_t>(std::min<size_t>(max_bytes, std::numeric_limits<uint32_t>::max())));
  parser.body_limit(max_bytes);
  error_code ec;
  const size_t header_bytes = http::read_header(stream, buffer, parser, ec);
  if (!ec && !parser.is_done()) {
    // The limit is the header and the body together: what the header left for the body.
    const size_t left = max_bytes > header_bytes ? max_bytes - header_bytes : 0;
    if (parser.content_length() && *parser.content_length() > left) return ReadOutcome::kTooLarge;
    parser.body_limit(left);  // a chunked body counts against it as it arrives
    http::read(stream, buffer, parser, ec);
  }
  if (!ec) return ReadOutcome::kRequest;
  if (ec == http::error::header_limit || ec == http::error::body_limit ||
      ec == http::error::buffer_overflow) {
    return ReadOutcome::kTooLarge;
  }
  // The connection ended between requests or within one, the deadline passed, or Stop() shut
  // the socket down: there is nobody to answer.
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec.category() != http::make_error_code(http::error::bad_method).category()) {
    return ReadOutcome::kClosed;
  }
  *error = ec.message();
  return ReadOutcome::kMalformed;
}

// The methods the Mizar-MP client sends. Others are refused: the transport could not forward
// them (an extension method) or read their answers right (HEAD's has no body).
bool Relayable(http::verb method) {
  return method == http::verb::get || method == http::verb::post || method == http::verb::put ||
         method == http::verb::delete_ || method == http::verb::patch;
}

// The headers of one hop only (RFC 9110 section 7.6.1), which the relay's own connection to the
// controller has its own of; Content-Length the transport sets from the body; and Expect: the
// relay holds the whole body already, and the transport would take a 100 Continue for the
// answer.
bool HopByHop(beast::string_view name) {
  static constexpr const char* kNames[] = {
      "Connection", "Keep-Alive",        "Proxy-Connection", "TE",    "Trailer",
      "Upgrade",    "Transfer-Encoding", "Content-Length",   "Expect"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* hop) { return beast::iequals(name, hop); });
}

// The header names the client's Connection header lists: hop-by-hop too.
std::vector<std::string> NamedByConnection(const Request& req) {
  std::vector<std::string> names;
  const auto [first, last] = req.equal_range(http::field::connection);
  for (auto field = first; field != last; ++field) {
    for (const std::string& token : Split(Std(field->value()), ',')) {
      std::string name = Trim(token);
      if (!name.empty()) names.push_back(std::move(name));
    }
  }
  return names;
}

// A reason as a header value: on one line, and short.
std::string HeaderValue(std::string_view reason) {
  std::string value(reason.substr(0, 300));
  for (char& c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return value;
}

// Whether a response with `status` may carry a body (RFC 9110 section 6.4.1).
bool MayHaveBody(unsigned status) { return status >= 200 && status != 204 && status != 304; }

// The status of the relay's own answer for `outcome`.
http::status StatusOf(RelayOutcome outcome) {
  switch (outcome) {
    case RelayOutcome::kRelayed:
      break;
    case RelayOutcome::kOtherController:
      return http::status::misdirected_request;
    case RelayOutcome::kMethod:
      return http::status::method_not_allowed;
    case RelayOutcome::kMalformed:
      return http::status::bad_request;
    case RelayOutcome::kTooLarge:
      return http::status::payload_too_large;
    case RelayOutcome::kUpstreamFailed:
      return http::status::bad_gateway;
  }
  return http::status::internal_server_error;
}

}  // namespace

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
