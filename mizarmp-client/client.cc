#include "mizarmp-client/client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/fileutil.h"
#include "common/log.h"

namespace mizarmp::client {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr size_t kExcerptMax = 200;
constexpr milliseconds kMaxBackoff{1000};

// curl_global_init is not thread-safe and must run once per process before any handle exists.
std::once_flag g_curl_once;
CURLcode g_curl_init = CURLE_OK;

CURLcode GlobalInit() {
  std::call_once(g_curl_once, [] { g_curl_init = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return g_curl_init;
}

// A short, single-line excerpt of a response body for error messages.
std::string Excerpt(const std::string& body) {
  std::string out;
  out.reserve(std::min(body.size(), kExcerptMax));
  size_t start = 0;
  while (start < body.size() && std::isspace(static_cast<unsigned char>(body[start]))) ++start;
  for (size_t i = start; i < body.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(body[i]);
    out.push_back((c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > kExcerptMax) {
    out.resize(kExcerptMax - 3);
    out += "...";
  }
  return out;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Percent-encodes everything but RFC 3986 unreserved characters and `keep`.
std::string Escape(const std::string& s, std::string_view keep = {}) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        keep.find(ch) != std::string_view::npos) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

// The code for a final HTTP status that is not a success (see client.h).
Code CodeForHttp(long http) {
  switch (http) {
    case 400:
      return Code::kInvalidArgument;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kNotFound;
    case 409:
      return Code::kAlreadyExists;
    default:
      break;
  }
  if (http >= 500) return Code::kUnavailable;
  return Code::kFailedPrecondition;
}

// Transport failures worth another attempt: the server may not have seen or answered the
// request, or the answer was cut short.
bool RetryableCurlError(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_BAD_CONTENT_ENCODING:
      return true;
    default:
      return false;
  }
}

bool IsTlsError(CURLcode rc) {
  switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      return true;
    default:
      return false;
  }
}

size_t WriteBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* body = static_cast<std::string*>(user);
  body->append(data, size * nmemb);
  return size * nmemb;
}

Status CheckReadable(const std::string& path, const char* what) {
  if (path.empty()) return Status::Ok();
  auto content = ReadFile(path);
  if (!content.ok()) {
    return InvalidArgumentError(std::string(what) + " " + path +
                                " is not readable: " + content.status().message());
  }
  return Status::Ok();
}

long ClampMs(milliseconds ms) {
  // 0 means "no timeout" to libcurl: never pass it.
  return static_cast<long>(std::max<int64_t>(1, ms.count()));
}

int64_t ElapsedMs(Clock::time_point since) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - since).count();
}

struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct CurlEasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};

enum class Method { kGet, kPost, kPut, kDelete };

const char* MethodName(Method m) {
  switch (m) {
    case Method::kGet:
      return "GET";
    case Method::kPost:
      return "POST";
    case Method::kPut:
      return "PUT";
    case Method::kDelete:
      return "DELETE";
  }
  return "?";
}

// A completed exchange that the caller interprets (any status that is not retried).
struct Response {
  long http = 0;
  std::string body;
  json doc;          // parsed body for a 2xx when JSON was expected
  int attempts = 0;  // how many attempts this call took
  std::string call;  // "GET /project/p/ports/x"

  // "GET /project/p/ports/x: HTTP 404: {...}" with the code for the status.
  Status Error() const { return ErrorWithCode(CodeForHttp(http)); }
  Status ErrorWithCode(Code code) const {
    std::string msg = call + ": HTTP " + std::to_string(http);
    std::string ex = Excerpt(body);
    msg += ex.empty() ? " (empty body)" : ": " + ex;
    return Status(code, std::move(msg));
  }
  bool success() const { return http >= 200 && http < 300; }
};

}  // namespace

struct Client::Impl {
  Client* owner = nullptr;
  std::unique_ptr<CURL, CurlEasyDeleter> curl;
  std::unique_ptr<curl_slist, CurlSlistDeleter> headers;
  std::string base;                     // base_url without trailing '/'
  std::optional<Dialect> bulk_dialect;  // what bulk create turned out to speak (kAuto)
  char errbuf[CURL_ERROR_SIZE] = {};

  const ClientConfig& cfg() const { return owner->config_; }

  std::string ProjectPath() const { return "/project/" + Escape(cfg().project_id); }
  std::string PortPath(const std::string& id) const {
    return ProjectPath() + "/ports/" + Escape(id);
  }

  // One HTTP exchange. Returns the curl code; fills http and body.
  CURLcode Perform(Method method, const std::string& path, const std::string* body,
                   milliseconds timeout, long* http, std::string* out) {
    CURL* h = curl.get();
    // Reset keeps live connections, so the next request reuses the socket (and TLS session).
    curl_easy_reset(h);
    errbuf[0] = '\0';
    const std::string url = base + path;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     ClampMs(std::min(cfg().connect_timeout, timeout)));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ClampMs(timeout));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    const TlsConfig& tls = cfg().tls;
    if (!tls.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
    if (!tls.cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, tls.cert_file.c_str());
    if (!tls.key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, tls.key_file.c_str());
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, tls.insecure_skip_verify ? 0L : 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, tls.insecure_skip_verify ? 0L : 2L);
    switch (method) {
      case Method::kGet:
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        break;
      case Method::kDelete:
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
      case Method::kPost:
      case Method::kPut:
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body != nullptr ? body->data() : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(body != nullptr ? body->size() : 0));
        if (method == Method::kPut) curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
        break;
    }
    ++owner->requests_sent_;
    CURLcode rc = curl_easy_perform(h);
    *http = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http);
    return rc;
  }

  std::string CurlErrorText(CURLcode rc) const {
    std::string text = curl_easy_strerror(rc);
    std::string detail = Trim(errbuf);
    if (!detail.empty() && detail != text) text += ": " + detail;
    if (IsTlsError(rc)) text = "TLS: " + text;
    return text;
  }

  // Sends a request with bounded retries (all calls here are idempotent: ids are client-chosen).
  // Retried: transport failures, 5xx, and a 2xx whose body is not the JSON expected. Any other
  // status is returned for the caller to interpret. `deadline` (if set) bounds every attempt
  // and every backoff sleep; running into it gives DEADLINE_EXCEEDED.
  Result<Response> Call(Method method, const std::string& path, const std::string* body,
                        bool expect_json, std::optional<Clock::time_point> deadline = {}) {
    Response resp;
    resp.call = std::string(MethodName(method)) + " " + path;
    const int max_attempts = std::max(1, cfg().max_attempts);
    Status last;
    for (int attempt = 1; attempt <= max_attempts; ++attempt) {
      if (attempt > 1) {
        milliseconds backoff = cfg().retry_backoff * (int64_t{1} << std::min(attempt - 2, 20));
        backoff = std::min(backoff, kMaxBackoff);
        if (deadline && Clock::now() + backoff >= *deadline) {
          return DeadlineExceededError(
              resp.call + ": deadline reached while retrying (last: " + last.message() + ")");
        }
        MZ_LOG(kWarn) << resp.call << ": attempt " << (attempt - 1) << " of " << max_attempts
                      << " failed (" << last.message() << "); retrying in " << backoff.count()
                      << " ms";
        std::this_thread::sleep_for(backoff);
      }
      milliseconds timeout = cfg().request_timeout;
      bool clipped = false;
      if (deadline) {
        auto remaining = std::chrono::duration_cast<milliseconds>(*deadline - Clock::now());
        if (remaining.count() <= 0) {
          return DeadlineExceededError(
              resp.call + ": deadline reached" +
              (last.ok() ? std::string() : " (last: " + last.message() + ")"));
        }
        if (remaining < timeout) {
          timeout = remaining;
          clipped = true;
        }
      }
      resp.attempts = attempt;
      resp.body.clear();
      resp.doc = nullptr;
      const auto started = Clock::now();
      CURLcode rc = Perform(method, path, body, timeout, &resp.http, &resp.body);
      if (rc != CURLE_OK) {
        std::string text = CurlErrorText(rc);
        MZ_LOG(kDebug) << resp.call << " -> " << text << " after " << ElapsedMs(started) << " ms";
        if (rc == CURLE_OPERATION_TIMEDOUT && clipped) {
          return DeadlineExceededError(resp.call + ": deadline reached: " + text);
        }
        long partial_http = 0;
        curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &partial_http);
        if (rc == CURLE_PARTIAL_FILE && expect_json && partial_http >= 200 && partial_http < 300) {
          // A success whose body was cut short: a garbled answer, not an unreachable server.
          last = InternalError(resp.call + ": HTTP " + std::to_string(partial_http) +
                               ": response cut short (" + text + "): " + Excerpt(resp.body));
        } else {
          last = UnavailableError(resp.call + ": " + text);
        }
        if (!RetryableCurlError(rc)) return last;
        continue;
      }
      MZ_LOG(kDebug) << resp.call << " -> HTTP " << resp.http << " in " << ElapsedMs(started)
                     << " ms";
      if (resp.http >= 500) {
        last = resp.Error();
        continue;
      }
      if (resp.success() && expect_json) {
        resp.doc = json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
        if (resp.doc.is_discarded()) {
          last = InternalError(resp.call + ": HTTP " + std::to_string(resp.http) +
                               ": response is not valid JSON: " + Excerpt(resp.body));
          continue;
        }
      }
      return resp;
    }
    return last;
  }

  // Interprets a single-port response: {"port":{...}} (or 404 / {"port":null} -> NOT_FOUND).
  Result<Port> PortFromResponse(const Response& r) {
    if (r.http == 404) return r.Error();
    if (!r.success()) return r.Error();
    if (!r.doc.is_object()) {
      return InternalError(r.call + ": HTTP " + std::to_string(r.http) +
                           ": response is not a JSON object: " + Excerpt(r.body));
    }
    auto it = r.doc.find("port");
    if (it != r.doc.end() && it->is_null()) {
      return NotFoundError(r.call + ": HTTP " + std::to_string(r.http) +
                           ": no such port: " + Excerpt(r.body));
    }
    auto port = PortFromJson(r.doc);
    if (!port.ok()) return port.status().WithContext(r.call);
    return port;
  }

  Result<std::vector<Port>> PortsFromResponse(const Response& r) {
    if (!r.success()) return r.Error();
    const json* list = &r.doc;
    if (r.doc.is_object()) {
      auto it = r.doc.find("ports");
      if (it == r.doc.end()) {
        return InternalError(r.call + ": HTTP " + std::to_string(r.http) +
                             ": response has no \"ports\": " + Excerpt(r.body));
      }
      list = &*it;
    }
    std::vector<Port> out;
    if (list->is_null()) return out;
    if (!list->is_array()) {
      return InternalError(r.call + ": ports is not an array (got " +
                           std::string(list->type_name()) + ")");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      auto port = PortFromJson((*list)[i]);
      if (!port.ok()) {
        return port.status().WithContext(r.call + ": ports[" + std::to_string(i) + "]");
      }
      out.push_back(std::move(port).value());
    }
    return out;
  }

  Result<Port> Get(const std::string& port_id, std::optional<Clock::time_point> deadline) {
    if (port_id.empty()) return InvalidArgumentError("GetPort: empty port id");
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kGet, PortPath(port_id), nullptr, true, deadline));
    return PortFromResponse(r);
  }

  // `endpoint_missing` (if given) is set when the server has no such endpoint (404/405).
  Result<std::vector<Port>> Bulk(const std::vector<PortSpec>& specs, Dialect dialect,
                                 bool* endpoint_missing = nullptr) {
    json list = json::array();
    for (const PortSpec& s : specs) list.push_back(PortSpecToJson(s));
    const std::string body = json{{"ports", std::move(list)}}.dump();
    const std::string path =
        ProjectPath() + (dialect == Dialect::kAlcor ? "/ports/bulk" : "/ports");
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kPost, path, &body, true));
    if (endpoint_missing != nullptr) *endpoint_missing = r.http == 404 || r.http == 405;
    if (r.http == 409 && r.attempts > 1) {
      // An earlier attempt went through before its answer was lost: read back what it made.
      MZ_LOG(kInfo) << r.call << ": HTTP 409 on attempt " << r.attempts
                    << "; fetching the ports an earlier attempt created";
      std::vector<Port> out;
      for (const PortSpec& s : specs) {
        auto p = Get(s.id, std::nullopt);
        if (!p.ok()) return p.status().WithContext(r.call + ": after HTTP 409 on retry");
        out.push_back(std::move(p).value());
      }
      return out;
    }
    return PortsFromResponse(r);
  }
};

Client::Client(ClientConfig config) : impl_(std::make_unique<Impl>()), config_(std::move(config)) {
  impl_->owner = this;
}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(ClientConfig config) {
  std::string base = config.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const bool http = base.rfind("http://", 0) == 0;
  const bool https = base.rfind("https://", 0) == 0;
  if (!http && !https) {
    return InvalidArgumentError("base_url \"" + config.base_url +
                                "\" must start with http:// or https://");
  }
  if (base.size() == (http ? 7u : 8u)) {
    return InvalidArgumentError("base_url \"" + config.base_url + "\" has no host");
  }
  for (char c : base) {
    if (std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c))) {
      return InvalidArgumentError("base_url \"" + config.base_url + "\" contains whitespace");
    }
  }
  if (config.project_id.empty()) return InvalidArgumentError("project_id is empty");
  if (config.max_attempts < 1) {
    return InvalidArgumentError("max_attempts must be at least 1, got " +
                                std::to_string(config.max_attempts));
  }
  if (config.request_timeout.count() <= 0 || config.connect_timeout.count() <= 0) {
    return InvalidArgumentError("connect_timeout and request_timeout must be positive");
  }
  MZ_RETURN_IF_ERROR(CheckReadable(config.tls.ca_file, "TLS CA file"));
  MZ_RETURN_IF_ERROR(CheckReadable(config.tls.cert_file, "TLS client certificate file"));
  MZ_RETURN_IF_ERROR(CheckReadable(config.tls.key_file, "TLS client key file"));
  if (!config.tls.key_file.empty() && config.tls.cert_file.empty()) {
    return InvalidArgumentError("TLS client key file " + config.tls.key_file +
                                " given without a client certificate file");
  }

  std::string token;
  if (!config.token_file.empty()) {
    auto content = ReadFile(config.token_file);
    if (!content.ok()) {
      return InvalidArgumentError("token file " + config.token_file +
                                  " is not readable: " + content.status().message());
    }
    token = Trim(*content);
    if (token.empty()) return InvalidArgumentError("token file " + config.token_file + " is empty");
    for (char c : token) {
      if (std::iscntrl(static_cast<unsigned char>(c)) || c == ' ') {
        return InvalidArgumentError("token file " + config.token_file +
                                    " holds more than one token (whitespace inside)");
      }
    }
  }

  if (CURLcode rc = GlobalInit(); rc != CURLE_OK) {
    return InternalError(std::string("curl_global_init: ") + curl_easy_strerror(rc));
  }

  std::unique_ptr<Client> client(new Client(std::move(config)));
  Impl& impl = *client->impl_;
  impl.base = base;
  impl.curl.reset(curl_easy_init());
  if (!impl.curl) return InternalError("curl_easy_init failed");

  curl_slist* list = nullptr;
  auto append = [&list](const std::string& h) -> bool {
    curl_slist* next = curl_slist_append(list, h.c_str());
    if (next == nullptr) return false;
    list = next;
    return true;
  };
  bool ok = append("Content-Type: application/json") && append("Accept: application/json") &&
            append("Expect:");  // no 100-continue round trip before a body
  if (ok && !token.empty()) ok = append("Authorization: Bearer " + token);
  impl.headers.reset(list);
  if (!ok) return InternalError("curl_slist_append failed");
  return client;
}

Result<Port> Client::CreatePort(const PortSpec& spec) {
  if (spec.id.empty()) return InvalidArgumentError("CreatePort: empty port id");
  const std::string body = json{{"port", PortSpecToJson(spec)}}.dump();
  MZ_ASSIGN_OR_RETURN(Response r,
                      impl_->Call(Method::kPost, impl_->ProjectPath() + "/ports", &body, true));
  if (r.http == 409 && r.attempts > 1) {
    MZ_LOG(kInfo) << r.call << ": HTTP 409 on attempt " << r.attempts << "; port " << spec.id
                  << " was created by an earlier attempt, fetching it";
    auto port = impl_->Get(spec.id, std::nullopt);
    if (!port.ok()) return port.status().WithContext(r.call + ": after HTTP 409 on retry");
    return port;
  }
  if (!r.success()) return r.Error();
  auto port = impl_->PortFromResponse(r);
  if (!port.ok()) return port.status();
  if (port->id != spec.id) {
    return InternalError(r.call + ": created port has id " + port->id + ", asked for " + spec.id);
  }
  return port;
}

Result<std::vector<Port>> Client::CreatePorts(const std::vector<PortSpec>& specs) {
  if (specs.empty()) return std::vector<Port>{};
  for (const PortSpec& s : specs) {
    if (s.id.empty()) return InvalidArgumentError("CreatePorts: a spec has an empty port id");
  }
  Dialect dialect = config_.dialect;
  if (dialect == Dialect::kAuto && impl_->bulk_dialect) dialect = *impl_->bulk_dialect;
  if (dialect != Dialect::kAuto) return impl_->Bulk(specs, dialect);

  // Unknown yet: try the Alcor endpoint; a server without it (404/405) is a v0.1 controller.
  bool missing = false;
  auto alcor = impl_->Bulk(specs, Dialect::kAlcor, &missing);
  if (alcor.ok()) {
    impl_->bulk_dialect = Dialect::kAlcor;
    return alcor;
  }
  if (!missing) return alcor;
  MZ_LOG(kInfo) << "bulk create: no /ports/bulk at " << impl_->base
                << "; using the v0.1 form POST /ports {\"ports\":[...]}";
  auto v01 = impl_->Bulk(specs, Dialect::kV01);
  if (v01.ok()) impl_->bulk_dialect = Dialect::kV01;
  return v01;
}

Result<Port> Client::GetPort(const std::string& port_id) { return impl_->Get(port_id, {}); }

Result<Port> Client::WaitPortReady(const std::string& port_id, const PollOptions& options) {
  const auto start = Clock::now();
  const auto deadline = start + options.deadline;
  const double factor = std::max(1.0, options.factor);
  const milliseconds cap = std::max(options.max, milliseconds(1));
  milliseconds interval = std::clamp(options.initial, milliseconds(1), cap);
  std::string last_status = "(none)";

  auto cancelled = [&] { return options.cancelled && options.cancelled(); };
  auto cancelled_error = [&] {
    return CancelledError("waiting for port " + port_id + " to become ready: cancelled after " +
                          std::to_string(ElapsedMs(start)) + " ms (last status " + last_status +
                          ")");
  };
  auto deadline_error = [&](const std::string& detail) {
    return DeadlineExceededError("port " + port_id + " not ready after " +
                                 std::to_string(ElapsedMs(start)) + " ms (last status " +
                                 last_status + ")" + (detail.empty() ? "" : ": " + detail));
  };

  for (;;) {
    if (cancelled()) return cancelled_error();
    if (Clock::now() >= deadline) return deadline_error("");
    auto port = impl_->Get(port_id, deadline);
    if (!port.ok()) {
      const Status& st = port.status();
      if (st.code() == Code::kDeadlineExceeded) return deadline_error(st.message());
      return st.WithContext("waiting for port " + port_id);
    }
    last_status = port->status.empty() ? "\"\"" : port->status;
    switch (port->state()) {
      case PortState::kReady:
        MZ_LOG(kDebug) << "port " << port_id << " ready (" << port->status << ") after "
                       << ElapsedMs(start) << " ms";
        return port;
      case PortState::kFailed:
        return FailedPreconditionError("port " + port_id + " failed: status " + port->status);
      case PortState::kPending:
        break;
    }
    // Sleep until the next poll in short slices, so cancellation is noticed promptly.
    const auto wake = std::min(Clock::now() + interval, deadline);
    for (;;) {
      const auto now = Clock::now();
      if (now >= wake) break;
      if (cancelled()) return cancelled_error();
      std::this_thread::sleep_for(std::min<Clock::duration>(wake - now, milliseconds(10)));
    }
    const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    const milliseconds cap_now = std::max(
        cap, milliseconds(static_cast<int64_t>(static_cast<double>(waited.count()) *
                                               std::max(0.0, options.max_fraction))));
    interval = std::min(cap_now, std::chrono::duration_cast<milliseconds>(interval * factor));
    if (interval.count() < 1) interval = milliseconds(1);
  }
}

Result<Subnet> Client::GetSubnet(const std::string& subnet_id) {
  if (subnet_id.empty()) return InvalidArgumentError("GetSubnet: empty subnet id");
  MZ_ASSIGN_OR_RETURN(
      Response r, impl_->Call(Method::kGet, impl_->ProjectPath() + "/subnets/" + Escape(subnet_id),
                              nullptr, true));
  if (!r.success()) return r.Error();
  if (!r.doc.is_object()) {
    return InternalError(r.call + ": HTTP " + std::to_string(r.http) +
                         ": response is not a JSON object: " + Excerpt(r.body));
  }
  auto it = r.doc.find("subnet");
  if (it != r.doc.end() && it->is_null()) {
    return NotFoundError(r.call + ": HTTP " + std::to_string(r.http) +
                         ": no such subnet: " + Excerpt(r.body));
  }
  auto subnet = SubnetFromJson(r.doc);
  if (!subnet.ok()) return subnet.status().WithContext(r.call);
  return subnet;
}

Status Client::DeletePort(const std::string& port_id) {
  if (port_id.empty()) return InvalidArgumentError("DeletePort: empty port id");
  // The body does not matter (v0.1 may say {"port":null} for a port already gone): do not parse.
  MZ_ASSIGN_OR_RETURN(Response r,
                      impl_->Call(Method::kDelete, impl_->PortPath(port_id), nullptr, false));
  if (r.success()) return Status::Ok();
  if (r.http == 404) {
    MZ_LOG(kDebug) << r.call << ": already gone";
    return Status::Ok();
  }
  return r.Error();
}

Result<std::vector<Port>> Client::ListPorts(const std::map<std::string, std::string>& filters) {
  std::string path = impl_->ProjectPath() + "/ports";
  char sep = '?';
  for (const auto& [k, v] : filters) {
    path += sep;
    path += Escape(k, ":");  // keep "binding:host_id" readable; servers decode either way
    path += '=';
    path += Escape(v);
    sep = '&';
  }
  MZ_ASSIGN_OR_RETURN(Response r, impl_->Call(Method::kGet, path, nullptr, true));
  return impl_->PortsFromResponse(r);
}

Result<Port> Client::UpdatePort(const std::string& port_id, const json& fields) {
  if (port_id.empty()) return InvalidArgumentError("UpdatePort: empty port id");
  if (!fields.is_object()) {
    return InvalidArgumentError(std::string("UpdatePort ") + port_id +
                                ": fields must be a JSON object, got " + fields.type_name());
  }
  const std::string body = json{{"port", fields}}.dump();
  MZ_ASSIGN_OR_RETURN(Response r, impl_->Call(Method::kPut, impl_->PortPath(port_id), &body, true));
  return impl_->PortFromResponse(r);
}

}  // namespace mizarmp::client
