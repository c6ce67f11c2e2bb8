// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-mock: a Mizar-MP controller and host-agent simulator over HTTP (cpp-httplib).
// Used by the tests, the benchmarks and the one-box demo; never in production.
//
// With Options::strict the REST API is the real controller's of that generation instead
// (strict.h). Otherwise, the seed README's (both dialects), under /project/{project}:
//   POST   /ports            {"port":{...}} -> 201 {"port":{...}};  {"ports":[...]} -> 201 bulk
//   POST   /ports/bulk       {"ports":[...]} -> 201 {"ports":[...]}   (Alcor)
//   GET    /ports/{id}       -> 200 {"port":{...}}; unknown: v0.1 200 {"port":null}, Alcor 404
//   GET    /ports?k=v        -> 200 {"ports":[...]} filtered on any top-level field, e.g.
//                            binding:host_id; fields=NAME (once per member) answers only
//                            those members of each port, as Neutron and Alcor do
//   PUT    /ports/{id}       {"port":{fields}} -> 200 {"port":{...}}; admin_state_up=false
//                            takes the host end of the agent's veth down, true brings it up
//   DELETE /ports/{id}       -> 200 (v0.1: also for unknown ids) / 404 unknown (Alcor)
//   GET    /subnets          -> 200 {"subnets":[...]}
//   GET    /subnets/{id}     -> 200 {"subnet":{...}} / 404
// Control endpoints (not part of Mizar-MP):
//   GET  /mock/state         {"ports":N, "allocated":[ips], "requests":N, "response_bytes":N
//                            (the REST answers' bodies), "faults":{...}}; with the OVS agent also "agent_waiting":N (ports whose OVS port it
//                            waits for) and "vlans":{port id: tag it set}
//   GET  /mock/faults        {"faults":{...}}
//   POST /mock/faults        a Faults document (fields below, snake_case); replaces the faults
//   GET  /mock/requests      the journal of port updates (every PUT /ports/{id}, the only update
//                            route of both dialects; the newest journal_capacity), oldest first:
//                            {"updates":[{"seq":1,"port":ID,"admin_state_up":false,
//                            "user_agent":UA,"status":200},...]}; admin_state_up is what the
//                            request asked for (left out when it did not), status what the mock
//                            answered (0: connection closed by the close_connections fault)
//   POST /mock/reset         drops every port (tearing down the agent's veths), every fault and
//                            the journal (seq starts again at 1)
//   GET  /metrics            Prometheus' text format: mizarmp_mock_requests_total and
//                            mizarmp_mock_response_bytes_total (/mock/state's requests and
//                            response_bytes), mizarmp_mock_ports, mizarmp_mock_port_updates_total
//                            {code} (each PUT /ports/{id} by the status answered; "closed" for
//                            the journal's 0) and mizarmp_mock_fault_active{fault} (1 while that
//                            fault is in force); /mock/reset leaves the counters as they are
//   GET  /healthz            200 "ok"
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace mizarmp::mock {

enum class Dialect { kV01, kAlcor };

// The generation a name ("v0.1", "alcor") gives, read by the client's parser
// (client::ParseDialect), so the mock and every configuration spell the names alike.
// INVALID_ARGUMENT for any other name, "auto" included: the mock plays one generation.
Result<Dialect> ParseDialect(std::string_view name);
// "v0.1" or "alcor", as the client names the generation (client::DialectName).
const char* DialectName(Dialect dialect);

struct Faults {
  int fail_creates = 0;       // the next N creates answer 500 (and create nothing)
  int fail_deletes = 0;       // the next N deletes answer 500 (and delete nothing)
  int fail_gets = 0;          // the next N GET port answer 503
  bool never_ready = false;   // ports created from now on stay pending
  bool fail_ready = false;    // ports created from now on go to failed/ERROR instead of ready
  int delay_ms = 0;           // every REST response is delayed this long
  int close_connections = 0;  // the next N REST requests get their connection closed, no response
  int truncate_json = 0;      // the next N REST responses carry truncated JSON
  int reject_creates = 0;     // the next N creates answer 400 (the request is refused)
  // Every port list (until changed) carries N extra entries "malformed-1".."malformed-N" after
  // the real ports, each with a wrong-typed field (admin_state_up "yes", fixed_ips an object):
  // a controller answering a list with holes.
  int malformed_ports = 0;
  // PUT ports/{id} (until changed) makes the update and answers 204 No Content, without a body,
  // as some controllers do.
  bool update_no_content = false;
  int reject_updates = 0;  // the next N PUT ports/{id} answer 400 (and change nothing)
  // Port lists (until changed) answer whole documents whatever `fields` asks for, as a
  // controller without field selection does.
  bool ignore_fields = false;
  // The next N creates are made, then their connection is closed without an answer: a POST
  // whose answer was lost after the controller stored the port.
  int lose_create_answers = 0;
};

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: pick a free port; see MockServer::port()
  Dialect dialect = Dialect::kV01;
  // The REST surface of the real controller of that generation (strict.h: v0.1 at alcor@5ca01ef0,
  // Alcor at alcor@21f11b5c) rather than the seed README's: no port list in v0.1, whole-record
  // updates, Spring error bodies, Alcor's placeholders and project-less list, and so on.
  bool strict = false;
  // Strict Alcor refuses a port list of this many rows or more with a 500
  // (IgniteClientDbCache.RESULT_THRESHOLD_SIZE).
  int row_limit = 100000;
  std::string project_id = "3dda2801-d675-4688-a63f-dcda8d327f50";
  std::string vpc_id = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038";
  std::string subnet_id = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
  std::string cidr = "10.240.0.0/16";
  std::string gateway;  // default: first usable address of cidr
  // Optional IPv6 subnet: when set, every port also gets an address from it.
  std::string subnet6_id;
  std::string cidr6;
  std::chrono::milliseconds ready_delay{0};  // pending -> ready this long after create
  int gets_before_ready = 0;                 // ...and not before this many GETs of the port
  // Host agent: when enabled, a port becoming ready first gets a veth pair whose pod end is
  // moved into the port's network_ns, named veth_name, carrying the port's MAC, and whose host
  // end is plugged into `bridge`, which holds the gateway address.
  bool agent = false;
  // The agent's bridge; empty: "mzbr0" for the veth agent, "br-int" for the OVS agent
  // (alcor-control-agent's integration bridge).
  std::string bridge;
  std::string agent_netns;  // where the bridge and host ends live; empty: the mock's own netns
  int mtu = 1500;
  // When set, a deleted port's veth is removed by the agent after the DELETE is answered, as a
  // controller that hands the work to its host agents answers: the kernel's veth teardown (some
  // 17 ms of RCU grace periods) is then not in the answer. The agent keeps its order: a port
  // going ready is plugged only after every removal asked for before it, so a pod that gets
  // eth0 again never finds the old one in the way. /mock/state's "agent_backlog" counts the
  // removals still to do.
  bool agent_unplugs_later = false;
  // Alcor's host agent on Open vSwitch (futurewei-cloud/alcor-control-agent outside demo mode;
  // mock-server/ovs_agent.h), talking to ovsdb-server at this socket; non-empty turns it on.
  // Only with strict Alcor, and not with `agent`: it places no NIC. A port stays pending
  // (no status) until an OVS port named "tap" + the port id's first 11 characters appears on
  // `bridge` (made by nova, a test or the CNI plugin); the agent then sets the access VLAN of
  // the port's VPC on it (one per VPC, counted from 1) and the port becomes ACTIVE. Deleting
  // the port leaves the OVS port alone, as the agent does, and admin_state_up is only recorded
  // (aca_dataplane_ovs.cpp: "TODO: handle admin_state_up = false").
  std::string agent_ovsdb;
  // TLS: serve HTTPS when cert and key are set; require client certs signed by client_ca if set.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // When set, every REST request must carry "Authorization: Bearer <token in this file>"; in
  // strict Alcor "X-Auth-Token: <token>", as Alcor's API gateway wants with Keystone on
  // (services/api_gateway KeystoneAuthGwFilter; 401 without a body otherwise). Strict v0.1 has
  // no authentication, and refuses a token file.
  std::string token_file;
  // How many port updates GET /mock/requests keeps (the newest; some 200 bytes each). A long run
  // that wants the mock's memory flat from early on (the soak) keeps few.
  int journal_capacity = 100000;
  Faults faults;  // initial faults
  bool verbose = false;
};

struct PortSummary {
  std::string id;
  std::string host_id;
  std::string status;
  bool admin_state_up = true;
  std::vector<std::string> ips;
  std::string mac;
  std::string host_veth;  // the agent's host-side interface, empty without the agent
  int vlan = 0;           // the OVS agent's tag on the port's OVS port; 0 before (or without)
};

class MockServer {
 public:
  static Result<std::unique_ptr<MockServer>> Create(Options options);
  ~MockServer();  // stops and tears everything down (ports, veths, bridge it created)

  Status Start();  // binds and serves on a background thread; returns once listening
  void Stop();
  int port() const;
  std::string base_url() const;  // "http://127.0.0.1:PORT" (https:// with TLS)

  // For tests: the faults to inject and the ports the model holds, in-process. The mock's
  // users reach both over its HTTP control endpoints; a test that embeds the mock asks
  // directly, without a client of those endpoints.
  void SetFaults(const Faults& faults);
  std::vector<PortSummary> Ports() const;
  uint64_t requests() const;     // REST requests served (control endpoints excluded)
  uint64_t response_bytes() const;  // the bodies of their answers, in bytes
  size_t agent_backlog() const;  // veths of deleted ports the agent has yet to remove
  size_t agent_waiting() const;  // OVS agent: ports whose OVS port it still waits for

 private:
  MockServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mizarmp::mock
