// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Mizar-MP client through a node's relay (ClientConfig::relay_socket, relay/relay.h), as a
// plugin process sees it: each Client stands for one process, against the in-process mock over
// TLS playing the real Alcor controller, whose API gateway requires a token.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "common/unix_socket.h"
#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "tests/support/port_spec.h"
#include "relay/relay.h"
#include "tests/support/process.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::client {
namespace {

using std::chrono::milliseconds;

class ClientRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    ASSERT_TRUE(WriteFileAtomic(token_file_, "relay-test-token\n", 0600).ok());
    ASSERT_NO_FATAL_FAILURE(StartTlsMock(&controller_));
  }

  // The real Alcor controller's behaviour (strict, mock-server/strict.h): the generation with a
  // token (X-Auth-Token at its API gateway); v0.1 has no authentication.
  static mock::Options StrictAlcor() {
    mock::Options o;
    o.agent = false;
    o.strict = true;
    o.dialect = mock::Dialect::kAlcor;
    return o;
  }

  // Port `id` as a plugin asks Alcor for it: its network_id is the VPC.
  static PortSpec Spec(const std::string& id) {
    PortSpec spec = testing::PortSpecFor(id);
    spec.network_id = kDefaultVpcId;
    return spec;
  }

  void StartTlsMock(std::unique_ptr<mock::MockServer>* out) {
    mock::Options o = StrictAlcor();
    o.tls_cert_file = pki_.server_cert;
    o.tls_key_file = pki_.server_key;
    o.token_file = token_file_;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, out));
  }

  // A relay to `base_url` whose TLS trusts `ca`.
  void StartRelay(const std::string& base_url, const std::string& ca) {
    relay::RelayOptions o;
    o.socket_path = socket_;
    o.upstream.base_url = base_url;
    o.upstream.tls.ca_file = ca;
    o.upstream.connect_timeout = milliseconds(1000);
    o.upstream.request_timeout = milliseconds(3000);
    auto started = relay::Relay::Start(o);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    relay_ = std::move(*started);
  }

  // A plugin process's client of the controller, with the relay socket.
  ClientConfig Config() const {
    ClientConfig c;
    c.base_url = controller_->base_url();
    c.connect_timeout = milliseconds(1000);
    c.request_timeout = milliseconds(3000);
    c.tls.ca_file = pki_.ca;
    c.token_file = token_file_;
    c.relay_socket = socket_;
    return c;
  }

  // One "process": creates port `id` and reads it back; the handshakes it made itself.
  TlsHandshakes CreateAndRead(const ClientConfig& config, const std::string& id) {
    auto client = Client::Create(config);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return {};
    auto created = (*client)->CreatePort(Spec(id));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    auto read = (*client)->GetPort(id);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    return (*client)->tls_handshakes();
  }

  testing::Pki pki_;
  testing::TempDir dir_;
  std::string token_file_ = dir_.path() + "/token";
  std::string socket_ = dir_.path() + "/run/relay.sock";
  std::unique_ptr<mock::MockServer> controller_;
  std::unique_ptr<relay::Relay> relay_;
};

TEST_F(ClientRelayTest, AProcessThroughTheRelayMakesNoTlsHandshakeOfItsOwn) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(controller_->base_url(), pki_.ca));
  for (const char* id : {"p1", "p2"}) {
    const TlsHandshakes made = CreateAndRead(Config(), id);
    EXPECT_EQ(made.full + made.resumed, 0u) << id << ": the process shook hands itself";
  }
  // Both ports were made at the controller, with the processes' token (the mock requires it).
  EXPECT_EQ(controller_->Ports().size(), 2u);
  EXPECT_EQ(controller_->requests(), 4u);
  EXPECT_EQ(relay_->relayed(), 4u);
  EXPECT_EQ(relay_->refused(), 0u);
}

TEST_F(ClientRelayTest, TheControllersOwnAnswersComeBackThroughTheRelay) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(controller_->base_url(), pki_.ca));
  ClientConfig no_token = Config();
  no_token.token_file.clear();
  auto client = Client::Create(no_token);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // The controller's 401 and 404 are its answers, not the relay's: passed on, not bypassed.
  auto refused = (*client)->CreatePort(Spec("p1"));
  EXPECT_EQ(refused.status().code(), Code::kUnauthenticated) << refused.status().ToString();
  auto authorised = Client::Create(Config());
  ASSERT_TRUE(authorised.ok());
  auto missing = (*authorised)->GetPort("nope");
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().ToString();
  EXPECT_EQ((*authorised)->tls_handshakes().full, 0u);
  EXPECT_EQ(relay_->refused(), 0u);
}

TEST_F(ClientRelayTest, WithoutARelayTheProcessGoesDirectly) {
  const TlsHandshakes made = CreateAndRead(Config(), "p1");
  EXPECT_EQ(made.full, 1u);
  EXPECT_EQ(controller_->Ports().size(), 1u);
}

TEST_F(ClientRelayTest, ARelayForAnotherControllerIsNotUsed) {
  std::unique_ptr<mock::MockServer> other;
  ASSERT_NO_FATAL_FAILURE(StartTlsMock(&other));
  ASSERT_NO_FATAL_FAILURE(StartRelay(other->base_url(), pki_.ca));
  const TlsHandshakes made = CreateAndRead(Config(), "p1");
  // Refused once (421), then given up for the process's life: its second call went directly.
  EXPECT_EQ(relay_->refused(), 1u);
  EXPECT_EQ(made.full, 1u);
  EXPECT_EQ(controller_->Ports().size(), 1u);
  EXPECT_EQ(other->requests(), 0u);
}

TEST_F(ClientRelayTest, AControllerTheRelayCannotVerifyIsReachedWithTheProcesssOwnTls) {
  // The relay trusts another CA, so it refuses the controller's certificate (502) and relays
  // nothing; the process's own TLS, which trusts the controller's CA, then does the call.
  testing::Pki other_ca;
  ASSERT_TRUE(other_ca.error.empty()) << other_ca.error;
  ASSERT_NO_FATAL_FAILURE(StartRelay(controller_->base_url(), other_ca.ca));
  const TlsHandshakes made = CreateAndRead(Config(), "p1");
  EXPECT_EQ(relay_->refused(), 1u);
  EXPECT_EQ(relay_->relayed(), 0u);
  EXPECT_EQ(made.full, 1u);
  EXPECT_EQ(controller_->Ports().size(), 1u);
}

TEST_F(ClientRelayTest, AnHttpControllerIsNeverRelayed) {
  std::unique_ptr<mock::MockServer> plain;
  ASSERT_NO_FATAL_FAILURE(testing::StartMock(StrictAlcor(), &plain));
  ASSERT_NO_FATAL_FAILURE(StartRelay(controller_->base_url(), pki_.ca));
  ClientConfig c = Config();
  c.base_url = plain->base_url();
  c.token_file.clear();
  CreateAndRead(c, "p1");
  EXPECT_EQ(plain->Ports().size(), 1u);
  EXPECT_EQ(relay_->relayed() + relay_->refused(), 0u);
}

std::string LogText(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : "(no log: " + text.status().ToString() + ")";
}

TEST_F(ClientRelayTest, TheNodeServerRelaysForThePluginAndRemovesItsSocketOnExit) {
  // mizarmp-addons as a node runs it (README "The node's relay").
  const std::vector<std::string> argv = {testing::BinDir() + "/mizarmp-addons",
                                         "--mode=node",
                                         "--endpoint=unix://" + dir_.path() + "/run/addons.sock",
                                         "--key-store-dir=" + dir_.path() + "/keys",
                                         "--mpurl=" + controller_->base_url(),
                                         "--mp-ca-file=" + pki_.ca,
                                         "--relay-socket=" + socket_};
  const std::string log = dir_.path() + "/addons.log";
  const pid_t pid = testing::SpawnProcess(argv, {}, "", log);
  ASSERT_GT(pid, 0);
  // The socket file exists from the relay's bind(), before its listen(): a plugin connecting
  // in between is refused and goes directly (with a TLS handshake of its own, which is what
  // failed this test under load). So the relay is ready once it accepts a connection.
  const auto live = [this] {
    auto accepts = SocketIsLive(socket_);
    return accepts.ok() && *accepts;
  };
  for (int i = 0; i < 1500 && !live(); ++i) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(live()) << "no relay; log:\n" << LogText(log);
  struct stat st {};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const TlsHandshakes made = CreateAndRead(Config(), "p1");
  EXPECT_EQ(made.full + made.resumed, 0u);
  EXPECT_EQ(controller_->Ports().size(), 1u);

  ::kill(pid, SIGTERM);
  const int raw = testing::WaitProcess(pid, std::chrono::seconds(30));
  EXPECT_TRUE(raw != -1 && WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw << "; log:\n"
                                                                    << LogText(log);
  EXPECT_NE(::stat(socket_.c_str(), &st), 0) << "the socket outlived the server";
}

}  // namespace
}  // namespace mizarmp::client
