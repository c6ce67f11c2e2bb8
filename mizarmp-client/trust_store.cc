// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/trust_store.h"

#include <dirent.h>
#include <openssl/err.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <vector>

#include "common/fileutil.h"
#include "common/hex.h"
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
    if (!IsHexDigit(name[i])) return false;
  }
  if (name[i++] != '.' || name[i] == '\0') return false;
  for (; name[i] != '\0'; ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i])) == 0) return false;
  }
  return true;
}

// SSL_CERT_FILE and SSL_CERT_DIR, when either is set.
std::optional<TrustLocation> FromEnvironment() {
  const char* file = std::getenv("SSL_CERT_FILE");
  const char* dir = std::getenv("SSL_CERT_DIR");
  TrustLocation where;
  std::vector<std::string> named;
  if (file != nullptr && *file != '\0') {
    where.file = file;
    named.push_back("SSL_CERT_FILE=" + where.file);
  }
  if (dir != nullptr && *dir != '\0') {
    where.dir = dir;
    named.push_back("SSL_CERT_DIR=" + where.dir);
  }
  if (named.empty()) return std::nullopt;
  where.what = Joined(named, " ");
  return where;
}

}  // namespace

std::string TrustLocation::Version() const {
  return "file " + file + " " + VersionOf(file).ToString() + ", dir " + dir + " " +
         VersionOf(dir).ToString();
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

Result<TrustLocation> FindTrust(const std::string& ca_file) {
  if (!ca_file.empty()) return TrustLocation{ca_file, "", ca_file};
  if (auto from_env = FromEnvironment()) return *from_env;
  std::vector<std::string> looked_at;
  for (const SystemStore& store : kSystemStores) {
    // The bundle says the store is there; its hash directory, when kept, is read on demand.
    if (::access(store.bundle, R_OK) != 0) {
      looked_at.push_back(store.bundle);
      continue;
    }
    if (*store.hash_dir != '\0' && HasHashLinks(store.hash_dir)) {
      return TrustLocation{"", store.hash_dir, store.hash_dir};
    }
    return TrustLocation{store.bundle, "", store.bundle};
  }
  return UnavailableError(
      "TLS: no system CA store found (SSL_CERT_FILE and SSL_CERT_DIR are unset, and none of " +
      Joined(looked_at, ", ") + " exists); configure a CA file");
}

Status LoadTrust(X509_STORE* store, const TrustLocation& where) {
  const char* file = where.file.empty() ? nullptr : where.file.c_str();
  const char* dir = where.dir.empty() ? nullptr : where.dir.c_str();
  if (X509_STORE_load_locations(store, file, dir) == 1) return Status::Ok();
  ERR_clear_error();
  return UnavailableError("TLS: cannot load CA certificates from " + where.what);
}

}  // namespace mizarmp::client
