// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "relay/request.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "common/strings.h"

namespace mizarmp::relay {

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

bool Relayable(http::verb method) {
  return method == http::verb::get || method == http::verb::post || method == http::verb::put ||
         method == http::verb::delete_ || method == http::verb::patch;
}

bool HopByHop(beast::string_view name) {
  static constexpr const char* kNames[] = {
      "Connection", "Keep-Alive",        "Proxy-Connection", "TE",    "Trailer",
      "Upgrade",    "Transfer-Encoding", "Content-Length",   "Expect"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](const char* hop) { return beast::iequals(name, hop); });
}

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

std::string HeaderValue(std::string_view reason) {
  std::string value(reason.substr(0, 300));
  for (char& c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return value;
}

bool MayHaveBody(unsigned status) { return status >= 200 && status != 204 && status != 304; }

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

}  // namespace mizarmp::relay
