// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/agent.h"

#include "common/log.h"

namespace mizarmp::mock {

using netns::Netlink;
using netns::Netns;

Result<std::unique_ptr<Agent>> Agent::Create(const std::string& netns_path,
                                             const std::string& bridge, int mtu) {
  if (bridge.empty() || bridge.size() > 15) {
    return InvalidArgumentError("agent bridge name \"" + bridge +
                                "\" must be 1 to 15 characters long");
  }
  if (mtu < 68 || mtu > 65535) {
    return InvalidArgumentError("agent mtu " + std::to_string(mtu) + " is outside 68..65535");
  }
  std::unique_ptr<Agent> a(new Agent());
  a->bridge_ = bridge;
  a->mtu_ = mtu;
  if (netns_path.empty()) {
    auto ns = Netns::Current();
    if (!ns.ok()) return ns.status().WithContext("agent: opening the current network namespace");
    a->ns_.emplace(std::move(ns).value());
    a->ns_label_ = "the mock's own network namespace";
  } else {
    auto ns = Netns::Open(netns_path);
    if (!ns.ok()) return ns.status().WithContext("agent: opening agent netns " + netns_path);
    a->ns_.emplace(std::move(ns).value());
    a->ns_label_ = "netns " + netns_path;
  }
  return a;
}

Result<Netlink> Agent::Open() const {
  auto nl = Netlink::OpenIn(*ns_);
  if (!nl.ok()) return nl.status().WithContext("agent: netlink in " + ns_label_);
  return nl;
}

Status Agent::SetUpBridge(const Cidr& gateway4, const std::optional<Cidr>& gateway6) {
  MZ_ASSIGN_OR_RETURN(Netlink nl, Open());
  auto link = nl.GetLink(bridge_);
  if (link.ok()) {
    if (link->kind != "bridge") {
      return FailedPreconditionError("agent: link " + bridge_ + " in " + ns_label_ +
                                     " exists and is a \"" + link->kind + "\", not a bridge");
    }
    created_bridge_ = false;
  } else if (link.status().IsNotFound()) {
    Status st = nl.CreateBridge(bridge_);
    if (!st.ok()) return st.WithContext("agent: creating bridge " + bridge_ + " in " + ns_label_);
    created_bridge_ = true;
  } else {
    return link.status().WithContext("agent: looking up bridge " + bridge_);
  }
  Status st = nl.AddAddress(bridge_, gateway4);
  if (st.ok() && gateway6.has_value()) st = nl.AddAddress(bridge_, *gateway6);
  if (st.ok()) st = nl.SetUp(bridge_, true);
  if (!st.ok()) {
    Status out = st.WithContext("agent: configuring bridge " + bridge_ + " in " + ns_label_);
    if (created_bridge_) {
      (void)nl.DeleteLink(bridge_);
      created_bridge_ = false;
    }
    return out;
  }
  MZ_LOG(kInfo) << "agent: bridge " << bridge_ << " up in " << ns_label_ << " with "
                << gateway4.ToString() << (gateway6 ? " and " + gateway6->ToString() : "")
                << (created_bridge_ ? " (created)" : " (already present)");
  return Status::Ok();
}

Status Agent::TearDownBridge() {
  if (!created_bridge_) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(Netlink nl, Open());
  Status st = nl.DeleteLink(bridge_);
  if (!st.ok()) return st.WithContext("agent: deleting bridge " + bridge_);
  created_bridge_ = false;
  MZ_LOG(kInfo) << "agent: bridge " << bridge_ << " removed from " << ns_label_;
  return Status::Ok();
}

Status Agent::Plug(const PlugRequest& r) {
  const std::string what = "agent: port " + r.port_id;
  if (r.netns_path.empty()) {
    return InvalidArgumentError(what + " has no network_ns to place " + r.veth_name + " in");
  }
  auto pod = Netns::Open(r.netns_path);
  if (!pod.ok()) return pod.status().WithContext(what + ": network_ns " + r.netns_path);
  MZ_ASSIGN_OR_RETURN(Netlink nl, Open());
  Status st = nl.CreateVeth(r.host_name, r.veth_name, &*pod, r.mac, mtu_);
  if (!st.ok()) {
    return st.WithContext(what + ": creating veth " + r.host_name + " <-> " + r.veth_name + " in " +
                          r.netns_path);
  }
  st = nl.SetMaster(r.host_name, bridge_);
  if (st.ok()) st = nl.SetUp(r.host_name, r.admin_up);
  if (!st.ok()) {
    (void)nl.DeleteLink(r.host_name);
    return st.WithContext(what + ": plugging " + r.host_name + " into bridge " + bridge_);
  }
  MZ_LOG(kInfo) << what << ": " << r.host_name << " on " << bridge_ << " <-> " << r.veth_name
                << " (" << r.mac << ") in " << r.netns_path;
  return Status::Ok();
}

Status Agent::SetAdmin(const std::string& host_name, bool up) {
  MZ_ASSIGN_OR_RETURN(Netlink nl, Open());
  Status st = nl.SetUp(host_name, up);
  if (!st.ok()) return st.WithContext("agent: setting " + host_name + (up ? " up" : " down"));
  MZ_LOG(kInfo) << "agent: " << host_name << (up ? " up" : " down");
  return Status::Ok();
}

Status Agent::Unplug(const std::string& host_name) {
  MZ_ASSIGN_OR_RETURN(Netlink nl, Open());
  Status st = nl.DeleteLink(host_name);
  if (!st.ok()) return st.WithContext("agent: deleting " + host_name);
  MZ_LOG(kDebug) << "agent: " << host_name << " removed";
  return Status::Ok();
}

}  // namespace mizarmp::mock
