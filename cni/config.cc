// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "cni/version.h"
#include "common/fileutil.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/uuid.h"

namespace mizarmp::cni {

using nlohmann::json;

namespace {

std::string ConfigKeyName(std::string_view path) { return "config key " + Quoted(path); }

// Every key's error names it: `config key "dns.search[0]" is not a string (got number)`.
constexpr FieldErrors kConfigKeys{Code::kInvalidArgument, ConfigKeyName};

// Milliseconds in min..24 h.
Status ReadMs(const JsonFields& obj, const char* key, int64_t min, std::chrono::milliseconds* out) {
  int64_t n = out->count();
  MZ_RETURN_IF_ERROR(obj.Int<int64_t>(key, min, 24LL * 3600 * 1000, &n));
  *out = std::chrono::milliseconds(n);
  return Status::Ok();
}

}  // namespace

Result<json> DecodeJson(std::string_view text) {
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  if (start == text.size()) return InvalidArgumentError("network configuration on stdin is empty");
  if (text.size() > kMaxConfigBytes) {
    return InvalidArgumentError("network configuration is larger than " +
                                std::to_string(kMaxConfigBytes) + " bytes");
  }
  if (JsonNestingDepth(text, kMaxConfigDepth) > kMaxConfigDepth) {
    return InvalidArgumentError("network configuration nests arrays and objects deeper than " +
                                std::to_string(kMaxConfigDepth) + " levels");
  }
  // The parser reports the byte position of a syntax error through its exception; catch it here
  // so nothing escapes this function.
  try {
    json doc = json::parse(text);
    if (!doc.is_object()) {
      return InvalidArgumentError(std::string("network configuration must be a JSON object, got ") +
                                  doc.type_name());
    }
    return doc;
  } catch (const json::parse_error& e) {
    return InvalidArgumentError("network configuration is not valid JSON: syntax error at byte " +
                                std::to_string(e.byte) + ": " + e.what());
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("network configuration is not valid JSON: ") +
                                e.what());
  }
}

Result<std::string> ConfigVersion(const json& doc) {
  std::string version(kImplicitVersion);
  MZ_RETURN_IF_ERROR(JsonFields(doc, kConfigKeys).String("cniVersion", &version));
  return version;
}

Status ValidateNetworkName(std::string_view name) {
  bool ok = !name.empty() && std::isalnum(static_cast<unsigned char>(name[0]));
  for (size_t i = 1; ok && i < name.size(); ++i) {
    char c = name[i];
    ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  }
  if (ok) return Status::Ok();
  return InvalidArgumentError("config key \"name\": " + Quoted(name) +
                              " is not a valid network name (want [A-Za-z0-9][A-Za-z0-9_.-]*)");
}

namespace {

// "plug", "ovsBridge" and "ovsdbSocket".
Status ReadPlug(const JsonFields& conf, NetConf* c) {
  std::string plug = "auto";
  MZ_RETURN_IF_ERROR(conf.String("plug", &plug));
  if (plug == "auto") {
    c->plug = PlugMode::kAuto;
  } else if (plug == "agent") {
    c->plug = PlugMode::kAgent;
  } else if (plug == "ovs") {
    c->plug = PlugMode::kOvs;
  } else {
    return InvalidArgumentError("config key \"plug\": " + Quoted(plug) +
                                " is not one of \"auto\", \"agent\", \"ovs\"");
  }
  MZ_RETURN_IF_ERROR(conf.String("ovsBridge", &c->ovs_bridge));
  if (c->ovs_bridge.empty() || c->ovs_bridge.size() > 15) {
    return InvalidArgumentError("config key \"ovsBridge\": " + Quoted(c->ovs_bridge) +
                                " must be 1 to 15 characters long");
  }
  MZ_RETURN_IF_ERROR(conf.String("ovsdbSocket", &c->ovsdb_socket));
  if (c->ovsdb_socket.empty() || c->ovsdb_socket[0] != '/') {
    return InvalidArgumentError("config key \"ovsdbSocket\": " + Quoted(c->ovsdb_socket) +
                                " is not an absolute path");
  }
  return Status::Ok();
}

// Where the plugin keeps its state and logs on this node, and the pod interface's MTU.
Status ReadNodeSettings(const JsonFields& conf, NetConf* c) {
  MZ_RETURN_IF_ERROR(conf.String("stateDir", &c->state_dir));
  if (c->state_dir.empty() || c->state_dir[0] != '/') {
    return InvalidArgumentError("config key \"stateDir\": " + Quoted(c->state_dir) +
                                " is not an absolute path");
  }
  MZ_RETURN_IF_ERROR(conf.String("logFile", &c->log_file));
  MZ_RETURN_IF_ERROR(conf.String("logLevel", &c->log_level));
  if (auto lvl = log::ParseLevel(c->log_level); !lvl.ok()) {
    return InvalidArgumentError("config key \"logLevel\": " + lvl.status().message());
  }
  int64_t log_max_bytes = 0;
  MZ_RETURN_IF_ERROR(conf.Int("logMaxBytes", kMinLogMaxBytes, kMaxLogMaxBytes, &log_max_bytes));
  c->log_max_bytes = static_cast<uint64_t>(log_max_bytes);
  MZ_RETURN_IF_ERROR(conf.Int("mtu", 68, 65535, &c->mtu));
  return Status::Ok();
}

// How the plugin reaches Mizar-MP: TLS, the token, the node's relay; and the pod's DNS.
Status ReadConnection(const JsonFields& conf, NetConf* c) {
  MZ_ASSIGN_OR_RETURN(const std::optional<JsonFields> dns, conf.Object("dns"));
  if (dns) {
    MZ_RETURN_IF_ERROR(dns->Strings("nameservers", &c->dns.nameservers));
    MZ_RETURN_IF_ERROR(dns->String("domain", &c->dns.domain));
    MZ_RETURN_IF_ERROR(dns->Strings("search", &c->dns.search));
    MZ_RETURN_IF_ERROR(dns->Strings("options", &c->dns.options));
  }
  MZ_ASSIGN_OR_RETURN(const std::optional<JsonFields> tls, conf.Object("tls"));
  if (tls) {
    MZ_RETURN_IF_ERROR(tls->String("caFile", &c->tls.ca_file));
    MZ_RETURN_IF_ERROR(tls->String("certFile", &c->tls.cert_file));
    MZ_RETURN_IF_ERROR(tls->String("keyFile", &c->tls.key_file));
    MZ_RETURN_IF_ERROR(tls->Bool("insecureSkipVerify", &c->tls.insecure_skip_verify));
  }
  MZ_RETURN_IF_ERROR(conf.String("tokenFile", &c->token_file));
  MZ_RETURN_IF_ERROR(conf.String("relaySocket", &c->relay_socket));
  if (!c->relay_socket.empty() && c->relay_socket[0] != '/') {
    return InvalidArgumentError("config key \"relaySocket\": " + Quoted(c->relay_socket) +
                                " is not an absolute path");
  }
  return Status::Ok();
}

// How long the plugin waits for Mizar-MP, how it polls, how often it retries.
Status ReadTimings(const JsonFields& conf, NetConf* c) {
  MZ_ASSIGN_OR_RETURN(const std::optional<JsonFields> timeouts, conf.Object("timeouts"));
  if (timeouts) {
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "readyMs", 1, &c->ready_timeout));
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "requestMs", 1, &c->request_timeout));
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "connectMs", 1, &c->connect_timeout));
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "nicMs", 0, &c->nic_timeout));
  }
  MZ_ASSIGN_OR_RETURN(const std::optional<JsonFields> poll, conf.Object("poll"));
  if (poll) {
    MZ_RETURN_IF_ERROR(ReadMs(*poll, "initialMs", 1, &c->poll_initial));
    MZ_RETURN_IF_ERROR(ReadMs(*poll, "maxMs", 1, &c->poll_max));
    if (c->poll_max < c->poll_initial) {
      return InvalidArgumentError(
          "config key \"poll.maxMs\" (" + std::to_string(c->poll_max.count()) +
          ") is below poll.initialMs (" + std::to_string(c->poll_initial.count()) + ")");
    }
  }
  MZ_RETURN_IF_ERROR(conf.Int("retries", 0, 10, &c->retries));
  return Status::Ok();
}

}  // namespace

Result<NetConf> ParseNetConf(const json& doc) {
  if (!doc.is_object()) return InvalidArgumentError("network configuration is not a JSON object");
  const JsonFields conf(doc, kConfigKeys);
  NetConf c;
  c.raw = doc;
  MZ_RETURN_IF_ERROR(conf.RequiredString("cniVersion", &c.cni_version));
  MZ_RETURN_IF_ERROR(conf.RequiredString("name", &c.name));
  MZ_RETURN_IF_ERROR(ValidateNetworkName(c.name));
  MZ_RETURN_IF_ERROR(conf.RequiredString("type", &c.type));
  MZ_RETURN_IF_ERROR(conf.RequiredString("mpurl", &c.mpurl));
  MZ_RETURN_IF_ERROR(conf.RequiredString("project", &c.project));
  if (!IsUuid(c.project)) {
    return InvalidArgumentError("config key \"project\": " + Quoted(c.project) + " is not a UUID");
  }
  MZ_RETURN_IF_ERROR(conf.RequiredString("subnet", &c.subnet));
  if (!IsUuid(c.subnet)) {
    return InvalidArgumentError("config key \"subnet\": " + Quoted(c.subnet) + " is not a UUID");
  }
  MZ_RETURN_IF_ERROR(conf.String("hostId", &c.host_id));
  c.network_id = c.subnet;
  MZ_RETURN_IF_ERROR(conf.String("networkId", &c.network_id));
  if (c.network_id.empty()) return kConfigKeys.Empty("networkId");

  std::string dialect = "auto";
  MZ_RETURN_IF_ERROR(conf.String("dialect", &dialect));
  auto parsed_dialect = client::ParseDialect(dialect);
  if (!parsed_dialect.ok()) return parsed_dialect.status().WithContext("config key \"dialect\"");
  c.dialect = *parsed_dialect;
  MZ_RETURN_IF_ERROR(ReadPlug(conf, &c));
  MZ_RETURN_IF_ERROR(ReadNodeSettings(conf, &c));
  MZ_RETURN_IF_ERROR(ReadConnection(conf, &c));
  MZ_RETURN_IF_ERROR(ReadTimings(conf, &c));

  MZ_ASSIGN_OR_RETURN(const std::optional<JsonFields> prev_result, conf.Object("prevResult"));
  if (prev_result) c.prev_result = prev_result->object();
  if (const auto v = conf.Find("runtimeConfig")) c.runtime_config = v->value();
  if (const auto v = conf.Find("args")) c.args = v->value();
  return c;
}

Result<std::string> ResolveHostId(const NetConf& conf, const std::string& hostid_file) {
  if (!conf.host_id.empty()) return conf.host_id;
  if (!hostid_file.empty()) {
    auto text = ReadFile(hostid_file);
    if (text.ok()) {
      std::string_view rest = *text;
      while (!rest.empty()) {
        size_t nl = rest.find('\n');
        std::string line = Trim(rest.substr(0, nl));
        if (!line.empty()) return line;
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
      }
      MZ_LOG(kWarn) << "host id file " << hostid_file << " has no non-empty line";
    } else if (!text.status().IsNotFound()) {
      MZ_LOG(kWarn) << "host id file: " << text.status().message();
    }
  }
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return InvalidArgumentError(
        "config has no \"hostId\", " + hostid_file +
        " has none, and gethostname() failed: set \"hostId\" in the network configuration");
  }
  return std::string(name);
}

client::ClientConfig ClientConfigFor(const NetConf& conf) {
  client::ClientConfig cc;
  cc.base_url = conf.mpurl;
  cc.project_id = conf.project;
  cc.subnet_id = conf.subnet;
  cc.dialect = conf.dialect;
  cc.connect_timeout = conf.connect_timeout;
  cc.request_timeout = conf.request_timeout;
  cc.max_attempts = std::max(1, conf.retries);  // attempts in all; 0 and 1 mean no retry
  cc.tls = conf.tls;
  // A dot entry: the record store takes every other directory there for a network's.
  cc.tls.session_dir = conf.state_dir + "/" + kTlsSessionDirName;
  cc.token_file = conf.token_file;
  cc.relay_socket = conf.relay_socket;
  return cc;
}

client::PollOptions PollOptionsFor(const NetConf& conf) {
  client::PollOptions p;
  p.initial = conf.poll_initial;
  p.max = conf.poll_max;
  p.deadline = conf.ready_timeout;
  return p;
}

}  // namespace mizarmp::cni
