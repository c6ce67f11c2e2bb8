// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Temporary directories and a throwaway PKI, with no test framework in them: shared by the tests
// (support.h) and bench/.
#pragma once

#include <string>

namespace mizarmp::testing {

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  // A fresh directory under `parent`.
  explicit TempDir(const std::string& parent = "/tmp");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A throwaway CA, a server certificate for the names in `san` (openssl's subjectAltName syntax)
// and a client certificate, made with the openssl CLI in a temporary directory. `error` holds
// openssl's output when that failed.
struct Pki {
  explicit Pki(const std::string& san = "IP:127.0.0.1,DNS:localhost");
  TempDir dir;
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string error;

  // A node agent's client certificate, signed by this CA, named as a kubelet's is
  // (CN system:node:<node>, O system:nodes). `node` is a plain test name (no quotes or slashes).
  // Empty paths, with openssl's output in `error`, when it failed.
  struct KeyPair {
    std::string cert, key;
  };
  KeyPair NodeClient(const std::string& node);
};

}  // namespace mizarmp::testing
