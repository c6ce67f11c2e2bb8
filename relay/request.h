// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the relay (relay/relay.h) reads from a client and what of it passes on: one request read
// within its limit, the methods relayed, the headers of one hop only, and the status of each of
// the relay's own answers.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "relay/client_stream.h"
#include "relay/relay.h"

namespace mizarmp::relay {

namespace http = beast::http;
using Request = http::request<http::string_body>;

// Beast's string_view (Boost's in 1.74) as the standard one.
inline std::string_view Std(beast::string_view s) { return {s.data(), s.size()}; }

// How reading one request from a client ended.
enum class ReadOutcome {
  kRequest,    // a whole request
  kClosed,     // the client went away or stayed silent too long: nothing to answer
  kMalformed,  // not HTTP: answer 400 and close (`error` says why)
  kTooLarge,   // over `max_bytes`, header and body together: answer 413 and close
};
ReadOutcome ReadRequest(ClientStream& stream, beast::flat_buffer& buffer, size_t max_bytes,
                        http::request_parser<http::string_body>& parser, std::string* error);

// The methods the Mizar-MP client sends. Others are refused: the transport could not forward
// them (an extension method) or read their answers right (HEAD's has no body).
bool Relayable(http::verb method);

// The headers of one hop only (RFC 9110 section 7.6.1), which the relay's own connection to the
// controller has its own of; Content-Length the transport sets from the body; and Expect: the
// relay holds the whole body already, and the transport would take a 100 Continue for the
// answer.
bool HopByHop(beast::string_view name);
// The header names the client's Connection header lists: hop-by-hop too.
std::vector<std::string> NamedByConnection(const Request& req);

// A reason as a header value: on one line, and short.
std::string HeaderValue(std::string_view reason);
// Whether a response with `status` may carry a body (RFC 9110 section 6.4.1).
bool MayHaveBody(unsigned status);
// The status of the relay's own answer for `outcome`.
http::status StatusOf(RelayOutcome outcome);

}  // namespace mizarmp::relay
