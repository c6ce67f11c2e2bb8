// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Kept TLS sessions (mizarmp-client/tls_session.h): the input as the session file a plugin
// process finds in its state dir (anything may have written it). Load must accept or refuse it
// without a crash; a session it accepts must be kept again by Save (which takes the server's
// certificate out of it) and read back by Load with the same resumption secret.
#include <openssl/ssl.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "mizarmp-client/tls_session.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using mizarmp::fuzz::Require;

// The binding the seeds in corpus/tls_session/ were written under.
constexpr const char* kServer = "controller.test:9443";
constexpr const char* kBinding = "server controller.test:9443\ntrust fuzz\nclient none";

mizarmp::fuzz::ScratchDir* g_dir = nullptr;

std::string MasterKey(const SSL_SESSION* session) {
  unsigned char key[SSL_MAX_MASTER_KEY_LENGTH];
  const size_t n = SSL_SESSION_get_master_key(session, key, sizeof(key));
  return std::string(reinterpret_cast<const char*>(key), n);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  g_dir = new mizarmp::fuzz::ScratchDir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  g_dir->Clear();
  const mizarmp::client::TlsSessionFile file(g_dir->path(), kServer, kBinding);
  mizarmp::fuzz::WriteFileOrDie(file.path(), mizarmp::fuzz::AsText(data, size));
  SSL_SESSION* loaded = file.Load();
  if (loaded == nullptr) return 0;
  const std::string secret = MasterKey(loaded);
  file.Save(loaded);
  SSL_SESSION_free(loaded);
  SSL_SESSION* again = file.Load();
  Require(again != nullptr, "a session Load accepted did not read back after Save");
  Require(MasterKey(again) == secret, "a session's secret changed through Save + Load");
  Require(SSL_SESSION_get0_peer(again) == nullptr, "Save kept the server's certificate");
  SSL_SESSION_free(again);
  return 0;
}
