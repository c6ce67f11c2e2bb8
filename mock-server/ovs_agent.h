// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's host agent on Open vSwitch (private to mock-server/), as Alcor's host agent
// (futurewei-cloud/alcor-control-agent) runs outside demo mode: it places no NIC. Nova (or a
// test, or the CNI plugin) creates the device and its OVS port; the agent waits for the port
// named after the Alcor port and sets the access VLAN of the port's VPC on it.
//
//   include/aca_util.h               aca_get_port_name: "tap" + port id, cut to 14 characters
//   src/ovs/aca_ovs_l2_programmer.cpp create_port: "set port <name> tag=<vlan>", retried by a
//                                    background thread (aca_set_port_vlan_workitem) every
//                                    PORT_SCAN_SLEEP_INTERVAL (1 s), MAX_PORT_SCAN_RETRY (300)
//                                    times (include/aca_config.h); delete_port leaves the OVS
//                                    port alone (nova removes it)
//   src/ovs/aca_vlan_manager.cpp      get_or_create_vlan_id: one VLAN per VPC, from a counter
//                                    starting at 1 (include/aca_vlan_manager.h)
//   src/dp_abstraction/aca_dataplane_ovs.cpp update_port_state_workitem: "TODO: handle
//                                    admin_state_up = false": the agent does not enforce it
//
// Where the agent polls once a second, this one waits with an RFC 7047 "wait" operation, so
// ovsdb-server answers the moment the port appears; the 300 s bound is the same.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "netns/netns.h"
#include "ovsdb/ovsdb.h"

namespace mizarmp::mock {

// The agent's VLAN per VPC: the first VPC seen gets 1, the next 2, and so on; a VPC keeps its
// VLAN. RESOURCE_EXHAUSTED past 4094. Thread-safe.
class VlanAllocator {
 public:
  Result<int> For(const std::string& vpc_id);

 private:
  Mutex mu_;
  std::map<std::string, int> vlans_ MZ_GUARDED_BY(mu_);
  int next_ MZ_GUARDED_BY(mu_) = 1;  // aca_vlan_manager.h: current_available_vlan_id(1)
};

class OvsAgent {
 public:
  // aca_config.h: MAX_PORT_SCAN_RETRY x PORT_SCAN_SLEEP_INTERVAL.
  static constexpr std::chrono::milliseconds kPortWait{300 * 1000};

  // The OVS port name of an Alcor port (aca_get_port_name).
  static std::string PortName(const std::string& port_id);

  // INVALID_ARGUMENT for an empty socket or bridge name.
  static Result<std::unique_ptr<OvsAgent>> Create(const std::string& ovsdb_socket,
                                                  const std::string& bridge);
  ~OvsAgent();  // Stop()

  // Checks that ovsdb-server answers and has the bridge (UNAVAILABLE, NOT_FOUND otherwise).
  Status Start();
  // Cancels every wait and joins every worker; no callback runs afterwards. Idempotent.
  void Stop();

  // Called once the port is tagged (its VLAN), or with the error that stopped it. Runs on the
  // worker thread; never when the wait was cancelled or gave up after kPortWait.
  using Done = std::function<void(Result<int> vlan)>;
  // Starts a worker that waits for the port's OVS port and tags it with the VPC's VLAN.
  // `key` names the wait for Cancel (the model's port seq: unique, unlike a re-created id).
  void Watch(uint64_t key, const std::string& port_id, const std::string& vpc_id, Done done);
  // Stops the wait under `key` (its port was deleted) and joins its worker: nothing is tagged
  // afterwards. Unknown keys are ignored.
  void Cancel(uint64_t key) MZ_EXCLUDES(mu_);
  void CancelAll() MZ_EXCLUDES(mu_);
  size_t waiting() const;  // workers not finished yet

  // admin_state_up of a ready port: only recorded, as the real agent does (the node agent's
  // cut, fence/link_cutter.h, is what acts on a fence).
  Status SetAdmin(const std::string& port_name, bool up);

 private:
  // Its flags are under the agent's mu_ (a Worker has no lock of its own).
  struct Worker {
    std::thread thread;
    bool cancelled MZ_GUARDED_BY(&OvsAgent::mu_) = false;
    bool finished MZ_GUARDED_BY(&OvsAgent::mu_) = false;
    // While the worker uses it.
    ovsdb::Connection* connection MZ_GUARDED_BY(&OvsAgent::mu_) = nullptr;
  };

  OvsAgent() = default;
  void Run(Worker* worker, std::string port_id, std::string vpc_id, Done done) MZ_EXCLUDES(mu_);
  // Joins the workers that finished by themselves (under no lock).
  void Reap() MZ_EXCLUDES(mu_);

  std::string socket_;
  std::string bridge_;
  VlanAllocator vlans_;

  mutable Mutex mu_;
  bool stopping_ MZ_GUARDED_BY(mu_) = false;
  std::map<uint64_t, std::unique_ptr<Worker>> workers_ MZ_GUARDED_BY(mu_);
};

}  // namespace mizarmp::mock
