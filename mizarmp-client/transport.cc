// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/transport.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>

#include "common/elapsed.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/version.h"
#include "mizarmp-client/tls_session.h"
#include "mizarmp-client/trust_store.h"

namespace mizarmp::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;
using beast::error_code;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Room made in the read buffer before a response body is read: Beast's largest single read.
constexpr size_t kBodyReadBytes = 64 * 1024;

// OpenSSL set up without reading openssl.cnf (the first initialisation wins, so this runs before
// any other OpenSSL call of the transport). In the static plugin a host's configuration could
// make the built-in libcrypto dlopen that host's providers or engines, built for another libc
// and another OpenSSL. What Debian's file would set (TLS 1.2 at least, security level 2) is set
// on the context instead (MakeTlsSetup), so every build behaves the same on every host.
// Nor is OpenSSL's legacy name table of every cipher filled: libssl 3 fetches the ciphers it
// uses from the provider by name, and filling the table was an eighth of an https ADD's
// instructions. (The digests' table stays: the certificate checks look digests up in it, and
// without it every signature is "too weak".)
void InitOpenSslWithoutHostConfig() {
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                       OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
                   nullptr);
}

// The reason OpenSSL gave for a failed TLS operation ("" if the error is not OpenSSL's).
std::string TlsDetail(const error_code& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return "";
  const char* reason = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
  return reason != nullptr ? reason : "OpenSSL error " + std::to_string(ec.value());
}

// A client certificate (and its key: without a key file, the certificate file's own).
Status UseClientCertificate(ssl::context& ctx, const TlsConfig& tls) {
  if (tls.cert_file.empty()) return Status::Ok();
  const std::string& key = tls.key_file.empty() ? tls.cert_file : tls.key_file;
  error_code ec;
  ctx.use_certificate_chain_file(tls.cert_file, ec);
  if (!ec) ctx.use_private_key_file(key, ssl::context::pem, ec);
  if (!ec) return Status::Ok();
  const std::string detail = TlsDetail(ec);
  ERR_clear_error();
  return UnavailableError("TLS: cannot set up the client with certificate " + tls.cert_file +
                          " and key " + key + (detail.empty() ? "" : ": " + detail));
}

// True for an IPv4 or IPv6 literal (no brackets).
bool IsIpAddress(const std::string& host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host.c_str(), addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

// OpenSSL checks the host name as part of the chain (RFC 6125: the subjectAltName names, the
// CN only when there are none; an IP address against the IP SANs).
Status ExpectHost(ssl::context& ctx, const std::string& host) {
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx.native_handle());
  const int rc = param == nullptr ? 0
                 : IsIpAddress(host)
                     ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                     : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  if (rc != 1) {
    ERR_clear_error();
    return UnavailableError("TLS: cannot set up host name verification for " + host);
  }
  return Status::Ok();
}

// The CAs a full handshake checks the server's chain against, loaded by the first check: a
// resumed session has no chain to check, and loading a CA was an eighth of an https ADD.
struct LazyTrust {
  TrustLocation where;
  bool loaded = false;
  std::optional<Status> failed;  // why the last handshake's check could not load it
};

// OpenSSL's chain check, the trust loaded first (SSL_CTX_set_cert_verify_callback). A load that
// fails is tried again by the next full handshake (the operator may mend the file meanwhile).
int VerifyChainLoadingTrust(X509_STORE_CTX* chain, void* arg) {
  auto* trust = static_cast<LazyTrust*>(arg);
  if (!trust->loaded) {
    Status load = LoadTrust(X509_STORE_CTX_get0_store(chain), trust->where);
    if (!load.ok()) {
      trust->failed = std::move(load);
      X509_STORE_CTX_set_error(chain, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
      return 0;
    }
    trust->loaded = true;
  }
  return X509_verify_cert(chain);
}

// The slot of an SSL_CTX that points at its TlsSessionFile, for the new-session callback.
int SessionFileSlot() {
  static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// Keeps a session the server's ticket made after a full handshake (SSL_CTX_sess_set_new_cb);
// a resumed one's file is already there. Returns 0: OpenSSL keeps no extra reference.
int KeepNewSession(SSL* ssl, SSL_SESSION* session) {
  const auto* file = static_cast<const TlsSessionFile*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), SessionFileSlot()));
  if (file != nullptr && SSL_session_reused(ssl) == 0) file->Save(session);
  return 0;
}

// What the sessions of `endpoint` are bound to: the server, the trust that checked its
// certificate, and the client's own certificate and key.
std::string SessionBinding(const Endpoint& endpoint, const TlsConfig& tls,
                           const TrustLocation& trust) {
  return "server " + endpoint.host_header + "\ntrust " + trust.Version() + "\nclient " +
         tls.cert_file + " " + VersionOf(tls.cert_file).ToString() + " " + tls.key_file + " " +
         VersionOf(tls.key_file).ToString();
}

// The TLS settings every connection of a Transport shares, and what they rest on (declared
// before the context, whose callbacks point at them, so that they outlive it).
struct TlsSetup {
  LazyTrust trust;
  std::optional<TlsSessionFile> sessions;  // with TlsConfig::session_dir
  std::unique_ptr<ssl::context> context;
};

// Fills `setup` (its address is registered with OpenSSL: it must not move).
Status MakeTlsSetup(const Endpoint& endpoint, const TlsConfig& tls, TlsSetup* setup) {
  InitOpenSslWithoutHostConfig();
  setup->context = std::make_unique<ssl::context>(ssl::context::tls_client);
  ssl::context& ctx = *setup->context;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                  ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                  ssl::context::no_tlsv1_1);
  SSL_CTX_set_security_level(ctx.native_handle(), 2);
  MZ_RETURN_IF_ERROR(UseClientCertificate(ctx, tls));
  if (tls.insecure_skip_verify) {
    ctx.set_verify_mode(ssl::verify_none);
    return Status::Ok();
  }
  MZ_ASSIGN_OR_RETURN(setup->trust.where, FindTrust(tls.ca_file));
  SSL_CTX_set_cert_verify_callback(ctx.native_handle(), VerifyChainLoadingTrust, &setup->trust);
  MZ_RETURN_IF_ERROR(ExpectHost(ctx, endpoint.host));
  ctx.set_verify_mode(ssl::verify_peer);
  if (!tls.session_dir.empty()) {
    setup->sessions.emplace(tls.session_dir, endpoint.host_header,
                            SessionBinding(endpoint, tls, setup->trust.where));
    SSL_CTX_set_session_cache_mode(ctx.native_handle(),
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_set_ex_data(ctx.native_handle(), SessionFileSlot(), &*setup->sessions);
    SSL_CTX_sess_set_new_cb(ctx.native_handle(), KeepNewSession);
  }
  return Status::Ok();
}

TransportFailure Retryable(std::string text, bool timed_out = false) {
  TransportFailure f;
  f.text = std::move(text);
  f.retryable = true;
  f.timed_out = timed_out;
  return f;
}

TransportFailure Final(std::string text) {
  TransportFailure f;
  f.text = std::move(text);
  return f;
}

// Why the handshake failed. A certificate that does not verify, or CAs that cannot be read, fail
// the same way every time (not retried); any other failure may be the network's.
TransportFailure HandshakeFailure(const error_code& ec, long verify_result, const LazyTrust& trust,
                                  const Endpoint& ep, Clock::time_point started) {
  ERR_clear_error();
  if (trust.failed) return Final(trust.failed->message());
  if (verify_result == X509_V_ERR_HOSTNAME_MISMATCH ||
      verify_result == X509_V_ERR_IP_ADDRESS_MISMATCH) {
    return Final("TLS: server certificate does not match the host name " + ep.host);
  }
  if (verify_result != X509_V_OK) {
    return Final("TLS: server certificate verification failed: " +
                 std::string(X509_verify_cert_error_string(verify_result)));
  }
  if (ec == beast::error::timeout) {
    return Retryable("TLS: handshake with " + ep.host_header + " failed: timed out after " +
                         std::to_string(ElapsedMs(started)) + " ms",
                     true);
  }
  const std::string detail = TlsDetail(ec);
  TransportFailure f = Retryable("TLS: handshake with " + ep.host_header + " failed" +
                                 (detail.empty() ? "" : ": " + detail));
  f.tls_refused = ec.category() == asio::error::get_ssl_category();
  return f;
}

// " (TLS: reason)" when OpenSSL ended a read or write (e.g. a TLS 1.3 server refusing a missing
// client certificate only after the handshake).
std::string TlsSuffix(const error_code& ec) {
  const std::string detail = TlsDetail(ec);
  return detail.empty() ? "" : " (TLS: " + detail + ")";
}

TransportFailure WriteFailure(const error_code& ec, milliseconds timeout) {
  if (ec == beast::error::timeout) {
    return Retryable("sending the request timed out after " + std::to_string(timeout.count()) +
                         " ms" + TlsSuffix(ec),
                     true);
  }
  return Retryable("sending the request failed (connection closed)" + TlsSuffix(ec));
}

// The connection ended (or the attempt's time ran out) before the whole response arrived.
TransportFailure ReadFailure(const error_code& ec, milliseconds timeout, const HttpReply& got) {
  TransportFailure f;
  if (ec == beast::error::timeout) {
    f = Retryable(
        "no complete response within " + std::to_string(timeout.count()) + " ms (timed out)", true);
  } else if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    f = Retryable("the response is not valid HTTP (" + ec.message() + ")");
  } else if (got.status > 0) {
    f = Retryable("connection closed after HTTP " + std::to_string(got.status) + " and " +
                  std::to_string(got.body.size()) + " bytes of the body");
  } else {
    f = Retryable("connection closed with no response");
  }
  f.text += TlsSuffix(ec);
  f.partial_http = got.status;
  return f;
}

http::request<http::string_body> BuildRequest(const HttpRequest& r) {
  http::request<http::string_body> req;
  req.version(11);
  req.method(http::string_to_verb(r.method));
  req.target(r.target);
  req.set(http::field::user_agent, "mizarmp/" + std::string(Version()));
  for (const auto& [name, value] : r.headers) req.set(name, value);
  if (r.body != nullptr) req.body() = *r.body;
  req.prepare_payload();  // Content-Length (0 for a POST or PUT without a body)
  return req;
}

}  // namespace

std::string TlsLibraryVersion() { return OpenSSL_version(OPENSSL_VERSION); }

std::string TrimmedBaseUrl(std::string base_url) {
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  return base_url;
}

Result<Endpoint> ParseBaseUrl(const std::string& original) {
  const std::string base = TrimmedBaseUrl(original);
  const size_t scheme_end = base.find("://");
  const size_t authority_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const size_t slash = base.find_first_of("/?#", authority_start);
  const std::string authority = base.substr(
      authority_start, slash == std::string::npos ? std::string::npos : slash - authority_start);
  if (authority.find('@') != std::string::npos) {
    // Not echoed: the part before '@' may be a password. Credentials go in token_file.
    return InvalidArgumentError(
        "base_url must not carry user credentials (user@host); use a token file");
  }
  const std::string named = "base_url " + Quoted(original);
  Endpoint ep;
  ep.https = base.starts_with("https://");
  if (!ep.https && !base.starts_with("http://")) {
    return InvalidArgumentError(named + " must start with http:// or https://");
  }
  for (char c : base) {
    if (std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c))) {
      return InvalidArgumentError(named + " contains whitespace");
    }
  }
  if (base.find_first_of("?#") != std::string::npos) {
    return InvalidArgumentError(named + " must not carry a query or a fragment");
  }
  if (slash != std::string::npos) ep.prefix = base.substr(slash);
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) {
      return InvalidArgumentError(named + " has an unterminated IPv6 host");
    }
    ep.host = authority.substr(1, close - 1);
    const std::string rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return InvalidArgumentError(named + " has junk after the host");
      port_text = rest.substr(1);
    }
  } else {
    const size_t colon = authority.find(':');
    ep.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (ep.host.empty()) return InvalidArgumentError(named + " has no host");
  ep.port = ep.https ? 443 : 80;
  if (!port_text.empty()) {
    int port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535) {
        port = -1;
        break;
      }
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) {
      return InvalidArgumentError(named + " has a bad port " + Quoted(port_text));
    }
    ep.port = port;
  }
  const bool v6 = ep.host.find(':') != std::string::npos;
  ep.host_header = v6 ? "[" + ep.host + "]" : ep.host;
  if (ep.port != (ep.https ? 443 : 80)) ep.host_header += ":" + std::to_string(ep.port);
  return ep;
}

// Beast's synchronous operations cannot be bounded in time, so every step runs as an
// asynchronous operation on a private io_context, on this thread, until it completes: the
// tcp_stream's expiry (expires_at) cancels it when its time is up and it completes with
// beast::error::timeout. Asio sends with MSG_NOSIGNAL and TLS goes through memory BIOs written
// by Asio, so a write to a closed connection fails with EPIPE rather than raising SIGPIPE.
struct Transport::Impl {
  Impl(TlsConfig tls_config, milliseconds connect, size_t max_bytes)
      : tls(std::move(tls_config)), connect_timeout(connect), max_response_bytes(max_bytes) {}

  TlsConfig tls;
  milliseconds connect_timeout;
  size_t max_response_bytes;
  asio::io_context ioc;
  std::optional<TlsSetup> tls_setup;  // made by the first https Send
  TlsHandshakes handshakes;
  std::optional<beast::tcp_stream> plain;                       // the http connection, or
  std::optional<beast::ssl_stream<beast::tcp_stream>> secured;  // the https one, or
  std::optional<beast::basic_stream<local>> relayed;            // the unix socket's
  beast::flat_buffer buffer;  // what was read past the last answer

  // Runs the operation just started until it completes (or its stream's expiry ends it).
  void Run() {
    ioc.restart();
    ioc.run();
  }

  // The kept connection's socket; -1 when there is none.
  int KeptSocket() {
    if (plain) return plain->socket().is_open() ? plain->socket().native_handle() : -1;
    if (secured) {
      auto& tcp_layer = beast::get_lowest_layer(*secured).socket();
      return tcp_layer.is_open() ? tcp_layer.native_handle() : -1;
    }
    if (relayed) return relayed->socket().is_open() ? relayed->socket().native_handle() : -1;
    return -1;
  }

  void Close() {
    plain.reset();
    secured.reset();
    relayed.reset();
    buffer.clear();
  }

  // True when the kept connection may carry the next request: open, and with nothing to read.
  // An idle HTTP connection that turned readable was closed by the server (or sent what no
  // request asked for): it is not reused.
  bool Reusable() {
    const int kept = KeptSocket();
    if (kept < 0) return false;
    pollfd p{kept, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  // Connects to the unix socket `ep` names, within `stage_deadline`.
  std::optional<TransportFailure> ConnectLocal(const Endpoint& ep,
                                               Clock::time_point stage_deadline) {
    const auto started = Clock::now();
    error_code ec;
    beast::basic_stream<local>& stream = relayed.emplace(ioc);
    stream.expires_at(stage_deadline);
    stream.async_connect(local::endpoint(ep.unix_socket), [&](const error_code& e) { ec = e; });
    Run();
    if (!ec) return std::nullopt;
    relayed.reset();
    if (ec == beast::error::timeout) {
      return Retryable("connecting to " + ep.unix_socket + " timed out after " +
                           std::to_string(ElapsedMs(started)) + " ms",
                       true);
    }
    return Retryable("cannot connect to " + ep.unix_socket + " (" + ec.message() + ")");
  }

  // Resolves and connects, then (https) shakes hands, each bounded by `stage_deadline`.
  std::optional<TransportFailure> Open(const Endpoint& ep, Clock::time_point stage_deadline) {
    if (!ep.unix_socket.empty()) return ConnectLocal(ep, stage_deadline);
    if (ep.https && !tls_setup) {
      tls_setup.emplace();
      if (Status made = MakeTlsSetup(ep, tls, &*tls_setup); !made.ok()) {
        tls_setup.reset();
        return Final(made.message());
      }
    }
    const TlsSessionFile* sessions =
        ep.https && tls_setup->sessions ? &*tls_setup->sessions : nullptr;
    for (;;) {
      std::optional<beast::tcp_stream> stream;
      if (auto failed = Connect(ep, stage_deadline, &stream)) return failed;
      if (!ep.https) {
        plain.emplace(std::move(*stream));
        return std::nullopt;
      }
      SSL_SESSION* kept = sessions != nullptr ? sessions->Load() : nullptr;
      auto failed = Handshake(ep, std::move(*stream), stage_deadline, kept);
      SSL_SESSION_free(kept);
      // TLS lets a server ignore a session it will not resume; one that fails the handshake
      // over it instead gets a full handshake on a new connection.
      if (!failed || kept == nullptr || !failed->tls_refused) return failed;
      MZ_LOG(kInfo) << "TLS: " << ep.host_header << " refused a kept session (" << failed->text
                    << "); no more are offered to it";
      ++handshakes.refused;
      sessions->Refuse();
      sessions = nullptr;
    }
  }

  std::optional<TransportFailure> Connect(const Endpoint& ep, Clock::time_point stage_deadline,
                                          std::optional<beast::tcp_stream>* connected) {
    const auto started = Clock::now();
    error_code ec;
    tcp::resolver resolver(ioc);
    const auto addresses =
        resolver.resolve(ep.host, std::to_string(ep.port), tcp::resolver::numeric_service, ec);
    if (ec) return Retryable("cannot connect to " + ep.host_header);
    beast::tcp_stream& stream = connected->emplace(ioc);
    stream.expires_at(stage_deadline);
    stream.async_connect(addresses, [&](const error_code& e, const tcp::endpoint&) { ec = e; });
    Run();
    if (ec == beast::error::timeout) {
      return Retryable("connecting to " + ep.host_header + " timed out after " +
                           std::to_string(ElapsedMs(started)) + " ms",
                       true);
    }
    if (ec) return Retryable("cannot connect to " + ep.host_header);
    stream.socket().set_option(tcp::no_delay(true), ec);  // small requests: no Nagle delay
    return std::nullopt;
  }

  // The TLS handshake over `stream`, offering `kept` (a session kept by an earlier process) when
  // there is one.
  std::optional<TransportFailure> Handshake(const Endpoint& ep, beast::tcp_stream stream,
                                            Clock::time_point stage_deadline, SSL_SESSION* kept) {
    const auto started = Clock::now();
    secured.emplace(std::move(stream), *tls_setup->context);
    SSL* ssl = secured->native_handle();
    // SNI names the host; RFC 6066 allows no IP address there.
    if (!IsIpAddress(ep.host)) SSL_set_tlsext_host_name(ssl, ep.host.c_str());
    if (kept != nullptr) SSL_set_session(ssl, kept);
    tls_setup->trust.failed.reset();
    beast::get_lowest_layer(*secured).expires_at(stage_deadline);
    error_code ec;
    secured->async_handshake(ssl::stream_base::client, [&](const error_code& e) { ec = e; });
    Run();
    if (!ec) {
      const bool resumed = SSL_session_reused(ssl) == 1;
      ++(resumed ? handshakes.resumed : handshakes.full);
      MZ_LOG(kDebug) << "TLS: "
                     << (resumed ? "resumed a kept session with " : "full handshake with ")
                     << ep.host_header << " (" << SSL_get_version(ssl) << ")";
      return std::nullopt;
    }
    const long verify_result = SSL_get_verify_result(ssl);
    secured.reset();
    return HandshakeFailure(ec, verify_result, tls_setup->trust, ep, started);
  }

  // Writes the request and reads the whole response (body bounded by max_response_bytes), all
  // before `deadline`. *keep_alive says whether the connection may carry another request.
  template <class Stream>
  std::optional<TransportFailure> Exchange(Stream& stream, const HttpRequest& request,
                                           Clock::time_point deadline, milliseconds timeout,
                                           HttpReply* reply, bool* keep_alive) {
    *keep_alive = false;
    http::request<http::string_body> req = BuildRequest(request);
    beast::get_lowest_layer(stream).expires_at(deadline);
    error_code ec;
    http::async_write(stream, req, [&](const error_code& e, size_t) { ec = e; });
    Run();
    if (ec) return WriteFailure(ec, timeout);

    http::response_parser<http::string_body> parser;
    parser.body_limit(max_response_bytes);
    // The header alone first: Beast 1.74 loses the body_limit error for a Content-Length past
    // the bound when body bytes arrived in the same read as the header and the parser is eager
    // (as async_read makes it); async_read_header parses lazily, so the error stands. The body
    // follows, bounded by the limit as it arrives (chunked, or until the connection closes).
    http::async_read_header(stream, buffer, parser, [&](const error_code& e, size_t) { ec = e; });
    Run();
    if (!ec && !parser.is_done()) {
      // Beast reads at most what the buffer has room for, and the parser empties it after each
      // read: left at the header's size, a 5 MB port list would take some 10,000 reads (each
      // with its timer set and its epoll wait) instead of some 80.
      buffer.reserve(kBodyReadBytes);
      http::async_read(stream, buffer, parser, [&](const error_code& e, size_t) { ec = e; });
      Run();
    }
    if (ec == http::error::body_limit) {
      TransportFailure f = Final("the response body is larger than " +
                                 std::to_string(max_response_bytes) + " bytes");
      f.too_large = true;
      return f;
    }
    if (parser.is_header_done()) {
      reply->status = static_cast<int>(parser.get().result_int());
      const auto relay_error = parser.get().find(kRelayErrorHeader);
      if (relay_error != parser.get().end()) reply->relay_error = std::string(relay_error->value());
    }
    reply->body = std::move(parser.get().body());
    if (ec) return ReadFailure(ec, timeout, *reply);
    *keep_alive = parser.keep_alive();
    return std::nullopt;
  }
};

Transport::Transport(Endpoint endpoint, TlsConfig tls, milliseconds connect_timeout,
                     size_t max_response_bytes)
    : endpoint_(std::move(endpoint)),
      impl_(std::make_unique<Impl>(std::move(tls), connect_timeout, max_response_bytes)) {}

Transport::~Transport() = default;

const TlsHandshakes& Transport::handshakes() const { return impl_->handshakes; }

std::optional<TransportFailure> Transport::Send(const HttpRequest& request, milliseconds timeout,
                                                HttpReply* reply) {
  *reply = HttpReply{};
  const auto deadline = Clock::now() + timeout;
  Impl& c = *impl_;
  if (!c.Reusable()) {
    c.Close();
    const auto stage_deadline = std::min(deadline, Clock::now() + c.connect_timeout);
    if (auto failed = c.Open(endpoint_, stage_deadline)) return failed;
  }
  bool keep_alive = false;
  auto failed = c.plain ? c.Exchange(*c.plain, request, deadline, timeout, reply, &keep_alive)
                : c.secured
                    ? c.Exchange(*c.secured, request, deadline, timeout, reply, &keep_alive)
                    : c.Exchange(*c.relayed, request, deadline, timeout, reply, &keep_alive);
  if (failed || !keep_alive) c.Close();
  return failed;
}

}  // namespace mizarmp::client
