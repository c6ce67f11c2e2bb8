// mizarmp-addons configuration: a JSON file (--config PATH) with flags overriding it.
//
// JSON keys (all optional; unknown keys are an error so a typo never silently falls back to a
// default):
//   endpoint            "unix:///run/mizarmp/csi-addons.sock" (default) or "tcp://HOST:PORT"
//   tlsCertFile         server certificate (PEM), required for tcp:// unless insecureTcp
//   tlsKeyFile          its private key (PEM)
//   tlsClientCaFile     when set, clients must present a certificate signed by this CA
//   insecureTcp         tcp:// without TLS; for tests only
//   mode                "controller" (default) | "node"
//   drivername          default "mizarmp.csi-addons.mizar.io"; domain-name notation, <= 63
//                       chars, alphanumeric at both ends, only [a-zA-Z0-9.-]
//   mpurl               Mizar-MP controller URL, http:// or https:// (required in controller mode)
//   project, subnet     Mizar-MP project and subnet ids (defaults: the seed's one-box ids)
//   dialect             "auto" (default) | "v0.1" | "alcor"
//   tls                 TLS towards Mizar-MP in the CNI plugin's shape: {"caFile", "certFile",
//                       "keyFile", "insecureSkipVerify"} (config file only)
//   mpCaFile, mpCertFile, mpKeyFile, mpInsecureSkipVerify
//                       the same settings as flat keys (flags --mp-ca-file, ...); whichever
//                       comes later in the file wins
//   tokenFile           bearer token for Mizar-MP, read from this file (never a literal)
//   stateDir            the plugin's attachment records (default /var/lib/cni/mizarmp)
//   fenceStore          SQLite file of the fence state (default /var/lib/mizarmp/fence.db)
//   nodeAddresses       {"hostId": ["10.0.0.5", "10.1.0.0/24", ...], ...}
//   hostId              this node's host id
//   secretsFile         JSON object of the secrets requests must carry; never logged
//   reconcileIntervalMs default 10000, > 0
//   probeTimeoutMs      timeout of Probe's Mizar-MP check (default 1000, 1..60000)
//   logLevel            debug|info|warn|error|off (default info)
//   logFile             default: stderr
//   usePortList         also gather fence clients from the Mizar-MP port list (default false)
//   keyStoreDir         node mode: the key store of the LUKS volumes' passphrases
//                       (default /var/lib/mizarmp/keys; 0700, one 0600 file per volume)
//   mountTable          node mode: the mount table filesystem volumes are resolved through
//                       (default /proc/self/mountinfo; /proc/mounts format also accepted)
//
// Flags: --config PATH, and --KEY VALUE / --KEY=VALUE for each key above in kebab-case
// (--endpoint, --tls-cert-file, --mpurl, --mp-ca-file, --token-file, --state-dir,
// --node-address HOST=ADDR[,ADDR...] (repeatable; replaces that host's list), --host-id, ...).
// Boolean flags (--insecure-tcp, --use-port-list, --mp-insecure-skip-verify) take no value or
// =true/=false. There is deliberately no flag that takes a token or a secret value.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

inline constexpr const char* kDefaultEndpoint = "unix:///run/mizarmp/csi-addons.sock";
inline constexpr const char* kDefaultDriverName = "mizarmp.csi-addons.mizar.io";
inline constexpr const char* kDefaultStateDir = "/var/lib/cni/mizarmp";
inline constexpr const char* kDefaultFenceStore = "/var/lib/mizarmp/fence.db";
inline constexpr const char* kDefaultKeyStoreDir = "/var/lib/mizarmp/keys";
inline constexpr const char* kDefaultMountTable = "/proc/self/mountinfo";

enum class Mode { kController, kNode };
std::string_view ModeName(Mode mode);  // "controller" | "node"

// A parsed listening endpoint.
struct Endpoint {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;  // kUnix: absolute socket path
  std::string host;  // kTcp: host name or address (IPv6 without brackets)
  int port = 0;      // kTcp: 0 picks a free port
  // The address in gRPC's notation: "unix:/abs/path" or "host:port" / "[v6]:port".
  std::string GrpcAddress() const;
};

// "unix:///abs/path" or "tcp://HOST:PORT" ("tcp://[::1]:PORT" for IPv6). INVALID_ARGUMENT
// naming the value otherwise (relative or too long socket paths included).
Result<Endpoint> ParseEndpoint(std::string_view text);

// `url` with any userinfo ("user:password@") replaced by "***@", for logs and the Identity
// manifest.
std::string RedactUrl(std::string_view url);

// The CSI-Addons driver-name rules. INVALID_ARGUMENT saying which rule `name` breaks.
Status ValidateDriverName(std::string_view name);

struct ServerConfig {
  std::string endpoint = kDefaultEndpoint;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool insecure_tcp = false;

  Mode mode = Mode::kController;
  std::string drivername = kDefaultDriverName;

  // Mizar-MP: base_url, project_id, dialect, tls, token_file (the same meaning as in the CNI
  // plugin's config).
  client::ClientConfig mizarmp;
  std::string subnet_id = client::kDefaultSubnetId;

  std::string state_dir = kDefaultStateDir;
  std::string fence_store = kDefaultFenceStore;
  std::map<std::string, std::vector<std::string>> node_addresses;  // hostId -> addrs/CIDRs
  std::string host_id;
  std::string secrets_file;
  std::chrono::milliseconds reconcile_interval{10000};
  std::chrono::milliseconds probe_timeout{1000};
  log::Level log_level = log::Level::kInfo;
  std::string log_file;
  bool use_port_list = false;
  std::string key_store_dir = kDefaultKeyStoreDir;  // node mode: EncryptionKeyRotation
  std::string mount_table = kDefaultMountTable;     // node mode: EncryptionKeyRotation

  // Loaded from secrets_file by LoadConfig (empty without one). Never log these.
  std::map<std::string, std::string> expected_secrets;
};

// Applies a JSON document onto `config` (keys present override what is there).
// INVALID_ARGUMENT naming the key and the problem.
Status ApplyConfigJson(std::string_view json_text, ServerConfig& config);

// Checks the whole configuration (endpoint, TLS pairs, drivername, URL, addresses, ...).
Status ValidateConfig(const ServerConfig& config);

// Reads a secrets file: a JSON object of string values. Errors name the file, never a value.
Result<std::map<std::string, std::string>> LoadSecretsFile(const std::string& path);

struct CommandLine {
  ServerConfig config;
  bool help = false;
  bool version = false;
};

// Parses argv (without argv[0]): reads --config first, then applies the other flags on top,
// loads the secrets file and validates. Any error is INVALID_ARGUMENT naming the flag or key;
// main() prints it and exits 2.
Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// The --help text.
std::string Usage();

}  // namespace mizarmp::fence
