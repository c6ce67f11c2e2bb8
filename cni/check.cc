// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// CHECK: is the attachment still what ADD made? Compared in three steps, each against the
// record: the runtime's prevResult, the port at the controller, and the interface in the pod.
#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "cni/command.h"
#include "cni/ovs_plug.h"
#include "cni/result.h"
#include "common/ipaddr.h"
#include "netns/netns.h"

namespace mizarmp::cni {

using records::Record;
using records::RecordIp;

namespace {

class CheckCommand {
 public:
  explicit CheckCommand(Invocation& invocation)
      : inv_(invocation), env_(invocation.env()), conf_(invocation.conf()) {}

  Outcome Run() {
    if (conf_.prev_result.is_null()) {
      return Fail(InvalidConfig("CHECK needs \"prevResult\" in the configuration"));
    }
    auto prev = ResultFromJson(conf_.prev_result);
    if (!prev.ok()) return Fail(prev.status(), Stage::kConfig);
    if (StepError e = LoadRecord()) return Fail(std::move(*e));
    if (StepError e = CheckPrevResult(*prev)) return Fail(std::move(*e));
    if (StepError e = CheckPort()) return Fail(std::move(*e));
    if (StepError e = CheckInterface()) return Fail(std::move(*e));
    if (StepError e = CheckPlug()) return Fail(std::move(*e));
    return Ok();
  }

 private:
  CniError Mismatch(const std::string& what) const {
    return CheckMismatch(what, inv_.Attachment());
  }

  // The attachment's complete record, and the addresses it lists.
  StepError LoadRecord() {
    auto rec = inv_.ReadRecord();
    if (!rec.ok()) {
      if (rec.status().IsNotFound()) {
        return ContainerUnknown("no attachment of " + inv_.Attachment(),
                                "no record " + inv_.RecordPath());
      }
      return FromStatus(rec.status(), Stage::kStateDir);
    }
    if (rec->container_id != env_.container_id || rec->ifname != env_.ifname) {
      return ContainerUnknown("no attachment of " + inv_.Attachment(),
                              "record " + inv_.RecordPath() + " belongs to container " +
                                  rec->container_id + " interface " + rec->ifname);
    }
    if (!rec->complete()) {
      return ContainerUnknown("the attachment of " + inv_.Attachment() + " is incomplete",
                              "an ADD did not finish; record " + inv_.RecordPath());
    }
    record_ = std::move(rec).value();
    return std::nullopt;
  }

  // The record's addresses as CIDRs; a record whose address does not parse is an I/O failure.
  StepError ParseRecordAddresses() {
    for (const RecordIp& ip : record_.ips) {
      auto cidr = Cidr::Parse(ip.address);
      if (!cidr.ok()) {
        return FromStatus(cidr.status().WithContext("record " + inv_.RecordPath()),
                          Stage::kStateDir);
      }
      addresses_.push_back(*cidr);
    }
    return std::nullopt;
  }

  // 1. prevResult against the record: the interface, its MAC and its addresses.
  StepError CheckPrevResult(const AddResult& prev) {
    std::optional<int> index;
    for (size_t i = 0; i < prev.interfaces.size(); ++i) {
      const InterfaceResult& ir = prev.interfaces[i];
      if (ir.name == env_.ifname && (ir.sandbox.empty() || ir.sandbox == env_.netns)) {
        index = static_cast<int>(i);
        break;
      }
    }
    if (!index) return Mismatch("prevResult has no interface " + env_.ifname + " in " + env_.netns);
    const std::string prev_mac = AsciiLower(prev.interfaces[*index].mac);
    if (prev_mac != AsciiLower(record_.mac)) {
      return Mismatch("prevResult says " + env_.ifname + " has MAC " + prev_mac +
                      ", the attachment has " + record_.mac);
    }
    std::set<std::string> prev_ips;
    for (const IpResult& ip : prev.ips) {
      if (!ip.interface || *ip.interface == *index) prev_ips.insert(ip.address.ToString());
    }
    if (StepError e = ParseRecordAddresses()) return e;
    std::set<std::string> record_ips;
    for (const Cidr& a : addresses_) record_ips.insert(a.ToString());
    for (const std::string& a : record_ips) {
      if (!prev_ips.count(a)) return Mismatch("address " + a + " missing from prevResult");
    }
    for (const std::string& a : prev_ips) {
      if (!record_ips.count(a)) {
        return Mismatch("prevResult address " + a + " is not part of the attachment");
      }
    }
    return std::nullopt;
  }

  // 2. The port at the controller the record names: still there, ready, with the record's
  // addresses.
  StepError CheckPort() {
    auto controller = inv_.ControllerOf(record_);
    if (!controller.ok()) return FromStatus(controller.status(), Stage::kConfig);
    auto port = (*controller)->GetPort(record_.port_id);
    if (!port.ok()) {
      if (port.status().IsNotFound()) {
        return Mismatch("port " + record_.port_id + " no longer exists at the controller");
      }
      return FromStatus(port.status(), Stage::kController);
    }
    if (port->state() != client::PortState::kReady) {
      return Mismatch("port " + record_.port_id + " is " + port->status + ", not ready");
    }
    std::set<std::string> port_ips;
    for (const client::FixedIp& f : port->fixed_ips) {
      auto ip = IpAddress::Parse(f.ip_address);
      port_ips.insert(ip.ok() ? ip->ToString() : f.ip_address);
    }
    std::set<std::string> record_ips;
    for (const Cidr& a : addresses_) record_ips.insert(a.address().ToString());
    if (port_ips != record_ips) {
      return Mismatch("port " + record_.port_id + " has fixed IPs [" + Joined(port_ips, ",") +
                      "], the attachment has different ones");
    }
    return std::nullopt;
  }

  // 3. The interface in the pod: MAC, up, MTU, addresses and default routes.
  StepError CheckInterface() {
    auto state = netns::InspectInterface(env_.netns, env_.ifname);
    if (!state.ok()) {
      if (state.status().IsNotFound()) {
        return Mismatch(env_.ifname + " missing from " + env_.netns + ": " +
                        state.status().message());
      }
      return FromStatus(
          state.status().WithContext("inspecting " + env_.ifname + " in " + env_.netns),
          Stage::kNetns);
    }
    const std::string where = " " + env_.ifname + " in " + env_.netns;
    if (AsciiLower(state->link.mac) != AsciiLower(record_.mac)) {
      return Mismatch("MAC of" + where + " is " + state->link.mac + ", expected " + record_.mac);
    }
    if (!state->link.up) return Mismatch(env_.ifname + " in " + env_.netns + " is down");
    if (conf_.mtu > 0 && state->link.mtu != conf_.mtu) {
      return Mismatch("MTU of" + where + " is " + std::to_string(state->link.mtu) + ", expected " +
                      std::to_string(conf_.mtu));
    }
    for (size_t i = 0; i < addresses_.size(); ++i) {
      if (std::find(state->addresses.begin(), state->addresses.end(), addresses_[i]) ==
          state->addresses.end()) {
        return Mismatch("address " + addresses_[i].ToString() + " missing from" + where);
      }
      if (StepError e = CheckDefaultRoute(*state, record_.ips[i].gateway, where)) return e;
    }
    return std::nullopt;
  }

  // 4. In plug mode, the OVS port on its bridge and the veth's host end, where ADD put them.
  StepError CheckPlug() const {
    if (record_.ovs.empty()) return std::nullopt;
    Status s = CheckOvsPlug(record_.ovs, conf_.request_timeout);
    if (s.ok()) return std::nullopt;
    if (s.IsNotFound() || s.code() == Code::kFailedPrecondition) return Mismatch(s.message());
    return FromStatus(s, Stage::kNetns);
  }

  // The default route via `gateway` (if the record has one that parses) is on the interface.
  StepError CheckDefaultRoute(const netns::InterfaceState& state, const std::string& gateway,
                              const std::string& where) const {
    if (gateway.empty()) return std::nullopt;
    auto gw = IpAddress::Parse(gateway);
    if (!gw.ok()) return std::nullopt;
    for (const netns::RouteInfo& r : state.routes) {
      if (r.dst.prefix_len() == 0 && r.dst.address().family() == gw->family() && r.gateway &&
          *r.gateway == *gw) {
        return std::nullopt;
      }
    }
    return Mismatch("default route via " + gw->ToString() + " missing from" + where);
  }

  Invocation& inv_;
  const Env& env_;
  const NetConf& conf_;
  Record record_;
  std::vector<Cidr> addresses_;  // record_.ips[i].address parsed, same order
};

}  // namespace

Outcome CmdCheck(Invocation& invocation) { return CheckCommand(invocation).Run(); }

}  // namespace mizarmp::cni
