// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// ADD: create the attachment's port at the controller, wait until it is ready, configure the
// interface in the pod's namespace, record the attachment and print the result. In plug mode
// "ovs" (Alcor) the plugin plugs the pod into Open vSwitch between the create and the wait,
// as Alcor's agent only reports a port whose device it finds (cni/ovs_plug.h).
//
// The record is written as an intent (port id first) before the controller is asked for
// anything, so a crash at any point leaves something DEL or GC can finish; every failure after
// that deletes the port and the record before it is reported.
#include <array>
#include <map>
#include <optional>

#include "cni/attachment.h"
#include "cni/command.h"
#include "cni/ovs_plug.h"
#include "cni/result.h"
#include "common/ipaddr.h"
#include "common/log.h"
#include "netns/netns.h"

namespace mizarmp::cni {

using records::Record;
using records::RecordIp;

namespace {

// A controller answer that makes no sense (the mapping makes INTERNAL at kController code 104).
CniError BadAnswer(std::string what) {
  return FromStatus(InternalError(std::move(what)), Stage::kController);
}

// The default route of a gateway's family.
Cidr DefaultDestination(const IpAddress& gateway) {
  return gateway.is_v4() ? Cidr(IpAddress(), 0) : Cidr(IpAddress::V6(std::array<uint8_t, 16>{}), 0);
}

// `subnet`'s gateway, or none if it has no gateway_ip. INTERNAL if gateway_ip is not an address
// of `ip`'s family (subnet_id names the subnet as the port asked for it).
Result<std::optional<IpAddress>> GatewayOf(const client::Subnet& subnet,
                                           const std::string& subnet_id, const IpAddress& ip) {
  if (subnet.gateway_ip.empty()) return std::optional<IpAddress>();
  auto gateway = IpAddress::Parse(subnet.gateway_ip);
  if (!gateway.ok() || gateway->family() != ip.family()) {
    return InternalError("subnet " + subnet_id + " gateway_ip \"" + subnet.gateway_ip +
                         "\" is not an address of its family");
  }
  return std::optional<IpAddress>(*gateway);
}

class AddCommand {
 public:
  explicit AddCommand(Invocation& invocation)
      : inv_(invocation), env_(invocation.env()), conf_(invocation.conf()) {}

  Outcome Run() {
    auto host = inv_.HostId();
    if (!host.ok()) return Fail(host.status(), Stage::kConfig);
    host_id_ = *host;
    auto controller = inv_.Controller();
    if (!controller.ok()) return Fail(controller.status(), Stage::kConfig);
    client_ = *controller;

    auto lock = inv_.LockAttachment();
    if (!lock.ok()) return Fail(lock.status(), Stage::kStateDir);
    if (StepError e = ClearEarlierAttempt()) return Fail(std::move(*e));
    auto plug = inv_.PlugForAdd();
    if (!plug.ok())
      return Fail(plug.status().WithContext("choosing the plug mode"), Stage::kController);
    record_ = IntentRecord();
    record_.ovs = *plug;  // before anything is plugged, so DEL and GC know where to unplug
    if (Status s = inv_.store().Write(record_); !s.ok()) return Fail(s, Stage::kStateDir);

    // From here on every failure deletes the port and the record before it is returned.
    if (StepError e = AddAfterIntent()) return Fail(CleanUpFailedAdd(std::move(*e), *lock));
    // Values from the environment are valid UTF-8 (env.cc); replace rather than throw anyway.
    return Ok(ResultToJson(result_, conf_.cni_version)
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

 private:
  // What an earlier ADD of this attachment left: refused if it finished, undone if it was
  // interrupted, replaced if its record is unreadable.
  StepError ClearEarlierAttempt() {
    auto found = inv_.FindRecord();
    if (!found.ok()) return FromStatus(found.status(), Stage::kStateDir);
    if (found->corrupt()) {
      MZ_LOG(kWarn) << found->problem << "; replacing it";
      const std::string port_id = inv_.PortId();
      if (StepError e = Unplug(inv_.PlugWithoutRecord(port_id))) return e;
      return DeletePort(port_id, "deleting port " + port_id + " of an unreadable record");
    }
    if (found->valid()) return ClearEarlierRecord(found->record);
    return std::nullopt;
  }

  StepError ClearEarlierRecord(const Record& existing) {
    if (existing.container_id != env_.container_id || existing.ifname != env_.ifname) {
      return AttachmentExists("record " + inv_.RecordPath() + " belongs to container " +
                              existing.container_id + " interface " + existing.ifname +
                              "; cannot add " + inv_.Attachment());
    }
    if (existing.complete()) {
      return AttachmentExists("container " + env_.container_id + " already has interface " +
                                  env_.ifname + " on network " + conf_.name,
                              "port " + existing.port_id + ", record " + inv_.RecordPath());
    }
    // An ADD crashed or was killed after writing its intent: remove what it may have made.
    MZ_LOG(kInfo) << "found the intent record of an interrupted ADD; deleting its port "
                  << existing.port_id;
    if (StepError e = Unplug(existing.ovs)) return e;
    // Where the earlier ADD made it, even if the configuration names another controller now.
    auto controller = inv_.ControllerOf(existing);
    if (!controller.ok()) return FromStatus(controller.status(), Stage::kConfig);
    Status s = (*controller)->DeletePort(existing.port_id);
    if (s.ok()) return std::nullopt;
    return FromStatus(
        s.WithContext("deleting port " + existing.port_id + " of an interrupted earlier ADD"),
        Stage::kController);
  }

  // Undoes what plug mode made (nothing to do in agent mode).
  StepError Unplug(const records::OvsPlug& plug) const {
    Status s = UnplugFromOvs(plug, conf_.request_timeout);
    if (s.ok()) return std::nullopt;
    return FromStatus(s, Stage::kNetns);
  }

  StepError DeletePort(const std::string& port_id, const std::string& context) {
    Status s = client_->DeletePort(port_id);
    if (s.ok()) return std::nullopt;
    return FromStatus(s.WithContext(context), Stage::kController);
  }

  Record IntentRecord() const {
    Record rec;
    rec.state = Record::State::kIntent;
    rec.network = conf_.name;
    rec.container_id = env_.container_id;
    rec.ifname = env_.ifname;
    rec.netns = env_.netns;
    rec.port_id = inv_.PortId();
    rec.project_id = conf_.project;
    rec.subnet_id = conf_.subnet;
    rec.host_id = host_id_;
    rec.mpurl = conf_.mpurl;
    rec.pod_namespace = env_.args.pod_namespace;
    rec.pod_name = env_.args.pod_name;
    rec.created_at = records::NowRfc3339();
    return rec;
  }

  StepError AddAfterIntent() {
    if (StepError e = CreatePort()) return e;
    // The subnet's prefix and gateway, fetched while the agent works on the port.
    if (auto subnet = SubnetFor(conf_.subnet); !subnet.ok()) {
      return FromStatus(subnet.status().WithContext("subnet " + conf_.subnet), Stage::kSubnet);
    }
    if (StepError e = PlugPod()) return e;
    if (StepError e = WaitUntilReady()) return e;
    if (StepError e = PlanAddresses()) return e;
    if (StepError e = ConfigureInterface()) return e;
    return CompleteRecord();
  }

  client::PortSpec Spec() const {
    client::PortSpec spec;
    spec.project_id = conf_.project;
    spec.id = record_.port_id;
    spec.name = "k8s_" + record_.port_id;
    spec.description = PortDescription(env_.container_id, env_.netns, host_id_, conf_.name,
                                       env_.ifname, env_.args.pod_namespace, env_.args.pod_name);
    spec.network_id = conf_.network_id;
    // Alcor takes the subnet from here (its network_id is the VPC); v0.1 sets fixed_ips itself.
    spec.fixed_ips = {client::FixedIp{conf_.subnet, ""}};
    spec.veth_name = env_.ifname;
    spec.network_ns = env_.netns;
    spec.host_id = host_id_;
    return spec;
  }

  StepError CreatePort() {
    const client::PortSpec spec = Spec();
    auto created = client_->CreatePort(spec);
    if (!created.ok() && created.status().IsAlreadyExists()) {
      // A port with our id exists without a record saying why (lost state): replace it.
      MZ_LOG(kWarn) << "port " << spec.id << " already exists at the controller; replacing it";
      if (StepError e = DeletePort(spec.id, "replacing existing port " + spec.id)) return e;
      created = client_->CreatePort(spec);
    }
    if (!created.ok()) return FromStatus(created.status(), Stage::kController);
    port_ = std::move(created).value();
    return std::nullopt;
  }

  // Subnets by id, each fetched once per ADD.
  Result<const client::Subnet*> SubnetFor(const std::string& subnet_id) {
    auto it = subnets_.find(subnet_id);
    if (it != subnets_.end()) return &it->second;
    auto subnet = client_->GetSubnet(subnet_id);
    if (!subnet.ok()) return subnet.status();
    return &subnets_.emplace(subnet_id, std::move(subnet).value()).first->second;
  }

  // Plug mode: the veth and the OVS port the agent looks for, made from the created port (its MAC
  // is the pod end's). Nothing to do when the agent places the NIC.
  StepError PlugPod() {
    if (record_.ovs.empty()) return std::nullopt;
    if (port_.mac_address.empty()) {
      return BadAnswer("port " + port_.id +
                       " was created without a mac_address, which plugging the pod needs");
    }
    const PodEnd pod{env_.netns, env_.ifname, AsciiLower(port_.mac_address), conf_.mtu,
                     record_.port_id};
    Status s = PlugIntoOvs(record_.ovs, pod, conf_.request_timeout);
    if (!s.ok())
      return FromStatus(s.WithContext("plugging the pod into Open vSwitch"), Stage::kNetns);
    return std::nullopt;
  }

  // Link notifications for the NIC the agent will place in the pod: its arrival is the sign
  // that the port is about to be ready. None when the namespace cannot be watched: the polls
  // then keep their interval, and configuring the interface reports the namespace's problem.
  std::optional<netns::LinkWatch> WatchForNic() const {
    auto ns = netns::Netns::Open(env_.netns);
    auto watch = ns.ok() ? netns::LinkWatch::OpenIn(*ns, env_.ifname)
                         : Result<netns::LinkWatch>(ns.status());
    if (watch.ok()) return std::move(watch).value();
    MZ_LOG(kDebug) << "polling without watching for the NIC: "
                   << LogEscaped(watch.status().ToString());
    return std::nullopt;
  }

  // Until the port is ready with a MAC and fixed IPs (or a signal abandons the wait).
  StepError WaitUntilReady() {
    if (port_.state() != client::PortState::kReady || port_.mac_address.empty() ||
        port_.fixed_ips.empty()) {
      client::PollOptions poll = PollOptionsFor(conf_);
      if (inv_.Cancellable()) poll.cancelled = [this] { return inv_.Cancelled(); };
      // In plug mode the NIC is already there: only the controller's answer is awaited.
      std::optional<netns::LinkWatch> nic;
      if (record_.ovs.empty()) nic = WatchForNic();
      if (nic) {
        poll.wait_until = [&nic](auto until) {
          if (nic->Seen()) return client::ReadinessSign::kEarlier;
          return nic->WaitUntil(until) ? client::ReadinessSign::kJustNow
                                       : client::ReadinessSign::kNone;
        };
      }
      auto ready = client_->WaitPortReady(record_.port_id, poll);
      if (!ready.ok()) return FromStatus(ready.status(), Stage::kPortWait);
      port_ = std::move(ready).value();
    }
    if (port_.mac_address.empty()) {
      return BadAnswer("port " + port_.id + " is ready but has no mac_address");
    }
    if (port_.fixed_ips.empty()) {
      return BadAnswer("port " + port_.id + " is ready but has no fixed_ips");
    }
    return std::nullopt;
  }

  // What the interface gets, the result reports and the record keeps, from the ready port.
  StepError PlanAddresses() {
    setup_.ifname = env_.ifname;
    setup_.expected_mac = AsciiLower(port_.mac_address);
    setup_.mtu = conf_.mtu;
    setup_.wait_for_link = conf_.nic_timeout;
    record_.ips.clear();
    for (size_t i = 0; i < port_.fixed_ips.size(); ++i) {
      if (StepError e = PlanAddress(i)) return e;
    }
    return std::nullopt;
  }

  // One fixed IP: its address with the prefix of its subnet, and its subnet's gateway.
  StepError PlanAddress(size_t i) {
    const client::FixedIp& f = port_.fixed_ips[i];
    const std::string where = "port " + port_.id + " fixed_ips[" + std::to_string(i) + "]";
    auto ip = IpAddress::Parse(f.ip_address);
    if (!ip.ok()) return BadAnswer(where + ": \"" + f.ip_address + "\" is not an IP address");
    const std::string subnet_id = f.subnet_id.empty() ? conf_.subnet : f.subnet_id;
    auto subnet = SubnetFor(subnet_id);
    if (!subnet.ok()) {
      return FromStatus(subnet.status().WithContext(where + ": subnet " + subnet_id),
                        Stage::kSubnet);
    }
    auto cidr = Cidr::Parse((*subnet)->cidr);
    if (!cidr.ok() || cidr->address().family() != ip->family() || !cidr->Contains(*ip)) {
      return BadAnswer(where + ": " + f.ip_address + " does not fit subnet " + subnet_id +
                       " cidr \"" + (*subnet)->cidr + "\"");
    }
    auto gateway = GatewayOf(**subnet, subnet_id, *ip);
    if (!gateway.ok()) return FromStatus(gateway.status(), Stage::kController);

    const Cidr address(*ip, cidr->prefix_len());
    setup_.addresses.push_back(address);
    result_.ips.push_back(IpResult{address, *gateway, 0});
    record_.ips.push_back(
        RecordIp{address.ToString(), *gateway ? (*gateway)->ToString() : std::string()});
    if (*gateway) AddDefaultRoute(**gateway);
    return std::nullopt;
  }

  // The first gateway of each family becomes that family's default route.
  void AddDefaultRoute(const IpAddress& gateway) {
    bool& have_default = gateway.is_v4() ? default_v4_ : default_v6_;
    if (have_default) return;
    have_default = true;
    const Cidr dst = DefaultDestination(gateway);
    setup_.routes.push_back(netns::InterfaceSetup::Route{dst, gateway});
    result_.routes.push_back(RouteResult{dst, gateway});
  }

  StepError ConfigureInterface() {
    if (inv_.Cancelled()) {
      return FromStatus(
          CancelledError("ADD interrupted by a signal before configuring " + env_.ifname),
          Stage::kPortWait);
    }
    auto link = netns::ConfigureInterface(env_.netns, setup_);
    if (!link.ok()) {
      return FromStatus(
          link.status().WithContext("configuring " + env_.ifname + " in " + env_.netns),
          Stage::kNetns);
    }
    record_.mac = link->link.mac.empty() ? setup_.expected_mac : link->link.mac;
    host_peer_ = link->host_peer;
    return std::nullopt;
  }

  StepError CompleteRecord() {
    record_.state = Record::State::kComplete;
    if (Status s = inv_.store().Write(record_); !s.ok()) return FromStatus(s, Stage::kStateDir);
    result_.interfaces.push_back(InterfaceResult{env_.ifname, record_.mac, env_.netns, conf_.mtu});
    // After the pod's interface, so the ips' "interface": 0 still points at it.
    if (!host_peer_.empty()) result_.interfaces.push_back(InterfaceResult{host_peer_, "", "", 0});
    result_.dns = conf_.dns;
    MZ_LOG(kInfo) << "added port " << port_.id << " mac " << record_.mac << " "
                  << (record_.ips.empty() ? std::string() : record_.ips[0].address);
    return std::nullopt;
  }

  // Deletes the port and the record of an ADD that failed after its intent, and returns `error`
  // with a note on what could not be undone (the intent record stays while the port may exist).
  CniError CleanUpFailedAdd(CniError error, FileLock& lock) {
    const std::string& port_id = record_.port_id;
    if (StepError unplug = Unplug(record_.ovs)) {
      MZ_LOG(kError) << "ADD failed (" << LogEscaped(error.msg) << ") and unplugging "
                     << record_.ovs.port << " failed too: " << unplug->msg;
      return error.WithNote("could not unplug " + record_.ovs.port + " (" + unplug->msg +
                            "): the intent record " + inv_.RecordPath() +
                            " is kept so DEL or GC can finish");
    }
    if (Status del = client_->DeletePort(port_id); !del.ok()) {
      MZ_LOG(kError) << "ADD failed (" << LogEscaped(error.msg) << ") and deleting port " << port_id
                     << " failed too: " << del.message();
      return error.WithNote("port " + port_id + " could not be deleted (" + del.message() +
                            "): the intent record " + inv_.RecordPath() +
                            " is kept so DEL or GC can finish");
    }
    if (Status s = inv_.RemoveRecord(); !s.ok()) {
      MZ_LOG(kError) << "ADD failed and its record could not be removed: " << s.message();
      return error.WithNote("record " + inv_.RecordPath() +
                            " could not be removed: " + s.message());
    }
    ReleaseLock(lock);
    MZ_LOG(kInfo) << "ADD failed; port " << port_id << " and its record removed";
    return error;
  }

  Invocation& inv_;
  const Env& env_;
  const NetConf& conf_;
  client::Client* client_ = nullptr;
  std::string host_id_;
  Record record_;
  client::Port port_;
  std::map<std::string, client::Subnet> subnets_;
  netns::InterfaceSetup setup_;
  std::string host_peer_;  // the pod interface's veth peer on the host, if it is there
  AddResult result_;
  bool default_v4_ = false;
  bool default_v6_ = false;
};

}  // namespace

Outcome CmdAdd(Invocation& invocation) { return AddCommand(invocation).Run(); }

}  // namespace mizarmp::cni
