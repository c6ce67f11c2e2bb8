// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-mock: flags -> mock::Options, serve until SIGTERM/SIGINT.
#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/fileutil.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/signals.h"
#include "mock-server/mock.h"

namespace {

using mizarmp::FlagTable;
using mizarmp::InvalidArgumentError;
using mizarmp::Status;

// The port served on unless --listen says otherwise (the library's default is 0, any port).
constexpr int kDefaultPort = 9090;

struct Config {
  Config() { mock.port = kDefaultPort; }
  mizarmp::mock::Options mock;
  std::string port_file;
  std::string log_file;
  mizarmp::log::Level log_level = mizarmp::log::Level::kInfo;
};

// The most a fault counter may be set to (as POST /mock/faults allows), and the longest delay
// (an hour).
constexpr int kMaxCount = 1000000000;
constexpr int kMaxMs = 3600000;

constexpr const char* kHeader = R"(usage: mizarmp-mock [flags]

A Mizar-MP controller and host-agent simulator over HTTP, for tests and demos only.
Flags (--help prints this text):

)";

// HOST:PORT, or [HOST]:PORT for an IPv6 host.
Status ParseListen(std::string_view v, mizarmp::mock::Options* o) {
  std::string_view host;
  std::string_view port;
  if (!v.empty() && v[0] == '[') {
    const size_t close = v.find("]:");
    if (close == std::string_view::npos) return InvalidArgumentError("expected [HOST]:PORT");
    host = v.substr(1, close - 1);
    port = v.substr(close + 2);
  } else {
    const size_t colon = v.rfind(':');
    if (colon == std::string_view::npos) return InvalidArgumentError("expected HOST:PORT");
    host = v.substr(0, colon);
    port = v.substr(colon + 1);
  }
  if (host.empty()) return InvalidArgumentError("empty host");
  auto n = mizarmp::ParseInt(port, 0, 65535);
  if (!n.ok()) return InvalidArgumentError("port \"" + std::string(port) + "\" is not in 0..65535");
  o->host = std::string(host);
  o->port = static_cast<int>(*n);
  return Status::Ok();
}

FlagTable Flags(Config* c) {
  mizarmp::mock::Options& o = c->mock;
  mizarmp::mock::Faults& f = o.faults;
  FlagTable t;
  t.Add({"listen", "HOST:PORT",
         "address to serve on (default " + o.host + ":" + std::to_string(o.port) +
             "; port 0 picks one)",
         [&o](std::string_view v) { return ParseListen(v, &o); }});
  t.String("port-file", "PATH", "write the bound port number there (atomically) once listening",
           &c->port_file);
  t.Add({"dialect", "v0.1|alcor", "wire dialect (default v0.1)",
         [&o](std::string_view v) -> Status {
           MZ_ASSIGN_OR_RETURN(o.dialect, mizarmp::mock::ParseDialect(v));
           return Status::Ok();
         }});
  t.Switch("strict",
           "answer as that generation's real controller does (alcor@5ca01ef0 for v0.1, "
           "alcor@21f11b5c for alcor), not as the seed README describes it",
           &o.strict);
  t.Int("row-limit", "N",
        "strict alcor: a port list of N rows or more answers 500 (default " +
            std::to_string(o.row_limit) + ")",
        1, kMaxCount, &o.row_limit);
  t.String("project", "ID", "project id (default " + o.project_id + ")", &o.project_id);
  t.String("vpc", "ID", "VPC id (default " + o.vpc_id + ")", &o.vpc_id);
  t.String("subnet", "ID", "subnet id (default " + o.subnet_id + ")", &o.subnet_id);
  t.String("cidr", "CIDR", "subnet CIDR (default " + o.cidr + ")", &o.cidr);
  t.String("gateway", "IP", "gateway (default: first address of the CIDR)", &o.gateway);
  t.String("subnet6", "ID", "optional IPv6 subnet id (with --cidr6)", &o.subnet6_id);
  t.String("cidr6", "CIDR", "optional IPv6 subnet CIDR (with --subnet6)", &o.cidr6);
  t.Int("ready-delay-ms", "N", "ports go ready N ms after create (default 0)", 0, kMaxMs,
        [&o](int64_t v) { o.ready_delay = std::chrono::milliseconds(v); });
  t.Int("gets-before-ready", "N", "...and not before N GETs of the port (default 0)", 0, 1000000,
        &o.gets_before_ready);
  t.Switch("agent", "act as the host agent: veth per ready port, bridge with the gateway",
           &o.agent);
  t.String("bridge", "NAME", "the agent's bridge (default mzbr0; br-int with --agent-ovsdb)",
           &o.bridge);
  t.String("agent-netns", "PATH", "where the bridge and host ends live (default: this netns)",
           &o.agent_netns);
  t.Int("mtu", "N", "MTU of the veths (default " + std::to_string(o.mtu) + ")", 68, 65535, &o.mtu);
  t.Switch("agent-unplugs-later",
           "remove a deleted port's veth after answering the DELETE (in order with the plugs)",
           &o.agent_unplugs_later);
  t.String("agent-ovsdb", "PATH",
           "strict alcor: act as Alcor's host agent on Open vSwitch, via ovsdb-server's socket "
           "PATH: no NIC placed; a port goes ACTIVE once OVS port tap<id[:11]> is on the "
           "bridge, tagged with its VPC's VLAN",
           &o.agent_ovsdb);
  t.String("tls-cert", "FILE", "serve HTTPS with this certificate (and --tls-key)",
           &o.tls_cert_file);
  t.String("tls-key", "FILE", "the certificate's private key", &o.tls_key_file);
  t.String("tls-client-ca", "FILE", "require client certificates signed by this CA (mTLS)",
           &o.tls_client_ca_file);
  t.String("token-file", "FILE",
           "require \"Authorization: Bearer <token>\" on REST requests (strict alcor: "
           "\"X-Auth-Token: <token>\")",
           &o.token_file);
  t.Int("journal-capacity", "N",
        "port updates GET /mock/requests keeps, the newest (default " +
            std::to_string(o.journal_capacity) + ")",
        0, kMaxCount, &o.journal_capacity);
  // The initial faults, as POST /mock/faults sets them.
  t.Int("fail-creates", "N", "fault: the next N creates answer 500", 0, kMaxCount, &f.fail_creates);
  t.Int("fail-deletes", "N", "fault: the next N deletes answer 500", 0, kMaxCount, &f.fail_deletes);
  t.Int("fail-gets", "N", "fault: the next N GETs of a port answer 503", 0, kMaxCount,
        &f.fail_gets);
  t.Int("reject-creates", "N", "fault: the next N creates answer 400", 0, kMaxCount,
        &f.reject_creates);
  t.Int("reject-updates", "N", "fault: the next N port updates answer 400", 0, kMaxCount,
        &f.reject_updates);
  t.Int("lose-create-answers", "N",
        "fault: the next N creates are made, then their connection is closed unanswered", 0,
        kMaxCount, &f.lose_create_answers);
  t.Int("close-connections", "N", "fault: the next N REST requests get their connection closed", 0,
        kMaxCount, &f.close_connections);
  t.Int("truncate-json", "N", "fault: the next N REST responses carry truncated JSON", 0, kMaxCount,
        &f.truncate_json);
  t.Int("delay-ms", "N", "fault: every REST response is delayed N ms", 0, kMaxMs, &f.delay_ms);
  t.Switch("never-ready", "fault: ports stay pending", &f.never_ready);
  t.Switch("fail-ready", "fault: ports fail instead of going ready", &f.fail_ready);
  t.Int("malformed-ports", "N", "fault: every port list carries N entries that are not ports", 0,
        kMaxCount, &f.malformed_ports);
  t.Switch("update-no-content", "fault: a port update is answered 204 without a body",
           &f.update_no_content);
  t.Switch("ignore-fields", "fault: port lists answer whole documents whatever ?fields= asks for",
           &f.ignore_fields);
  t.Add({"log-level", "LEVEL", "debug|info|warn|error|off (default info); logs go to stderr",
         [c](std::string_view v) -> Status {
           MZ_ASSIGN_OR_RETURN(c->log_level, mizarmp::log::ParseLevel(v));
           return Status::Ok();
         }});
  t.String("log-file", "PATH", "log to a file instead of stderr", &c->log_file);
  return t;
}

std::string Usage(const FlagTable& flags) { return kHeader + flags.Help(); }

int UsageError(const FlagTable& flags, const std::string& message) {
  std::cerr << "mizarmp-mock: " << message << "\n\n" << Usage(flags);
  return 2;
}

// A failure after the flags were accepted: logged, and on stderr for whoever started us.
int Failed(const Status& st) {
  MZ_LOG(kError) << st.ToString();
  std::cerr << "mizarmp-mock: " << st.ToString() << "\n";
  return 1;
}

Status SetUpLogging(const Config& c) {
  mizarmp::log::SetLevel(c.log_level);
  mizarmp::log::SetTag("mizarmp-mock");
  if (c.log_file.empty()) return Status::Ok();
  return mizarmp::log::SetFile(c.log_file);
}

// Serves until SIGTERM or SIGINT; the exit code.
int Serve(const Config& c) {
  mizarmp::TerminationSignals signals;  // before any thread starts: they inherit the mask
  auto mock = mizarmp::mock::MockServer::Create(c.mock);
  if (!mock.ok()) return Failed(mock.status());
  if (Status st = (*mock)->Start(); !st.ok()) return Failed(st);
  if (!c.port_file.empty()) {
    Status st = mizarmp::WriteFileAtomic(c.port_file, std::to_string((*mock)->port()) + "\n", 0644);
    if (!st.ok()) {
      std::cerr << "mizarmp-mock: --port-file: " << st.ToString() << "\n";
      return 1;
    }
  }
  std::cout << "mizarmp-mock listening on " << (*mock)->base_url() << std::endl;
  const int sig = signals.Wait();
  MZ_LOG(kInfo) << "signal " << sig << ": stopping";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  const FlagTable flags = Flags(&config);
  bool help = false;
  const Status parsed = flags.Parse(std::vector<std::string>(argv + 1, argv + argc), &help);
  if (help) {
    std::cout << Usage(flags);
    return 0;
  }
  if (!parsed.ok()) return UsageError(flags, parsed.message());
  config.mock.verbose = config.log_level == mizarmp::log::Level::kDebug;
  if (Status st = SetUpLogging(config); !st.ok()) {
    std::cerr << "mizarmp-mock: " << st.ToString() << "\n";
    return 1;
  }
  return Serve(config);
}
