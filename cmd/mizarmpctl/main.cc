// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmpctl: what an operator asks a node (the plugin's attachments, joined with Mizar-MP and
// the pod's namespace; the stale ones; their removal) and a mizarmp-addons server (probe, fence
// clients, fences, fence and unfence, a fence's preview, the fence audit and the nodes that
// enforce the fence set). Tables by default,
// `-o json` for scripts. Exit 0 on success, 1 when the command failed (the reason on stderr), 2 for
// a usage error.
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/flags.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/version.h"
#include "ctl/node.h"
#include "ctl/server.h"
#include "ctl/table.h"
#include "endpoint/endpoint.h"

namespace {

namespace mz = mizarmp;
namespace ctl = mizarmp::ctl;
using json = nlohmann::json;
using mz::Status;

struct Options {
  std::string output = "table";
  std::string conflist = ctl::kDefaultConflist;
  bool dry_run = false;
  std::string host_id;
  int limit = 50;
  ctl::ServerTarget server{mz::endpoint::kDefaultEndpoint};
  std::vector<std::string> args;  // the command's positional arguments
};

constexpr const char* kUsage = R"(usage: mizarmpctl COMMAND [flags] [-o table|json]

On a node (reads the plugin's conflist, --conflist):
  attachments        every attachment: its record, its port at Mizar-MP, its interface in the pod
  stale              the attachments whose pod namespace is gone (the runtime never ran DEL)
  gc [--dry-run]     runs the plugin's DEL for every stale attachment (port and record removed)
Against a mizarmp-addons server (--endpoint):
  probe              identity, version, mode, capabilities and readiness
  fence-clients      GetFenceClients (--host-id narrows it to one node)
  fences             ListClusterFence
  fence CIDR...      FenceClusterNetwork; with --dry-run, the ports it would cut off (each
                     with its node, its pod and whether it is down already), changing nothing
  unfence CIDR...    UnfenceClusterNetwork
  audit              the fence audit: each fence and unfence asked for, by whom, and the ports
                     each enforcement pass disabled and re-enabled (--limit, newest last)
  nodes              the nodes publishing to the controller: whether each is live and
                     enforces the fence set the controller offers now (what a fence waits for)

Flags:
)";

mz::FlagTable Flags(Options* o) {
  mz::FlagTable t;
  t.Add({"output", "table|json", "output format (-o; default table)", [o](std::string_view v) {
           if (v != "table" && v != "json") return mz::InvalidArgumentError("want table or json");
           o->output = std::string(v);
           return Status::Ok();
         }});
  t.String("conflist", "FILE",
           std::string("the plugin's conflist (default ") + ctl::kDefaultConflist + ")",
           &o->conflist);
  t.Switch("dry-run", "gc, fence: only show what would be done", &o->dry_run);
  t.String("endpoint", "URI",
           std::string("the server's endpoint (default ") + mz::endpoint::kDefaultEndpoint + ")",
           &o->server.endpoint);
  t.String("secrets-file", "FILE", "JSON object of the secrets requests carry (never printed)",
           &o->server.secrets_file);
  t.String("ca-file", "FILE", "tcp:// with TLS: the CA of the server's certificate",
           &o->server.ca_file);
  t.String("cert-file", "FILE", "tcp:// with TLS: a client certificate", &o->server.cert_file);
  t.String("key-file", "FILE", "its private key", &o->server.key_file);
  t.String("host-id", "ID", "fence-clients: only this node", &o->host_id);
  t.Int("limit", "N", "audit: the newest N entries (default 50, at most 500)", 1, 500, &o->limit);
  return t;
}

// Splits the command's arguments into flags (handed to the table, "-o" spelled out) and
// positional arguments, knowing from the table which flags take a value.
Status ParseArgs(const std::vector<std::string>& args, const mz::FlagTable& flags, Options* o) {
  std::vector<std::string> flag_args;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i] == "-o" ? "--output" : args[i];
    if (!arg.starts_with("-")) {
      o->args.push_back(arg);
      continue;
    }
    flag_args.push_back(arg);
    const std::string name = arg.substr(arg.find_first_not_of('-'));
    const mz::Flag* flag = flags.Find(name.substr(0, name.find('=')));
    const bool takes_next = flag != nullptr && !flag->value_name.empty() &&
                            name.find('=') == std::string::npos && i + 1 < args.size();
    if (takes_next) flag_args.push_back(args[++i]);
  }
  return flags.Parse(flag_args);
}

int Failed(const Status& s) {
  std::cerr << "mizarmpctl: " << s.message() << "\n";
  return 1;
}

void Print(const Options& o, const json& doc, const ctl::Row& header,
           const std::vector<ctl::Row>& rows) {
  if (o.output == "json") {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << ctl::Table(header, rows);
  }
}

// ------------------------------------------------------------------------------- node commands

// Container ids are 64 hex digits under containerd, CRI-O and podman; tables show the first 12,
// as those runtimes' own tools do (JSON has them whole).
std::string ShortId(const std::string& id) { return id.size() > 12 ? id.substr(0, 12) : id; }

std::string PortCell(const ctl::AttachmentView& v) {
  if (!v.admin_state_up) return v.port_status;
  return v.port_status + (*v.admin_state_up ? "" : " (admin down)");
}

json AttachmentJson(const ctl::AttachmentView& v) {
  const mz::records::Record& r = v.record;
  json ips = json::array();
  for (const auto& ip : r.ips) ips.push_back(ip.address);
  return json{{"network", r.network},
              {"containerId", r.container_id},
              {"ifname", r.ifname},
              {"netns", r.netns},
              {"pod", r.pod_namespace.empty() ? "" : r.pod_namespace + "/" + r.pod_name},
              {"ips", ips},
              {"mac", r.mac},
              {"portId", r.port_id},
              {"complete", r.complete()},
              {"portStatus", v.port_status},
              {"portError", v.port_error},
              {"adminStateUp", v.admin_state_up ? json(*v.admin_state_up) : json()},
              {"netnsPresent", v.netns_present},
              {"interface", v.interface},
              {"stale", v.stale()}};
}

int ShowAttachments(const Options& o, bool only_stale) {
  auto source = ctl::ReadNodeSource(o.conflist);
  if (!source.ok()) return Failed(source.status());
  auto views = ctl::ListAttachments(*source);
  if (!views.ok()) return Failed(views.status());
  json doc = json::array();
  std::vector<ctl::Row> rows;
  for (const auto& v : *views) {
    if (only_stale && !v.stale()) continue;
    const auto& r = v.record;
    doc.push_back(AttachmentJson(v));
    rows.push_back({ShortId(r.container_id), r.ifname, r.ips.empty() ? "-" : r.ips[0].address,
                    r.pod_namespace.empty() ? "-" : r.pod_namespace + "/" + r.pod_name, r.port_id,
                    PortCell(v), v.netns_present ? v.interface : "gone", v.stale() ? "yes" : "no"});
  }
  Print(o, doc, {"CONTAINER", "IFNAME", "IP", "POD", "PORT", "MIZAR-MP", "INTERFACE", "STALE"},
        rows);
  return 0;
}

int CollectGarbage(const Options& o) {
  auto source = ctl::ReadNodeSource(o.conflist);
  if (!source.ok()) return Failed(source.status());
  auto views = ctl::ListAttachments(*source);
  if (!views.ok()) return Failed(views.status());
  std::vector<ctl::Removal> removals;
  if (o.dry_run) {
    for (const auto& v : *views) {
      if (v.stale()) removals.push_back({v.record, Status::Ok()});
    }
  } else {
    removals = ctl::RemoveStale(*source, *views);
  }
  json doc = json::array();
  std::vector<ctl::Row> rows;
  bool failed = false;
  for (const auto& removal : removals) {
    const auto& r = removal.record;
    const std::string result = !removal.status.ok() ? "failed: " + removal.status.message()
                               : o.dry_run          ? "would remove"
                                                    : "removed";
    failed = failed || !removal.status.ok();
    doc.push_back({{"containerId", r.container_id},
                   {"ifname", r.ifname},
                   {"portId", r.port_id},
                   {"result", result}});
    rows.push_back({ShortId(r.container_id), r.ifname, r.port_id, result});
  }
  Print(o, doc, {"CONTAINER", "IFNAME", "PORT", "RESULT"}, rows);
  return failed ? 1 : 0;
}

// ----------------------------------------------------------------------------- server commands

int Probe(const Options& o, ctl::AddonsClient& client) {
  auto info = client.Info();
  if (!info.ok()) return Failed(info.status());
  json doc = {{"name", info->name},         {"version", info->vendor_version},
              {"manifest", info->manifest}, {"capabilities", info->capabilities},
              {"ready", info->ready},       {"probeError", info->probe_error}};
  const auto mode = info->manifest.find("mode");
  std::vector<ctl::Row> rows = {
      {info->name, info->vendor_version, mode == info->manifest.end() ? "-" : mode->second,
       mz::Joined(info->capabilities, ","),
       info->ready ? "yes" : (info->probe_error.empty() ? "not yet" : info->probe_error)}};
  Print(o, doc, {"DRIVER", "VERSION", "MODE", "CAPABILITIES", "READY"}, rows);
  return info->ready ? 0 : 1;
}

int FenceClients(const Options& o, ctl::AddonsClient& client) {
  auto clients = client.FenceClients(o.host_id);
  if (!clients.ok()) return Failed(clients.status());
  json doc = json::array();
  std::vector<ctl::Row> rows;
  for (const auto& c : *clients) {
    doc.push_back({{"id", c.id}, {"addresses", c.cidrs}});
    rows.push_back({c.id, mz::Joined(c.cidrs, ",")});
  }
  Print(o, doc, {"NODE", "ADDRESSES"}, rows);
  return 0;
}

int Fences(const Options& o, ctl::AddonsClient& client) {
  auto fences = client.Fences();
  if (!fences.ok()) return Failed(fences.status());
  std::vector<ctl::Row> rows;
  for (const auto& cidr : *fences) rows.push_back({cidr});
  Print(o, json(*fences), {"FENCED CIDR"}, rows);
  return 0;
}

// fence --dry-run: what the controller finds inside the CIDRs, as a pass would.
int PreviewFence(const Options& o, ctl::AddonsClient& client) {
  auto ports = client.PreviewFence(o.args);
  if (!ports.ok()) return Failed(ports.status());
  json doc = json::array();
  std::vector<ctl::Row> rows;
  for (const ctl::PreviewedPort& p : *ports) {
    doc.push_back({{"portId", p.port_id},
                   {"ips", p.ips},
                   {"node", p.node},
                   {"pod", p.pod},
                   {"alreadyDown", p.down}});
    rows.push_back({p.port_id, mz::Joined(p.ips, ","), p.node.empty() ? "-" : p.node,
                    p.pod.empty() ? "-" : p.pod, p.down ? "yes" : "no"});
  }
  Print(o, doc, {"PORT", "ADDRESSES", "NODE", "POD", "ALREADY DOWN"}, rows);
  return 0;
}

int Audit(const Options& o, ctl::AddonsClient& client) {
  auto entries = client.Audit(static_cast<uint32_t>(o.limit));
  if (!entries.ok()) return Failed(entries.status());
  json doc = json::array();
  std::vector<ctl::Row> rows;
  for (const ctl::AuditRecord& e : *entries) {
    doc.push_back({{"sequence", e.sequence},
                   {"time", e.time},
                   {"action", e.action},
                   {"replica", e.replica},
                   {"requestId", e.request_id},
                   {"caller", e.caller},
                   {"cidrs", e.cidrs},
                   {"disabled", e.disabled},
                   {"enabled", e.enabled}});
    std::string ports;
    if (!e.disabled.empty()) ports = "down: " + mz::Joined(e.disabled, ",");
    if (!e.enabled.empty())
      ports += (ports.empty() ? "up: " : "; up: ") + mz::Joined(e.enabled, ",");
    rows.push_back({std::to_string(e.sequence), e.time, e.action,
                    e.action == "pass" ? e.replica : e.caller + " req=" + e.request_id,
                    mz::Joined(e.cidrs, ","), ports.empty() ? "-" : ports});
  }
  Print(o, doc, {"SEQ", "TIME", "ACTION", "BY", "CIDRS", "PORTS"}, rows);
  return 0;
}

int Nodes(const Options& o, ctl::AddonsClient& client) {
  auto listed = client.Nodes();
  if (!listed.ok()) return Failed(listed.status());
  json nodes = json::array();
  std::vector<ctl::Row> rows;
  for (const ctl::NodeInfo& n : listed->nodes) {
    nodes.push_back({{"node", n.node},
                     {"publishedAt", n.published_at},
                     {"live", n.live},
                     {"ports", n.ports},
                     {"enforces", n.enforced},
                     {"current", n.current}});
    const std::string enforces = n.enforced.empty() ? "-" : n.enforced;
    rows.push_back({n.node, n.live ? "yes" : "no (lapsed)", n.published_at, std::to_string(n.ports),
                    n.current ? enforces + " (current)" : enforces});
  }
  if (o.output == "table") std::cout << "standing fence set: " << listed->standing << "\n";
  Print(o, json{{"standing", listed->standing}, {"nodes", nodes}},
        {"NODE", "LIVE", "PUBLISHED", "PORTS", "ENFORCES"}, rows);
  return 0;
}

int ChangeFence(const Options& o, ctl::AddonsClient& client, bool fence) {
  if (fence && o.dry_run) return PreviewFence(o, client);
  Status s = fence ? client.Fence(o.args) : client.Unfence(o.args);
  if (!s.ok()) return Failed(s);
  const char* done = fence ? "fenced" : "unfenced";
  std::vector<ctl::Row> rows;
  for (const auto& cidr : o.args) rows.push_back({cidr, done});
  Print(o, json{{done, o.args}}, {"CIDR", "RESULT"}, rows);
  return 0;
}

// ---------------------------------------------------------------------------------- dispatch

struct Command {
  bool needs_server;
  bool needs_args;  // fence and unfence take their CIDRs; no other command takes an argument
  std::function<int(const Options&, ctl::AddonsClient*)> run;
};

const std::map<std::string, Command>& Commands() {
  static const std::map<std::string, Command> commands = {
      {"attachments", {false, false, [](auto& o, auto*) { return ShowAttachments(o, false); }}},
      {"stale", {false, false, [](auto& o, auto*) { return ShowAttachments(o, true); }}},
      {"gc", {false, false, [](auto& o, auto*) { return CollectGarbage(o); }}},
      {"probe", {true, false, [](auto& o, auto* c) { return Probe(o, *c); }}},
      {"fence-clients", {true, false, [](auto& o, auto* c) { return FenceClients(o, *c); }}},
      {"fences", {true, false, [](auto& o, auto* c) { return Fences(o, *c); }}},
      {"fence", {true, true, [](auto& o, auto* c) { return ChangeFence(o, *c, true); }}},
      {"unfence", {true, true, [](auto& o, auto* c) { return ChangeFence(o, *c, false); }}},
      {"audit", {true, false, [](auto& o, auto* c) { return Audit(o, *c); }}},
      {"nodes", {true, false, [](auto& o, auto* c) { return Nodes(o, *c); }}},
  };
  return commands;
}

int Usage(const Options& o, std::ostream& out, int code) {
  Options scratch = o;
  out << kUsage << Flags(&scratch).Help();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // The plugin code gc runs logs where its conflist says; everything else only to stderr.
  mz::log::SetTag("mizarmpctl");
  mz::log::SetLevel(mz::log::Level::kWarn);
  const std::vector<std::string> args(argv + 1, argv + argc);
  Options options;
  if (args.empty()) return Usage(options, std::cerr, 2);
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") return Usage(options, std::cout, 0);
  if (name == "--version") {
    std::cout << "mizarmpctl " << mz::Version() << " (" << mz::GitCommit() << ")\n";
    return 0;
  }
  const auto command = Commands().find(name);
  if (command == Commands().end()) {
    std::cerr << "mizarmpctl: unknown command " << mz::Quoted(name) << "; --help lists them\n";
    return 2;
  }
  const mz::FlagTable flags = Flags(&options);
  Status parsed = ParseArgs({args.begin() + 1, args.end()}, flags, &options);
  if (parsed.ok() && command->second.needs_args && options.args.empty()) {
    parsed = mz::InvalidArgumentError(name + " needs the CIDRs to change");
  } else if (parsed.ok() && !command->second.needs_args && !options.args.empty()) {
    parsed = mz::InvalidArgumentError(name + " takes no argument (got " +
                                      mz::Quoted(options.args[0]) + ")");
  }
  if (!parsed.ok()) {
    std::cerr << "mizarmpctl: " << parsed.message() << "\n";
    return 2;
  }
  if (!command->second.needs_server) return command->second.run(options, nullptr);
  auto client = ctl::AddonsClient::Connect(options.server);
  if (!client.ok()) return Failed(client.status());
  return command->second.run(options, &*client);
}
