// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/pki.h"

#include <stdlib.h>

#include <filesystem>
#include <vector>

#include "tests/support/process.h"

namespace mizarmp::testing {

TempDir::TempDir(const std::string& parent) {
  std::string tmpl = parent + "/mizarmp-test-XXXXXX";
  const char* p = ::mkdtemp(tmpl.data());
  path_ = p != nullptr ? p : parent + "/mizarmp-test-failed";
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Pki::Pki(const std::string& san) {
  const std::string d = dir.path();
  ca = d + "/ca.crt";
  server_cert = d + "/server.crt";
  server_key = d + "/server.key";
  client_cert = d + "/client.crt";
  client_key = d + "/client.key";
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
  const std::string sign = "openssl x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 ";
  const std::vector<std::string> steps = {
      "cd '" + d + "'",
      "printf 'subjectAltName=" + san + "\\nextendedKeyUsage=serverAuth\\n' > server.ext",
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext",
      "openssl req -x509 " + key + "-keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca",
      "openssl req " + key + "-keyout server.key -out server.csr -subj /CN=mizarmp-server",
      sign + "-in server.csr -out server.crt -extfile server.ext",
      "openssl req " + key + "-keyout client.key -out client.csr -subj /CN=mizarmp-client",
      sign + "-in client.csr -out client.crt -extfile client.ext"};
  std::string script = "set -e";
  for (const auto& step : steps) script += "; " + step;
  std::string out;
  if (Shell("(" + script + ") 2>&1", &out) != 0) error = out;
}

}  // namespace mizarmp::testing
