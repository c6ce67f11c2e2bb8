#include "mizarmp-client/trust_store.h"

#include <dirent.h>
#include <openssl/err.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <vector>

#include "common/strings.h"

namespace mizarmp::client {
namespace {

// A distribution's trust store: the directory of hash links its CA tool keeps (empty: it keeps
// none) and the bundle of the same certificates. OpenSSL's own default (its build-time
// OPENSSLDIR, /usr/lib/ssl on Debian) is not used: the static plugin carries the build
// machine's default, which other distributions do not have.
struct SystemStore {
  const char* hash_dir;
  const char* bundle;
};

constexpr std::array<SystemStore, 6> kSystemStores = {{
    {"/etc/ssl/certs", "/etc/ssl/certs/ca-certificates.crt"},  // Debian, Ubuntu, Arch, Gentoo
    {"/etc/pki/ca-trust/extracted/pem/directory-hash",
     "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"},      // Fedora, RHEL 9
    {"", "/etc/pki/tls/certs/ca-bundle.crt"},                   // older Fedora, RHEL
    {"/var/lib/ca-certificates/openssl", "/etc/ssl/ca-bundle.pem"},  // openSUSE, SLES
    {"/etc/ssl/certs", "/etc/ssl/cert.pem"},                    // Alpine
    {"", "/etc/pki/tls/cacert.pem"},                            // OpenELEC
}};

bool IsHashLinkName(const char* name) {
  size_t i = 0;
  for (; i < 8; ++i) {
    if (std::isxdigit(static_cast<unsigned char>(name[i])) == 0) return false;
  }
  if (name[i++] != '.' || name[i] == '\0') return false;
  for (; name[i] != '\0'; ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i])) == 0) return false;
  }
  return true;
}

Status LoadLocations(SSL_CTX* ctx, const char* file, const char* dir, const std::string& what) {
  if (SSL_CTX_load_verify_locations(ctx, file, dir) == 1) return Status::Ok();
  ERR_clear_error();
  return UnavailableError("TLS: cannot load CA certificates from " + what);
}

// SSL_CERT_FILE and SSL_CERT_DIR, when either is set.
std::optional<Status> LoadFromEnvironment(SSL_CTX* ctx) {
  const char* file = std::getenv("SSL_CERT_FILE");
  const char* dir = std::getenv("SSL_CERT_DIR");
  const bool has_file = file != nullptr && *file != '\0';
  const bool has_dir = dir != nullptr && *dir != '\0';
  if (!has_file && !has_dir) return std::nullopt;
  std::vector<std::string> named;
  if (has_file) named.push_back("SSL_CERT_FILE=" + std::string(file));
  if (has_dir) named.push_back("SSL_CERT_DIR=" + std::string(dir));
  return LoadLocations(ctx, has_file ? file : nullptr, has_dir ? dir : nullptr,
                       Joined(named, " "));
}

}  // namespace

Status LoadCaFile(SSL_CTX* ctx, const std::string& path) {
  return LoadLocations(ctx, path.c_str(), nullptr, path);
}

bool HasHashLinks(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = ::readdir(d)) {
    if (IsHashLinkName(e->d_name)) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

Status LoadSystemTrust(SSL_CTX* ctx) {
  if (auto from_env = LoadFromEnvironment(ctx)) return *from_env;
  std::vector<std::string> looked_at;
  for (const SystemStore& store : kSystemStores) {
    // The bundle says the store is there; its hash directory, when kept, is read on demand.
    if (::access(store.bundle, R_OK) != 0) {
      looked_at.push_back(store.bundle);
      continue;
    }
    if (*store.hash_dir != '\0' && HasHashLinks(store.hash_dir)) {
      return LoadLocations(ctx, nullptr, store.hash_dir, store.hash_dir);
    }
    return LoadCaFile(ctx, store.bundle);
  }
  return UnavailableError(
      "TLS: no system CA store found (SSL_CERT_FILE and SSL_CERT_DIR are unset, and none of " +
      Joined(looked_at, ", ") + " exists); configure a CA file");
}

}  // namespace mizarmp::client
