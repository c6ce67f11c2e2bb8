// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// TLS sessions kept between processes. The plugin is a new process for every ADD and DEL, so
// each would make a full handshake: read the CA, check the server's chain, verify its signature.
// A session kept by an earlier process lets the handshake resume instead (RFC 8446 2.2): the
// server proves it holds the secret of a session whose certificate was checked when it was made,
// and sends no certificate. ECDHE still runs, so a resumed connection keeps forward secrecy.
//
// A kept session is only offered where it was made: its file (one per server and binding) holds
// the binding it was made under (the server, and the versions of the trusted CAs and of the
// client certificate and key), and a session under another binding is not offered, so a rotated
// CA or client certificate makes the next handshake a full one. The server's ticket lifetime
// bounds a session's age (OpenSSL offers no expired ticket); files past TLS 1.3's longest
// lifetime (7 days) are removed whenever a new session is kept.
//
// The file holds a resumption secret: it is written 0600 in a 0700 directory (the plugin's state
// dir), never logged, and replaced by rename, so concurrent processes read a whole session or
// none. A missing, unreadable or foreign file costs one full handshake, never a failure. A
// server that fails a handshake over a kept session (rather than ignoring it, as TLS lets it;
// an OpenSSL server that checks client certificates without a session id context does) has its
// file replaced by a refusal, so later processes offer it nothing until the file expires.
#pragma once

#include <openssl/ssl.h>

#include <optional>
#include <string>

namespace mizarmp::client {

class TlsSessionFile {
 public:
  // The session for `server` ("host:port") kept in `dir`, valid under `binding`.
  TlsSessionFile(const std::string& dir, const std::string& server, std::string binding);

  // The kept session when there is one for this binding (the caller frees it), else nullptr.
  SSL_SESSION* Load() const;
  // Keeps `session` (a resumable one, as the server's ticket made it) in place of the last,
  // unless the server refused kept sessions. Failures are logged (the session is not) and
  // otherwise ignored: the next process makes a full handshake.
  void Save(SSL_SESSION* session) const;
  // Records that the server failed a handshake over the kept session.
  void Refuse() const;

  const std::string& path() const { return path_; }

 private:
  // The encoded session kept for this binding ("" for a refusal), or nullopt.
  std::optional<std::string> ReadKept() const;
  void Write(const std::string& der) const;

  std::string dir_;
  std::string path_;
  std::string binding_;
};

}  // namespace mizarmp::client
