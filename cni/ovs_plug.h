// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Plug mode "ovs": on Alcor the plugin puts the pod's NIC in place itself, as nova does for a VM,
// because Alcor's host agent never does. Since alcor@d1869084 (schema/proto3/port.proto) the goal
// state the agent receives has no network_ns or veth_name; outside demo mode the agent
// (futurewei-cloud/alcor-control-agent, src/ovs/aca_ovs_l2_programmer.cpp create_port) only sets
// the VLAN tag of an OVS port it expects to find on br-int under "tap" + the port id, retrying
// until it appears, and reports the port ACTIVE after that. So ADD plugs before it waits.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"
#include "records/records.h"

namespace mizarmp::cni {

// "tap" + the port id, cut to 14 characters: the device Alcor's agent looks for
// (alcor-control-agent include/aca_util.h aca_get_port_name, TAP_PREFIX, PORT_NAME_LEN).
std::string AgentDeviceName(std::string_view port_id);

// The pod's end of the veth.
struct PodEnd {
  std::string netns;  // the pod's network namespace
  std::string ifname;
  std::string mac;  // the port's MAC, which the agent and the controller know the pod by
  int mtu = 0;      // 0: the kernel's default
  std::string port_id;
};

// Creates the veth pair (host end `plug.port` in the caller's namespace, pod end in the pod's
// namespace with the port's MAC), brings the host end up and adds it to `plug.bridge` with the
// external_ids nova sets (iface-id, attached-mac, iface-status). A host end left by an
// interrupted earlier attempt is replaced. On failure the caller unplugs (UnplugFromOvs).
Status PlugIntoOvs(const records::OvsPlug& plug, const PodEnd& pod,
                   std::chrono::milliseconds ovsdb_timeout);

// Removes the OVS port and then the veth (the pod end goes with its peer). Each one already gone
// is success, so DEL, GC and a failed ADD may all call it, any number of times; an empty plug
// (agent mode: nothing was plugged) is success at once.
Status UnplugFromOvs(const records::OvsPlug& plug, std::chrono::milliseconds ovsdb_timeout);

// Whether the node has `plug.bridge` in the OVS database at `plug.socket`: OK, or why not.
Status HasOvsBridge(const records::OvsPlug& plug, std::chrono::milliseconds ovsdb_timeout);

// For CHECK: the OVS port is on `plug.bridge` and the host end exists, as ADD left them.
Status CheckOvsPlug(const records::OvsPlug& plug, std::chrono::milliseconds ovsdb_timeout);

}  // namespace mizarmp::cni
