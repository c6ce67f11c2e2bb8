// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Where the transport finds the CA certificates it verifies Mizar-MP against: a configured CA
// file, or the host's trust store. Loading a distribution's whole bundle parses every CA in it
// (some 140 certificates, tens of milliseconds), which a plugin process pays on every ADD and DEL;
// a distribution's hash directory lets OpenSSL read only the CA a server's chain names, when the
// chain is checked. Finding the trust and loading it are separate steps: the transport finds it
// when it sets TLS up, and loads it only when a full handshake has a chain to check (a resumed
// session has none).
#pragma once

#include <openssl/x509_vfy.h>

#include <string>

#include "common/status.h"

namespace mizarmp::client {

// A PEM file of CAs, a hash directory of them read on demand, or both (SSL_CERT_FILE with
// SSL_CERT_DIR).
struct TrustLocation {
  std::string file;
  std::string dir;
  std::string what;  // for messages: the path, or the environment variables that named it
  // The versions of the file and the directory (an update of the store changes either), so
  // that a session made under other trust is not resumed.
  std::string Version() const;
};

// `ca_file` when it is set; else the host's trust store: SSL_CERT_FILE / SSL_CERT_DIR when set
// (OpenSSL's own convention, which a statically linked OpenSSL honours nowhere else); else the
// first store of the common distributions that exists, as its hash directory when it has one
// with hash links, else as its bundle. UNAVAILABLE naming every place looked at when none exists.
Result<TrustLocation> FindTrust(const std::string& ca_file);

// Loads the certificates of `where` into `store` (a hash directory: only its lookup is set up).
// UNAVAILABLE "TLS: cannot load CA certificates from <what>" when they cannot be read.
Status LoadTrust(X509_STORE* store, const TrustLocation& where);

// True when `dir` holds a link named as OpenSSL's hash lookup wants ("<8 hex digits>.<n>",
// what c_rehash and update-ca-certificates make).
bool HasHashLinks(const std::string& dir);

}  // namespace mizarmp::client
