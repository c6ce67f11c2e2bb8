// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's Mizar-MP controller (private to mock-server/): one project with its IPv4 (and
// optional IPv6) subnet, the port table, address and MAC allocation, port readiness, and the host
// agent that plugs a veth for each port going ready. No HTTP: the routes (routes.h) turn
// requests into calls here and the Status codes below into HTTP answers.
//
// Every public method is thread-safe. Port documents are JSON in the options' dialect.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/ipaddr.h"
#include "common/mutex.h"
#include "common/status.h"
#include "mizarmp-client/types.h"
#include "mock-server/agent.h"
#include "mock-server/mock.h"
#include "mock-server/ovs_agent.h"
#include "mock-server/pool.h"
#include "mock-server/port.h"

namespace mizarmp::mock {

class Model {
 public:
  // Checks the project, subnet and readiness options and opens the agent's namespace (when
  // options.agent); nothing is set up yet. INVALID_ARGUMENT naming the bad option.
  static Result<std::unique_ptr<Model>> Create(const Options& options);
  ~Model();  // Stop()

  // Sets up the agent's bridge and starts the timer that moves pending ports on.
  Status Start();
  // Stops the timer and removes every veth and the bridge the agent created; the port table
  // stays. Idempotent.
  void Stop();

  // Creates the ports of a create request, all or none: `items` is the array of port objects,
  // named "ports[i]" in errors when `bulk`, else "port". `faults` decides whether the new ports
  // never get ready or fail. Returns their documents. INVALID_ARGUMENT (bad item),
  // ALREADY_EXISTS (id taken), NOT_FOUND (another controller's network), UNAVAILABLE (subnet or
  // MAC range full).
  Result<std::vector<nlohmann::json>> CreatePorts(const nlohmann::json& items, bool bulk,
                                                  const Faults& faults);
  // The port's document; moves it on first if it is due, then counts this read toward
  // gets_before_ready. NOT_FOUND "port ID not found".
  Result<PortText> GetPort(const std::string& id);
  // The document of every port matching `filters` (see MatchesQuery), in creation order; moves
  // every due port on first. Whole documents are shared with the ports, not copied, and the list
  // is written out after the model's lock is released; with `fields`, only those members
  // (Projection).
  std::vector<PortText> ListPorts(const std::multimap<std::string, std::string>& filters,
                                  const std::vector<std::string>& fields);
  // Applies a PUT's port fields and returns the document; a changed admin_state_up is applied
  // to the agent's host end. NOT_FOUND, INVALID_ARGUMENT (see ApplyUpdate), INTERNAL with the
  // agent's message when the host end cannot be set.
  Result<PortText> UpdatePort(const std::string& id, const nlohmann::json& patch);
  // Deletes the port, its addresses and its veth (or queues the veth for the agent, with
  // options.agent_unplugs_later). NOT_FOUND "port ID not found".
  Status DeletePort(const std::string& id);
  // Deletes every port and veth; returns how many ports there were.
  size_t DeleteAllPorts();

  // The subnet with that id; NOT_FOUND "subnet ID not found".
  Result<client::Subnet> Subnet(const std::string& id) const;
  // IPv4 first, then IPv6 when configured.
  std::vector<client::Subnet> Subnets() const;

  struct Usage {
    size_t ports = 0;
    std::vector<std::string> allocated;  // every address handed out, IPv4 first
    size_t agent_backlog = 0;            // veths of deleted ports not removed yet
    size_t agent_waiting = 0;            // OVS agent: ports waiting for their OVS port
    std::map<std::string, int> vlans;    // OVS agent: port id -> the tag it set
  };
  Usage usage() const;
  // How many ports the table holds. Unlike usage(), it copies no address: /metrics may be
  // scraped every second while the mock holds 10,000 ports.
  size_t port_count() const;
  std::vector<PortSummary> Summaries() const;  // in creation order

  bool has_agent() const { return agent_ != nullptr || ovs_ != nullptr; }
  // The agent's bridge: Options::bridge, or the default of the agent in use.
  static std::string BridgeOf(const Options& options);
  const Cidr& cidr4() const { return cidr4_; }

 private:
  explicit Model(const Options& options);
  // Parses the options' IPv4 (and IPv6) subnet into the CIDRs, gateways and pools below.
  Status SetUpSubnets() MZ_REQUIRES(mu_);
  // Of the subnet's settings, fixed once Create() returns.
  client::Subnet SubnetDocument(bool six) const;

  // --- under mu_ ---
  Result<PortRecord> BuildPort(const nlohmann::json& item, const std::string& where,
                               const std::set<std::string>& batch_ids) MZ_REQUIRES(mu_);
  Result<std::vector<client::FixedIp>> TakeAddresses(const std::vector<client::FixedIp>& requested,
                                                     const std::string& where, Lease& lease)
      MZ_REQUIRES(mu_);
  // Sets the phase and keeps waiting_ in step with it.
  void SetPhase(PortRecord& r, Phase phase) MZ_REQUIRES(mu_);
  bool Due(const PortRecord& r, std::chrono::steady_clock::time_point now) const MZ_REQUIRES(mu_);
  std::string ReserveHostName(const std::string& port_id) MZ_REQUIRES(mu_);
  void WakeTimer() MZ_REQUIRES(mu_);

  // --- readiness: each takes mu_ itself, for as little as it can ---
  void TimerLoop() MZ_EXCLUDES(mu_);
  void Activate(const std::string& id) MZ_EXCLUDES(mu_);
  std::optional<PlugRequest> BeginActivation(const std::string& id, uint64_t* seq) MZ_EXCLUDES(mu_);
  void FinishActivation(const std::string& id, uint64_t seq, const PlugRequest& request,
                        const Status& plugged) MZ_EXCLUDES(mu_);
  // The OVS agent's worker's answer for the port: its VLAN (recorded) and then the same
  // FinishActivation as a plugged veth.
  void FinishOvsActivation(const std::string& id, uint64_t seq, const PlugRequest& request,
                           const Result<int>& vlan) MZ_EXCLUDES(mu_);
  Status SyncAdmin(const std::string& id) MZ_EXCLUDES(mu_, admin_mu_);
  // Removes a host end (logging a failure, prefixed by `context`) and frees its name.
  void Unplug(const std::string& host_name, const std::string& context) MZ_EXCLUDES(mu_);
  // A deleted port's host end: removed now, or queued for the timer thread when the agent
  // unplugs later.
  void UnplugDeleted(const std::string& host_name, const std::string& context) MZ_EXCLUDES(mu_);
  // Removes every queued host end, in the order they were queued.
  void DrainUnplugs() MZ_EXCLUDES(mu_, drain_mu_);

  const Options options_;
  Cidr cidr4_;
  IpAddress gateway4_;
  std::optional<Cidr> cidr6_;
  IpAddress gateway6_;
  Networks networks_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<OvsAgent> ovs_;  // Alcor's agent on OVS (Options::agent_ovsdb) instead
  std::thread timer_;

  // Everything below is guarded by mu_. The pools come before the ports: a port's lease gives
  // its addresses back to them when the port goes.
  mutable Mutex mu_;
  std::condition_variable cv_;  // wakes the timer
  bool started_ MZ_GUARDED_BY(mu_) = false;
  bool stopping_ MZ_GUARDED_BY(mu_) = false;
  bool kicked_ MZ_GUARDED_BY(mu_) = false;
  AddressPool pool4_ MZ_GUARDED_BY(mu_);
  std::optional<AddressPool> pool6_ MZ_GUARDED_BY(mu_);
  MacPool macs_ MZ_GUARDED_BY(mu_){0};
  std::set<std::string> host_names_ MZ_GUARDED_BY(mu_);  // reserved host-end names
  std::map<std::string, PortRecord> ports_ MZ_GUARDED_BY(mu_);
  // The ports the timer may still move on (pending and not held by never_ready): the timer
  // walks these, not every port, so creating the n-th port costs the same as the first.
  std::set<std::string> waiting_ MZ_GUARDED_BY(mu_);
  uint64_t next_seq_ MZ_GUARDED_BY(mu_) = 1;
  // Host ends of deleted ports, oldest first.
  std::deque<std::string> unplugs_ MZ_GUARDED_BY(mu_);
  size_t unplugging_ MZ_GUARDED_BY(mu_) = 0;  // taken off unplugs_ and being removed

  // One drainer at a time, so removals keep their order; taken before mu_.
  Mutex drain_mu_ MZ_ACQUIRED_BEFORE(mu_);

  // Serialises applying admin_state_up to links; taken before mu_.
  Mutex admin_mu_ MZ_ACQUIRED_BEFORE(mu_);
};

}  // namespace mizarmp::mock
