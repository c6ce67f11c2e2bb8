// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What OpenSSL's initialisations cost a one-shot process, one at a time. Exec'd in turn with the
// other start-up probes (time, peak RSS) and run under `valgrind --tool=callgrind` by
// bench/run.sh (instructions above mode "none" are that mode's cost). Linked against libssl and
// libcrypto only, so the figures do not depend on which HTTP stack the plugin links.
//   none          nothing (the baseline: the process and the dynamic loading of libssl+libcrypto)
//   ssl-init      OPENSSL_init_ssl(LOAD_SSL_STRINGS | LOAD_CRYPTO_STRINGS): what Debian's
//                 libcpp-httplib 0.11 runs from a static constructor when it is loaded (also
//                 for plain http://), and what libcurl's global init ran
//   ssl-noconf    the same without reading openssl.cnf (OPENSSL_INIT_NO_LOAD_CONFIG)
//   ssl-ctx       ssl-init, then a TLS client context with the system's CA paths (what an
//                 https:// client adds before its first handshake)
#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr uint64_t kStrings = OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS;

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "none";
  if (std::strcmp(mode, "none") == 0) return 0;
  if (std::strcmp(mode, "ssl-init") == 0) return OPENSSL_init_ssl(kStrings, nullptr) == 1 ? 0 : 1;
  if (std::strcmp(mode, "ssl-noconf") == 0) {
    return OPENSSL_init_ssl(kStrings | OPENSSL_INIT_NO_LOAD_CONFIG, nullptr) == 1 ? 0 : 1;
  }
  if (std::strcmp(mode, "ssl-ctx") == 0) {
    if (OPENSSL_init_ssl(kStrings, nullptr) != 1) return 1;
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) return 1;
    const int ok = SSL_CTX_set_default_verify_paths(ctx);
    SSL_CTX_free(ctx);
    return ok == 1 ? 0 : 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
