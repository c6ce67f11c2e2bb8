// Where the transport finds the CA certificates it verifies Mizar-MP against: a configured CA
// file, or the host's trust store. Loading a distribution's whole bundle parses every CA in it
// (some 140 certificates, tens of milliseconds), which a plugin process pays on every ADD and DEL;
// a distribution's hash directory lets OpenSSL read only the CA a server's chain names, when the
// chain is checked.
#pragma once

#include <openssl/ssl.h>

#include <string>

#include "common/status.h"

namespace mizarmp::client {

// The certificates of `path` (PEM; one CA or a bundle). UNAVAILABLE naming the file when it
// cannot be read or holds no certificate.
Status LoadCaFile(SSL_CTX* ctx, const std::string& path);

// The host's trust store: SSL_CERT_FILE / SSL_CERT_DIR when set (OpenSSL's own convention, which
// a statically linked OpenSSL honours nowhere else); else the first store of the common
// distributions that exists, as its hash directory when it has one with hash links (looked up
// on demand), else as its bundle. UNAVAILABLE naming every place looked at when none exists.
Status LoadSystemTrust(SSL_CTX* ctx);

// True when `dir` holds a link named as OpenSSL's hash lookup wants ("<8 hex digits>.<n>",
// what c_rehash and update-ca-certificates make).
bool HasHashLinks(const std::string& dir);

}  // namespace mizarmp::client
