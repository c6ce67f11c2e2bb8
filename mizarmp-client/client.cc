// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/client.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/elapsed.h"
#include "common/fileutil.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/strings.h"
#include "mizarmp-client/port_list_reader.h"
#include "mizarmp-client/transport.h"

namespace mizarmp::client {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr size_t kExcerptMax = 200;
// A port id no controller has: Generation()'s list asks for it, to list nothing.
constexpr const char* kNoSuchPortId = "00000000-0000-0000-0000-000000000000";
constexpr milliseconds kMaxBackoff{1000};

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

// A request body. Its strings come from callers' input (a pod's netns path, names): invalid
// UTF-8 is replaced (U+FFFD) rather than thrown on.
std::string DumpBody(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Percent-encodes everything but RFC 3986 unreserved characters and `keep`.
std::string Escape(const std::string& s, std::string_view keep = {}) {
  return PercentEncoded(s, [keep](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
           keep.find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// The "message" of a Spring Boot error body ({"timestamp", "status", "error", "message",
// "path"}), which both real generations answer an exception with; "" for any other body.
std::string SpringMessage(const std::string& body) {
  if (body.empty() || body.size() > 64 * 1024) return "";
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("timestamp") || !doc.contains("status")) return "";
  auto message = doc.find("message");
  return message != doc.end() && message->is_string() ? message->get<std::string>() : "";
}

// 500s whose message says the request cannot succeed as it is: sending it again changes nothing,
// so it is not retried and fails with FAILED_PRECONDITION.
constexpr std::string_view kConfigurationErrors[] = {
    // Alcor port manager (services/port_manager/.../exception/): network_id is not a VPC, a
    // fixed IP's subnet or binding:host_id is unknown.
    "Get VpcEntity exception",
    "Get SubnetEntity exception",
    "Get node information exception",
    // Alcor IgniteClientDbCache.getAll: a list of RESULT_THRESHOLD_SIZE rows or more.
    "too many rows found",
    // v0.1 RestPreconditions (web/util/): a port without id or network_id.
    "ResourceNullException",
    "ResourceNotFoundException",
};

// Whether an answer with status `http` and Spring error message `message` (SpringMessage) is
// one of kConfigurationErrors.
bool IsConfigurationError(long http, const std::string& message) {
  if (http < 500 || message.empty()) return false;
  return std::any_of(std::begin(kConfigurationErrors), std::end(kConfigurationErrors),
                     [&](std::string_view known) { return message.find(known) != std::string::npos; });
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

Status CheckReadable(const std::string& path, const char* what) {
  if (path.empty()) return Status::Ok();
  auto content = ReadFile(path);
  if (!content.ok()) {
    return InvalidArgumentError(std::string(what) + " " + path +
                                " is not readable: " + content.status().message());
  }
  return Status::Ok();
}

// The one bearer token in `path` (surrounding white space trimmed). INVALID_ARGUMENT naming the
// file (never its content) if it is unreadable, empty or holds more than one word.
Result<std::string> ReadToken(const std::string& path) {
  auto content = ReadFile(path);
  if (!content.ok()) {
    return InvalidArgumentError("token file " + path +
                                " is not readable: " + content.status().message());
  }
  std::string token = Trim(*content);
  if (token.empty()) return InvalidArgumentError("token file " + path + " is empty");
  for (char c : token) {
    if (std::iscntrl(static_cast<unsigned char>(c)) || c == ' ') {
      return InvalidArgumentError("token file " + path +
                                  " holds more than one token (whitespace inside)");
    }
  }
  return token;
}

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

  // "GET /project/p/ports/x: HTTP 404: {...}" with the code for the status; a Spring error
  // body is quoted by its message ("POST /project/p/ports: HTTP 500: Get VpcEntity exception").
  Status Error() const {
    const std::string message = SpringMessage(body);
    const Code code =
        IsConfigurationError(http, message) ? Code::kFailedPrecondition : CodeForHttp(http);
    const std::string quoted = Excerpt(message.empty() ? body : message);
    return Status(code, call + ": HTTP " + std::to_string(http) +
                            (quoted.empty() ? " (empty body)" : ": " + quoted));
  }
  // An answer the call cannot use, with `code`: "<call>: HTTP <status>: <what>: <body excerpt>".
  Status Unusable(Code code, std::string_view what) const {
    return Status(code, call + ": HTTP " + std::to_string(http) + ": " + std::string(what) + ": " +
                            Excerpt(body));
  }
  // OK for a 2xx whose body is a JSON object; else this answer's error, or INTERNAL for a
  // success of another shape.
  Status ObjectAnswer() const {
    if (!success()) return Error();
    if (!doc.is_object()) return Unusable(Code::kInternal, "response is not a JSON object");
    return Status::Ok();
  }
  bool success() const { return http >= 200 && http < 300; }
};

// The one resource of a single-resource answer, {"<kind>": {...}} or the bare object, as `read`
// makes it of the document: a status that is not a success is the answer's error,
// {"<kind>": null} NOT_FOUND ("no such port"), and any other shape INTERNAL.
template <typename Resource>
Result<Resource> ResourceOf(const Response& r, const char* kind,
                            Result<Resource> (*read)(const json&)) {
  MZ_RETURN_IF_ERROR(r.ObjectAnswer());
  if (const auto it = r.doc.find(kind); it != r.doc.end() && it->is_null()) {
    return r.Unusable(Code::kNotFound, std::string("no such ") + kind);
  }
  auto resource = read(r.doc);
  if (!resource.ok()) return resource.status().WithContext(r.call);
  return resource;
}

// How long one attempt may take, and whether that was cut short by the call's deadline.
struct AttemptTime {
  milliseconds timeout;
  bool clipped = false;
};

// Parses a 2xx answer's body in place of Response::doc; false when it is not JSON.
using BodyReader = std::function<bool(const std::string& body)>;

}  // namespace

struct Client::Impl {
  Client* owner = nullptr;
  std::string base;                      // base_url without trailing '/', for log lines
  std::unique_ptr<Transport> transport;  // the one kept-alive connection
  std::unique_ptr<Transport> relay;      // ClientConfig::relay_socket's, until it fails
  // Sent with every request; holds the token: never log.
  std::map<std::string, std::string> headers;
  std::optional<Dialect> generation;    // what the controller turned out to be (kAuto)
  bool list_refused = false;            // the last ListAll was answered 405
  FileVersion token_version;            // the token file as it was when its token was read

  // Re-reads the token file when it changed since it was read (a rotated token), so a
  // long-lived Client keeps working. A new file that is unreadable or holds no single token is
  // logged (not its content) and the last good token kept: a rotation caught half-way must
  // not lose a token that still works.
  void RefreshToken() {
    const std::string& path = cfg().token_file;
    if (path.empty()) return;
    const FileVersion now = VersionOf(path);
    if (now == token_version) return;
    auto token = ReadToken(path);
    if (!token.ok()) {
      MZ_LOG(kWarn) << "token file changed but cannot be used (" << token.status().message()
                    << "); keeping the previous token";
      return;
    }
    token_version = now;
    SetToken(*token);
    MZ_LOG(kInfo) << "token file " << path << " changed; using its new token";
  }

  // The token's headers for the configured generation (client.h, ClientConfig::token_file).
  void SetToken(const std::string& token) {
    if (cfg().dialect != Dialect::kAlcor) headers["Authorization"] = "Bearer " + token;
    if (cfg().dialect != Dialect::kV01) headers["X-Auth-Token"] = token;
  }

  const ClientConfig& cfg() const { return owner->config_; }

  std::string ProjectPath() const { return "/project/" + Escape(cfg().project_id); }
  std::string PortPath(const std::string& id) const {
    return ProjectPath() + "/ports/" + Escape(id);
  }

  // One HTTP exchange bounded by `timeout` (counted in requests_sent). On success fills
  // *http_status and *out (the body); else says why, with what arrived of a body cut short in
  // *out. A TLS setup problem (a client certificate OpenSSL cannot use, CAs that do not load) is
  // reported here, by the first request, like any other TLS failure.
  std::optional<TransportFailure> Perform(Method method, const std::string& path,
                                          const std::string* body, milliseconds timeout,
                                          long* http_status, std::string* out) {
    ++owner->requests_sent_;
    HttpRequest request;
    request.method = MethodName(method);
    request.target = transport->endpoint().prefix + path;
    request.headers.assign(headers.begin(), headers.end());
    if (body != nullptr || method == Method::kPost || method == Method::kPut) {
      request.headers.emplace_back("Content-Type", "application/json");
    }
    request.body = body;
    HttpReply reply;
    if (relay != nullptr) {
      const auto deadline = Clock::now() + timeout;
      if (Relayed(request, timeout, &reply)) {
        *http_status = reply.status;
        *out = std::move(reply.body);
        return std::nullopt;
      }
      timeout = std::chrono::ceil<milliseconds>(deadline - Clock::now());
      if (timeout.count() <= 0) {
        TransportFailure spent;
        spent.text = "no time left after the relay failed";
        spent.retryable = spent.timed_out = true;
        return spent;
      }
    }
    auto failure = transport->Send(request, timeout, &reply);
    *http_status = failure ? 0 : reply.status;
    *out = std::move(reply.body);
    return failure;
  }

  // Sends `request` through the relay: true with the controller's answer in *reply; false, the
  // relay given up and logged, when it failed or answered for itself (the caller then goes
  // directly). The request names the controller, so a relay for another one refuses it.
  bool Relayed(HttpRequest request, milliseconds timeout, HttpReply* reply) {
    request.headers.emplace_back(kRelayToHeader, base);
    auto failure = relay->Send(request, timeout, reply);
    if (!failure && reply->relay_error.empty()) return true;
    MZ_LOG(kInfo) << "relay " << cfg().relay_socket << ": "
                  << (failure ? failure->text
                              : "HTTP " + std::to_string(reply->status) + ": " + reply->relay_error)
                  << "; going to " << base << " directly";
    relay.reset();
    *reply = HttpReply{};
    return false;
  }

  // Sends a request with bounded retries (all calls here are idempotent: ids are client-chosen).
  // Retried: transport failures, 5xx, and a 2xx whose body is not the JSON expected. Any other
  // status is returned for the caller to interpret. `deadline` (if set) bounds every attempt
  // and every backoff sleep; running into it gives DEADLINE_EXCEEDED. `read_body` (if set)
  // parses the JSON answer instead of Response::doc.
  // `max_attempts` (if not 0) replaces the configured count: 1 for a POST that must not be sent
  // again unseen (CreatePort).
  Result<Response> Call(Method method, const std::string& path, const std::string* body,
                        bool expect_json, std::optional<Clock::time_point> deadline = {},
                        bool empty_ok = false, const BodyReader& read_body = nullptr,
                        int max_attempts = 0) {
    AttemptsMade made;
    if (max_attempts == 0) max_attempts = cfg().max_attempts;
    if (!cfg().observer) {
      return CallWithRetries(method, path, body, expect_json, deadline, empty_ok, read_body,
                             max_attempts, made);
    }
    const auto started = Clock::now();
    auto result = CallWithRetries(method, path, body, expect_json, deadline, empty_ok, read_body,
                                  max_attempts, made);
    CallObservation seen;
    seen.call = std::string(MethodName(method)) + " " + PathShape(path);
    seen.outcome = Outcome(result, made);
    seen.elapsed = Clock::now() - started;
    seen.attempts = made.count;
    cfg().observer(seen);
    return result;
  }

  // What the attempts of one call came to: how many were made, and the last one's HTTP status
  // (0 when it got no complete answer).
  struct AttemptsMade {
    int count = 0;
    long last_http = 0;
  };

  // CallObservation::outcome. A call that failed on an answer (a 5xx after the last retry) is
  // named by that answer's status, one that got none by its status code.
  static std::string Outcome(const Result<Response>& result, const AttemptsMade& made) {
    const long http = result.ok() ? result->http : made.last_http;
    const bool success = http >= 200 && http < 300;
    if (result.ok() && success) return "ok";
    if (http != 0 && !success) return "http_" + std::to_string(http);
    return AsciiLower(CodeName(result.status().code()));
  }

  // The path without the project prefix and the query, the id after each collection replaced
  // by "{id}": a label with a bounded number of values ("/ports/{id}"). An all-letter segment
  // there is an action, not an id ("/ports/bulk"); ids are UUIDs.
  std::string PathShape(const std::string& path) const {
    std::string rest = path.substr(0, path.find('?'));
    if (rest.starts_with(ProjectPath())) rest = rest.substr(ProjectPath().size());
    const auto is_word = [](const std::string& part) {
      return !part.empty() &&
             std::all_of(part.begin(), part.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    };
    std::string shape;
    const std::vector<std::string> parts = Split(rest, '/');
    for (size_t i = 1; i < parts.size(); ++i) {  // parts[0] is before the leading '/'
      const bool id = i % 2 == 0 && !is_word(parts[i]);
      shape += "/" + (id ? std::string("{id}") : parts[i]);
    }
    return shape.empty() ? "/" : shape;
  }

  // Call()'s attempts; `made` tells how they went.
  Result<Response> CallWithRetries(Method method, const std::string& path, const std::string* body,
                                   bool expect_json, std::optional<Clock::time_point> deadline,
                                   bool empty_ok, const BodyReader& read_body,
                                   int max_attempts, AttemptsMade& made) {
    RefreshToken();
    Response resp;
    resp.call = std::string(MethodName(method)) + " " + path;
    max_attempts = std::max(1, max_attempts);
    Status last;
    for (int attempt = 1; attempt <= max_attempts; ++attempt) {
      if (attempt > 1) {
        MZ_RETURN_IF_ERROR(BackOff(resp.call, attempt, max_attempts, last, deadline));
      }
      MZ_ASSIGN_OR_RETURN(const AttemptTime time, TimeForAttempt(resp.call, last, deadline));
      resp.attempts = attempt;
      resp.body.clear();
      resp.doc = nullptr;
      const auto started = Clock::now();
      auto failure = Perform(method, path, body, time.timeout, &resp.http, &resp.body);
      made = {attempt, resp.http};
      if (failure) {
        MZ_LOG(kDebug) << resp.call << " -> " << failure->text << " after " << ElapsedMs(started)
                       << " ms";
        if (failure->timed_out && time.clipped) {
          return DeadlineExceededError(resp.call + ": deadline reached: " + failure->text);
        }
        last = FailureStatus(resp, *failure, expect_json);
        if (!failure->retryable) return last;
        continue;
      }
      MZ_LOG(kDebug) << resp.call << " -> HTTP " << resp.http << " in " << ElapsedMs(started)
                     << " ms";
      last = RetryReason(&resp, expect_json, empty_ok, read_body);
      if (last.ok()) return resp;
    }
    return last;
  }

  // Sleeps before attempt `attempt` (> 1), exponentially longer each time; DEADLINE_EXCEEDED
  // instead if the sleep would run into the deadline. `last` is why the previous attempt failed.
  Status BackOff(const std::string& call, int attempt, int max_attempts, const Status& last,
                 std::optional<Clock::time_point> deadline) const {
    milliseconds backoff = cfg().retry_backoff * (int64_t{1} << std::min(attempt - 2, 20));
    backoff = std::min(backoff, kMaxBackoff);
    if (deadline && Clock::now() + backoff >= *deadline) {
      return DeadlineExceededError(
          call + ": deadline reached while retrying (last: " + last.message() + ")");
    }
    MZ_LOG(kWarn) << call << ": attempt " << (attempt - 1) << " of " << max_attempts << " failed ("
                  << LogEscaped(last.message()) << "); retrying in " << backoff.count() << " ms";
    std::this_thread::sleep_for(backoff);
    return Status::Ok();
  }

  // The request timeout, cut to what is left before the deadline (DEADLINE_EXCEEDED if nothing).
  Result<AttemptTime> TimeForAttempt(const std::string& call, const Status& last,
                                     std::optional<Clock::time_point> deadline) const {
    AttemptTime time{cfg().request_timeout, false};
    if (!deadline) return time;
    auto remaining = std::chrono::duration_cast<milliseconds>(*deadline - Clock::now());
    if (remaining.count() <= 0) {
      return DeadlineExceededError(call + ": deadline reached" +
                                   (last.ok() ? std::string() : " (last: " + last.message() + ")"));
    }
    if (remaining < time.timeout) time = AttemptTime{remaining, true};
    return time;
  }

  // An attempt that got no complete response: UNAVAILABLE, or INTERNAL for a success whose body
  // was cut short (a garbled answer, not an unreachable server).
  static Status FailureStatus(const Response& resp, const TransportFailure& f, bool expect_json) {
    if (f.too_large) return InternalError(resp.call + ": " + f.text);
    if (!f.timed_out && expect_json && f.partial_http >= 200 && f.partial_http < 300) {
      return InternalError(resp.call + ": HTTP " + std::to_string(f.partial_http) +
                           ": response cut short (" + f.text + "): " + Excerpt(resp.body));
    }
    return UnavailableError(resp.call + ": " + f.text);
  }

  // Why a complete response is worth another attempt: a 5xx, or a 2xx whose body is not the JSON
  // expected. OK for any other answer, which the caller interprets (with resp->doc parsed).
  // With `empty_ok`, a 204 or a 2xx without a body is an answer too (resp->doc stays null).
  static Status RetryReason(Response* resp, bool expect_json, bool empty_ok,
                            const BodyReader& read_body) {
    if (resp->http >= 500) {
      // Only a configuration error (kConfigurationErrors) fails a 5xx with FAILED_PRECONDITION,
      // and sending it again would change nothing: it is final.
      const Status error = resp->Error();
      return error.code() == Code::kFailedPrecondition ? Status::Ok() : error;
    }
    if (empty_ok && resp->success() && (resp->http == 204 || Trim(resp->body).empty())) {
      return Status::Ok();
    }
    if (resp->success() && expect_json) {
      if (JsonNestingDepth(resp->body, kMaxResponseDepth) > kMaxResponseDepth) {
        return InternalError(resp->call + ": HTTP " + std::to_string(resp->http) +
                             ": response nests arrays and objects deeper than " +
                             std::to_string(kMaxResponseDepth) + " levels");
      }
      const bool parsed = read_body ? read_body(resp->body) : ParseDoc(resp);
      if (!parsed) return resp->Unusable(Code::kInternal, "response is not valid JSON");
    }
    return Status::Ok();
  }

  // The default reader: the body as a tree in resp->doc; false when it is not JSON.
  static bool ParseDoc(Response* resp) {
    resp->doc = json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
    return !resp->doc.is_discarded();
  }

  // Interprets a single-port response: {"port":{...}} (or 404 / {"port":null} -> NOT_FOUND).
  static Result<Port> PortFromResponse(const Response& r) {
    return ResourceOf(r, "port", PortFromJson);
  }

  // The ports of a list answer `read` from `r`'s body (bare, or under "ports"; null is none).
  // Call() gives a 2xx list answer to ListReader before it returns, so `read` is absent only
  // if that ever changed: an error then, never a dereference of nothing.
  static Result<PortList> PortListOf(const Response& r, std::optional<PortListDocument> read) {
    if (!r.success()) return r.Error();
    if (!read) return r.Unusable(Code::kInternal, "the list answer was never read");
    JsonType list_type = read->type;
    if (read->type == JsonType::kObject) {
      if (read->ports_type == JsonType::kAbsent) {
        return r.Unusable(Code::kInternal, "response has no \"ports\"");
      }
      list_type = read->ports_type;
    }
    if (list_type == JsonType::kNull) return PortList();
    if (list_type != JsonType::kArray) {
      return kAnswerFields.WrongType("ports", "an array", TypeName(list_type)).WithContext(r.call);
    }
    return std::move(read->list);
  }

  // A BodyReader that reads a port list answer into *read (ParsePortList).
  static BodyReader ListReader(std::optional<PortListDocument>* read) {
    return [read](const std::string& body) {
      *read = ParsePortList(body);
      return read->has_value();
    };
  }

  Result<Port> Get(const std::string& port_id, std::optional<Clock::time_point> deadline) {
    if (port_id.empty()) return InvalidArgumentError("GetPort: empty port id");
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kGet, PortPath(port_id), nullptr, true, deadline));
    return PortFromResponse(r);
  }

  // GET /ports?k=v&fields=f (Alcor's list, and the seed's). Sets list_refused when the
  // controller has no such list (405: v0.1).
  Result<PortList> ListAll(const std::map<std::string, std::string>& filters,
                           std::vector<std::string> fields) {
    if (!fields.empty() &&
        std::find(fields.begin(), fields.end(), "project_id") == fields.end()) {
      fields.push_back("project_id");  // ListPorts drops the other projects' ports by it
    }
    std::string path = ProjectPath() + "/ports";
    char sep = '?';
    auto add_parameter = [&](const std::string& k, const std::string& v) {
      path += sep;
      path += Escape(k, ":");  // keep "binding:host_id" readable; servers decode either way
      path += '=';
      path += Escape(v);
      sep = '&';
    };
    for (const auto& [k, v] : filters) add_parameter(k, v);
    for (const std::string& field : fields) add_parameter("fields", field);
    std::optional<PortListDocument> read;
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kGet, path, nullptr, true, std::nullopt, false,
                                         ListReader(&read)));
    list_refused = r.http == 405;
    return PortListOf(r, std::move(read));
  }

  // v0.1's only list, GET /subnet/{s}/ports (web/PortController.java at 5ca01ef0): an object
  // of the subnet's ports keyed by port id, filtered here by `filters` (top-level string
  // members, compared exactly).
  Result<PortList> ListOfSubnet(const std::map<std::string, std::string>& filters) {
    if (cfg().subnet_id.empty()) {
      return InvalidArgumentError(
          "a v0.1 controller lists ports only by subnet, and no subnet is configured");
    }
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kGet,
                                         ProjectPath() + "/subnet/" + Escape(cfg().subnet_id) +
                                             "/ports",
                                         nullptr, true));
    MZ_RETURN_IF_ERROR(r.ObjectAnswer());
    PortList list;
    for (const auto& entry : r.doc.items()) {
      const json& port_doc = entry.value();
      const auto matches = [&port_doc](const auto& filter) {
        auto member = port_doc.find(filter.first);
        return port_doc.is_object() && member != port_doc.end() && member->is_string() &&
               member->template get<std::string>() == filter.second;
      };
      if (!std::all_of(filters.begin(), filters.end(), matches)) continue;
      auto port = PortFromJson(port_doc);
      if (port.ok()) {
        list.ports.push_back(std::move(port).value());
      } else {
        list.unreadable.push_back("ports[" + Quoted(entry.key()) + "]: " +
                                  port.status().message());
      }
    }
    return list;
  }

  // The port's whole v0.1 record, to be written back changed (a v0.1 PUT replaces it).
  Result<json> Record(const std::string& port_id) {
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kGet, PortPath(port_id), nullptr, true));
    MZ_RETURN_IF_ERROR(PortFromResponse(r).status());
    return r.doc["port"];
  }

  // Alcor's bulk create: POST /ports/bulk {"ports":[...]}.
  Result<std::vector<Port>> Bulk(const std::vector<PortSpec>& specs) {
    json list = json::array();
    for (const PortSpec& s : specs) list.push_back(PortSpecToJson(s));
    const std::string body = DumpBody(json{{"ports", std::move(list)}});
    std::optional<PortListDocument> read;
    MZ_ASSIGN_OR_RETURN(Response r, Call(Method::kPost, ProjectPath() + "/ports/bulk", &body, true,
                                         std::nullopt, false, ListReader(&read), 1));
    // Every port created must read back whole.
    MZ_ASSIGN_OR_RETURN(PortList created, PortListOf(r, std::move(read)));
    if (!created.unreadable.empty()) return InternalError(r.call + ": " + created.unreadable[0]);
    return std::move(created.ports);
  }

  // Creates the ports with `post` (one POST, not repeated by itself), never sending a POST
  // again unseen: after a failure that may have been a lost answer, the ids are looked up, the
  // ports found are the ones that POST made, and only the rest are asked for again (at most
  // max_attempts POSTs in all).
  Result<std::vector<Port>> CreateOnce(
      std::vector<PortSpec> specs,
      const std::function<Result<std::vector<Port>>(const std::vector<PortSpec>&)>& post) {
    std::vector<Port> made;
    const int max_attempts = std::max(1, cfg().max_attempts);
    Status last;
    for (int attempt = 1; attempt <= max_attempts; ++attempt) {
      if (attempt > 1) {
        MZ_RETURN_IF_ERROR(BackOff("creating " + std::to_string(specs.size()) + " port(s)",
                                   attempt, max_attempts, last, std::nullopt));
      }
      auto created = post(specs);
      if (created.ok()) {
        for (Port& p : *created) made.push_back(std::move(p));
        return made;
      }
      last = created.status();
      // No answer, or a garbled one: the port may be there. Any other answer is final.
      if (last.code() != Code::kUnavailable && last.code() != Code::kInternal) return last;
      std::vector<PortSpec> missing;
      for (PortSpec& spec : specs) {
        auto found = Get(spec.id, std::nullopt);
        if (found.ok()) {
          MZ_LOG(kInfo) << "port " << spec.id << " was created though the answer was lost ("
                        << LogEscaped(last.message()) << "); using it";
          made.push_back(std::move(found).value());
        } else if (found.status().IsNotFound()) {
          missing.push_back(std::move(spec));
        } else {
          return found.status().WithContext("after " + last.message() + ": looking the port up");
        }
      }
      if (missing.empty()) return made;
      specs = std::move(missing);
    }
    return last;
  }
};

Client::Client(ClientConfig config) : impl_(std::make_unique<Impl>()), config_(std::move(config)) {
  impl_->owner = this;
}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(ClientConfig config) {
  const std::string base = TrimmedBaseUrl(config.base_url);
  MZ_ASSIGN_OR_RETURN(Endpoint endpoint, ParseBaseUrl(config.base_url));
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
  FileVersion token_version;
  if (!config.token_file.empty()) {
    token_version = VersionOf(config.token_file);
    MZ_ASSIGN_OR_RETURN(token, ReadToken(config.token_file));
  }

  std::unique_ptr<Client> client(new Client(std::move(config)));
  Impl& impl = *client->impl_;
  impl.base = base;
  impl.headers.emplace("Host", endpoint.host_header);
  impl.headers.emplace("Accept", "application/json");
  if (!token.empty()) impl.SetToken(token);
  // The connection itself is opened by the first request.
  const ClientConfig& cfg = client->config_;
  if (!cfg.user_agent.empty()) impl.headers.emplace("User-Agent", cfg.user_agent);
  if (!cfg.relay_socket.empty() && endpoint.https) {
    Endpoint relay = endpoint;
    relay.https = false;
    relay.unix_socket = cfg.relay_socket;
    impl.relay = std::make_unique<Transport>(std::move(relay), TlsConfig{}, cfg.connect_timeout,
                                             cfg.max_response_bytes);
  }
  impl.transport = std::make_unique<Transport>(std::move(endpoint), cfg.tls, cfg.connect_timeout,
                                               cfg.max_response_bytes);
  impl.token_version = token_version;
  return client;
}

TlsHandshakes Client::tls_handshakes() const { return impl_->transport->handshakes(); }

Result<Port> Client::CreatePort(const PortSpec& spec) {
  if (spec.id.empty()) return InvalidArgumentError("CreatePort: empty port id");
  auto made = impl_->CreateOnce({spec}, [this](const std::vector<PortSpec>& specs)
                                            -> Result<std::vector<Port>> {
    MZ_ASSIGN_OR_RETURN(Port port, PostPort(specs.front()));
    return std::vector<Port>{std::move(port)};
  });
  if (!made.ok()) return made.status();
  return std::move(made->front());
}

Result<Port> Client::PostPort(const PortSpec& spec) {
  const std::string body = DumpBody(json{{"port", PortSpecToJson(spec)}});
  MZ_ASSIGN_OR_RETURN(Response r, impl_->Call(Method::kPost, impl_->ProjectPath() + "/ports",
                                              &body, true, std::nullopt, false, nullptr, 1));
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
  MZ_ASSIGN_OR_RETURN(const Dialect generation, Generation());
  if (generation == Dialect::kAlcor) {
    return impl_->CreateOnce(specs, [this](const auto& left) { return impl_->Bulk(left); });
  }
  std::vector<Port> out;
  for (const PortSpec& spec : specs) {
    MZ_ASSIGN_OR_RETURN(Port port, CreatePort(spec));
    out.push_back(std::move(port));
  }
  return out;
}

Dialect Client::generation_found() const {
  if (config_.dialect != Dialect::kAuto) return config_.dialect;
  if (impl_->generation) return *impl_->generation;
  return config_.known_generation;
}

Result<Dialect> Client::Generation() {
  if (const Dialect known = generation_found(); known != Dialect::kAuto) return known;
  // A list that matches nothing: Alcor answers it, v0.1 maps /ports for POST only (405).
  const std::string path = impl_->ProjectPath() + "/ports?id=" + kNoSuchPortId + "&fields=id";
  MZ_ASSIGN_OR_RETURN(Response r, impl_->Call(Method::kGet, path, nullptr, false));
  if (r.http == 405) {
    impl_->generation = Dialect::kV01;
  } else if (r.success()) {
    impl_->generation = Dialect::kAlcor;
  } else {
    return r.Error().WithContext("finding out the controller's generation");
  }
  MZ_LOG(kInfo) << impl_->base << " is a " << DialectName(*impl_->generation) << " controller";
  return *impl_->generation;
}

Result<Port> Client::GetPort(const std::string& port_id) { return impl_->Get(port_id, {}); }

namespace {

enum class PollWait { kDue, kSignEarlier, kSignJustNow, kCancelled };

// Waits until `wake` in slices of at most 10 ms, so cancellation is noticed promptly; through
// options.wait_until while signs may still be followed, else by sleeping.
PollWait WaitForNextPoll(const PollOptions& options, Clock::time_point wake, int signs_left) {
  for (;;) {
    const auto now = Clock::now();
    if (now >= wake) return PollWait::kDue;
    if (options.cancelled && options.cancelled()) return PollWait::kCancelled;
    const auto slice_end = std::min<Clock::time_point>(wake, now + milliseconds(10));
    if (options.wait_until && signs_left > 0) {
      switch (options.wait_until(slice_end)) {
        case ReadinessSign::kEarlier:
          return PollWait::kSignEarlier;
        case ReadinessSign::kJustNow:
          return PollWait::kSignJustNow;
        case ReadinessSign::kNone:
          break;
      }
    } else {
      std::this_thread::sleep_until(slice_end);
    }
  }
}

}  // namespace

Result<Port> Client::WaitPortReady(const std::string& port_id, const PollOptions& options) {
  const auto start = Clock::now();
  const auto deadline = start + options.deadline;
  const double factor = std::max(1.0, options.factor);
  const milliseconds cap = std::max(options.max, milliseconds(1));
  milliseconds interval = std::clamp(options.initial, milliseconds(1), cap);
  std::string last_status = "(none)";
  int signs_left = options.max_signs;

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
      if (st.IsDeadlineExceeded()) return deadline_error(st.message());
      return st.WithContext("waiting for port " + port_id);
    }
    last_status = port->status.empty() ? "\"\"" : port->status;
    switch (port->state()) {
      case PortState::kReady:
        MZ_LOG(kDebug) << "port " << port_id << " ready (" << LogEscaped(port->status) << ") after "
                       << ElapsedMs(start) << " ms";
        return port;
      case PortState::kFailed:
        return FailedPreconditionError("port " + port_id + " failed: status " + port->status);
      case PortState::kPending:
        break;
    }
    const PollWait woke =
        WaitForNextPoll(options, std::min(Clock::now() + interval, deadline), signs_left);
    if (woke == PollWait::kCancelled) return cancelled_error();
    if (woke != PollWait::kDue) {  // a sign
      --signs_left;
      interval = std::clamp(options.after_sign, milliseconds(1), cap);
      if (woke == PollWait::kSignJustNow) {
        // The agent places the NIC before its controller hears the port is ready, so a GET at
        // the moment the NIC appears would nearly always find it pending: the poll comes
        // `after_sign` later, and the re-polls after it grow from there.
        if (WaitForNextPoll(options, std::min(Clock::now() + interval, deadline), 0) ==
            PollWait::kCancelled) {
          return cancelled_error();
        }
        interval = std::min(cap, std::chrono::duration_cast<milliseconds>(interval * factor));
      }
      continue;
    }
    const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    const milliseconds cap_now =
        std::max(cap, milliseconds(static_cast<int64_t>(static_cast<double>(waited.count()) *
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
  return ResourceOf(r, "subnet", SubnetFromJson);
}

Result<std::vector<Node>> Client::ListNodes() {
  MZ_ASSIGN_OR_RETURN(Response r, impl_->Call(Method::kGet, "/nodes", nullptr, true));
  if (r.http == 404 || r.http == 405) {
    return Status(Code::kUnimplemented, r.call + ": HTTP " + std::to_string(r.http) +
                                            ": this controller has no node manager");
  }
  MZ_RETURN_IF_ERROR(r.ObjectAnswer());
  return NodesFromJson(r.doc);
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

Result<PortList> Client::ListPorts(const std::map<std::string, std::string>& filters,
                                   const std::vector<std::string>& fields) {
  Result<PortList> list = generation_found() == Dialect::kV01 ? impl_->ListOfSubnet(filters)
                                                              : impl_->ListAll(filters, fields);
  if (generation_found() == Dialect::kAuto) {  // this list tells
    if (list.ok()) {
      impl_->generation = Dialect::kAlcor;
    } else if (impl_->list_refused) {
      impl_->generation = Dialect::kV01;
      MZ_LOG(kInfo) << impl_->base << " has no port list (HTTP 405): a v0.1 controller, listing "
                    << "the ports of subnet " << config_.subnet_id;
      list = impl_->ListOfSubnet(filters);
    }
  }
  if (!list.ok()) return list;
  std::erase_if(list->ports, [this](const Port& p) {
    return !p.project_id.empty() && p.project_id != config_.project_id;
  });
  return list;
}

Result<Port> Client::UpdatePort(const std::string& port_id, const json& fields) {
  if (port_id.empty()) return InvalidArgumentError("UpdatePort: empty port id");
  if (!fields.is_object()) {
    return InvalidArgumentError(std::string("UpdatePort ") + port_id +
                                ": fields must be a JSON object, got " + fields.type_name());
  }
  MZ_ASSIGN_OR_RETURN(const Dialect generation, Generation());
  json port = fields;
  if (generation == Dialect::kV01) {
    MZ_ASSIGN_OR_RETURN(port, impl_->Record(port_id));
    for (const auto& [key, value] : fields.items()) port[key] = value;
  } else if (!port.contains("port_security_enabled")) {
    port["port_security_enabled"] = nullptr;  // null: Alcor keeps the stored value
  }
  const std::string body = DumpBody(json{{"port", std::move(port)}});
  MZ_ASSIGN_OR_RETURN(Response r, impl_->Call(Method::kPut, impl_->PortPath(port_id), &body, true,
                                              std::nullopt, /*empty_ok=*/true));
  if (r.success() && r.doc.is_null()) {
    // Updated, and the controller said nothing more (204, or an empty body): read it back.
    MZ_LOG(kDebug) << r.call << ": HTTP " << r.http << " without a body; reading the port back";
    auto read = impl_->Get(port_id, std::nullopt);
    if (!read.ok()) {
      return read.status().WithContext(r.call + ": updated (HTTP " + std::to_string(r.http) +
                                       ", no body), then reading it back");
    }
    return read;
  }
  return impl_->PortFromResponse(r);
}

}  // namespace mizarmp::client
