// mizarmp-mock: flags -> mock::Options, serve until SIGTERM/SIGINT.
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <string_view>

#include "common/fileutil.h"
#include "common/log.h"
#include "mock-server/mock.h"

namespace {

using mizarmp::mock::Dialect;
using mizarmp::mock::Options;

constexpr const char* kUsage = R"(usage: mizarmp-mock [flags]

A Mizar-MP controller and host-agent simulator over HTTP, for tests and demos only.

  --listen HOST:PORT        address to serve on (default 127.0.0.1:9090; port 0 picks one)
  --port-file PATH          write the bound port number there (atomically) once listening
  --dialect v0.1|alcor      wire dialect (default v0.1)
  --project ID              project id (default 3dda2801-d675-4688-a63f-dcda8d327f50)
  --vpc ID                  VPC id (default 9192a4d4-ffff-4ece-b3f0-8d36e3d88038)
  --subnet ID               subnet id (default a87e0f87-a2d9-44ef-9194-9a62f178594e)
  --cidr CIDR               subnet CIDR (default 10.240.0.0/16)
  --gateway IP              gateway (default: first address of the CIDR)
  --subnet6 ID, --cidr6 CIDR  optional IPv6 subnet
  --ready-delay-ms N        ports go ready N ms after create (default 0)
  --gets-before-ready N     ...and not before N GETs of the port (default 0)
  --agent                   act as the host agent: veth per ready port, bridge with the gateway
  --bridge NAME             the agent's bridge (default mzbr0)
  --agent-netns PATH        where the bridge and host ends live (default: this netns)
  --mtu N                   MTU of the veths (default 1500)
  --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]   serve HTTPS (mTLS with a client CA)
  --token-file FILE         require "Authorization: Bearer <token>" on REST requests
  --fail-creates N --fail-deletes N --fail-gets N --reject-creates N
  --close-connections N --truncate-json N --delay-ms N --never-ready --fail-ready
                            initial faults (see POST /mock/faults)
  --log-level LEVEL         debug|info|warn|error|off (default info); logs go to stderr
  --log-file PATH           log to a file instead of stderr
  --help                    this text
)";

int UsageError(const std::string& msg) {
  std::cerr << "mizarmp-mock: " << msg << "\n\n" << kUsage;
  return 2;
}

bool ParseInt(std::string_view text, int min, int max, int* out) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.port = 9090;
  std::string port_file, log_level = "info", log_file;

  // Flags that take a value, by name; each returns an error text or "".
  std::map<std::string, std::function<std::string(const std::string&)>> valued;
  auto str = [](std::string* field) {
    return [field](const std::string& v) -> std::string {
      *field = v;
      return "";
    };
  };
  auto num = [](int* field, int min, int max) {
    return [field, min, max](const std::string& v) -> std::string {
      if (!ParseInt(v, min, max, field)) {
        return mizarmp::Quoted(v) + " is not an integer in " + std::to_string(min) + ".." +
               std::to_string(max);
      }
      return "";
    };
  };
  valued["--listen"] = [&o](const std::string& v) -> std::string {
    std::string host;
    std::string port;
    if (!v.empty() && v[0] == '[') {
      const size_t close = v.find("]:");
      if (close == std::string::npos) return "expected [HOST]:PORT";
      host = v.substr(1, close - 1);
      port = v.substr(close + 2);
    } else {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) return "expected HOST:PORT";
      host = v.substr(0, colon);
      port = v.substr(colon + 1);
    }
    if (host.empty()) return "empty host";
    if (!ParseInt(port, 0, 65535, &o.port)) return "port \"" + port + "\" is not in 0..65535";
    o.host = host;
    return "";
  };
  valued["--dialect"] = [&o](const std::string& v) -> std::string {
    if (v == "v0.1" || v == "v01") {
      o.dialect = Dialect::kV01;
    } else if (v == "alcor") {
      o.dialect = Dialect::kAlcor;
    } else {
      return "must be v0.1 or alcor";
    }
    return "";
  };
  valued["--project"] = str(&o.project_id);
  valued["--vpc"] = str(&o.vpc_id);
  valued["--subnet"] = str(&o.subnet_id);
  valued["--cidr"] = str(&o.cidr);
  valued["--gateway"] = str(&o.gateway);
  valued["--subnet6"] = str(&o.subnet6_id);
  valued["--cidr6"] = str(&o.cidr6);
  int ready_delay_ms = 0;
  valued["--ready-delay-ms"] = num(&ready_delay_ms, 0, 3600000);
  valued["--gets-before-ready"] = num(&o.gets_before_ready, 0, 1000000);
  valued["--bridge"] = str(&o.bridge);
  valued["--agent-netns"] = str(&o.agent_netns);
  valued["--mtu"] = num(&o.mtu, 68, 65535);
  valued["--tls-cert"] = str(&o.tls_cert_file);
  valued["--tls-key"] = str(&o.tls_key_file);
  valued["--tls-client-ca"] = str(&o.tls_client_ca_file);
  valued["--token-file"] = str(&o.token_file);
  valued["--fail-creates"] = num(&o.faults.fail_creates, 0, 1000000000);
  valued["--fail-deletes"] = num(&o.faults.fail_deletes, 0, 1000000000);
  valued["--fail-gets"] = num(&o.faults.fail_gets, 0, 1000000000);
  valued["--delay-ms"] = num(&o.faults.delay_ms, 0, 3600000);
  valued["--close-connections"] = num(&o.faults.close_connections, 0, 1000000000);
  valued["--truncate-json"] = num(&o.faults.truncate_json, 0, 1000000000);
  valued["--reject-creates"] = num(&o.faults.reject_creates, 0, 1000000000);
  valued["--log-level"] = str(&log_level);
  valued["--log-file"] = str(&log_file);
  valued["--port-file"] = str(&port_file);
  const std::map<std::string, bool*> switches = {{"--agent", &o.agent},
                                                 {"--never-ready", &o.faults.never_ready},
                                                 {"--fail-ready", &o.faults.fail_ready}};

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (auto s = switches.find(arg); s != switches.end()) {
      if (has_value) return UsageError(arg + " takes no value");
      *s->second = true;
      continue;
    }
    auto f = valued.find(arg);
    if (f == valued.end()) return UsageError("unknown flag " + arg);
    if (!has_value) {
      if (i + 1 >= argc) return UsageError(arg + " needs a value");
      value = argv[++i];
    }
    const std::string err = f->second(value);
    if (!err.empty()) return UsageError(arg + ": " + err);
  }
  o.ready_delay = std::chrono::milliseconds(ready_delay_ms);

  auto level = mizarmp::log::ParseLevel(log_level);
  if (!level.ok()) return UsageError("--log-level: " + level.status().message());
  mizarmp::log::SetLevel(*level);
  mizarmp::log::SetTag("mizarmp-mock");
  if (!log_file.empty()) {
    mizarmp::Status st = mizarmp::log::SetFile(log_file);
    if (!st.ok()) {
      std::cerr << "mizarmp-mock: " << st.ToString() << "\n";
      return 1;
    }
  }
  o.verbose = *level == mizarmp::log::Level::kDebug;

  // Block the stop signals in every thread (threads inherit the mask) and wait for them here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto mock = mizarmp::mock::MockServer::Create(o);
  if (!mock.ok()) {
    MZ_LOG(kError) << mock.status().ToString();
    std::cerr << "mizarmp-mock: " << mock.status().ToString() << "\n";
    return 1;
  }
  mizarmp::Status st = (*mock)->Start();
  if (!st.ok()) {
    MZ_LOG(kError) << st.ToString();
    std::cerr << "mizarmp-mock: " << st.ToString() << "\n";
    return 1;
  }
  if (!port_file.empty()) {
    st = mizarmp::WriteFileAtomic(port_file, std::to_string((*mock)->port()) + "\n", 0644);
    if (!st.ok()) {
      std::cerr << "mizarmp-mock: --port-file: " << st.ToString() << "\n";
      (*mock)->Stop();
      return 1;
    }
  }
  std::cout << "mizarmp-mock listening on " << (*mock)->base_url() << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  MZ_LOG(kInfo) << "signal " << sig << ": stopping";
  (*mock)->Stop();
  mock->reset();
  return 0;
}
