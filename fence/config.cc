#include "fence/config.h"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/fileutil.h"
#include "common/ipaddr.h"

namespace mizarmp::fence {
namespace {

using nlohmann::json;

// sun_path is 108 bytes including the terminating NUL.
constexpr size_t kMaxUnixPath = 107;

enum class Kind { kString, kBool, kInt, kAddressMap, kObject };

// One configuration key: its JSON name, its flag name and how to apply a value.
struct Key {
  const char* json_name;
  const char* flag_name;
  Kind kind;
  // `where` names the source for errors: `config key "mode"` or `flag --mode`.
  std::function<Status(const json& value, const std::string& where, ServerConfig& c)> apply;
};

Status WrongType(const std::string& where, const char* want, const json& value) {
  return InvalidArgumentError(where + ": want " + want + ", got " + std::string(value.type_name()));
}

// Setters for the common value kinds.
template <typename F>
Key StringKey(const char* j, const char* f, F set) {
  return Key{j, f, Kind::kString,
             [set](const json& v, const std::string& where, ServerConfig& c) -> Status {
               if (!v.is_string()) return WrongType(where, "a string", v);
               return set(v.get<std::string>(), where, c);
             }};
}

Key PathKey(const char* j, const char* f, std::string ServerConfig::*member) {
  return StringKey(j, f, [member](const std::string& s, const std::string&, ServerConfig& c) {
    c.*member = s;
    return Status::Ok();
  });
}

template <typename F>
Key BoolKey(const char* j, const char* f, F set) {
  return Key{j, f, Kind::kBool,
             [set](const json& v, const std::string& where, ServerConfig& c) -> Status {
               if (!v.is_boolean()) return WrongType(where, "true or false", v);
               set(v.get<bool>(), c);
               return Status::Ok();
             }};
}

Status ApplyAddresses(const std::string& host, const json& list, const std::string& where,
                      ServerConfig& c) {
  if (host.empty()) return InvalidArgumentError(where + ": empty host id");
  if (!list.is_array()) {
    return WrongType(where + "[\"" + host + "\"]", "a list of addresses/CIDRs", list);
  }
  std::vector<std::string> out;
  for (const auto& item : list) {
    if (!item.is_string()) {
      return WrongType(where + "[\"" + host + "\"]", "address strings", item);
    }
    const std::string text = item.get<std::string>();
    auto cidr = Cidr::Parse(text, /*allow_bare=*/true);
    if (!cidr.ok()) {
      return InvalidArgumentError(where + "[\"" + host + "\"]: \"" + text +
                                  "\" is not an IP address or CIDR: " + cidr.status().message());
    }
    out.push_back(text);
  }
  c.node_addresses[host] = std::move(out);
  return Status::Ok();
}

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      PathKey("endpoint", "endpoint", &ServerConfig::endpoint),
      PathKey("tlsCertFile", "tls-cert-file", &ServerConfig::tls_cert_file),
      PathKey("tlsKeyFile", "tls-key-file", &ServerConfig::tls_key_file),
      PathKey("tlsClientCaFile", "tls-client-ca-file", &ServerConfig::tls_client_ca_file),
      BoolKey("insecureTcp", "insecure-tcp", [](bool b, ServerConfig& c) { c.insecure_tcp = b; }),
      StringKey("mode", "mode",
                [](const std::string& s, const std::string& where, ServerConfig& c) -> Status {
                  if (s == "controller") {
                    c.mode = Mode::kController;
                  } else if (s == "node") {
                    c.mode = Mode::kNode;
                  } else {
                    return InvalidArgumentError(
                        where + ": want \"controller\" or \"node\", got \"" + s + "\"");
                  }
                  return Status::Ok();
                }),
      PathKey("drivername", "drivername", &ServerConfig::drivername),
      StringKey("mpurl", "mpurl",
                [](const std::string& s, const std::string&, ServerConfig& c) {
                  c.mizarmp.base_url = s;
                  return Status::Ok();
                }),
      StringKey("project", "project",
                [](const std::string& s, const std::string&, ServerConfig& c) {
                  c.mizarmp.project_id = s;
                  return Status::Ok();
                }),
      PathKey("subnet", "subnet", &ServerConfig::subnet_id),
      StringKey("dialect", "dialect",
                [](const std::string& s, const std::string& where, ServerConfig& c) -> Status {
                  if (s == "auto") {
                    c.mizarmp.dialect = client::Dialect::kAuto;
                  } else if (s == "v0.1" || s == "v01") {
                    c.mizarmp.dialect = client::Dialect::kV01;
                  } else if (s == "alcor") {
                    c.mizarmp.dialect = client::Dialect::kAlcor;
                  } else {
                    return InvalidArgumentError(
                        where + ": want \"auto\", \"v0.1\" or \"alcor\", got \"" + s + "\"");
                  }
                  return Status::Ok();
                }),
      StringKey("mpCaFile", "mp-ca-file",
                [](const std::string& s, const std::string&, ServerConfig& c) {
                  c.mizarmp.tls.ca_file = s;
                  return Status::Ok();
                }),
      StringKey("mpCertFile", "mp-cert-file",
                [](const std::string& s, const std::string&, ServerConfig& c) {
                  c.mizarmp.tls.cert_file = s;
                  return Status::Ok();
                }),
      StringKey("mpKeyFile", "mp-key-file",
                [](const std::string& s, const std::string&, ServerConfig& c) {
                  c.mizarmp.tls.key_file = s;
                  return Status::Ok();
                }),
      BoolKey("mpInsecureSkipVerify", "mp-insecure-skip-verify",
              [](bool b, ServerConfig& c) { c.mizarmp.tls.insecure_skip_verify = b; }),
      // The CNI plugin's shape for the same settings: "tls": {"caFile", "certFile", "keyFile",
      // "insecureSkipVerify"} (TLS towards Mizar-MP). Config file only (the flags are --mp-*).
      Key{"tls", "", Kind::kObject,
          [](const json& v, const std::string& where, ServerConfig& c) -> Status {
            if (!v.is_object()) return WrongType(where, "an object", v);
            for (const auto& [name, item] : v.items()) {
              const std::string field = where.substr(0, where.size() - 1) + "." + name + "\"";
              if (name == "insecureSkipVerify") {
                if (!item.is_boolean()) return WrongType(field, "true or false", item);
                c.mizarmp.tls.insecure_skip_verify = item.get<bool>();
                continue;
              }
              std::string* target = name == "caFile"     ? &c.mizarmp.tls.ca_file
                                    : name == "certFile" ? &c.mizarmp.tls.cert_file
                                    : name == "keyFile"  ? &c.mizarmp.tls.key_file
                                                         : nullptr;
              if (target == nullptr) {
                return InvalidArgumentError(field +
                                            ": unknown key (want caFile, certFile, "
                                            "keyFile, insecureSkipVerify)");
              }
              if (!item.is_string()) return WrongType(field, "a string", item);
              *target = item.get<std::string>();
            }
            return Status::Ok();
          }},
      StringKey("tokenFile", "token-file",
                [](const std::string& s, const std::string&, ServerConfig& c) {
                  c.mizarmp.token_file = s;
                  return Status::Ok();
                }),
      PathKey("stateDir", "state-dir", &ServerConfig::state_dir),
      PathKey("fenceStore", "fence-store", &ServerConfig::fence_store),
      Key{"nodeAddresses", "node-address", Kind::kAddressMap,
          [](const json& v, const std::string& where, ServerConfig& c) -> Status {
            if (!v.is_object()) return WrongType(where, "an object {hostId: [addresses]}", v);
            c.node_addresses.clear();
            for (const auto& [host, list] : v.items()) {
              MZ_RETURN_IF_ERROR(ApplyAddresses(host, list, where, c));
            }
            return Status::Ok();
          }},
      PathKey("hostId", "host-id", &ServerConfig::host_id),
      PathKey("secretsFile", "secrets-file", &ServerConfig::secrets_file),
      Key{"reconcileIntervalMs", "reconcile-interval-ms", Kind::kInt,
          [](const json& v, const std::string& where, ServerConfig& c) -> Status {
            if (!v.is_number_integer()) return WrongType(where, "an integer", v);
            const int64_t ms = v.get<int64_t>();
            if (ms <= 0 || ms > 24LL * 3600 * 1000) {
              return InvalidArgumentError(where + ": " + std::to_string(ms) +
                                          " is out of range (1..86400000 ms)");
            }
            c.reconcile_interval = std::chrono::milliseconds(ms);
            return Status::Ok();
          }},
      Key{"probeTimeoutMs", "probe-timeout-ms", Kind::kInt,
          [](const json& v, const std::string& where, ServerConfig& c) -> Status {
            if (!v.is_number_integer()) return WrongType(where, "an integer", v);
            const int64_t ms = v.get<int64_t>();
            if (ms <= 0 || ms > 60000) {
              return InvalidArgumentError(where + ": " + std::to_string(ms) +
                                          " is out of range (1..60000 ms)");
            }
            c.probe_timeout = std::chrono::milliseconds(ms);
            return Status::Ok();
          }},
      StringKey("logLevel", "log-level",
                [](const std::string& s, const std::string& where, ServerConfig& c) -> Status {
                  auto level = log::ParseLevel(s);
                  if (!level.ok())
                    return InvalidArgumentError(where + ": " + level.status().message());
                  c.log_level = *level;
                  return Status::Ok();
                }),
      PathKey("logFile", "log-file", &ServerConfig::log_file),
      BoolKey("usePortList", "use-port-list", [](bool b, ServerConfig& c) { c.use_port_list = b; }),
      PathKey("keyStoreDir", "key-store-dir", &ServerConfig::key_store_dir),
      PathKey("mountTable", "mount-table", &ServerConfig::mount_table),
  };
  return keys;
}

const Key* FindFlag(std::string_view flag) {
  for (const auto& k : Keys()) {
    if (*k.flag_name != '\0' && flag == k.flag_name) return &k;
  }
  return nullptr;
}

bool IsAlnum(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; }

Status CheckReadableFile(const std::string& what, const std::string& path) {
  if (path.empty()) return Status::Ok();
  if (::access(path.c_str(), R_OK) != 0) {
    return InvalidArgumentError(what + ": cannot read \"" + path + "\": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

std::string_view ModeName(Mode mode) { return mode == Mode::kNode ? "node" : "controller"; }

std::string Endpoint::GrpcAddress() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(std::string_view text) {
  const std::string quoted = Quoted(text);
  Endpoint ep;
  if (text.starts_with("unix://")) {
    ep.kind = Endpoint::Kind::kUnix;
    ep.path = std::string(text.substr(7));
    if (ep.path.empty() || ep.path[0] != '/') {
      return InvalidArgumentError("endpoint " + quoted +
                                  ": the socket path must be absolute (unix:///path/to.sock)");
    }
    if (ep.path.size() > kMaxUnixPath) {
      return InvalidArgumentError("endpoint " + quoted + ": socket path longer than " +
                                  std::to_string(kMaxUnixPath) + " bytes");
    }
    if (ep.path.back() == '/') {
      return InvalidArgumentError("endpoint " + quoted + ": the socket path names a directory");
    }
    return ep;
  }
  if (text.starts_with("tcp://")) {
    ep.kind = Endpoint::Kind::kTcp;
    std::string_view rest = text.substr(6);
    std::string_view port_text;
    if (rest.starts_with("[")) {
      const size_t close = rest.find(']');
      if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
        return InvalidArgumentError("endpoint " + quoted + ": want tcp://[IPv6]:PORT");
      }
      ep.host = std::string(rest.substr(1, close - 1));
      port_text = rest.substr(close + 2);
    } else {
      const size_t colon = rest.rfind(':');
      if (colon == std::string_view::npos || rest.find(':') != colon) {
        return InvalidArgumentError("endpoint " + quoted + ": want tcp://HOST:PORT");
      }
      ep.host = std::string(rest.substr(0, colon));
      port_text = rest.substr(colon + 1);
    }
    if (ep.host.empty()) return InvalidArgumentError("endpoint " + quoted + ": empty host");
    int port = -1;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 0 ||
        port > 65535 || port_text.empty()) {
      return InvalidArgumentError("endpoint " + quoted + ": port \"" + std::string(port_text) +
                                  "\" is not a number in 0..65535");
    }
    ep.port = port;
    return ep;
  }
  return InvalidArgumentError("endpoint " + quoted +
                              ": want unix:///ABSOLUTE/PATH or tcp://HOST:PORT");
}

std::string RedactUrl(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t host_start = scheme + 3;
  const size_t host_end = url.find_first_of("/?#", host_start);
  const std::string_view authority =
      url.substr(host_start, host_end == std::string_view::npos ? std::string_view::npos
                                                                : host_end - host_start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host_start)) + "***" + std::string(url.substr(host_start + at));
}

Status ValidateDriverName(std::string_view name) {
  const std::string quoted = "drivername \"" + std::string(name) + "\"";
  if (name.empty()) return InvalidArgumentError("drivername: must not be empty");
  if (name.size() > 63) {
    return InvalidArgumentError(quoted + ": " + std::to_string(name.size()) +
                                " characters, at most 63 allowed");
  }
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) {
    return InvalidArgumentError(quoted + ": must begin and end with a letter or digit");
  }
  for (char ch : name) {
    if (!IsAlnum(ch) && ch != '-' && ch != '.') {
      return InvalidArgumentError(quoted + ": character '" + std::string(1, ch) +
                                  "' not allowed (only letters, digits, '-' and '.')");
    }
  }
  return Status::Ok();
}

Status ApplyConfigJson(std::string_view json_text, ServerConfig& config) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded()) return InvalidArgumentError("config: not valid JSON");
  if (!doc.is_object()) return InvalidArgumentError("config: the top level must be an object");
  for (const auto& [name, value] : doc.items()) {
    const Key* key = nullptr;
    for (const auto& k : Keys()) {
      if (name == k.json_name) key = &k;
    }
    if (key == nullptr) {
      if (name == "token") {
        return InvalidArgumentError(
            "config key \"token\": tokens are not accepted inline; use \"tokenFile\"");
      }
      return InvalidArgumentError("config key \"" + name + "\": unknown key");
    }
    MZ_RETURN_IF_ERROR(key->apply(value, "config key \"" + name + "\"", config));
  }
  return Status::Ok();
}

Status ValidateConfig(const ServerConfig& c) {
  MZ_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint(c.endpoint));
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return InvalidArgumentError(
        "tlsCertFile/tlsKeyFile: set both or neither (one of them is missing)");
  }
  if (!c.tls_client_ca_file.empty() && c.tls_cert_file.empty()) {
    return InvalidArgumentError("tlsClientCaFile: needs tlsCertFile and tlsKeyFile as well");
  }
  if (ep.kind == Endpoint::Kind::kTcp && c.tls_cert_file.empty() && !c.insecure_tcp) {
    return InvalidArgumentError("endpoint \"" + c.endpoint +
                                "\": tcp:// needs tlsCertFile and tlsKeyFile (or insecureTcp, "
                                "for tests only)");
  }
  if (ep.kind == Endpoint::Kind::kUnix && !c.tls_cert_file.empty()) {
    return InvalidArgumentError("tlsCertFile: TLS is only used with a tcp:// endpoint");
  }
  MZ_RETURN_IF_ERROR(CheckReadableFile("tlsCertFile", c.tls_cert_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("tlsKeyFile", c.tls_key_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("tlsClientCaFile", c.tls_client_ca_file));
  MZ_RETURN_IF_ERROR(ValidateDriverName(c.drivername));

  const std::string& url = c.mizarmp.base_url;
  if (url.empty()) {
    if (c.mode == Mode::kController) {
      return InvalidArgumentError("mpurl: required in controller mode (the Mizar-MP URL)");
    }
  } else if (!(url.starts_with("http://") || url.starts_with("https://")) ||
             url.find("://") + 3 >= url.size()) {
    return InvalidArgumentError("mpurl \"" + RedactUrl(url) +
                                "\": want http://HOST[:PORT] or https://...");
  }
  if (c.mizarmp.project_id.empty()) return InvalidArgumentError("project: must not be empty");
  if (c.subnet_id.empty()) return InvalidArgumentError("subnet: must not be empty");
  if (c.mizarmp.tls.cert_file.empty() != c.mizarmp.tls.key_file.empty()) {
    return InvalidArgumentError("mpCertFile/mpKeyFile: set both or neither");
  }
  MZ_RETURN_IF_ERROR(CheckReadableFile("mpCaFile", c.mizarmp.tls.ca_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("mpCertFile", c.mizarmp.tls.cert_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("mpKeyFile", c.mizarmp.tls.key_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("tokenFile", c.mizarmp.token_file));
  if (c.state_dir.empty() || c.state_dir[0] != '/') {
    return InvalidArgumentError("stateDir \"" + c.state_dir + "\": must be an absolute path");
  }
  if (c.fence_store.empty() || c.fence_store[0] != '/') {
    return InvalidArgumentError("fenceStore \"" + c.fence_store + "\": must be an absolute path");
  }
  if (!c.host_id.empty() && c.host_id.find_first_of(" \t\n/") != std::string::npos) {
    return InvalidArgumentError("hostId \"" + c.host_id + "\": must not contain spaces or '/'");
  }
  if (c.reconcile_interval.count() <= 0) {
    return InvalidArgumentError("reconcileIntervalMs: must be > 0");
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> LoadSecretsFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return InvalidArgumentError("secretsFile \"" + path + "\": " + text.status().message());
  }
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("secretsFile \"" + path + "\": want a JSON object of strings");
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : doc.items()) {
    if (!v.is_string()) {
      // Name the key, never the value.
      return InvalidArgumentError("secretsFile \"" + path + "\": the value of \"" + k +
                                  "\" is not a string");
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

Result<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  // Split into (flag, value) pairs first so --config can be applied before everything else.
  struct Flag {
    std::string name;
    std::string value;
    bool has_value = false;
  };
  std::vector<Flag> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--") || arg.size() == 2) {
      return InvalidArgumentError("argument \"" + arg + "\": expected a --flag");
    }
    Flag f;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      f.name = arg.substr(2, eq - 2);
      f.value = arg.substr(eq + 1);
      f.has_value = true;
    } else {
      f.name = arg.substr(2);
    }
    if (f.name == "help" || f.name == "version") {
      (f.name == "help" ? cl.help : cl.version) = true;
      continue;
    }
    if (f.name == "token" || f.name == "mp-token") {
      // Never echo the value: it would be a secret.
      return InvalidArgumentError("flag --" + f.name +
                                  ": tokens are not accepted as flag values; use --token-file");
    }
    const Key* key = f.name == "config" ? nullptr : FindFlag(f.name);
    if (f.name != "config" && key == nullptr) {
      return InvalidArgumentError("flag --" + f.name + ": unknown flag (see --help)");
    }
    const bool is_bool = key != nullptr && key->kind == Kind::kBool;
    if (!f.has_value && !is_bool) {
      if (i + 1 >= args.size()) return InvalidArgumentError("flag --" + f.name + ": needs a value");
      f.value = args[++i];
      f.has_value = true;
    }
    flags.push_back(std::move(f));
  }
  if (cl.help || cl.version) return cl;

  for (const auto& f : flags) {
    if (f.name != "config") continue;
    auto text = ReadFile(f.value);
    if (!text.ok()) {
      return InvalidArgumentError("flag --config \"" + f.value + "\": " + text.status().message());
    }
    Status s = ApplyConfigJson(*text, cl.config);
    if (!s.ok()) return s.WithContext("config file \"" + f.value + "\"");
  }
  for (const auto& f : flags) {
    if (f.name == "config") continue;
    const Key* key = FindFlag(f.name);
    const std::string where = "flag --" + f.name;
    json value;
    switch (key->kind) {
      case Kind::kString:
        value = f.value;
        break;
      case Kind::kBool:
        if (!f.has_value || f.value == "true" || f.value == "1") {
          value = true;
        } else if (f.value == "false" || f.value == "0") {
          value = false;
        } else {
          return InvalidArgumentError(where + ": want true or false, got \"" + f.value + "\"");
        }
        break;
      case Kind::kInt: {
        int64_t n = 0;
        auto [ptr, ec] = std::from_chars(f.value.data(), f.value.data() + f.value.size(), n);
        if (ec != std::errc() || ptr != f.value.data() + f.value.size() || f.value.empty()) {
          return InvalidArgumentError(where + ": \"" + f.value + "\" is not an integer");
        }
        value = n;
        break;
      }
      case Kind::kObject:  // no flag has this kind (FindFlag never returns one)
        return InvalidArgumentError(where + ": only settable in the config file");
      case Kind::kAddressMap: {
        // --node-address HOST=ADDR[,ADDR...]
        const size_t eq = f.value.find('=');
        if (eq == std::string::npos || eq == 0) {
          return InvalidArgumentError(where + ": want HOST=ADDR[,ADDR...], got \"" + f.value +
                                      "\"");
        }
        json list = json::array();
        std::string_view rest = std::string_view(f.value).substr(eq + 1);
        while (!rest.empty()) {
          const size_t comma = rest.find(',');
          std::string_view item = rest.substr(0, comma);
          if (!item.empty()) list.push_back(std::string(item));
          if (comma == std::string_view::npos) break;
          rest = rest.substr(comma + 1);
        }
        MZ_RETURN_IF_ERROR(ApplyAddresses(f.value.substr(0, eq), list, where, cl.config));
        continue;
      }
    }
    MZ_RETURN_IF_ERROR(key->apply(value, where, cl.config));
  }

  if (!cl.config.secrets_file.empty()) {
    MZ_ASSIGN_OR_RETURN(cl.config.expected_secrets, LoadSecretsFile(cl.config.secrets_file));
  }
  MZ_RETURN_IF_ERROR(ValidateConfig(cl.config));
  return cl;
}

std::string Usage() {
  return R"(usage: mizarmp-addons [--config FILE] [--FLAG VALUE ...]

A CSI-Addons gRPC server (Identity, FenceController, EncryptionKeyRotationController) for the
Mizar-MP network. Flags override the JSON config file; every flag has a camelCase config key.

  --config FILE                  JSON configuration file
  --endpoint URI                 unix:///run/mizarmp/csi-addons.sock (default) or tcp://HOST:PORT
  --tls-cert-file FILE           server certificate (required for tcp://)
  --tls-key-file FILE            its private key
  --tls-client-ca-file FILE      require client certificates signed by this CA
  --insecure-tcp                 allow tcp:// without TLS (tests only)
  --mode controller|node         default controller
  --drivername NAME              default mizarmp.csi-addons.mizar.io
  --mpurl URL                    Mizar-MP controller URL (required in controller mode)
  --project ID, --subnet ID      Mizar-MP project and subnet
  --dialect auto|v0.1|alcor      Mizar-MP API generation (default auto)
  --mp-ca-file, --mp-cert-file, --mp-key-file FILE, --mp-insecure-skip-verify
                                 TLS towards Mizar-MP
  --token-file FILE              bearer token for Mizar-MP (tokens are only read from files)
  --state-dir DIR                the CNI plugin's attachment records (default /var/lib/cni/mizarmp)
  --fence-store FILE             fence state database (default /var/lib/mizarmp/fence.db)
  --node-address HOST=ADDR[,...] addresses/CIDRs of a node (repeatable)
  --host-id ID                   this node's host id
  --secrets-file FILE            JSON object of the secrets requests must carry
  --reconcile-interval-ms N      default 10000
  --probe-timeout-ms N           timeout of Probe's Mizar-MP check (default 1000)
  --use-port-list                also gather fence clients from the Mizar-MP port list
  --key-store-dir DIR            node mode: LUKS volume key store (default /var/lib/mizarmp/keys)
  --mount-table FILE             node mode: mount table (default /proc/self/mountinfo)
  --log-level LEVEL              debug|info|warn|error|off (default info)
  --log-file FILE                default stderr
  --version, --help
Exit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 on a runtime failure, 2 on a bad
configuration.
)";
}

}  // namespace mizarmp::fence
