// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/ovs_plug.h"

#include <map>

#include "common/log.h"
#include "netns/netns.h"
#include "ovsdb/ovsdb.h"

namespace mizarmp::cni {

namespace {

constexpr size_t kTapNameLength = 14;  // PORT_NAME_LEN, include/aca_util.h

Result<netns::Netlink> HostNetlink() {
  auto here = netns::Netns::Current();
  if (!here.ok()) return here.status().WithContext("opening the host's network namespace");
  return netns::Netlink::OpenIn(*here);
}

Result<ovsdb::Connection> OpenOvsdb(const records::OvsPlug& plug,
                                    std::chrono::milliseconds timeout) {
  auto db = ovsdb::Connection::Open(plug.socket, timeout);
  if (!db.ok()) {
    return db.status().WithContext("Open vSwitch database (is ovsdb-server running on this node?)");
  }
  return db;
}

Status CreateVeth(const records::OvsPlug& plug, const PodEnd& pod) {
  auto ns = netns::Netns::Open(pod.netns);
  if (!ns.ok()) return ns.status().WithContext("the pod's network namespace");
  MZ_ASSIGN_OR_RETURN(netns::Netlink nl, HostNetlink());
  // What an interrupted earlier ADD left (its pod end goes with it).
  MZ_RETURN_IF_ERROR(nl.DeleteLink(plug.port));
  MZ_RETURN_IF_ERROR(nl.CreateVeth(plug.port, pod.ifname, &*ns, pod.mac, pod.mtu));
  return nl.SetUp(plug.port);
}

}  // namespace

std::string AgentDeviceName(std::string_view port_id) {
  return std::string("tap").append(port_id).substr(0, kTapNameLength);
}

Status PlugIntoOvs(const records::OvsPlug& plug, const PodEnd& pod,
                   std::chrono::milliseconds ovsdb_timeout) {
  MZ_RETURN_IF_ERROR(CreateVeth(plug, pod));
  MZ_ASSIGN_OR_RETURN(ovsdb::Connection db, OpenOvsdb(plug, ovsdb_timeout));
  // The keys nova's os-vif writes, which OVS agents and operators look ports up by.
  const std::map<std::string, std::string> ids{
      {"iface-id", pod.port_id}, {"attached-mac", pod.mac}, {"iface-status", "active"}};
  Status added = ovsdb::AddPort(db, plug.bridge, plug.port, ids);
  if (!added.ok()) return added.WithContext("adding " + plug.port + " to bridge " + plug.bridge);
  MZ_LOG(kDebug) << "plugged " << plug.port << " into " << plug.bridge << " for port "
                 << pod.port_id;
  return Status::Ok();
}

Status UnplugFromOvs(const records::OvsPlug& plug, std::chrono::milliseconds ovsdb_timeout) {
  if (plug.empty()) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(ovsdb::Connection db, OpenOvsdb(plug, ovsdb_timeout));
  Status removed = ovsdb::DeletePort(db, plug.port);
  if (!removed.ok()) return removed.WithContext("removing " + plug.port + " from Open vSwitch");
  MZ_ASSIGN_OR_RETURN(netns::Netlink nl, HostNetlink());
  Status deleted = nl.DeleteLink(plug.port);
  if (!deleted.ok()) return deleted.WithContext("deleting the veth " + plug.port);
  MZ_LOG(kDebug) << "unplugged " << plug.port << " from " << plug.bridge;
  return Status::Ok();
}

Status HasOvsBridge(const records::OvsPlug& plug, std::chrono::milliseconds ovsdb_timeout) {
  MZ_ASSIGN_OR_RETURN(ovsdb::Connection db, OpenOvsdb(plug, ovsdb_timeout));
  MZ_ASSIGN_OR_RETURN(bool found, ovsdb::BridgeExists(db, plug.bridge));
  if (!found)
    return NotFoundError("Open vSwitch at " + plug.socket + " has no bridge " + plug.bridge);
  return Status::Ok();
}

Status CheckOvsPlug(const records::OvsPlug& plug, std::chrono::milliseconds ovsdb_timeout) {
  MZ_ASSIGN_OR_RETURN(ovsdb::Connection db, OpenOvsdb(plug, ovsdb_timeout));
  MZ_ASSIGN_OR_RETURN(std::optional<ovsdb::PortRow> row, ovsdb::FindPort(db, plug.port));
  if (!row) return NotFoundError("Open vSwitch has no port " + plug.port);
  if (row->bridge != plug.bridge) {
    return FailedPreconditionError("Open vSwitch port " + plug.port + " is on bridge \"" +
                                   row->bridge + "\", not on " + plug.bridge);
  }
  MZ_ASSIGN_OR_RETURN(netns::Netlink nl, HostNetlink());
  auto link = nl.GetLink(plug.port);
  if (!link.ok()) return link.status().WithContext("the pod's veth host end " + plug.port);
  return Status::Ok();
}

}  // namespace mizarmp::cni
