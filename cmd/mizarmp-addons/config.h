// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-addons' configuration: a JSON file (--config PATH) with flags overriding it. It
// composes the options of the components main() builds (addons/, fence/, keyrotation/, relay/)
// and is included by cmd/mizarmp-addons/main.cc only.
//
// Every key is one entry of a table in config.cc: its camelCase JSON name, its kebab-case flag,
// its help line and how a value is applied. The JSON reader, the flag parser and --help
// (`mizarmp-addons --help` lists every key) are all generated from that table. Unknown keys and
// flags are an error, so a typo never silently falls back to a default; there is deliberately
// no key or flag that takes a token or a secret value.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "addons/identity.h"
#include "addons/server.h"
#include "common/log.h"
#include "common/status.h"
#include "fence/service/options.h"
#include "keyrotation/options.h"
#include "mizarmp-client/client.h"
#include "mizarmp-client/mizarmp_check.h"
#include "relay/relay.h"

namespace mizarmp::cmd {

struct ServerConfig {
  addons::ServerOptions server;                 // endpoint, TLS
  addons::IdentityOptions identity;             // mode, drivername, readiness interval
  fence::FenceOptions fence;                    // controller mode
  keyrotation::KeyRotationOptions keyrotation;  // node mode
  fence::PublisherOptions publisher;            // node mode: publication to the port index

  // Settings several components share; ParseCommandLine copies them into fence, relay and
  // mizarmp_check (Mizar-MP, subnet), into identity (the URL it shows) and into fence and
  // keyrotation (the secrets).
  client::ClientConfig mizarmp;  // base_url, project_id, dialect, tls, token_file
  std::string subnet_id = client::kDefaultSubnetId;
  // The Mizar-MP check Probe reports: main() gives it to the parts that call Mizar-MP (the
  // FenceController, the node's relay), each of which owns one.
  client::MizarMpCheckOptions mizarmp_check;
  std::string secrets_file;  // loaded once by ParseCommandLine
  // Node mode: the node's relay to Mizar-MP (relay/relay.h) for the plugin; an empty
  // socket_path: none.
  relay::RelayOptions relay;

  log::Level log_level = log::Level::kInfo;
  std::string log_file;  // empty: stderr
};

// Applies a JSON document onto `config` (keys present override what is there).
// INVALID_ARGUMENT naming the key and the problem.
Status ApplyConfigJson(std::string_view json_text, ServerConfig& config);

// Checks the whole configuration (endpoint, TLS pairs, drivername, URL, paths, ...).
// INVALID_ARGUMENT naming the key.
Status ValidateConfig(const ServerConfig& config);

struct CommandLine {
  ServerConfig config;
  bool help = false;
  bool version = false;
};

// Parses argv (without argv[0]): applies every --config file first, then the other flags on
// top, loads the secrets file, shares the common settings with the components and validates.
// Any error is INVALID_ARGUMENT naming the flag or key; main() prints it and exits 2.
Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// The --help text, generated from the table of keys.
std::string Usage();

// One entry of the table as --help shows it (for tests).
struct KeyHelp {
  std::string json_key;    // camelCase
  std::string flag;        // kebab-case, without "--"; empty: config file only
  std::string value_name;  // empty: a switch
  std::string help;
};
std::vector<KeyHelp> DescribeKeys();

}  // namespace mizarmp::cmd
