// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's Mizar-MP relay (relay/relay.h) as its clients see it: HTTP/1.1 over its unix socket,
// in front of the in-process mock controller served over TLS with a bearer token. The clients
// here are test-local (Beast over the unix socket, every step with a deadline so a relay that
// misbehaves fails the test rather than hanging it).
#include "relay/relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "common/fileutil.h"
#include "mizarmp-client/types.h"
#include "mock-server/mock.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::relay {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using local = asio::local::stream_protocol;
using beast::error_code;
using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kPatience{5000};  // how long a test waits for what must come
const std::string kToken = "relay-test-token";

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::string error;  // why no reply came ("" when one did)

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
  bool HasHeader(const std::string& lower_name) const { return headers.count(lower_name) != 0; }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// One client connection to the relay's socket: requests one after the other on it.
class Conn {
 public:
  explicit Conn(const std::string& socket_path) {
    error_code ec;
    stream_.expires_after(kPatience);
    stream_.async_connect(local::endpoint(socket_path), [&](const error_code& e) { ec = e; });
    Run();
    connect_error_ = ec.message();
    connected_ = !ec;
  }
  bool connected() const { return connected_; }
  const std::string& connect_error() const { return connect_error_; }

  // Sends a request and reads its answer.
  Reply Exchange(const std::string& method, const std::string& target, const Headers& headers,
                 const std::string& body = "") {
    http::request<http::string_body> req;
    req.version(11);
    req.method_string(method);
    req.target(target);
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    if (!body.empty() || method == "POST" || method == "PUT") req.prepare_payload();
    std::ostringstream text;
    text << req;
    return SendRaw(text.str()) ? Read(kPatience) : Reply{.error = "write failed"};
  }

  bool SendRaw(const std::string& bytes) {
    error_code ec;
    stream_.expires_after(kPatience);
    asio::async_write(stream_, asio::buffer(bytes), [&](const error_code& e, size_t) { ec = e; });
    Run();
    return !ec;
  }

  // The next answer, within `patience`.
  Reply Read(milliseconds patience) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(size_t{64} << 20);
    error_code ec;
    stream_.expires_after(patience);
    http::async_read(stream_, buffer_, parser, [&](const error_code& e, size_t) { ec = e; });
    Run();
    Reply reply;
    if (ec) {
      reply.error = ec == beast::error::timeout ? "timeout" : ec.message();
      return reply;
    }
    reply.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get()) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = std::string(field.value());
    }
    reply.body = parser.get().body();
    return reply;
  }

  // Whether the relay sends something (or closes) within `patience`. Polled, not through the
  // stream: its expiry would close the connection.
  bool ReadableWithin(milliseconds patience) {
    pollfd p{stream_.socket().native_handle(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(patience.count())) > 0;
  }

  // Whether the relay closes the connection within `patience` (dropping anything it sends).
  bool ClosedWithin(milliseconds patience) {
    const auto deadline = Clock::now() + patience;
    char sink[4096];
    for (;;) {
      const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 || !ReadableWithin(left)) return false;
      const ssize_t n = ::recv(stream_.socket().native_handle(), sink, sizeof(sink), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;  // eof, reset
    }
  }

  void Close() {
    error_code ignored;
    stream_.socket().shutdown(local::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  void Run() {
    ioc_.restart();
    ioc_.run();
  }

  asio::io_context ioc_;
  beast::basic_stream<local> stream_{ioc_};
  beast::flat_buffer buffer_;
  bool connected_ = false;
  std::string connect_error_;
};

// A TCP port on 127.0.0.1 nobody listens on (until a test starts something there).
int UnusedPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return 0;
  }
  return ntohs(addr.sin_port);
}

// A TCP forwarder from a port of its own to the controller's, counting the connections made
// through it: how many connections the relay opened to the controller.
class CountingProxy {
 public:
  explicit CountingProxy(int target_port) : target_port_(target_port) {
    listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int pipe_fds[2];
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_.get(), 16) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return;
    }
    stop_read_.reset(pipe_fds[0]);
    stop_write_.reset(pipe_fds[1]);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~CountingProxy() {
    if (stop_write_.valid()) (void)!::write(stop_write_.get(), "x", 1);
    if (acceptor_.joinable()) acceptor_.join();
    for (std::thread& t : pumps_) t.join();
  }
  int port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  // Waits for `fd` to be readable; false when the proxy stops first.
  bool Readable(int fd) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    return ::poll(p, 2, -1) > 0 && p[1].revents == 0;
  }

  void AcceptLoop() {
    while (Readable(listener_.get())) {
      UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client.valid()) continue;
      ++connections_;
      UniqueFd upstream(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(target_port_));
      if (::connect(upstream.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        continue;
      }
      pumps_.emplace_back([this, a = std::move(client), b = std::move(upstream)]() mutable {
        Pump(a.get(), b.get());
      });
    }
  }

  // Copies bytes both ways until either side closes or the proxy stops.
  void Pump(int a, int b) {
    char buf[16384];
    for (;;) {
      pollfd p[3] = {{a, POLLIN, 0}, {b, POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
      if (::poll(p, 3, -1) <= 0 || p[2].revents != 0) return;
      for (int i = 0; i < 2; ++i) {
        if (p[i].revents == 0) continue;
        const ssize_t n = ::recv(p[i].fd, buf, sizeof(buf), 0);
        if (n <= 0) return;
        if (::send(p[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return;
      }
    }
  }

  int target_port_;
  int port_ = 0;
  UniqueFd listener_, stop_read_, stop_write_;
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // only the acceptor thread adds to it
};

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    ASSERT_TRUE(WriteFileAtomic(token_file_, kToken + "\n", 0600).ok());
  }

  // The mock controller over TLS, requiring kToken; on `port` when not 0.
  void StartController(std::unique_ptr<mock::MockServer>* out, int port = 0) {
    mock::Options o;
    o.agent = false;
    o.port = port;
    o.tls_cert_file = pki_.server_cert;
    o.tls_key_file = pki_.server_key;
    o.token_file = token_file_;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, out));
  }

  RelayOptions Options(const std::string& base_url) const {
    RelayOptions o;
    o.socket_path = socket_;
    o.upstream.base_url = base_url;
    o.upstream.tls.ca_file = pki_.ca;
    o.upstream.connect_timeout = milliseconds(1000);
    o.upstream.request_timeout = milliseconds(3000);
    return o;
  }

  void StartRelay(const RelayOptions& options) {
    auto started = Relay::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    relay_ = std::move(*started);
  }

  // What a plugin process sends with every request: the controller it is for, and its token.
  static Headers For(const std::string& base_url, bool with_token = true) {
    Headers h = {{kRelayToHeader, base_url},
                 {"Host", base_url.substr(base_url.find("://") + 3)},
                 {"Accept", "application/json"},
                 {"User-Agent", "relay-test/1"}};
    if (with_token) h.emplace_back("Authorization", "Bearer " + kToken);
    return h;
  }

  static std::string PortBody(const std::string& id) {
    return json{{"port", client::PortSpecToJson(testing::PortSpecFor(id))}}.dump();
  }

  static std::string Ports() {
    return "/project/" + std::string(client::kDefaultProjectId) + "/ports";
  }

  static bool HasPort(const mock::MockServer& mock, const std::string& id) {
    for (const auto& port : mock.Ports()) {
      if (port.id == id) return true;
    }
    return false;
  }

  static mode_t ModeOf(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 07777;
  }

  testing::Pki pki_;
  testing::TempDir dir_;
  const std::string token_file_ = dir_.path() + "/token";
  const std::string socket_ = dir_.path() + "/run/relay.sock";
  std::unique_ptr<mock::MockServer> controller_;
  std::unique_ptr<Relay> relay_;
};

TEST_F(RelayTest, RelaysToTheTlsControllerOverOneKeptConnection) {
  ASSERT_NO_FATAL_FAILURE(StartController(&controller_));
  CountingProxy proxy(controller_->port());
  ASSERT_NE(proxy.port(), 0);
  const std::string base = "https://127.0.0.1:" + std::to_string(proxy.port());
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options(base)));

  Conn plugin(socket_);
  ASSERT_TRUE(plugin.connected()) << plugin.connect_error();
  Headers post = For(base);
  post.emplace_back("Content-Type", "application/json");
  const Reply created = plugin.Exchange("POST", Ports(), post, PortBody("p1"));
  ASSERT_EQ(created.error, "");
  EXPECT_EQ(created.status, 201) << created.body;
  EXPECT_FALSE(created.HasHeader("mizarmp-relay-error"));
  EXPECT_EQ(created.Header("content-type"), "application/json");
  EXPECT_EQ(json::parse(created.body)["port"]["id"], "p1");
  EXPECT_TRUE(HasPort(*controller_, "p1"));

  const Reply read = plugin.Exchange("GET", Ports() + "/p1", For(base));
  ASSERT_EQ(read.error, "");
  EXPECT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(json::parse(read.body)["port"]["id"], "p1");

  // The next "process" (a new client connection) is relayed over the same kept connection.
  Conn next_plugin(socket_);
  const Reply again = next_plugin.Exchange("GET", Ports() + "/p1", For(base + "/"));
  EXPECT_EQ(again.status, 200) << again.error << again.body;

  EXPECT_EQ(proxy.connections(), 1);
  EXPECT_EQ(relay_->relayed(), 3u);
  EXPECT_EQ(relay_->refused(), 0u);
}

TEST_F(RelayTest, ForwardsTheClientsHeadersAndTheControllersRefusals) {
  ASSERT_NO_FATAL_FAILURE(StartController(&controller_));
  const std::string base = controller_->base_url();
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options(base)));
  Conn plugin(socket_);

  // Without the token the controller refuses: its answer, not the relay's.
  const Reply unauthorized = plugin.Exchange("GET", Ports() + "/p1", For(base, false));
  EXPECT_EQ(unauthorized.status, 401) << unauthorized.error;
  EXPECT_FALSE(unauthorized.HasHeader("mizarmp-relay-error"));

  Headers post = For(base);
  post.emplace_back("Content-Type", "application/json");
  ASSERT_EQ(plugin.Exchange("POST", Ports(), post, PortBody("p2")).status, 201);
  const Reply updated =
      plugin.Exchange("PUT", Ports() + "/p2", post, R"({"port":{"admin_state_up":false}})");
  EXPECT_EQ(updated.status, 200) << updated.error << updated.body;
  const Reply journal = plugin.Exchange("GET", "/mock/requests", For(base));
  ASSERT_EQ(journal.status, 200) << journal.error;
  const json updates = json::parse(journal.body)["updates"];
  ASSERT_EQ(updates.size(), 1u) << journal.body;
  EXPECT_EQ(updates[0]["user_agent"], "relay-test/1");
  EXPECT_EQ(updates[0]["admin_state_up"], false);

  // A client asking to close gets its answer, then the connection closes.
  Headers closing = For(base);
  closing.emplace_back("Connection", "close");
  EXPECT_EQ(plugin.Exchange("GET", Ports() + "/p2", closing).status, 200);
  EXPECT_TRUE(plugin.ClosedWithin(kPatience));
}

TEST_F(RelayTest, RefusesRequestsForAnotherControllerAndSendsNothing) {
  ASSERT_NO_FATAL_FAILURE(StartController(&controller_));
  const std::string base = controller_->base_url();
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options(base)));
  Conn plugin(socket_);

  Headers none = For(base);
  none.erase(none.begin());  // no kRelayToHeader
  const Reply unnamed = plugin.Exchange("GET", Ports() + "/p1", none);
  EXPECT_EQ(unnamed.status, 421) << unnamed.error;
  EXPECT_EQ(unnamed.Header("mizarmp-relay-error"), "this relay serves " + base + " only");

  // Refused on the same connection: a refusal does not end it.
  const Reply other = plugin.Exchange("GET", Ports() + "/p1", For("https://evil.example:443"));
  EXPECT_EQ(other.status, 421) << other.error;
  EXPECT_NE(other.Header("mizarmp-relay-error").find("serves " + base + " only"),
            std::string::npos);

  Headers twice = For(base);
  twice.emplace_back(kRelayToHeader, "https://evil.example");
  EXPECT_EQ(plugin.Exchange("GET", Ports() + "/p1", twice).status, 421);

  EXPECT_EQ(controller_->requests(), 0u);
  EXPECT_EQ(relay_->relayed(), 0u);
  EXPECT_EQ(relay_->refused(), 3u);
}

TEST_F(RelayTest, AnswersBadGatewayWhileTheControllerIsDownAndRelaysOnceItIsBack) {
  const int port = UnusedPort();
  ASSERT_NE(port, 0);
  const std::string base = "https://127.0.0.1:" + std::to_string(port);
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options(base)));
  Conn plugin(socket_);

  const Reply down = plugin.Exchange("GET", Ports() + "/p1", For(base));
  EXPECT_EQ(down.status, 502) << down.error;
  EXPECT_NE(down.Header("mizarmp-relay-error").find("cannot connect to 127.0.0.1:"),
            std::string::npos)
      << down.Header("mizarmp-relay-error");

  ASSERT_NO_FATAL_FAILURE(StartController(&controller_, port));
  Headers post = For(base);
  post.emplace_back("Content-Type", "application/json");
  const Reply created = plugin.Exchange("POST", Ports(), post, PortBody("p3"));
  EXPECT_EQ(created.status, 201) << created.error << created.body;
  EXPECT_TRUE(HasPort(*controller_, "p3"));

  // Down again (its kept connection with it), then back.
  controller_.reset();
  const Reply down_again = plugin.Exchange("GET", Ports() + "/p3", For(base));
  EXPECT_EQ(down_again.status, 502) << down_again.error;
  EXPECT_TRUE(down_again.HasHeader("mizarmp-relay-error"));

  ASSERT_NO_FATAL_FAILURE(StartController(&controller_, port));
  const Reply back = plugin.Exchange("GET", Ports() + "/p3", For(base));
  EXPECT_EQ(back.status, 200) << back.error << back.body;  // a new mock: the port is gone
  EXPECT_EQ(relay_->refused(), 2u);
  EXPECT_EQ(relay_->relayed(), 2u);
}

TEST_F(RelayTest, AnswersGarbageWithBadRequestAndCloses) {
  ASSERT_NO_FATAL_FAILURE(StartController(&controller_));
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options(controller_->base_url())));

  Conn hostile(socket_);
  ASSERT_TRUE(hostile.SendRaw(std::string("\x01\x02 not http at all\r\n\r\n", 22)));
  const Reply reply = hostile.Read(kPatience);
  EXPECT_EQ(reply.status, 400) << reply.error;
  EXPECT_NE(reply.Header("mizarmp-relay-error").find("malformed HTTP request"), std::string::npos);
  EXPECT_TRUE(hostile.ClosedWithin(kPatience));

  // The relay serves on.
  Conn plugin(socket_);
  EXPECT_EQ(plugin.Exchange("GET", Ports() + "/x", For(controller_->base_url())).status, 200);
  EXPECT_EQ(controller_->requests(), 1u);
}

TEST_F(RelayTest, AnswersTooLargeRequestsWith413AndCloses) {
  ASSERT_NO_FATAL_FAILURE(StartController(&controller_));
  const std::string base = controller_->base_url();
  RelayOptions o = Options(base);
  o.max_request_bytes = 4096;
  ASSERT_NO_FATAL_FAILURE(StartRelay(o));

  Conn big_body(socket_);
  const Reply body = big_body.Exchange("POST", Ports(), For(base), std::string(8192, 'x'));
  EXPECT_EQ(body.status, 413) << body.error;
  EXPECT_TRUE(body.HasHeader("mizarmp-relay-error"));
  EXPECT_TRUE(big_body.ClosedWithin(kPatience));

  Headers huge = For(base);
  huge.emplace_back("X-Padding", std::string(8192, 'y'));
  Conn big_header(socket_);
  EXPECT_EQ(big_header.Exchange("GET", Ports() + "/p1", huge).status, 413);
  EXPECT_TRUE(big_header.ClosedWithin(kPatience));

  EXPECT_EQ(controller_->requests(), 0u);
  EXPECT_EQ(relay_->refused(), 2u);
}

TEST_F(RelayTest, TellsItsObserverEachRequestsOutcome) {
  ASSERT_NO_FATAL_FAILURE(StartController(&controller_));
  const std::string base = controller_->base_url();
  std::mutex mu;
  std::vector<RelayObservation> seen;
  RelayOptions o = Options(base);
  o.max_request_bytes = 4096;
  o.observer = [&](const RelayObservation& observation) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(observation);
  };
  ASSERT_NO_FATAL_FAILURE(StartRelay(o));

  // Each answer is written after its observation, so reading it orders them.
  Conn plugin(socket_);
  EXPECT_EQ(plugin.Exchange("GET", Ports() + "/p1", For(base)).status, 200);
  EXPECT_EQ(plugin.Exchange("GET", Ports() + "/p1", For("https://evil.example")).status, 421);
  EXPECT_EQ(plugin.Exchange("OPTIONS", Ports(), For(base)).status, 405);
  Conn hostile(socket_);
  ASSERT_TRUE(hostile.SendRaw("\x01 not http\r\n\r\n"));
  EXPECT_EQ(hostile.Read(kPatience).status, 400);
  Conn big(socket_);
  EXPECT_EQ(big.Exchange("POST", Ports(), For(base), std::string(8192, 'x')).status, 413);
  controller_.reset();
  Conn late(socket_);
  EXPECT_EQ(late.Exchange("GET", Ports() + "/p1", For(base)).status, 502);

  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 6u);
  const RelayOutcome expected[] = {RelayOutcome::kRelayed,  RelayOutcome::kOtherController,
                                   RelayOutcome::kMethod,   RelayOutcome::kMalformed,
                                   RelayOutcome::kTooLarge, RelayOutcome::kUpstreamFailed};
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(OutcomeName(seen[i].outcome), std::string(OutcomeName(expected[i]))) << i;
    // Only a relayed request has a controller round trip to time.
    EXPECT_EQ(seen[i].upstream_time.count() > 0, i == 0) << i;
  }
}

TEST_F(RelayTest, ChecksFailNamingTheSocketOnceItIsGoneAndAReplacementIsLeftAlone) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options("https://127.0.0.1:1")));
  EXPECT_TRUE(relay_->Check().ok()) << relay_->Check().ToString();

  ASSERT_EQ(::unlink(socket_.c_str()), 0);
  const Status gone = relay_->Check();
  EXPECT_EQ(gone.code(), Code::kFailedPrecondition) << gone.ToString();
  EXPECT_NE(gone.message().find(socket_), std::string::npos) << gone.ToString();

  // Something else at the path now: not the relay's, so Stop() leaves it.
  ASSERT_TRUE(WriteFileAtomic(socket_, "not the relay's\n", 0600).ok());
  EXPECT_FALSE(relay_->Check().ok());
  relay_->Stop();
  EXPECT_FALSE(relay_->Check().ok());
  EXPECT_EQ(*ReadFile(socket_), "not the relay's\n");
}

TEST_F(RelayTest, ClosesSilentAndTricklingClientsAfterTheIdleTimeout) {
  RelayOptions o = Options("https://127.0.0.1:1");
  o.idle_timeout = milliseconds(200);
  ASSERT_NO_FATAL_FAILURE(StartRelay(o));

  Conn silent(socket_);
  ASSERT_TRUE(silent.connected()) << silent.connect_error();
  const auto start = Clock::now();
  EXPECT_TRUE(silent.ClosedWithin(kPatience));
  EXPECT_GE(Clock::now() - start, milliseconds(150));

  // A byte every 50 ms never lets a read wait long; the request as a whole is still bounded.
  Conn trickling(socket_);
  ASSERT_TRUE(trickling.SendRaw("GET / HTTP/1.1\r\n"));
  const auto trickle_start = Clock::now();
  bool closed = false;
  while (!closed && Clock::now() - trickle_start < kPatience) {
    closed = !trickling.SendRaw("X") || trickling.ClosedWithin(milliseconds(50));
  }
  EXPECT_TRUE(closed);
  EXPECT_EQ(relay_->refused(), 0u);
}

TEST_F(RelayTest, StopReturnsPromptlyWithClientsConnected) {
  RelayOptions o = Options("https://127.0.0.1:1");
  o.idle_timeout = milliseconds(60000);
  ASSERT_NO_FATAL_FAILURE(StartRelay(o));

  // One client between requests (its thread waits for the next), one in the middle of one.
  Conn idle(socket_);
  EXPECT_EQ(idle.Exchange("GET", "/", {}).status, 421);
  Conn partial(socket_);
  ASSERT_TRUE(partial.SendRaw("GET / HTTP/1.1\r\nHost: x\r\n"));
  Conn silent(socket_);
  ASSERT_TRUE(silent.connected());

  auto stopped = std::async(std::launch::async, [&] { relay_->Stop(); });
  ASSERT_EQ(stopped.wait_for(kPatience), std::future_status::ready);
  EXPECT_TRUE(idle.ClosedWithin(kPatience));
  EXPECT_TRUE(partial.ClosedWithin(kPatience));
  struct stat st {};
  EXPECT_NE(::lstat(socket_.c_str(), &st), 0) << "the socket file is left behind";
  relay_->Stop();  // idempotent
}

TEST_F(RelayTest, ServesAtMostMaxConnectionsAtOnce) {
  RelayOptions o = Options("https://127.0.0.1:1");
  o.max_connections = 1;
  ASSERT_NO_FATAL_FAILURE(StartRelay(o));

  Conn first(socket_);
  EXPECT_EQ(first.Exchange("GET", "/", {}).status, 421);
  // The second waits in the backlog while the first is open...
  Conn second(socket_);
  ASSERT_TRUE(second.connected()) << second.connect_error();
  ASSERT_TRUE(second.SendRaw("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_FALSE(second.ReadableWithin(milliseconds(300)));
  // ...and is served once it ends.
  first.Close();
  EXPECT_EQ(second.Read(kPatience).status, 421);
}

TEST_F(RelayTest, TheSocketIsTheOwnersAloneAndNotTakenOver) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(Options("https://127.0.0.1:1")));
  EXPECT_EQ(ModeOf(socket_), 0600u);
  EXPECT_EQ(ModeOf(DirName(socket_)), 0700u);  // created by the relay

  auto second = Relay::Start(Options("https://127.0.0.1:1"));
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().IsAlreadyExists()) << second.status().ToString();
  // The refused one removed nothing: the first still serves.
  Conn plugin(socket_);
  EXPECT_EQ(plugin.Exchange("GET", "/", {}).status, 421);

  relay_->Stop();
  auto successor = Relay::Start(Options("https://127.0.0.1:1"));
  EXPECT_TRUE(successor.ok()) << successor.status().ToString();
}

TEST_F(RelayTest, StartRefusesBadOptionsNamingTheKey) {
  RelayOptions relative = Options("https://127.0.0.1:1");
  relative.socket_path = "run/relay.sock";
  auto started = Relay::Start(relative);
  ASSERT_FALSE(started.ok());
  EXPECT_TRUE(started.status().IsInvalidArgument()) << started.status().ToString();
  EXPECT_NE(started.status().message().find("relaySocket"), std::string::npos);

  for (const std::string url : {"", "ftp://controller", "https://"}) {
    auto bad = Relay::Start(Options(url));
    ASSERT_FALSE(bad.ok()) << url;
    EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status().ToString();
    EXPECT_NE(bad.status().message().find("mpurl"), std::string::npos) << bad.status().ToString();
  }
  RelayOptions missing_ca = Options("https://127.0.0.1:1");
  missing_ca.upstream.tls.ca_file = dir_.path() + "/no-such-ca.pem";
  EXPECT_FALSE(Relay::Start(missing_ca).ok());
  struct stat st {};
  EXPECT_NE(::lstat(socket_.c_str(), &st), 0);  // nothing bound by a refused start
}

}  // namespace
}  // namespace mizarmp::relay
