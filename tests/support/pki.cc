// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/pki.h"

#include <stdlib.h>

#include <filesystem>
#include <vector>

#include "tests/support/process.h"

namespace mizarmp::testing {
namespace {

constexpr const char* kNewKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
constexpr const char* kSign =
    "openssl x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 ";

// Runs the shell steps in order, stopping at the first that fails; false with the output in
// `error` then.
bool RunSteps(const std::vector<std::string>& steps, std::string* error) {
  std::string script = "set -e";
  for (const auto& step : steps) script += "; " + step;
  std::string out;
  if (Shell("(" + script + ") 2>&1", &out) == 0) return true;
  *error = out;
  return false;
}

}  // namespace

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
  const std::string key = kNewKey;
  const std::string sign = kSign;
  const std::vector<std::string> steps = {
      "cd '" + d + "'",
      "printf 'subjectAltName=" + san + "\\nextendedKeyUsage=serverAuth\\n' > server.ext",
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext",
      "openssl req -x509 " + key + "-keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca",
      "openssl req " + key + "-keyout server.key -out server.csr -subj /CN=mizarmp-server",
      sign + "-in server.csr -out server.crt -extfile server.ext",
      "openssl req " + key + "-keyout client.key -out client.csr -subj /CN=mizarmp-client",
      sign + "-in client.csr -out client.crt -extfile client.ext"};
  RunSteps(steps, &error);
}

Pki::KeyPair Pki::NodeClient(const std::string& node) {
  const std::string d = dir.path();
  const std::string name = "node-client-" + node;
  const KeyPair made{d + "/" + name + ".crt", d + "/" + name + ".key"};
  if (std::filesystem::exists(made.cert)) return made;  // issued before
  const std::vector<std::string> steps = {
      "cd '" + d + "'",
      "openssl req " + std::string(kNewKey) + "-keyout '" + name + ".key' -out '" + name +
          ".csr' -subj '/O=system:nodes/CN=system:node:" + node + "'",
      std::string(kSign) + "-in '" + name + ".csr' -out '" + name + ".crt' -extfile client.ext"};
  if (!RunSteps(steps, &error)) return {};
  return made;
}

}  // namespace mizarmp::testing
