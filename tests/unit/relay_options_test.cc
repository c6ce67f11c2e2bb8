// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// RelayOptions::Validate (relay/relay.h): what Relay::Start and mizarmp-addons' configuration
// refuse, each refusal naming the configuration key a user sets (or, for the limits the server
// does not configure, the field).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/status.h"
#include "common/unix_socket.h"
#include "relay/relay.h"
#include "tests/support/refusals.h"

namespace mizarmp::relay {
namespace {

RelayOptions ValidOptions() {
  RelayOptions o;
  o.socket_path = "/run/mizarmp/relay.sock";
  o.upstream.base_url = "https://mp.example:9443";
  return o;
}

using testing::ExpectRefused;

TEST(RelayOptions, ValidOptionsPass) {
  const Status s = ValidOptions().Validate();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(RelayOptions, RefusesASocketThatIsNotAbsolute) {
  RelayOptions o = ValidOptions();
  o.socket_path = "run/relay.sock";
  ExpectRefused(o, "relaySocket \"run/relay.sock\": must be an absolute path");
  o.socket_path = "";
  ExpectRefused(o, "relaySocket \"\": must be an absolute path");
}

TEST(RelayOptions, RefusesASocketPathTooLongForAUnixSocket) {
  RelayOptions o = ValidOptions();
  o.socket_path = "/" + std::string(kMaxUnixPath, 'r');
  ExpectRefused(o, "relaySocket \"/rrr");
  ExpectRefused(o, "longer than " + std::to_string(kMaxUnixPath) + " bytes");
  o.socket_path = "/" + std::string(kMaxUnixPath - 1, 'r');
  EXPECT_TRUE(o.Validate().ok()) << o.Validate().ToString();
}

TEST(RelayOptions, RefusesNoControllerToRelayTo) {
  RelayOptions o = ValidOptions();
  o.upstream.base_url.clear();
  ExpectRefused(o, "relaySocket: needs mpurl");
}

TEST(RelayOptions, RefusesAnUpstreamTheClientRefuses) {
  RelayOptions o = ValidOptions();
  o.upstream.base_url = "ftp://controller";
  ExpectRefused(o, "mpurl: base_url \"ftp://controller\" must start with http:// or https://");
  o = ValidOptions();
  o.upstream.tls.ca_file = "/nonexistent/mizarmp-relay-ca.pem";
  ExpectRefused(o, "mpurl: ");
  ExpectRefused(o, "/nonexistent/mizarmp-relay-ca.pem");
}

TEST(RelayOptions, RefusesLimitsBelowOne) {
  RelayOptions o = ValidOptions();
  o.max_connections = 0;
  ExpectRefused(o, "relay max_connections must be at least 1, got 0");
  o = ValidOptions();
  o.idle_timeout = std::chrono::milliseconds(0);
  ExpectRefused(o, "relay idle_timeout must be positive");
  o = ValidOptions();
  o.max_request_bytes = 0;
  ExpectRefused(o, "relay max_request_bytes must be positive");
}

TEST(RelayOptions, IgnoresWhatTheRelayDoesNotUse) {
  // Requests carry their own Authorization, so a token file the relay never reads is no error.
  RelayOptions o = ValidOptions();
  o.upstream.token_file = "/nonexistent/mizarmp-relay-token";
  o.upstream.relay_socket = "relative.sock";
  const Status s = o.Validate();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace mizarmp::relay
