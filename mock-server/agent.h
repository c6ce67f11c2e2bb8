// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's host agent (private to mock-server/): the bridge holding the gateway, and one veth
// pair per ready port whose pod end sits in the port's network namespace.
//
// Every operation opens its own netlink socket inside the agent namespace (Netlink is not
// thread-safe and the HTTP server answers from a thread pool); the process never changes
// namespace.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/ipaddr.h"
#include "common/status.h"
#include "netns/netns.h"

namespace mizarmp::mock {

struct PlugRequest {
  std::string port_id;
  std::string host_name;   // host end, in the agent namespace
  std::string netns_path;  // the pod's namespace
  std::string veth_name;   // pod end
  std::string mac;         // pod end
  bool admin_up = true;    // host end up or down
};

class Agent {
 public:
  // `netns_path` empty: the namespace the calling thread is in now.
  static Result<std::unique_ptr<Agent>> Create(const std::string& netns_path,
                                               const std::string& bridge, int mtu);

  // Creates the bridge unless present, gives it the gateway addresses, brings it up.
  Status SetUpBridge(const Cidr& gateway4, const std::optional<Cidr>& gateway6);
  // Removes the bridge if SetUpBridge created it.
  Status TearDownBridge();

  // Creates the pair, enslaves the host end to the bridge and sets its admin state. On failure
  // nothing is left behind.
  Status Plug(const PlugRequest& request);
  // Sets the host end administratively up or down.
  Status SetAdmin(const std::string& host_name, bool up);
  Status Unplug(const std::string& host_name);  // absent is success

 private:
  Agent() = default;
  Result<netns::Netlink> Open() const;

  std::optional<netns::Netns> ns_;
  std::string ns_label_;
  std::string bridge_;
  int mtu_ = 1500;
  bool created_bridge_ = false;
};

}  // namespace mizarmp::mock
