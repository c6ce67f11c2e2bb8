// What the plugin's library initialisation costs, one piece at a time. Run under
// `valgrind --tool=callgrind` by bench/run.sh; the instruction count above mode "none" is the
// cost of that mode.
//   none            nothing (the baseline: process and dynamic loading of the same libraries)
//   evp-sha1        one SHA-1 through EVP_Digest (as common/uuid.cc's UuidV5 does)
//   curl            curl_global_init(CURL_GLOBAL_DEFAULT) (as mizarmp-client does)
//   evp-sha1+curl   both, in the plugin's order
//   noconf+curl     OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG) first, then curl
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstring>

namespace {

void Sha1() {
  const char text[] = "6ba7b811-9dad-11d1-80b4-00c04fd430c8mzbench/c1/eth0";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text, sizeof(text) - 1, md, &len, EVP_sha1(), nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "none";
  if (std::strcmp(mode, "none") == 0) return 0;
  if (std::strcmp(mode, "evp-sha1") == 0) {
    Sha1();
  } else if (std::strcmp(mode, "curl") == 0) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
  } else if (std::strcmp(mode, "evp-sha1+curl") == 0) {
    Sha1();
    curl_global_init(CURL_GLOBAL_DEFAULT);
  } else if (std::strcmp(mode, "noconf+curl") == 0) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
    curl_global_init(CURL_GLOBAL_DEFAULT);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  return 0;
}
