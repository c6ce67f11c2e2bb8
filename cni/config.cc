#include "cni/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "cni/version.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "common/uuid.h"

namespace mizarmp::cni {

using nlohmann::json;

namespace {

Status WrongType(const std::string& key, const char* want, const json& got) {
  return InvalidArgumentError("config key " + Quoted(key) + " must be " + want + " (got " +
                              got.type_name() + ")");
}

// Optional members: absent or null leaves the output untouched.
const json* Find(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status ReadString(const json& obj, const char* key, const std::string& path, std::string* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return WrongType(path, "a string", *v);
  *out = v->get<std::string>();
  return Status::Ok();
}

Status RequireString(const json& obj, const char* key, std::string* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return InvalidArgumentError("config is missing required key " + Quoted(key));
  if (!v->is_string()) return WrongType(key, "a string", *v);
  *out = v->get<std::string>();
  if (out->empty()) return InvalidArgumentError("config key " + Quoted(key) + " is empty");
  return Status::Ok();
}

Status ReadBool(const json& obj, const char* key, const std::string& path, bool* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return WrongType(path, "a boolean", *v);
  *out = v->get<bool>();
  return Status::Ok();
}

Status ReadInt(const json& obj, const char* key, const std::string& path, int64_t min, int64_t max,
               int64_t* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number_integer()) return WrongType(path, "an integer", *v);
  int64_t n = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                  ? INT64_MAX
                  : v->get<int64_t>();
  if (n < min || n > max) {
    return InvalidArgumentError("config key " + Quoted(path) + " is " + v->dump() + ", want " +
                                std::to_string(min) + ".." + std::to_string(max));
  }
  *out = n;
  return Status::Ok();
}

Status ReadMs(const json& obj, const char* key, const std::string& path, int64_t min,
              std::chrono::milliseconds* out) {
  int64_t n = out->count();
  MZ_RETURN_IF_ERROR(ReadInt(obj, key, path, min, 24LL * 3600 * 1000, &n));
  *out = std::chrono::milliseconds(n);
  return Status::Ok();
}

Status ReadStringList(const json& obj, const char* key, const std::string& path,
                      std::vector<std::string>* out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_array()) return WrongType(path, "an array of strings", *v);
  out->clear();
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return WrongType(path + "[" + std::to_string(i) + "]", "a string", (*v)[i]);
    }
    out->push_back((*v)[i].get<std::string>());
  }
  return Status::Ok();
}

// An optional object member; null when absent. INVALID_ARGUMENT if present and not an object.
Result<const json*> ReadObject(const json& obj, const char* key) {
  const json* v = Find(obj, key);
  if (v == nullptr) return static_cast<const json*>(nullptr);
  if (!v->is_object()) return WrongType(key, "an object", *v);
  return v;
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
  const json* v = Find(doc, "cniVersion");
  if (v == nullptr) return std::string(kImplicitVersion);
  if (!v->is_string()) return WrongType("cniVersion", "a string", *v);
  return v->get<std::string>();
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
Status ReadPlug(const json& doc, NetConf* c) {
  std::string plug = "auto";
  MZ_RETURN_IF_ERROR(ReadString(doc, "plug", "plug", &plug));
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
  MZ_RETURN_IF_ERROR(ReadString(doc, "ovsBridge", "ovsBridge", &c->ovs_bridge));
  if (c->ovs_bridge.empty() || c->ovs_bridge.size() > 15) {
    return InvalidArgumentError("config key \"ovsBridge\": " + Quoted(c->ovs_bridge) +
                                " must be 1 to 15 characters long");
  }
  MZ_RETURN_IF_ERROR(ReadString(doc, "ovsdbSocket", "ovsdbSocket", &c->ovsdb_socket));
  if (c->ovsdb_socket.empty() || c->ovsdb_socket[0] != '/') {
    return InvalidArgumentError("config key \"ovsdbSocket\": " + Quoted(c->ovsdb_socket) +
                                " is not an absolute path");
  }
  return Status::Ok();
}

}  // namespace

Result<NetConf> ParseNetConf(const json& doc) {
  if (!doc.is_object()) return InvalidArgumentError("network configuration is not a JSON object");
  NetConf c;
  c.raw = doc;
  MZ_RETURN_IF_ERROR(RequireString(doc, "cniVersion", &c.cni_version));
  MZ_RETURN_IF_ERROR(RequireString(doc, "name", &c.name));
  MZ_RETURN_IF_ERROR(ValidateNetworkName(c.name));
  MZ_RETURN_IF_ERROR(RequireString(doc, "type", &c.type));
  MZ_RETURN_IF_ERROR(RequireString(doc, "mpurl", &c.mpurl));
  MZ_RETURN_IF_ERROR(RequireString(doc, "project", &c.project));
  if (!IsUuid(c.project)) {
    return InvalidArgumentError("config key \"project\": " + Quoted(c.project) + " is not a UUID");
  }
  MZ_RETURN_IF_ERROR(RequireString(doc, "subnet", &c.subnet));
  if (!IsUuid(c.subnet)) {
    return InvalidArgumentError("config key \"subnet\": " + Quoted(c.subnet) + " is not a UUID");
  }
  MZ_RETURN_IF_ERROR(ReadString(doc, "hostId", "hostId", &c.host_id));
  c.network_id = c.subnet;
  MZ_RETURN_IF_ERROR(ReadString(doc, "networkId", "networkId", &c.network_id));
  if (c.network_id.empty()) return InvalidArgumentError("config key \"networkId\" is empty");

  std::string dialect = "auto";
  MZ_RETURN_IF_ERROR(ReadString(doc, "dialect", "dialect", &dialect));
  auto parsed_dialect = client::ParseDialect(dialect);
  if (!parsed_dialect.ok()) return parsed_dialect.status().WithContext("config key \"dialect\"");
  c.dialect = *parsed_dialect;
  MZ_RETURN_IF_ERROR(ReadPlug(doc, &c));

  MZ_RETURN_IF_ERROR(ReadString(doc, "stateDir", "stateDir", &c.state_dir));
  if (c.state_dir.empty() || c.state_dir[0] != '/') {
    return InvalidArgumentError("config key \"stateDir\": " + Quoted(c.state_dir) +
                                " is not an absolute path");
  }
  MZ_RETURN_IF_ERROR(ReadString(doc, "logFile", "logFile", &c.log_file));
  MZ_RETURN_IF_ERROR(ReadString(doc, "logLevel", "logLevel", &c.log_level));
  if (auto lvl = log::ParseLevel(c.log_level); !lvl.ok()) {
    return InvalidArgumentError("config key \"logLevel\": " + lvl.status().message());
  }
  int64_t n = 0;
  MZ_RETURN_IF_ERROR(
      ReadInt(doc, "logMaxBytes", "logMaxBytes", kMinLogMaxBytes, kMaxLogMaxBytes, &n));
  c.log_max_bytes = static_cast<uint64_t>(n);
  n = 0;
  MZ_RETURN_IF_ERROR(ReadInt(doc, "mtu", "mtu", 68, 65535, &n));
  c.mtu = static_cast<int>(n);

  MZ_ASSIGN_OR_RETURN(const json* dns, ReadObject(doc, "dns"));
  if (dns != nullptr) {
    MZ_RETURN_IF_ERROR(ReadStringList(*dns, "nameservers", "dns.nameservers", &c.dns.nameservers));
    MZ_RETURN_IF_ERROR(ReadString(*dns, "domain", "dns.domain", &c.dns.domain));
    MZ_RETURN_IF_ERROR(ReadStringList(*dns, "search", "dns.search", &c.dns.search));
    MZ_RETURN_IF_ERROR(ReadStringList(*dns, "options", "dns.options", &c.dns.options));
  }
  MZ_ASSIGN_OR_RETURN(const json* tls, ReadObject(doc, "tls"));
  if (tls != nullptr) {
    MZ_RETURN_IF_ERROR(ReadString(*tls, "caFile", "tls.caFile", &c.tls.ca_file));
    MZ_RETURN_IF_ERROR(ReadString(*tls, "certFile", "tls.certFile", &c.tls.cert_file));
    MZ_RETURN_IF_ERROR(ReadString(*tls, "keyFile", "tls.keyFile", &c.tls.key_file));
    MZ_RETURN_IF_ERROR(ReadBool(*tls, "insecureSkipVerify", "tls.insecureSkipVerify",
                                &c.tls.insecure_skip_verify));
  }
  MZ_RETURN_IF_ERROR(ReadString(doc, "tokenFile", "tokenFile", &c.token_file));
  MZ_RETURN_IF_ERROR(ReadString(doc, "relaySocket", "relaySocket", &c.relay_socket));
  if (!c.relay_socket.empty() && c.relay_socket[0] != '/') {
    return InvalidArgumentError("config key \"relaySocket\": " + Quoted(c.relay_socket) +
                                " is not an absolute path");
  }

  MZ_ASSIGN_OR_RETURN(const json* timeouts, ReadObject(doc, "timeouts"));
  if (timeouts != nullptr) {
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "readyMs", "timeouts.readyMs", 1, &c.ready_timeout));
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "requestMs", "timeouts.requestMs", 1, &c.request_timeout));
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "connectMs", "timeouts.connectMs", 1, &c.connect_timeout));
    MZ_RETURN_IF_ERROR(ReadMs(*timeouts, "nicMs", "timeouts.nicMs", 0, &c.nic_timeout));
  }
  MZ_ASSIGN_OR_RETURN(const json* poll, ReadObject(doc, "poll"));
  if (poll != nullptr) {
    MZ_RETURN_IF_ERROR(ReadMs(*poll, "initialMs", "poll.initialMs", 1, &c.poll_initial));
    MZ_RETURN_IF_ERROR(ReadMs(*poll, "maxMs", "poll.maxMs", 1, &c.poll_max));
    if (c.poll_max < c.poll_initial) {
      return InvalidArgumentError(
          "config key \"poll.maxMs\" (" + std::to_string(c.poll_max.count()) +
          ") is below poll.initialMs (" + std::to_string(c.poll_initial.count()) + ")");
    }
  }
  n = c.retries;
  MZ_RETURN_IF_ERROR(ReadInt(doc, "retries", "retries", 0, 10, &n));
  c.retries = static_cast<int>(n);

  if (const json* v = Find(doc, "prevResult")) {
    if (!v->is_object()) return WrongType("prevResult", "an object", *v);
    c.prev_result = *v;
  }
  if (const json* v = Find(doc, "runtimeConfig")) c.runtime_config = *v;
  if (const json* v = Find(doc, "args")) c.args = *v;
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
