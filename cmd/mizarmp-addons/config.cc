// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cmd/mizarmp-addons/config.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "addons/driver.h"
#include "cmd/mizarmp-addons/config_keys.h"
#include "common/file_check.h"
#include "common/fileutil.h"
#include "common/flags.h"
#include "common/ipaddr.h"
#include "common/json_fields.h"
#include "common/strings.h"
#include "endpoint/endpoint.h"
#include "endpoint/secrets_file.h"
#include "etcd/options.h"

namespace mizarmp::cmd {
namespace {

using nlohmann::json;

// One host's addresses/CIDRs, replacing what it had.
Status ApplyAddresses(const std::string& host, const json& list, const std::string& where,
                      ServerConfig& c) {
  if (host.empty()) return InvalidArgumentError(where + ": empty host id");
  const std::string field = where + "[\"" + host + "\"]";
  MZ_ASSIGN_OR_RETURN(std::vector<std::string> addresses, KeyValue(list, field).Strings());
  for (const std::string& text : addresses) {
    auto cidr = Cidr::Parse(text, /*allow_bare=*/true);
    if (!cidr.ok()) {
      return InvalidArgumentError(field + ": " + Quoted(text) +
                                  " is not an IP address or CIDR: " + cidr.status().message());
    }
  }
  c.fence.node_addresses[host] = std::move(addresses);
  return Status::Ok();
}

// {"hostId": [addresses], ...} in the file (replacing every host); --node-address
// HOST=ADDR[,ADDR...] on the command line, repeatable (each replaces that host's list).
Key NodeAddressesKey() {
  JsonApply from_json = [](const json& v, const std::string& where, ServerConfig& c) -> Status {
    if (!v.is_object()) return KeyValue(v, where).WrongType("an object {hostId: [addresses]}");
    c.fence.node_addresses.clear();
    for (const auto& [host, list] : v.items()) {
      MZ_RETURN_IF_ERROR(ApplyAddresses(host, list, where, c));
    }
    return Status::Ok();
  };
  FlagApply from_flag = [](std::string_view text, const std::string& where,
                           ServerConfig& c) -> Status {
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError(where + ": want HOST=ADDR[,ADDR...], got " + Quoted(text));
    }
    json list = json::array();
    for (std::string& item : Split(text.substr(eq + 1), ',')) {
      if (!item.empty()) list.push_back(std::move(item));
    }
    return ApplyAddresses(std::string(text.substr(0, eq)), list, where, c);
  };
  return Key{"nodeAddresses",
             "node-address",
             "HOST=ADDR[,ADDR...]",
             "addresses/CIDRs of a node; repeatable, each replaces that host's list (in the "
             "file: {\"hostId\": [\"10.0.0.5\", \"10.1.0.0/24\"], ...})",
             std::move(from_json),
             std::move(from_flag)};
}

// The CNI plugin's shape for the --mp-* settings: "tls": {"caFile", "certFile", "keyFile",
// "insecureSkipVerify"} (TLS towards Mizar-MP). Config file only.
Key PluginTlsKey() {
  JsonApply from_json = [](const json& v, const std::string& where, ServerConfig& c) -> Status {
    if (!v.is_object()) return KeyValue(v, where).WrongType("an object");
    for (const auto& [name, item] : v.items()) {
      const std::string field = where.substr(0, where.size() - 1) + "." + name + "\"";
      if (name == "insecureSkipVerify") {
        MZ_ASSIGN_OR_RETURN(c.mizarmp.tls.insecure_skip_verify, KeyValue(item, field).Bool());
        continue;
      }
      std::string* target = name == "caFile"     ? &c.mizarmp.tls.ca_file
                            : name == "certFile" ? &c.mizarmp.tls.cert_file
                            : name == "keyFile"  ? &c.mizarmp.tls.key_file
                                                 : nullptr;
      if (target == nullptr) {
        return InvalidArgumentError(field +
                                    ": unknown key (want caFile, certFile, keyFile, "
                                    "insecureSkipVerify)");
      }
      MZ_ASSIGN_OR_RETURN(*target, KeyValue(item, field).String());
    }
    return Status::Ok();
  };
  return Key{"tls",
             "",
             "",
             "{\"caFile\", \"certFile\", \"keyFile\", \"insecureSkipVerify\"}: the --mp-* flags' "
             "settings in the CNI plugin's shape (not beside them in one file)",
             std::move(from_json),
             nullptr};
}

Status SetMode(const std::string& s, const std::string& where, ServerConfig& c) {
  if (s == "controller") {
    c.identity.mode = addons::Mode::kController;
  } else if (s == "node") {
    c.identity.mode = addons::Mode::kNode;
  } else {
    return InvalidArgumentError(where + ": want \"controller\" or \"node\", got " + Quoted(s));
  }
  return Status::Ok();
}

Status SetDialect(const std::string& s, const std::string& where, ServerConfig& c) {
  auto dialect = client::ParseDialect(s);
  if (!dialect.ok()) return dialect.status().WithContext(where);
  c.mizarmp.dialect = *dialect;
  return Status::Ok();
}

Status SetLogLevel(const std::string& s, const std::string& where, ServerConfig& c) {
  auto level = log::ParseLevel(s);
  if (!level.ok()) return InvalidArgumentError(where + ": " + level.status().message());
  c.log_level = *level;
  return Status::Ok();
}

// The table: every key of the configuration, in the order --help lists them.
const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      StringKey("endpoint", "URI", "unix:///ABSOLUTE/PATH or tcp://HOST:PORT",
                [](ServerConfig& c) -> std::string& { return c.server.endpoint; }),
      StringKey("tlsCertFile", "FILE",
                "server certificate (PEM), required for tcp:// unless --insecure-tcp",
                [](ServerConfig& c) -> std::string& { return c.server.tls_cert_file; }),
      StringKey("tlsKeyFile", "FILE", "its private key (PEM)",
                [](ServerConfig& c) -> std::string& { return c.server.tls_key_file; }),
      StringKey("tlsClientCaFile", "FILE",
                "clients must present a certificate signed by this CA; tcp:// needs this or "
                "secretsFile",
                [](ServerConfig& c) -> std::string& { return c.server.tls_client_ca_file; }),
      StringKey("healthAddress", "HOST:PORT",
                "also serve grpc.health.v1 (only) there, plaintext, for Kubernetes' grpc "
                "probes (default: not)",
                [](ServerConfig& c) -> std::string& { return c.server.health_address; }),
      StringKey("metricsAddress", "HOST:PORT",
                "serve Prometheus metrics at http://HOST:PORT/metrics (default: not)",
                [](ServerConfig& c) -> std::string& { return c.server.metrics_address; }),
      SwitchKey("insecureTcp",
                "serve tcp:// without TLS (tests only; clients must still send secretsFile's "
                "secrets, in the clear)",
                [](ServerConfig& c) -> bool& { return c.server.insecure_tcp; }),
      TextKey("mode", "controller|node",
              "controller serves the FenceController, node the EncryptionKeyRotationController and "
              "GetFenceClients for its own node" +
                  Default(addons::ModeName(ServerConfig().identity.mode)),
              SetMode),
      StringKey("drivername", "NAME",
                "CSI-Addons driver name: domain-name notation, at most 63 characters",
                [](ServerConfig& c) -> std::string& { return c.identity.drivername; }),
      StringKey("mpurl", "URL",
                "Mizar-MP controller URL, http:// or https:// (required in controller mode)",
                [](ServerConfig& c) -> std::string& { return c.mizarmp.base_url; }),
      StringKey("project", "ID", "Mizar-MP project id",
                [](ServerConfig& c) -> std::string& { return c.mizarmp.project_id; }),
      StringKey("subnet", "ID", "Mizar-MP subnet id Probe checks",
                [](ServerConfig& c) -> std::string& { return c.subnet_id; }),
      TextKey("dialect", "auto|v0.1|alcor", "Mizar-MP API generation" + Default("auto"),
              SetDialect),
      StringKey("mpCaFile", "FILE", "CA certificate(s) Mizar-MP's certificate is checked against",
                [](ServerConfig& c) -> std::string& { return c.mizarmp.tls.ca_file; }),
      StringKey("mpCertFile", "FILE", "client certificate towards Mizar-MP",
                [](ServerConfig& c) -> std::string& { return c.mizarmp.tls.cert_file; }),
      StringKey("mpKeyFile", "FILE", "its private key",
                [](ServerConfig& c) -> std::string& { return c.mizarmp.tls.key_file; }),
      SwitchKey("mpInsecureSkipVerify", "do not verify Mizar-MP's certificate (tests only)",
                [](ServerConfig& c) -> bool& { return c.mizarmp.tls.insecure_skip_verify; }),
      PluginTlsKey(),
      StringKey("tokenFile", "FILE",
                "token for Mizar-MP (X-Auth-Token for Alcor, else also a bearer token), read "
                "from this file (never given literally)",
                [](ServerConfig& c) -> std::string& { return c.mizarmp.token_file; }),
      StringKey("relaySocket", "PATH",
                "node mode: relay the CNI plugin's requests to an https mpurl from this unix "
                "socket (0600) over kept TLS connections, so that no plugin process sets TLS up "
                "(the plugin's relaySocket; default: no relay)",
                [](ServerConfig& c) -> std::string& { return c.relay.socket_path; }),
      StringKey("stateDir", "DIR", "the CNI plugin's attachment records",
                [](ServerConfig& c) -> std::string& { return c.fence.state_dir; }),
      StringKey("fenceStore", "FILE|etcd://HOST:PORT,...",
                "where the fence state lives: an SQLite file (one replica), or the members of "
                "an etcd cluster that replicas share",
                [](ServerConfig& c) -> std::string& { return c.fence.fence_store; }),
      StringKey("etcdCaFile", "FILE", "etcd fence store: CA of the members' certificates (TLS)",
                [](ServerConfig& c) -> std::string& { return c.fence.etcd.client.ca_file; }),
      StringKey("etcdCertFile", "FILE", "etcd fence store: client certificate (TLS)",
                [](ServerConfig& c) -> std::string& { return c.fence.etcd.client.cert_file; }),
      StringKey("etcdKeyFile", "FILE", "etcd fence store: its private key",
                [](ServerConfig& c) -> std::string& { return c.fence.etcd.client.key_file; }),
      StringKey("etcdUsername", "USER", "etcd fence store: etcd user to authenticate as",
                [](ServerConfig& c) -> std::string& { return c.fence.etcd.client.username; }),
      StringKey("etcdPasswordFile", "FILE",
                "etcd fence store: that user's password, read from this file",
                [](ServerConfig& c) -> std::string& { return c.fence.etcd.client.password_file; }),
      StringKey("etcdPrefix", "PREFIX", "etcd fence store: the prefix of every key it writes",
                [](ServerConfig& c) -> std::string& { return c.fence.etcd.prefix; }),
      DurationKey(
          "etcdCallTimeoutMs", "etcd fence store: timeout of one call to one member", 60000,
          +[](ServerConfig& c) -> std::chrono::milliseconds& {
            return c.fence.etcd.client.call_timeout;
          }),
      DurationKey(
          "leaseTtlSeconds",
          "etcd fence store: the leader's lease; a lost leader is replaced within "
          "1.33 times this",
          3600, +[](ServerConfig& c) -> std::chrono::seconds& { return c.fence.etcd.lease_ttl; }),
      StringKey("replicaId", "NAME",
                "this replica's name in the leader election and in its Mizar-MP requests' "
                "User-Agent (default: the host name)",
                [](ServerConfig& c) -> std::string& { return c.fence.replica_id; }),
      NodeAddressesKey(),
      StringKey("hostId", "ID",
                "this node's Mizar-MP host id (node mode: the id its GetFenceClients answers "
                "under; default the host name)",
                [](ServerConfig& c) -> std::string& { return c.fence.host_id; }),
      StringKey("secretsFile", "FILE",
                "JSON object of the secrets requests must carry (never logged); tcp:// needs "
                "this or tlsClientCaFile",
                [](ServerConfig& c) -> std::string& { return c.secrets_file; }),
      MillisKey(
          "reconcileIntervalMs", "how often the stored fences are enforced again",
          24LL * 3600 * 1000,
          [](ServerConfig& c) -> std::chrono::milliseconds& { return c.fence.reconcile_interval; }),
      CountKey("updateConnections", "N",
               "kept-alive Mizar-MP connections an enforcement pass updates ports over in "
               "parallel (Mizar-MP has no bulk update; 1: one after another)",
               1, fence::kMaxUpdateConnections,
               [](ServerConfig& c) -> int& { return c.fence.update_connections; }),
      MillisKey(
          "mpConnectTimeoutMs", "timeout of connecting to Mizar-MP", 60000,
          [](ServerConfig& c) -> std::chrono::milliseconds& { return c.mizarmp.connect_timeout; }),
      MillisKey(
          "mpRequestTimeoutMs", "timeout of one request to Mizar-MP", 300000,
          [](ServerConfig& c) -> std::chrono::milliseconds& { return c.mizarmp.request_timeout; }),
      MillisKey(
          "probeTimeoutMs", "timeout of Probe's Mizar-MP check", 60000,
          [](ServerConfig& c) -> std::chrono::milliseconds& { return c.mizarmp_check.timeout; }),
      MillisKey("readinessIntervalMs",
                "how often readiness (what Probe checks) is evaluated in the background while "
                "ready, for grpc.health.v1 and the metrics (every second while not ready)",
                24LL * 3600 * 1000,
                [](ServerConfig& c)
                    -> std::chrono::milliseconds& { return c.identity.readiness_interval; }),
      TextKey("logLevel", "LEVEL", "debug|info|warn|error|off" + Default("info"), SetLogLevel),
      StringKey("logFile", "FILE", "where logs go" + Default("stderr"),
                [](ServerConfig& c) -> std::string& { return c.log_file; }),
      SwitchKey("usePortList", "also gather fence clients from the Mizar-MP port list",
                [](ServerConfig& c) -> bool& { return c.fence.use_port_list; }),
      SwitchKey("portIndex",
                "controller mode: find a fence's ports through the index node agents publish "
                "(beside the fence store) instead of listing every port at Mizar-MP",
                [](ServerConfig& c) -> bool& { return c.fence.port_index; }),
      StringKey("publicationEndpoint", "tcp://HOST:PORT",
                "controller mode, with portIndex: a second listener, for the node agents' "
                "publications (same TLS; needs tlsClientCaFile)",
                [](ServerConfig& c) -> std::string& { return c.server.additional_endpoint; }),
      DurationKey(
          "publicationLeaseSeconds",
          "controller mode: a node that did not publish again within this is covered by a list "
          "of its ports",
          3600,
          +[](ServerConfig& c) -> std::chrono::seconds& { return c.fence.publication_lease; }),
      StringKey("publishTo", "tcp://HOST:PORT",
                "node mode: publish this node's attachments to the controller's "
                "publicationEndpoint (default: do not publish)",
                [](ServerConfig& c) -> std::string& { return c.publisher.target; }),
      StringKey("publishCaFile", "FILE", "node mode: CA of the controller's certificate",
                [](ServerConfig& c) -> std::string& { return c.publisher.ca_file; }),
      StringKey("publishCertFile", "FILE", "node mode: this node's client certificate",
                [](ServerConfig& c) -> std::string& { return c.publisher.cert_file; }),
      StringKey("publishKeyFile", "FILE", "node mode: its private key",
                [](ServerConfig& c) -> std::string& { return c.publisher.key_file; }),
      SwitchKey("publishInsecure", "node mode: publish in plaintext (tests only)",
                [](ServerConfig& c) -> bool& { return c.publisher.insecure; }),
      MillisKey("publishIntervalMs",
                "node mode: how often the attachment records are looked at for a publication",
                60000,
                [](ServerConfig& c) -> std::chrono::milliseconds& { return c.publisher.interval; }),
      StringKey("keyStoreDir", "DIR", "node mode: the key store of the LUKS volumes' passphrases",
                [](ServerConfig& c) -> std::string& { return c.keyrotation.key_store_dir; }),
      StringKey("mountTable", "FILE",
                "node mode: the mount table filesystem volumes resolve through",
                [](ServerConfig& c) -> std::string& { return c.keyrotation.mount_table; }),
      StringKey("kubeletDir", "DIR",
                "node mode: kubelet's --root-dir, where a key rotation request without "
                "volume_path (as the CSI-Addons sidecar sends) finds its volume staged for "
                "drivername",
                [](ServerConfig& c) -> std::string& { return c.keyrotation.kubelet_dir; }),
  };
  return keys;
}

// The JSON key column of --help, padded so the help lines line up.
std::string KeyColumn(std::string_view json_key) {
  size_t width = 0;
  for (const Key& k : Keys()) width = std::max(width, k.json_key.size());
  std::string out(json_key);
  out.append(width + 2 - out.size(), ' ');
  return out;
}

// The command line's flags: --config, --help, --version and one per key that has a flag, each
// applying onto `cl` (--config: reads the file onto cl.config).
FlagTable Flags(CommandLine& cl) {
  FlagTable table;
  table.Add({"config", "FILE", KeyColumn("") + "JSON configuration file (applied before the flags)",
             [&cl](std::string_view path) -> Status {
               const std::string file(path);
               auto text = ReadFile(file);
               if (!text.ok()) {
                 return InvalidArgumentError("flag --config " + Quoted(file) + ": " +
                                             text.status().message());
               }
               Status s = ApplyConfigJson(*text, cl.config);
               if (!s.ok()) return s.WithContext("config file " + Quoted(file));
               return Status::Ok();
             }});
  for (const Key& key : Keys()) {
    if (key.flag.empty()) continue;
    table.Add({key.flag, key.value_name, KeyColumn(key.json_key) + key.help,
               [&cl, &key](std::string_view text) {
                 return key.from_flag(text, "flag --" + key.flag, cl.config);
               }});
  }
  table.Add({"version", "", KeyColumn("") + "print the version and exit", [&cl](std::string_view) {
               cl.version = true;
               return Status::Ok();
             }});
  table.Add({"help", "", KeyColumn("") + "this text", [&cl](std::string_view) {
               cl.help = true;
               return Status::Ok();
             }});
  return table;
}

Status ValidateMizarMp(const ServerConfig& c) {
  const std::string& url = c.mizarmp.base_url;
  if (url.empty()) {
    if (c.identity.mode == addons::Mode::kController) {
      return InvalidArgumentError("mpurl: required in controller mode (the Mizar-MP URL)");
    }
  } else if (!(url.starts_with("http://") || url.starts_with("https://")) ||
             url.find("://") + 3 >= url.size()) {
    return InvalidArgumentError("mpurl " + Quoted(RedactUrl(url)) +
                                ": want http://HOST[:PORT] or https://...");
  }
  if (c.mizarmp.project_id.empty()) return InvalidArgumentError("project: must not be empty");
  if (c.subnet_id.empty()) return InvalidArgumentError("subnet: must not be empty");
  if (c.mizarmp.tls.cert_file.empty() != c.mizarmp.tls.key_file.empty()) {
    return InvalidArgumentError("mpCertFile/mpKeyFile: set both or neither");
  }
  MZ_RETURN_IF_ERROR(CheckReadableFile("mpCaFile", c.mizarmp.tls.ca_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("mpCertFile", c.mizarmp.tls.cert_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("mpKeyFile", c.mizarmp.tls.key_file));
  return CheckReadableFile("tokenFile", c.mizarmp.token_file);
}

// This machine's name (a pod's name in Kubernetes): the default replica id.
std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "mizarmp-addons";
  return name;
}

// Copies the settings several components take into each of them.
void ShareCommonSettings(const std::map<std::string, std::string>& secrets, ServerConfig& c) {
  // Both services check every request against these; an empty file authenticates nobody.
  c.server.requests_need_secrets = !secrets.empty();
  c.mizarmp.subnet_id = c.subnet_id;  // a v0.1 controller lists the ports of a subnet only
  c.identity.mizarmp_url = c.mizarmp.base_url;
  c.mizarmp_check.mizarmp = c.mizarmp;
  c.mizarmp_check.subnet_id = c.subnet_id;
  c.fence.mizarmp = c.mizarmp;
  c.relay.upstream = c.mizarmp;
  if (c.fence.replica_id.empty()) c.fence.replica_id = HostName();
  // A node answers GetFenceClients under its own name; on a Kubernetes node (hostNetwork) the
  // host name is the node's name unless the kubelet was told otherwise: set hostId then.
  if (c.identity.mode == addons::Mode::kNode && c.fence.host_id.empty()) {
    c.fence.host_id = HostName();
  }
  c.fence.expected_secrets = secrets;
  c.keyrotation.expected_secrets = secrets;
  c.publisher.node = c.fence.host_id;
  c.publisher.state_dir = c.fence.state_dir;
  // kubelet stages a volume under its CSI driver's name: the one the sidecar's requests are for.
  c.keyrotation.driver_name = c.identity.drivername;
}

// The relay serves the plugin on its node; what it relays to, and where, is its own to check.
Status ValidateRelay(const ServerConfig& c) {
  if (c.relay.socket_path.empty()) return Status::Ok();
  if (c.identity.mode != addons::Mode::kNode) {
    return InvalidArgumentError("relaySocket: only in node mode (the plugin's node)");
  }
  return c.relay.Validate();
}

// The port index's publication: served by the controller, made by node agents. A publication
// carries no secrets, so a tcp:// listener serving it must check client certificates. (The
// listener itself, publicationEndpoint, is the server's additional endpoint: its form and TLS
// are ServerOptions::Validate's.)
Status ValidatePublication(const ServerConfig& c) {
  const bool controller = c.identity.mode == addons::Mode::kController;
  if (!c.server.additional_endpoint.empty()) {
    if (!controller || !c.fence.port_index) {
      return InvalidArgumentError("publicationEndpoint: only in controller mode with portIndex");
    }
  }
  const bool tcp = c.server.endpoint.starts_with("tcp://") || !c.server.additional_endpoint.empty();
  if (controller && c.fence.port_index && tcp && c.server.tls_client_ca_file.empty() &&
      !c.server.insecure_tcp) {
    return InvalidArgumentError(
        "portIndex: publications carry no secrets, so a tcp:// endpoint serving them needs "
        "tlsClientCaFile (node agents authenticate by client certificate)");
  }
  if (c.fence.publication_lease.count() < 3) {
    return InvalidArgumentError("publicationLeaseSeconds: must be at least 3");
  }
  if (c.publisher.target.empty()) return Status::Ok();
  if (controller) return InvalidArgumentError("publishTo: only in node mode");
  return c.publisher.Validate();
}

// "tls" (the plugin's shape) and the flat mp* keys set the same settings. JSON gives an object's
// keys no order to honour (nlohmann::json applies them alphabetically), so a file gives one
// shape or the other.
Status CheckOneTlsShape(const json& doc) {
  if (!doc.contains("tls")) return Status::Ok();
  for (const char* flat : {"mpCaFile", "mpCertFile", "mpKeyFile", "mpInsecureSkipVerify"}) {
    if (doc.contains(flat)) {
      return InvalidArgumentError("config: \"tls\" and " + Quoted(flat) +
                                  " set the same settings; give one of them");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ApplyConfigJson(std::string_view json_text, ServerConfig& config) {
  if (TooDeepJson(json_text)) {
    return InvalidArgumentError("config: nests deeper than " + std::to_string(kMaxFileJsonDepth) +
                                " levels");
  }
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded()) return InvalidArgumentError("config: not valid JSON");
  if (!doc.is_object()) return InvalidArgumentError("config: the top level must be an object");
  MZ_RETURN_IF_ERROR(CheckOneTlsShape(doc));
  for (const auto& item : doc.items()) {
    // Named locals, not a structured binding: clang 14 (the fuzz build) does not yet let a
    // lambda capture a structured binding (a C++20 change, P1091).
    const std::string& name = item.key();
    const json& value = item.value();
    const auto key = std::find_if(Keys().begin(), Keys().end(),
                                  [&name](const Key& k) { return k.json_key == name; });
    if (key == Keys().end()) {
      if (name == "token") {
        return InvalidArgumentError(
            "config key \"token\": tokens are not accepted inline; use \"tokenFile\"");
      }
      return InvalidArgumentError("config key " + Quoted(name) + ": unknown key");
    }
    MZ_RETURN_IF_ERROR(key->from_json(value, "config key " + Quoted(name), config));
  }
  return Status::Ok();
}

Status ValidateConfig(const ServerConfig& c) {
  MZ_RETURN_IF_ERROR(ValidatePublication(c));  // before the server's: names the mode's keys
  MZ_RETURN_IF_ERROR(c.server.Validate());
  MZ_RETURN_IF_ERROR(c.identity.Validate());
  MZ_RETURN_IF_ERROR(ValidateMizarMp(c));
  MZ_RETURN_IF_ERROR(ValidateRelay(c));
  MZ_RETURN_IF_ERROR(c.fence.Validate());
  return c.keyrotation.Validate();
}

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  const FlagTable flags = Flags(cl);
  for (const std::string& arg : args) {
    if (const std::string_view name = FlagName(arg); name == "token" || name == "mp-token") {
      // Never echo the value: it would be a secret.
      return InvalidArgumentError("flag --" + std::string(name) +
                                  ": tokens are not accepted as flag values; use --token-file");
    }
  }
  // Every flag is checked before any is applied; --help and --version count at once.
  MZ_ASSIGN_OR_RETURN(std::vector<FlagTable::Given> given, flags.Split(args));
  for (const FlagTable::Given& g : given) {
    if (g.flag->name == "help" || g.flag->name == "version")
      MZ_RETURN_IF_ERROR(g.flag->apply(g.value));
  }
  if (cl.help || cl.version) return cl;

  // The files first, so every other flag overrides them.
  std::stable_partition(given.begin(), given.end(),
                        [](const FlagTable::Given& g) { return g.flag->name == "config"; });
  for (const FlagTable::Given& g : given) MZ_RETURN_IF_ERROR(g.flag->apply(g.value));

  std::map<std::string, std::string> secrets;
  if (!cl.config.secrets_file.empty()) {
    auto read = endpoint::ReadSecretsFile(cl.config.secrets_file);
    if (!read.ok()) return InvalidArgumentError("secretsFile " + read.status().message());
    secrets = std::move(read).value();
  }
  ShareCommonSettings(secrets, cl.config);
  MZ_RETURN_IF_ERROR(ValidateConfig(cl.config));
  return cl;
}

std::string Usage() {
  CommandLine unused;
  std::string out =
      "usage: mizarmp-addons [--config FILE] [--FLAG VALUE ...]\n"
      "\n"
      "A CSI-Addons gRPC server (Identity, FenceController, EncryptionKeyRotationController) for\n"
      "the Mizar-MP network. Flags override the JSON config file; the second column is each\n"
      "flag's key in that file. Switches take no value, or =true / =false.\n"
      "\n";
  out += Flags(unused).Help();
  out += "\nConfig file only:\n";
  for (const Key& key : Keys()) {
    if (key.flag.empty()) out += "  " + KeyColumn(key.json_key) + key.help + "\n";
  }
  out +=
      "\nExit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 on a runtime failure, 2 on a\n"
      "bad configuration.\n";
  return out;
}

std::vector<KeyHelp> DescribeKeys() {
  std::vector<KeyHelp> out;
  for (const Key& key : Keys()) out.push_back({key.json_key, key.flag, key.value_name, key.help});
  return out;
}

}  // namespace mizarmp::cmd
