// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// TLS sessions kept between processes (mizarmp-client/tls_session.h), as a plugin process sees
// them: each Client here stands for one plugin process, against the in-process mock over TLS.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "common/fileutil.h"
#include "mizarmp-client/client.h"
#include "mock-server/mock.h"
#include "tests/support/port_spec.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::client {
namespace {

using std::chrono::milliseconds;

class TlsSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(pki_.error.empty()) << pki_.error; }

  // Serves TLS with the PKI's server certificate (and requires a client certificate with
  // `mutual`); failures are fatal for the test (check with ASSERT_NO_FATAL_FAILURE). The mock
  // plays the real v0.1 controller (strict, mock-server/strict.h): the plugin's POST and GET.
  void StartMock(bool mutual = false) {
    mock::Options o;
    o.agent = false;
    o.strict = true;
    o.tls_cert_file = pki_.server_cert;
    o.tls_key_file = pki_.server_key;
    if (mutual) o.tls_client_ca_file = pki_.ca;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(o, &server_));
  }

  ClientConfig Config() const {
    ClientConfig c;
    c.base_url = server_->base_url();
    c.connect_timeout = milliseconds(1000);
    c.request_timeout = milliseconds(3000);
    c.tls.ca_file = pki_.ca;
    c.tls.session_dir = sessions_;
    return c;
  }

  // One "process": a fresh client that reads one port, and the handshakes it made.
  TlsHandshakes OneCall(const ClientConfig& c) {
    auto client = Client::Create(c);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return {};
    auto port = (*client)->GetPort("p1");
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    return (*client)->tls_handshakes();
  }

  // Creates the port every "process" reads, over a first (full) handshake.
  TlsHandshakes CreateThePort(const ClientConfig& c) {
    auto client = Client::Create(c);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return {};
    auto port = (*client)->CreatePort(testing::PortSpecFor("p1"));
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    return (*client)->tls_handshakes();
  }

  std::vector<std::string> SessionFiles() const {
    auto names = ListDir(sessions_);
    return names.ok() ? *names : std::vector<std::string>{};
  }

  static mode_t ModeOf(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }

  // Gives `path` a new version with the same content (a CA or certificate re-issued as is).
  static void Rewrite(const std::string& path) {
    auto text = ReadFile(path);
    ASSERT_TRUE(text.ok());
    ASSERT_TRUE(WriteFileAtomic(path, *text, 0644).ok());
  }

  testing::Pki pki_;
  testing::TempDir state_;
  std::string sessions_ = state_.path() + "/.tls-sessions";
  std::unique_ptr<mock::MockServer> server_;
};

// Whether a process made `full` full handshakes and `resumed` resumed ones.
::testing::AssertionResult Made(const TlsHandshakes& got, uint64_t full, uint64_t resumed) {
  if (got.full == full && got.resumed == resumed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "handshakes: " << got.full << " full and " << got.resumed
                                       << " resumed, want " << full << " and " << resumed;
}

TEST_F(TlsSessionTest, ALaterProcessResumesTheSessionAnEarlierOneKept) {
  ASSERT_NO_FATAL_FAILURE(StartMock());
  EXPECT_TRUE(Made(CreateThePort(Config()), 1u, 0u));

  // Kept as a secret is: one file, 0600, in a 0700 directory.
  const std::vector<std::string> files = SessionFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("127.0.0.1_" + std::to_string(server_->port()) + "-", 0), 0u)
      << files[0];
  EXPECT_EQ(ModeOf(sessions_ + "/" + files[0]), 0600u);
  EXPECT_EQ(ModeOf(sessions_), 0700u);

  for (int process = 0; process < 3; ++process) EXPECT_TRUE(Made(OneCall(Config()), 0u, 1u));
  EXPECT_EQ(SessionFiles().size(), 1u) << "a resumed session is not written again";
}

TEST_F(TlsSessionTest, ASessionIsOnlyOfferedUnderTheTrustAndServerItWasMadeWith) {
  ASSERT_NO_FATAL_FAILURE(StartMock());
  EXPECT_TRUE(Made(CreateThePort(Config()), 1u, 0u));

  // The CA re-issued: the next process checks the server's chain again, then resumes that.
  ASSERT_NO_FATAL_FAILURE(Rewrite(pki_.ca));
  EXPECT_TRUE(Made(OneCall(Config()), 1u, 0u));
  EXPECT_TRUE(Made(OneCall(Config()), 0u, 1u));

  // The same server under another name is another server.
  ClientConfig by_name = Config();
  by_name.base_url = "https://localhost:" + std::to_string(server_->port());
  EXPECT_TRUE(Made(OneCall(by_name), 1u, 0u));
  EXPECT_TRUE(Made(OneCall(by_name), 0u, 1u));

  // Without verification nothing is offered or kept.
  const size_t kept = SessionFiles().size();
  ClientConfig insecure = Config();
  insecure.tls.ca_file.clear();
  insecure.tls.insecure_skip_verify = true;
  EXPECT_TRUE(Made(OneCall(insecure), 1u, 0u));
  EXPECT_TRUE(Made(OneCall(insecure), 1u, 0u));
  EXPECT_EQ(SessionFiles().size(), kept);
}

TEST_F(TlsSessionTest, AFileThatIsNotASessionCostsAFullHandshakeNotAFailure) {
  ASSERT_NO_FATAL_FAILURE(StartMock());
  EXPECT_TRUE(Made(CreateThePort(Config()), 1u, 0u));
  ASSERT_EQ(SessionFiles().size(), 1u);
  const std::string path = sessions_ + "/" + SessionFiles()[0];
  auto good = ReadFile(path);
  ASSERT_TRUE(good.ok());

  const std::string header = good->substr(0, good->find('\n') + 1);
  const std::vector<std::string> hostile = {
      "",
      "garbage",
      header,                                          // the binding announced, then nothing
      good->substr(0, good->size() - 7),               // the session cut short
      header + std::string(100000, 'x'),               // longer than any session
      "mizarmp-tls-session 1 99999999999999999999\n",  // a length that does not fit
  };
  for (const std::string& content : hostile) {
    std::ofstream(path, std::ios::trunc) << content;
    EXPECT_TRUE(Made(OneCall(Config()), 1u, 0u)) << "file of " << content.size() << " bytes";
  }
  // The last full handshake kept a good session again.
  EXPECT_TRUE(Made(OneCall(Config()), 0u, 1u));
}

TEST_F(TlsSessionTest, MutualTlsKeepsWorkingWithKeptSessions) {
  ASSERT_NO_FATAL_FAILURE(StartMock(/*mutual=*/true));
  ClientConfig c = Config();
  c.tls.cert_file = pki_.client_cert;
  c.tls.key_file = pki_.client_key;
  EXPECT_TRUE(Made(CreateThePort(c), 1u, 0u));
  // The mock's TLS server (cpp-httplib's OpenSSL set-up) checks client certificates without a
  // session id context, so OpenSSL fails a resumption there: the next process falls back to a
  // full handshake and records the refusal, and later ones offer that server nothing.
  const TlsHandshakes refused = OneCall(c);
  EXPECT_TRUE(Made(refused, 1u, 0u));
  EXPECT_EQ(refused.refused, 1u);
  for (int process = 0; process < 3; ++process) {
    const TlsHandshakes h = OneCall(c);
    EXPECT_TRUE(Made(h, 1u, 0u));
    EXPECT_EQ(h.refused, 0u) << "the refusal is remembered";
  }
  // A re-issued client certificate is another client: its first handshake is a full one.
  ASSERT_NO_FATAL_FAILURE(Rewrite(pki_.client_cert));
  EXPECT_TRUE(Made(OneCall(c), 1u, 0u));
}

}  // namespace
}  // namespace mizarmp::client
