#include "cni/plugin.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "cni/env.h"
#include "cni/errors.h"
#include "cni/records.h"
#include "cni/result.h"
#include "cni/version.h"
#include "common/fileutil.h"
#include "common/ipaddr.h"
#include "common/log.h"
#include "common/uuid.h"
#include "mizarmp-client/client.h"
#include "netns/netns.h"

namespace mizarmp::cni {

using nlohmann::json;

std::string PortIdFor(std::string_view network, std::string_view container_id,
                      std::string_view ifname) {
  std::string name;
  name.reserve(network.size() + container_id.size() + ifname.size() + 2);
  name.append(network).append("/").append(container_id).append("/").append(ifname);
  auto id = UuidV5(kPortIdNamespace, name);
  // The namespace is a constant valid UUID, so this cannot fail.
  return id.ok() ? *id : std::string();
}

std::string PortDescription(std::string_view container_id, std::string_view netns,
                            std::string_view host_id, std::string_view network,
                            std::string_view ifname, std::string_view pod_namespace,
                            std::string_view pod_name) {
  std::string d = "cni ";
  d.append(container_id).append(", ns:").append(netns).append(", host:").append(host_id);
  d.append(", net:").append(network).append(", if:").append(ifname);
  if (!pod_namespace.empty() || !pod_name.empty()) {
    d.append(", pod:").append(pod_namespace).append("/").append(pod_name);
  }
  return d;
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

CniError MakeError(int code, std::string msg, std::string details = {}) {
  CniError e;
  e.code = code;
  e.msg = std::move(msg);
  e.details = std::move(details);
  return e;
}

// What a command produced: output on success (possibly empty), or the error.
struct Outcome {
  std::optional<CniError> error;
  std::string output;
};

Outcome Ok(std::string output = {}) { return Outcome{std::nullopt, std::move(output)}; }
Outcome Fail(CniError e) { return Outcome{std::move(e), {}}; }
Outcome Fail(const Status& s, Stage stage) { return Fail(FromStatus(s, stage)); }

class Plugin {
 public:
  Plugin(Env env, NetConf conf, const RunOptions& options)
      : env_(std::move(env)), conf_(std::move(conf)), options_(options), store_(conf_.state_dir) {}

  Outcome Dispatch() {
    switch (env_.command) {
      case Command::kAdd:
        return Add();
      case Command::kDel:
        return Del();
      case Command::kCheck:
        return Check();
      case Command::kGc:
        return Gc();
      case Command::kStatus:
        return StatusCmd();
      case Command::kVersion:
        break;
    }
    return Ok(VersionResultJson());
  }

 private:
  bool Cancelled() const {
    return options_.cancelled != nullptr && options_.cancelled->load(std::memory_order_relaxed);
  }

  // The one REST client of this process.
  Status EnsureClient() {
    if (client_) return Status::Ok();
    auto c = client::Client::Create(ClientConfigFor(conf_));
    if (!c.ok()) return c.status();
    client_ = std::move(c).value();
    return Status::Ok();
  }

  std::string Attachment() const {
    return "container " + env_.container_id + " interface " + env_.ifname + " on network " +
           conf_.name;
  }

  // ---------------------------------------------------------------------------------------- ADD

  Outcome Add() {
    auto host = ResolveHostId(conf_, options_.hostid_file);
    if (!host.ok()) return Fail(host.status(), Stage::kConfig);
    host_id_ = *host;
    if (Status s = EnsureClient(); !s.ok()) return Fail(s, Stage::kConfig);
    const std::string port_id = PortIdFor(conf_.name, env_.container_id, env_.ifname);

    auto lock = store_.Lock(conf_.name, env_.container_id, env_.ifname);
    if (!lock.ok()) return Fail(lock.status(), Stage::kStateDir);

    auto existing = store_.Read(conf_.name, env_.container_id, env_.ifname);
    if (existing.ok()) {
      if (existing->container_id != env_.container_id || existing->ifname != env_.ifname) {
        return Fail(
            MakeError(kAttachmentExists, "record " + RecordPathHere() + " belongs to container " +
                                             existing->container_id + " interface " +
                                             existing->ifname + "; cannot add " + Attachment()));
      }
      if (existing->complete()) {
        return Fail(MakeError(kAttachmentExists,
                              "container " + env_.container_id + " already has interface " +
                                  env_.ifname + " on network " + conf_.name,
                              "port " + existing->port_id + ", record " + RecordPathHere()));
      }
      // An ADD crashed or was killed after writing its intent: remove what it may have made.
      MZ_LOG(kInfo) << "found the intent record of an interrupted ADD; deleting its port "
                    << existing->port_id;
      if (Status s = client_->DeletePort(existing->port_id); !s.ok()) {
        return Fail(
            s.WithContext("deleting port " + existing->port_id + " of an interrupted earlier ADD"),
            Stage::kController);
      }
    } else if (existing.status().code() == Code::kDataLoss) {
      MZ_LOG(kWarn) << existing.status().message() << "; replacing it";
      if (Status s = client_->DeletePort(port_id); !s.ok()) {
        return Fail(s.WithContext("deleting port " + port_id + " of an unreadable record"),
                    Stage::kController);
      }
    } else if (existing.status().code() != Code::kNotFound) {
      return Fail(existing.status(), Stage::kStateDir);
    }

    Record rec;
    rec.state = Record::State::kIntent;
    rec.network = conf_.name;
    rec.container_id = env_.container_id;
    rec.ifname = env_.ifname;
    rec.netns = env_.netns;
    rec.port_id = port_id;
    rec.project_id = conf_.project;
    rec.subnet_id = conf_.subnet;
    rec.host_id = host_id_;
    rec.mpurl = conf_.mpurl;
    rec.pod_namespace = env_.args.pod_namespace;
    rec.pod_name = env_.args.pod_name;
    rec.created_at = NowRfc3339();
    if (Status s = store_.Write(rec); !s.ok()) return Fail(s, Stage::kStateDir);

    // From here on every failure deletes the port and the record before it is returned.
    Outcome out = AddAfterIntent(rec);
    if (out.error) return CleanUpFailedAdd(std::move(*out.error), port_id, &*lock);
    return out;
  }

  std::string RecordPathHere() const {
    return store_.RecordPath(conf_.name, env_.container_id, env_.ifname);
  }

  Outcome CleanUpFailedAdd(CniError error, const std::string& port_id, FileLock* lock) {
    Status del = client_->DeletePort(port_id);
    if (!del.ok()) {
      MZ_LOG(kError) << "ADD failed (" << error.msg << ") and deleting port " << port_id
                     << " failed too: " << del.message();
      error.details += "; port " + port_id + " could not be deleted (" + del.message() +
                       "): the intent record " + RecordPathHere() +
                       " is kept so DEL or GC can finish";
      return Fail(std::move(error));
    }
    if (Status s = store_.Remove(conf_.name, env_.container_id, env_.ifname); !s.ok()) {
      MZ_LOG(kError) << "ADD failed and its record could not be removed: " << s.message();
      error.details += "; record " + RecordPathHere() + " could not be removed: " + s.message();
      return Fail(std::move(error));
    }
    if (Status s = lock->ReleaseAndRemove(); !s.ok()) {
      MZ_LOG(kWarn) << s.message();
    }
    MZ_LOG(kInfo) << "ADD failed; port " << port_id << " and its record removed";
    return Fail(std::move(error));
  }

  // The address/route facts derived from one fixed IP.
  Result<const client::Subnet*> SubnetFor(const std::string& subnet_id) {
    auto it = subnets_.find(subnet_id);
    if (it != subnets_.end()) return &it->second;
    auto s = client_->GetSubnet(subnet_id);
    if (!s.ok()) return s.status();
    return &subnets_.emplace(subnet_id, std::move(s).value()).first->second;
  }

  Outcome AddAfterIntent(Record& rec) {
    client::PortSpec spec;
    spec.project_id = conf_.project;
    spec.id = rec.port_id;
    spec.name = "k8s_" + rec.port_id;
    spec.description = PortDescription(env_.container_id, env_.netns, host_id_, conf_.name,
                                       env_.ifname, env_.args.pod_namespace, env_.args.pod_name);
    spec.network_id = conf_.network_id;
    spec.veth_name = env_.ifname;
    spec.network_ns = env_.netns;
    spec.host_id = host_id_;

    auto created = client_->CreatePort(spec);
    if (!created.ok() && created.status().code() == Code::kAlreadyExists) {
      // A port with our id exists without a record saying why (lost state): replace it.
      MZ_LOG(kWarn) << "port " << spec.id << " already exists at the controller; replacing it";
      if (Status s = client_->DeletePort(spec.id); !s.ok()) {
        return Fail(s.WithContext("replacing existing port " + spec.id), Stage::kController);
      }
      created = client_->CreatePort(spec);
    }
    if (!created.ok()) return Fail(created.status(), Stage::kController);

    // The subnet's prefix and gateway, fetched while the agent works on the port.
    auto subnet = SubnetFor(conf_.subnet);
    if (!subnet.ok()) {
      return Fail(subnet.status().WithContext("subnet " + conf_.subnet), Stage::kSubnet);
    }

    client::Port port = std::move(created).value();
    if (port.state() != client::PortState::kReady || port.mac_address.empty() ||
        port.fixed_ips.empty()) {
      client::PollOptions poll = PollOptionsFor(conf_);
      if (options_.cancelled != nullptr) poll.cancelled = [this] { return Cancelled(); };
      auto ready = client_->WaitPortReady(spec.id, poll);
      if (!ready.ok()) return Fail(ready.status(), Stage::kPortWait);
      port = std::move(ready).value();
    }
    if (port.mac_address.empty()) {
      return Fail(InternalError("port " + port.id + " is ready but has no mac_address"),
                  Stage::kController);
    }
    if (port.fixed_ips.empty()) {
      return Fail(InternalError("port " + port.id + " is ready but has no fixed_ips"),
                  Stage::kController);
    }

    netns::InterfaceSetup setup;
    setup.ifname = env_.ifname;
    setup.expected_mac = Lower(port.mac_address);
    setup.mtu = conf_.mtu;
    setup.wait_for_link = conf_.nic_timeout;
    AddResult result;
    bool default_v4 = false, default_v6 = false;
    rec.ips.clear();
    for (size_t i = 0; i < port.fixed_ips.size(); ++i) {
      const client::FixedIp& f = port.fixed_ips[i];
      const std::string where = "port " + port.id + " fixed_ips[" + std::to_string(i) + "]";
      auto ip = IpAddress::Parse(f.ip_address);
      if (!ip.ok()) {
        return Fail(InternalError(where + ": \"" + f.ip_address + "\" is not an IP address"),
                    Stage::kController);
      }
      const std::string sid = f.subnet_id.empty() ? conf_.subnet : f.subnet_id;
      auto sn = SubnetFor(sid);
      if (!sn.ok()) return Fail(sn.status().WithContext(where + ": subnet " + sid), Stage::kSubnet);
      auto cidr = Cidr::Parse((*sn)->cidr);
      if (!cidr.ok() || cidr->address().family() != ip->family() || !cidr->Contains(*ip)) {
        return Fail(InternalError(where + ": " + f.ip_address + " does not fit subnet " + sid +
                                  " cidr \"" + (*sn)->cidr + "\""),
                    Stage::kController);
      }
      std::optional<IpAddress> gw;
      if (!(*sn)->gateway_ip.empty()) {
        auto g = IpAddress::Parse((*sn)->gateway_ip);
        if (!g.ok() || g->family() != ip->family()) {
          return Fail(InternalError("subnet " + sid + " gateway_ip \"" + (*sn)->gateway_ip +
                                    "\" is not an address of its family"),
                      Stage::kController);
        }
        gw = *g;
      }
      const Cidr address(*ip, cidr->prefix_len());
      setup.addresses.push_back(address);
      result.ips.push_back(IpResult{address, gw, 0});
      rec.ips.push_back(RecordIp{address.ToString(), gw ? gw->ToString() : std::string()});
      bool& have_default = ip->is_v4() ? default_v4 : default_v6;
      if (gw && !have_default) {
        have_default = true;
        const Cidr dst =
            ip->is_v4() ? Cidr(IpAddress(), 0) : Cidr(IpAddress::V6(std::array<uint8_t, 16>{}), 0);
        setup.routes.push_back(netns::InterfaceSetup::Route{dst, gw});
        result.routes.push_back(RouteResult{dst, gw});
      }
    }

    if (Cancelled()) {
      return Fail(CancelledError("ADD interrupted by a signal before configuring " + env_.ifname),
                  Stage::kPortWait);
    }
    auto link = netns::ConfigureInterface(env_.netns, setup);
    if (!link.ok()) {
      return Fail(link.status().WithContext("configuring " + env_.ifname + " in " + env_.netns),
                  Stage::kNetns);
    }

    rec.state = Record::State::kComplete;
    rec.mac = link->mac.empty() ? setup.expected_mac : link->mac;
    if (Status s = store_.Write(rec); !s.ok()) return Fail(s, Stage::kStateDir);

    result.interfaces.push_back(InterfaceResult{env_.ifname, rec.mac, env_.netns, conf_.mtu});
    result.dns = conf_.dns;
    MZ_LOG(kInfo) << "added port " << port.id << " mac " << rec.mac << " "
                  << (rec.ips.empty() ? std::string() : rec.ips[0].address);
    return Ok(ResultToJson(result, conf_.cni_version).dump());
  }

  // ---------------------------------------------------------------------------------------- DEL

  Outcome Del() {
    if (Status s = EnsureClient(); !s.ok()) return Fail(s, Stage::kConfig);
    std::string port_id = PortIdFor(conf_.name, env_.container_id, env_.ifname);
    auto lock = store_.Lock(conf_.name, env_.container_id, env_.ifname);
    if (!lock.ok()) return Fail(lock.status(), Stage::kStateDir);

    bool owns_record = false;
    auto rec = store_.Read(conf_.name, env_.container_id, env_.ifname);
    if (rec.ok()) {
      if (rec->container_id == env_.container_id && rec->ifname == env_.ifname) {
        owns_record = true;
        port_id = rec->port_id;
      } else {
        MZ_LOG(kWarn) << "record " << RecordPathHere() << " belongs to container "
                      << rec->container_id << " interface " << rec->ifname << "; leaving it";
      }
    } else if (rec.status().code() == Code::kDataLoss) {
      MZ_LOG(kWarn) << rec.status().message() << "; deleting the derived port " << port_id;
      owns_record = true;
    } else if (rec.status().code() != Code::kNotFound) {
      return Fail(rec.status(), Stage::kStateDir);
    }

    if (Status s = client_->DeletePort(port_id); !s.ok()) {
      CniError e = FromStatus(s.WithContext("deleting port " + port_id), Stage::kController);
      if (owns_record) e.details += "; record " + RecordPathHere() + " kept for a retry";
      return Fail(std::move(e));
    }
    if (owns_record) {
      if (Status s = store_.Remove(conf_.name, env_.container_id, env_.ifname); !s.ok()) {
        return Fail(s, Stage::kStateDir);
      }
      if (Status s = lock->ReleaseAndRemove(); !s.ok()) {
        MZ_LOG(kWarn) << s.message();
      }
    } else if (!rec.ok()) {
      // No record here at all: do not leave the lock file behind either.
      if (Status s = lock->ReleaseAndRemove(); !s.ok()) {
        MZ_LOG(kWarn) << s.message();
      }
    }
    MZ_LOG(kInfo) << "deleted port " << port_id;
    return Ok();
  }

  // -------------------------------------------------------------------------------------- CHECK

  Outcome Mismatch(const std::string& what) {
    return Fail(MakeError(kCheckMismatch, what, Attachment()));
  }

  Outcome Check() {
    if (conf_.prev_result.is_null()) {
      return Fail(MakeError(kInvalidConfig, "CHECK needs \"prevResult\" in the configuration"));
    }
    auto prev = ResultFromJson(conf_.prev_result);
    if (!prev.ok()) return Fail(prev.status(), Stage::kConfig);

    auto rec = store_.Read(conf_.name, env_.container_id, env_.ifname);
    if (!rec.ok()) {
      if (rec.status().code() == Code::kNotFound) {
        return Fail(MakeError(kContainerUnknown, "no attachment of " + Attachment(),
                              "no record " + RecordPathHere()));
      }
      return Fail(rec.status(), Stage::kStateDir);
    }
    if (rec->container_id != env_.container_id || rec->ifname != env_.ifname) {
      return Fail(MakeError(kContainerUnknown, "no attachment of " + Attachment(),
                            "record " + RecordPathHere() + " belongs to container " +
                                rec->container_id + " interface " + rec->ifname));
    }
    if (!rec->complete()) {
      return Fail(MakeError(kContainerUnknown,
                            "the attachment of " + Attachment() + " is incomplete",
                            "an ADD did not finish; record " + RecordPathHere()));
    }

    // 1. prevResult against the record.
    std::optional<int> index;
    for (size_t i = 0; i < prev->interfaces.size(); ++i) {
      const InterfaceResult& ir = prev->interfaces[i];
      if (ir.name == env_.ifname && (ir.sandbox.empty() || ir.sandbox == env_.netns)) {
        index = static_cast<int>(i);
        break;
      }
    }
    if (!index) {
      return Mismatch("prevResult has no interface " + env_.ifname + " in " + env_.netns);
    }
    const std::string prev_mac = Lower(prev->interfaces[*index].mac);
    if (prev_mac != Lower(rec->mac)) {
      return Mismatch("prevResult says " + env_.ifname + " has MAC " + prev_mac +
                      ", the attachment has " + rec->mac);
    }
    std::set<std::string> prev_ips, rec_ips, rec_bare;
    for (const IpResult& ip : prev->ips) {
      if (!ip.interface || *ip.interface == *index) prev_ips.insert(ip.address.ToString());
    }
    for (const RecordIp& ip : rec->ips) {
      auto c = Cidr::Parse(ip.address);
      if (!c.ok())
        return Fail(c.status().WithContext("record " + RecordPathHere()), Stage::kStateDir);
      rec_ips.insert(c->ToString());
      rec_bare.insert(c->address().ToString());
    }
    for (const std::string& a : rec_ips) {
      if (!prev_ips.count(a)) return Mismatch("address " + a + " missing from prevResult");
    }
    for (const std::string& a : prev_ips) {
      if (!rec_ips.count(a)) {
        return Mismatch("prevResult address " + a + " is not part of the attachment");
      }
    }

    // 2. The port at the controller.
    if (Status s = EnsureClient(); !s.ok()) return Fail(s, Stage::kConfig);
    auto port = client_->GetPort(rec->port_id);
    if (!port.ok()) {
      if (port.status().code() == Code::kNotFound) {
        return Mismatch("port " + rec->port_id + " no longer exists at the controller");
      }
      return Fail(port.status(), Stage::kController);
    }
    if (port->state() != client::PortState::kReady) {
      return Mismatch("port " + rec->port_id + " is " + port->status + ", not ready");
    }
    std::set<std::string> port_ips;
    for (const client::FixedIp& f : port->fixed_ips) {
      auto ip = IpAddress::Parse(f.ip_address);
      port_ips.insert(ip.ok() ? ip->ToString() : f.ip_address);
    }
    if (port_ips != rec_bare) {
      return Mismatch("port " + rec->port_id + " has fixed IPs [" + Joined(port_ips, ",") +
                      "], the attachment has different ones");
    }

    // 3. The interface in the pod.
    auto state = netns::InspectInterface(env_.netns, env_.ifname);
    if (!state.ok()) {
      if (state.status().code() == Code::kNotFound) {
        return Mismatch(env_.ifname + " missing from " + env_.netns + ": " +
                        state.status().message());
      }
      return Fail(state.status().WithContext("inspecting " + env_.ifname + " in " + env_.netns),
                  Stage::kNetns);
    }
    const std::string where = " " + env_.ifname + " in " + env_.netns;
    if (Lower(state->link.mac) != Lower(rec->mac)) {
      return Mismatch("MAC of" + where + " is " + state->link.mac + ", expected " + rec->mac);
    }
    if (!state->link.up) return Mismatch(env_.ifname + " in " + env_.netns + " is down");
    if (conf_.mtu > 0 && state->link.mtu != conf_.mtu) {
      return Mismatch("MTU of" + where + " is " + std::to_string(state->link.mtu) + ", expected " +
                      std::to_string(conf_.mtu));
    }
    for (const RecordIp& ip : rec->ips) {
      auto want = Cidr::Parse(ip.address);
      if (!want.ok()) continue;  // validated above
      if (std::find(state->addresses.begin(), state->addresses.end(), *want) ==
          state->addresses.end()) {
        return Mismatch("address " + want->ToString() + " missing from" + where);
      }
      if (ip.gateway.empty()) continue;
      auto gw = IpAddress::Parse(ip.gateway);
      if (!gw.ok()) continue;
      bool found = false;
      for (const netns::RouteInfo& r : state->routes) {
        if (r.dst.prefix_len() == 0 && r.dst.address().family() == gw->family() && r.gateway &&
            *r.gateway == *gw) {
          found = true;
          break;
        }
      }
      if (!found) return Mismatch("default route via " + gw->ToString() + " missing from" + where);
    }
    return Ok();
  }

  // ----------------------------------------------------------------------------------------- GC

  Outcome Gc() {
    // The attachments the runtime still knows; with neither key nothing is valid.
    std::set<std::pair<std::string, std::string>> valid;
    for (const char* key : {"cni.dev/valid-attachments", "cni.dev/attachments"}) {
      auto it = conf_.raw.find(key);
      if (it == conf_.raw.end() || it->is_null()) continue;
      if (!it->is_array()) {
        return Fail(MakeError(kInvalidConfig, std::string("config key \"") + key +
                                                  "\" must be an array (got " + it->type_name() +
                                                  ")"));
      }
      for (size_t i = 0; i < it->size(); ++i) {
        const json& a = (*it)[i];
        const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
        if (!a.is_object() || !a.contains("containerID") || !a["containerID"].is_string() ||
            !a.contains("ifname") || !a["ifname"].is_string()) {
          return Fail(MakeError(
              kInvalidConfig,
              "config key \"" + where + "\" must be an object with string containerID and ifname"));
        }
        valid.emplace(a["containerID"].get<std::string>(), a["ifname"].get<std::string>());
      }
    }
    std::set<std::string> keep_ports;
    for (const auto& [cid, ifname] : valid) keep_ports.insert(PortIdFor(conf_.name, cid, ifname));

    if (Status s = EnsureClient(); !s.ok()) return Fail(s, Stage::kConfig);
    std::vector<std::string> failures;
    std::set<std::string> deleted;

    auto records = store_.List(conf_.name);
    if (!records.ok()) return Fail(records.status(), Stage::kStateDir);
    for (const Record& r : *records) {
      if (valid.count({r.container_id, r.ifname})) {
        keep_ports.insert(r.port_id);
        continue;
      }
      Status s = CollectStale(r, &deleted);
      if (!s.ok()) {
        MZ_LOG(kWarn) << "GC: " << s.message();
        failures.push_back(s.message());
        keep_ports.insert(r.port_id);  // not attempted again below
      }
    }

    // Ports of this network on this host that no record knows about (state lost in a crash).
    auto host = ResolveHostId(conf_, options_.hostid_file);
    if (!host.ok()) return Fail(host.status(), Stage::kConfig);
    auto ports = client_->ListPorts({{"binding:host_id", *host}});
    if (!ports.ok()) {
      const Code c = ports.status().code();
      if (CodeFor(ports.status(), Stage::kController) == kTryAgainLater) {
        failures.push_back("listing ports of host " + *host + ": " + ports.status().message());
      } else {
        MZ_LOG(kWarn) << "GC: cannot list the ports of host " << *host << " (" << CodeName(c)
                      << ": " << ports.status().message() << "); only records were collected";
      }
    } else {
      const std::string net_tag = "net:" + conf_.name + ",";
      const std::string host_tag = "host:" + *host + ",";
      for (const client::Port& p : *ports) {
        if (p.id.empty() || keep_ports.count(p.id) || deleted.count(p.id)) continue;
        if (p.description.find(net_tag) == std::string::npos ||
            p.description.find(host_tag) == std::string::npos) {
          continue;
        }
        if (!p.host_id.empty() && p.host_id != *host) continue;
        MZ_LOG(kInfo) << "GC: deleting port " << p.id << " (" << p.description
                      << "): no valid attachment";
        if (Status s = client_->DeletePort(p.id); !s.ok()) {
          failures.push_back("deleting leaked port " + p.id + ": " + s.message());
        }
      }
    }
    if (!failures.empty()) {
      std::string msg =
          "GC could not remove " + std::to_string(failures.size()) + " stale attachment(s): ";
      msg += Joined(failures, "; ");
      return Fail(MakeError(kTryAgainLater, msg));
    }
    return Ok();
  }

  // Deletes one stale attachment: its port, then its record and lock.
  Status CollectStale(const Record& r, std::set<std::string>* deleted) {
    auto lock = store_.Lock(conf_.name, r.container_id, r.ifname);
    if (!lock.ok()) return lock.status();
    // It may have changed while we waited for the lock.
    auto now = store_.Read(conf_.name, r.container_id, r.ifname);
    if (!now.ok()) {
      if (now.status().code() == Code::kNotFound) {
        return lock->ReleaseAndRemove();
      }
      return now.status();
    }
    MZ_LOG(kInfo) << "GC: removing stale attachment of container " << r.container_id
                  << " interface " << r.ifname << " (port " << now->port_id << ")";
    if (Status s = client_->DeletePort(now->port_id); !s.ok()) {
      return s.WithContext("container " + r.container_id + " interface " + r.ifname +
                           ": deleting port " + now->port_id);
    }
    deleted->insert(now->port_id);
    MZ_RETURN_IF_ERROR(store_.Remove(conf_.name, r.container_id, r.ifname));
    return lock->ReleaseAndRemove();
  }

  // ------------------------------------------------------------------------------------- STATUS

  Outcome StatusCmd() {
    if (Status s = MakeDirs(conf_.state_dir, 0700); !s.ok()) {
      return Fail(MakeError(kNotAvailable, "state directory " + conf_.state_dir +
                                               " cannot be created: " + s.message()));
    }
    if (::access(conf_.state_dir.c_str(), W_OK | X_OK) != 0) {
      Status s = ErrnoError("access " + conf_.state_dir, errno);
      return Fail(MakeError(kNotAvailable, "state directory " + conf_.state_dir +
                                               " is not writable: " + s.message()));
    }
    if (Status s = EnsureClient(); !s.ok()) return Fail(s, Stage::kConfig);
    auto subnet = client_->GetSubnet(conf_.subnet);
    if (!subnet.ok()) {
      CniError e = FromStatus(subnet.status(), Stage::kStatus);
      e.msg = "Mizar-MP controller at " + conf_.mpurl + " is not usable: " + e.msg;
      return Fail(std::move(e));
    }
    return Ok();
  }

  Env env_;
  NetConf conf_;
  const RunOptions& options_;
  RecordStore store_;
  std::string host_id_;
  std::unique_ptr<client::Client> client_;
  std::map<std::string, client::Subnet> subnets_;
};

// The version to put in an error: the config's, when it is one we speak.
std::string ErrorVersion(const std::optional<std::string>& config_version) {
  if (config_version && IsSupported(*config_version)) return *config_version;
  return std::string(kLatestVersion);
}

}  // namespace

int Run(const std::map<std::string, std::string>& vars, std::string_view stdin_text,
        std::string* stdout_text, const RunOptions& options) {
  stdout_text->clear();
  std::optional<std::string> version;
  auto finish = [&](const Outcome& o) {
    if (o.error) {
      MZ_LOG(kError) << "code " << o.error->code << ": " << o.error->msg
                     << (o.error->details.empty() ? "" : " (" + o.error->details + ")");
      *stdout_text = ErrorJson(*o.error, ErrorVersion(version));
      return 1;
    }
    *stdout_text = o.output;
    return 0;
  };

  auto env = ParseEnv(vars);
  if (!env.ok()) {
    // The config's version, if it has one, for the error's cniVersion.
    auto doc = DecodeJson(stdin_text);
    if (doc.ok()) {
      auto v = ConfigVersion(*doc);
      if (v.ok()) version = *v;
    }
    return finish(Fail(env.status(), Stage::kEnv));
  }
  if (env->command == Command::kVersion) return finish(Ok(VersionResultJson()));

  const std::string command(CommandName(env->command));
  std::string tag = "mizarmp[" + command;
  if (!env->container_id.empty()) tag += " " + env->container_id.substr(0, 12);
  log::SetTag(tag + "]");

  auto doc = DecodeJson(stdin_text);
  if (!doc.ok()) return finish(Fail(doc.status(), Stage::kDecode));
  auto v = ConfigVersion(*doc);
  if (!v.ok()) return finish(Fail(v.status(), Stage::kConfig));
  version = *v;
  if (Status s = CheckSupported(*version); !s.ok()) {
    if (doc->is_object() && !doc->contains("cniVersion")) {
      s = s.WithContext("config has no \"cniVersion\" (the CNI spec reads that as " + *version +
                        ")");
    }
    return finish(Fail(s, Stage::kVersion));
  }
  if (env->command == Command::kCheck && !AtLeast(*version, "0.4.0")) {
    return finish(Fail(MakeError(kIncompatibleVersion, "CHECK is not supported for cniVersion " +
                                                           *version + " (needs 0.4.0 or later)")));
  }
  if ((env->command == Command::kGc || env->command == Command::kStatus) &&
      !AtLeast(*version, "1.1.0")) {
    return finish(
        Fail(MakeError(kIncompatibleVersion, command + " is not supported for cniVersion " +
                                                 *version + " (needs 1.1.0 or later)")));
  }
  auto conf = ParseNetConf(*doc);
  if (!conf.ok()) return finish(Fail(conf.status(), Stage::kConfig));

  if (auto level = log::ParseLevel(conf->log_level); level.ok()) log::SetLevel(*level);
  if (!conf->log_file.empty()) {
    if (Status s = log::SetFile(conf->log_file); !s.ok()) {
      MZ_LOG(kWarn) << "logging to stderr: " << s.message();
    }
  }
  MZ_LOG(kDebug) << command << " container=" << env->container_id << " netns=" << env->netns
                 << " ifname=" << env->ifname << " network=" << conf->name;

  Plugin plugin(std::move(env).value(), std::move(conf).value(), options);
  return finish(plugin.Dispatch());
}

}  // namespace mizarmp::cni
