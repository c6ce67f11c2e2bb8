// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/model.h"

#include <algorithm>
#include <random>
#include <utility>

#include "common/log.h"
#include "mock-server/dump.h"

namespace mizarmp::mock {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

Model::Model(const Options& options) : options_(options) {}

Result<std::unique_ptr<Model>> Model::Create(const Options& o) {
  if (o.project_id.empty()) return InvalidArgumentError("mock: project id is empty");
  if (o.subnet_id.empty()) return InvalidArgumentError("mock: subnet id is empty");
  if (o.ready_delay.count() < 0) return InvalidArgumentError("mock: ready delay is negative");
  if (o.gets_before_ready < 0) return InvalidArgumentError("mock: gets_before_ready is negative");
  if (!o.agent_ovsdb.empty()) {
    // The OVS agent plays alcor-control-agent, whose controller is Alcor's: the VPC of a port
    // is the network_id strict Alcor checks.
    if (!o.strict || o.dialect != Dialect::kAlcor) {
      return InvalidArgumentError(
          "mock: agent_ovsdb (--agent-ovsdb) needs strict Alcor (--strict --dialect alcor)");
    }
    if (o.agent) {
      return InvalidArgumentError(
          "mock: agent_ovsdb (--agent-ovsdb) and agent (--agent) are two host agents; choose one");
    }
  }
  std::unique_ptr<Model> m(new Model(o));
  // Nobody else has the model yet; mu_ is held so the pools are set up as every later use does.
  MutexLock lk(m->mu_);
  MZ_RETURN_IF_ERROR(m->SetUpSubnets());
  m->networks_ = Networks{.project_id = o.project_id,
                          .vpc_id = o.vpc_id,
                          .subnet_id = o.subnet_id,
                          .subnet6_id = o.subnet6_id,
                          .agent = o.agent};
  if (o.agent) {
    auto agent = Agent::Create(o.agent_netns, BridgeOf(o), o.mtu);
    if (!agent.ok()) return agent.status().WithContext("mock");
    m->agent_ = std::move(agent).value();
  }
  if (!o.agent_ovsdb.empty()) {
    auto ovs = OvsAgent::Create(o.agent_ovsdb, BridgeOf(o));
    if (!ovs.ok()) return ovs.status().WithContext("mock");
    m->ovs_ = std::move(ovs).value();
  }
  // Random MACs per run, so two mocks (or two runs) do not hand out the same sequence.
  std::random_device rd;
  m->macs_ = MacPool(rd());
  return m;
}

Status Model::SetUpSubnets() {
  const Options& o = options_;
  auto cidr = Cidr::ParseNetwork(o.cidr);
  if (!cidr.ok()) return cidr.status().WithContext("mock: cidr");
  if (!cidr->address().is_v4()) {
    return InvalidArgumentError("mock: cidr " + o.cidr + " is not IPv4 (use cidr6 for IPv6)");
  }
  cidr4_ = *cidr;
  if (o.gateway.empty()) {
    gateway4_ = cidr4_.network().Plus(1);
  } else {
    auto gw = IpAddress::Parse(o.gateway);
    if (!gw.ok()) return gw.status().WithContext("mock: gateway");
    gateway4_ = *gw;
  }
  auto pool4 = AddressPool::Create(cidr4_, gateway4_);
  if (!pool4.ok()) return pool4.status().WithContext("mock");
  pool4_ = std::move(pool4).value();

  if (o.cidr6.empty()) {
    if (!o.subnet6_id.empty()) {
      return InvalidArgumentError("mock: subnet6_id " + o.subnet6_id +
                                  " is set but cidr6 is empty");
    }
    return Status::Ok();
  }
  if (o.subnet6_id.empty()) {
    return InvalidArgumentError("mock: cidr6 " + o.cidr6 + " is set but subnet6_id is empty");
  }
  auto c6 = Cidr::ParseNetwork(o.cidr6);
  if (!c6.ok()) return c6.status().WithContext("mock: cidr6");
  if (!c6->address().is_v6())
    return InvalidArgumentError("mock: cidr6 " + o.cidr6 + " is not IPv6");
  cidr6_ = *c6;
  gateway6_ = c6->network().Plus(1);
  auto pool6 = AddressPool::Create(*c6, gateway6_);
  if (!pool6.ok()) return pool6.status().WithContext("mock");
  pool6_ = std::move(pool6).value();
  return Status::Ok();
}

Model::~Model() { Stop(); }

std::string Model::BridgeOf(const Options& o) {
  if (!o.bridge.empty()) return o.bridge;
  return o.agent_ovsdb.empty() ? "mzbr0" : ovsdb::kDefaultBridge;
}

Status Model::Start() {
  if (agent_) {
    std::optional<Cidr> gw6;
    if (cidr6_) gw6 = Cidr(gateway6_, cidr6_->prefix_len());
    MZ_RETURN_IF_ERROR(agent_->SetUpBridge(Cidr(gateway4_, cidr4_.prefix_len()), gw6));
  }
  if (ovs_) MZ_RETURN_IF_ERROR(ovs_->Start());
  {
    MutexLock lk(mu_);
    started_ = true;
    stopping_ = false;
  }
  timer_ = std::thread([this] { TimerLoop(); });
  return Status::Ok();
}

void Model::Stop() {
  {
    MutexLock lk(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  // Its workers call back into the model: stopped (joined) before anything else goes.
  if (ovs_) ovs_->Stop();
  if (!agent_) return;
  DrainUnplugs();
  std::vector<std::string> hosts;
  {
    MutexLock lk(mu_);
    for (auto& [id, r] : ports_) {
      if (r.plugged) hosts.push_back(r.host_name);
      r.plugged = false;
      r.host_name.clear();
    }
  }
  for (const auto& h : hosts) Unplug(h, "");
  Status st = agent_->TearDownBridge();
  if (!st.ok()) {
    MZ_LOG(kWarn) << st.ToString();
  }
}

// --- requests ---------------------------------------------------------------------------------

Result<std::vector<json>> Model::CreatePorts(const json& items, bool bulk, const Faults& faults) {
  MutexLock lk(mu_);
  // Every port is built before any is added: a refused item drops the batch, and with it every
  // lease taken so far. Declared after the lock, so the leases go back while mu_ is held.
  std::vector<PortRecord> made;
  std::set<std::string> batch_ids;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string where = bulk ? "ports[" + std::to_string(i) + "]" : "port";
    auto r = BuildPort(items[i], where, batch_ids);
    if (!r.ok()) {
      MZ_LOG(kInfo) << "create refused: " << r.status().ToString();
      return r.status();
    }
    batch_ids.insert(r->port.id);
    made.push_back(std::move(r).value());
  }
  std::vector<json> out;
  const auto now = Clock::now();
  for (PortRecord& r : made) {
    r.seq = next_seq_++;
    r.created = now;
    r.never_ready = faults.never_ready;
    r.fail_ready = faults.fail_ready;
    SetPhase(r, Phase::kPending);
    out.push_back(PortDocument(r));
    MZ_LOG(kDebug) << "port " << r.port.id << " created: " << r.port.fixed_ips[0].ip_address << " "
                   << r.port.mac_address << " host " << r.port.host_id;
    std::string id = r.port.id;
    ports_.emplace(std::move(id), std::move(r));
  }
  WakeTimer();
  return out;
}

Result<PortRecord> Model::BuildPort(const json& item, const std::string& where,
                                    const std::set<std::string>& batch_ids) {
  MZ_ASSIGN_OR_RETURN(json object, PortObjectWithId(item, where));
  const std::string id = object["id"].get<std::string>();
  if (ports_.count(id) != 0 || batch_ids.count(id) != 0) {
    return AlreadyExistsError("port " + id + " already exists");
  }
  MZ_ASSIGN_OR_RETURN(NewPort requested, CompleteNewPort(std::move(object), where, networks_));
  PortRecord r;
  r.port = std::move(requested.port);
  r.extra = std::move(requested.extra);
  MZ_ASSIGN_OR_RETURN(r.port.fixed_ips, TakeAddresses(r.port.fixed_ips, where, r.lease));
  MZ_ASSIGN_OR_RETURN(r.port.mac_address, r.lease.AllocateMac(macs_));
  return r;
}

Result<std::vector<client::FixedIp>> Model::TakeAddresses(
    const std::vector<client::FixedIp>& requested, const std::string& where, Lease& lease) {
  std::vector<client::FixedIp> fixed;
  bool want4 = true;
  bool want6 = pool6_.has_value();
  auto pool = [this](bool six) MZ_REQUIRES(mu_) -> AddressPool& { return six ? *pool6_ : pool4_; };
  auto subnet = [this](bool six) { return six ? options_.subnet6_id : options_.subnet_id; };
  auto take = [&](bool six, const IpAddress& ip) {
    fixed.push_back({subnet(six), ip.ToString()});
    (six ? want6 : want4) = false;
  };
  // The requested ones first: an address, or just a subnet to take the next one from.
  for (size_t k = 0; k < requested.size(); ++k) {
    const client::FixedIp& req = requested[k];
    const std::string w = where + ".fixed_ips[" + std::to_string(k) + "]";
    bool six = false;
    if (!req.subnet_id.empty()) {
      if (req.subnet_id == options_.subnet_id) {
        six = false;
      } else if (pool6_ && req.subnet_id == options_.subnet6_id) {
        six = true;
      } else {
        return InvalidArgumentError(w + ".subnet_id " + req.subnet_id +
                                    " is not a subnet of this controller");
      }
    }
    if (req.ip_address.empty()) {
      if (req.subnet_id.empty()) continue;
      MZ_ASSIGN_OR_RETURN(IpAddress ip, lease.Allocate(pool(six)));
      take(six, ip);
      continue;
    }
    auto ip = IpAddress::Parse(req.ip_address);
    if (!ip.ok()) return InvalidArgumentError(w + ".ip_address: " + ip.status().message());
    if (req.subnet_id.empty()) six = ip->is_v6();
    if (six && !pool6_) {
      return InvalidArgumentError(w + ".ip_address " + req.ip_address +
                                  " is IPv6 but this controller has no IPv6 subnet");
    }
    Status st = lease.Reserve(pool(six), *ip);
    if (!st.ok()) return st.WithContext(w);
    take(six, *ip);
  }
  // Then one from each configured subnet still without one.
  for (const bool six : {false, true}) {
    if (!(six ? want6 : want4)) continue;
    MZ_ASSIGN_OR_RETURN(IpAddress ip, lease.Allocate(pool(six)));
    take(six, ip);
  }
  std::stable_sort(fixed.begin(), fixed.end(), [this](const auto& a, const auto& b) {
    return a.subnet_id == options_.subnet_id && b.subnet_id != options_.subnet_id;
  });
  return fixed;
}

Result<PortText> Model::GetPort(const std::string& id) {
  Activate(id);
  MutexLock lk(mu_);
  auto it = ports_.find(id);
  if (it == ports_.end()) return NotFoundError("port " + id + " not found");
  PortRecord& r = it->second;
  if (++r.gets == options_.gets_before_ready) WakeTimer();
  return r.text;
}

std::vector<PortText> Model::ListPorts(const std::multimap<std::string, std::string>& filters,
                                       const std::vector<std::string>& fields) {
  std::vector<std::string> due;
  {
    MutexLock lk(mu_);
    const auto now = Clock::now();
    for (const auto& [id, r] : ports_) {
      if (Due(r, now)) due.push_back(id);
    }
  }
  for (const auto& id : due) Activate(id);
  MutexLock lk(mu_);
  std::vector<const PortRecord*> in_creation_order;
  in_creation_order.reserve(ports_.size());
  for (const auto& [id, r] : ports_) in_creation_order.push_back(&r);
  std::sort(in_creation_order.begin(), in_creation_order.end(),
            [](const PortRecord* a, const PortRecord* b) { return a->seq < b->seq; });
  std::vector<PortText> texts;
  texts.reserve(in_creation_order.size());
  for (const PortRecord* r : in_creation_order) {
    if (!filters.empty() && !MatchesQuery(PortDocument(*r), filters)) continue;
    texts.push_back(fields.empty() ? r->text : Projection(*r, fields));
  }
  return texts;
}

Result<PortText> Model::UpdatePort(const std::string& id, const json& patch) {
  bool admin_changed = false;
  PortText document;
  {
    MutexLock lk(mu_);
    auto it = ports_.find(id);
    if (it == ports_.end()) return NotFoundError("port " + id + " not found");
    PortRecord& r = it->second;
    const bool placed = agent_ != nullptr && r.phase != Phase::kPending;
    MZ_ASSIGN_OR_RETURN(admin_changed, ApplyUpdate(r, patch, placed));
    document = r.text;
    MZ_LOG(kDebug) << "port " << id << " updated: " << Dump(patch);
  }
  if (admin_changed && has_agent()) {
    Status st = SyncAdmin(id);
    if (!st.ok()) return InternalError(st.message());
  }
  return document;
}

Status Model::DeletePort(const std::string& id) {
  std::string host;
  uint64_t seq = 0;
  {
    MutexLock lk(mu_);
    auto it = ports_.find(id);
    if (it == ports_.end()) return NotFoundError("port " + id + " not found");
    // An activating port's veth is removed by its activator, which finds the port gone.
    if (it->second.plugged) host = it->second.host_name;
    seq = it->second.seq;
    waiting_.erase(id);
    ports_.erase(it);
  }
  MZ_LOG(kDebug) << "port " << id << " deleted";
  // The OVS agent stops waiting for it and leaves OVS alone (nova removes the OVS port).
  if (ovs_) {
    ovs_->Cancel(seq);
    return Status::Ok();
  }
  if (!host.empty()) UnplugDeleted(host, "port " + id + ": ");
  return Status::Ok();
}

size_t Model::DeleteAllPorts() {
  std::vector<std::string> hosts;
  size_t n = 0;
  {
    MutexLock lk(mu_);
    n = ports_.size();
    for (const auto& [id, r] : ports_) {
      if (r.plugged) hosts.push_back(r.host_name);
    }
    ports_.clear();
    waiting_.clear();
  }
  if (ovs_) {
    ovs_->CancelAll();
    return n;
  }
  if (agent_) DrainUnplugs();
  for (const auto& h : hosts) Unplug(h, "");
  return n;
}

Result<client::Subnet> Model::Subnet(const std::string& id) const {
  if (id == options_.subnet_id) return SubnetDocument(false);
  if (cidr6_ && id == options_.subnet6_id) return SubnetDocument(true);
  return NotFoundError("subnet " + id + " not found");
}

std::vector<client::Subnet> Model::Subnets() const {
  std::vector<client::Subnet> out = {SubnetDocument(false)};
  if (cidr6_) out.push_back(SubnetDocument(true));
  return out;
}

Model::Usage Model::usage() const {
  MutexLock lk(mu_);
  Usage u;
  u.ports = ports_.size();
  u.agent_backlog = unplugs_.size() + unplugging_;
  if (ovs_) {
    u.agent_waiting = ovs_->waiting();
    for (const auto& [id, r] : ports_) {
      if (r.vlan != 0) u.vlans[id] = r.vlan;
    }
  }
  for (const IpAddress& ip : pool4_.allocated()) u.allocated.push_back(ip.ToString());
  if (pool6_) {
    for (const IpAddress& ip : pool6_->allocated()) u.allocated.push_back(ip.ToString());
  }
  return u;
}

size_t Model::port_count() const {
  MutexLock lk(mu_);
  return ports_.size();
}

std::vector<PortSummary> Model::Summaries() const {
  std::vector<std::pair<uint64_t, PortSummary>> rows;
  {
    MutexLock lk(mu_);
    for (const auto& [id, r] : ports_) {
      PortSummary s;
      s.id = id;
      s.host_id = r.port.host_id;
      s.status = r.port.status;
      s.admin_state_up = r.port.admin_state_up;
      for (const auto& ip : r.port.fixed_ips) s.ips.push_back(ip.ip_address);
      s.mac = r.port.mac_address;
      if (r.plugged) s.host_veth = r.host_name;
      s.vlan = r.vlan;
      rows.emplace_back(r.seq, std::move(s));
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PortSummary> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(r.second));
  return out;
}

// --- helpers under mu_ ------------------------------------------------------------------------

void Model::SetPhase(PortRecord& r, Phase phase) {
  r.phase = phase;
  if (phase == Phase::kPending && !r.never_ready) {
    waiting_.insert(r.port.id);
  } else {
    waiting_.erase(r.port.id);
  }
  r.port.status = StatusWord(options_.dialect, phase);
  RenewText(r);
}

bool Model::Due(const PortRecord& r, Clock::time_point now) const {
  return r.phase == Phase::kPending && !r.never_ready && r.gets >= options_.gets_before_ready &&
         now >= r.created + options_.ready_delay;
}

std::string Model::ReserveHostName(const std::string& port_id) {
  for (int attempt = 0;; ++attempt) {
    std::string name = HostEndName(port_id, attempt);
    if (host_names_.insert(name).second) return name;
  }
}

void Model::WakeTimer() {
  kicked_ = true;
  cv_.notify_all();
}

client::Subnet Model::SubnetDocument(bool six) const {
  client::Subnet s;
  s.id = six ? options_.subnet6_id : options_.subnet_id;
  s.project_id = options_.project_id;
  s.network_id = options_.vpc_id;
  s.cidr = six ? cidr6_->ToString() : cidr4_.ToString();
  s.gateway_ip = six ? gateway6_.ToString() : gateway4_.ToString();
  s.ip_version = six ? 6 : 4;
  return s;
}

}  // namespace mizarmp::mock
