// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// How to reach an etcd cluster (etcd/client.h), apart from the client itself so a configuration
// can hold it without gRPC's headers.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace mizarmp::etcd {

// The fence-store location form: "etcd://host:port[,host:port...]".
inline constexpr std::string_view kLocationScheme = "etcd://";
bool IsEtcdLocation(std::string_view location);
// The endpoints of an etcd location. INVALID_ARGUMENT naming the location and the bad entry.
Result<std::vector<std::string>> ParseEndpoints(std::string_view location);

struct Options {
  std::vector<std::string> endpoints;  // "host:port", one per member
  // TLS to etcd when ca_file or cert_file is set: ca_file verifies the members (empty: the
  // system's roots), cert_file + key_file are this client's certificate (etcd
  // --client-cert-auth).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // etcd user authentication when username is set; the password is read from password_file.
  std::string username;
  std::string password_file;
  std::chrono::milliseconds call_timeout{5000};  // per call and member
};

}  // namespace mizarmp::etcd
