#include "fence/fence_service.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

#include "cni/records.h"
#include "common/log.h"
#include "fence/secrets.h"

namespace mizarmp::fence {
namespace {

// At most `limit` items, then how many more there are.
std::string Join(const std::vector<std::string>& items, size_t limit = 20) {
  if (items.size() <= limit) return Joined(items, ", ");
  std::string out = Joined(std::span(items).first(limit), ", ");
  out += ", ... (" + std::to_string(items.size() - limit) + " more)";
  return out;
}

std::vector<std::string> CidrTexts(const std::vector<Cidr>& cidrs) {
  std::vector<std::string> out;
  for (const auto& c : cidrs) out.push_back(CanonicalCidr(c));
  return out;
}

// The request's CIDRs, validated. `rpc` names the call in errors.
template <typename Repeated>
Result<CidrSet> RequestCidrs(const Repeated& cidrs) {
  if (cidrs.empty()) {
    return InvalidArgumentError("cidrs: missing or empty; at least one CIDR block is required");
  }
  CidrSet set;
  for (int i = 0; i < cidrs.size(); ++i) {
    auto c = ParseFenceCidr(cidrs.Get(i).cidr());
    if (!c.ok()) {
      return InvalidArgumentError("cidrs[" + std::to_string(i) + "]: " + c.status().message());
    }
    set.Add(*c);
  }
  return set;
}

// The addresses of a port that parse (Mizar-MP could in principle return garbage).
std::vector<IpAddress> PortIps(const client::Port& port) {
  std::vector<IpAddress> out;
  for (const auto& f : port.fixed_ips) {
    auto ip = IpAddress::Parse(f.ip_address);
    if (ip.ok()) {
      out.push_back(*ip);
    } else {
      MZ_LOG(kDebug) << "port " << port.id << ": ignoring fixed IP \"" << f.ip_address << "\"";
    }
  }
  return out;
}

std::string PortLabel(const client::Port& port, const std::vector<IpAddress>& ips) {
  std::string label = "port " + port.id;
  if (!ips.empty()) {
    label += " (";
    std::vector<std::string> texts;
    for (const auto& ip : ips) texts.push_back(ip.ToString());
    label += Joined(texts, " ");
    label += ")";
  }
  return label;
}

// Host CIDR of an address.
Cidr HostCidr(const IpAddress& ip) { return Cidr(ip, ip.bits()); }

}  // namespace

FenceOptions FenceOptions::FromConfig(const ServerConfig& config) {
  FenceOptions o;
  o.mizarmp = config.mizarmp;
  o.state_dir = config.state_dir;
  o.fence_store = config.fence_store;
  o.node_addresses = config.node_addresses;
  o.host_id = config.host_id;
  o.use_port_list = config.use_port_list;
  o.expected_secrets = config.expected_secrets;
  o.reconcile_interval = config.reconcile_interval;
  return o;
}

FenceService::FenceService(FenceOptions options) : options_(std::move(options)) {}

FenceService::~FenceService() { Stop(); }

Status FenceService::OpenStore() {
  auto opened = FenceStore::Open(options_.fence_store);
  std::lock_guard<std::mutex> lock(store_mu_);
  store_opening_ = false;
  if (!opened.ok()) {
    store_error_ = opened.status();
    MZ_LOG(kError) << "fence store: " << opened.status().ToString();
    return opened.status();
  }
  store_ = std::move(*opened);
  store_error_ = Status::Ok();
  return Status::Ok();
}

void FenceService::Start() {
  std::lock_guard<std::mutex> lock(run_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(/*initial_pass=*/true); });
}

Status FenceService::StartAndWait() {
  Status s = OpenStore();
  if (!s.ok()) return s;
  auto first = Reconcile();
  if (!first.ok()) {
    MZ_LOG(kWarn) << "fence reconcile: " << first.status().message();
  }
  std::lock_guard<std::mutex> lock(run_mu_);
  if (!thread_.joinable()) {
    stopping_ = false;
    thread_ = std::thread([this] { Run(/*initial_pass=*/false); });
  }
  return Status::Ok();
}

void FenceService::Stop() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stopping_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FenceService::Run(bool initial_pass) {
  bool need_open;
  if (!initial_pass) {
    // StartAndWait() already opened the store and made the first pass.
    std::unique_lock<std::mutex> lock(run_mu_);
    if (run_cv_.wait_for(lock, options_.reconcile_interval, [this] { return stopping_; })) return;
  }
  while (true) {
    {
      std::lock_guard<std::mutex> lock(store_mu_);
      need_open = store_ == nullptr;
    }
    // A store that could not be opened is retried every interval (a full disk, a permission
    // fixed by the operator); Probe reports it meanwhile. Once open, the first pass runs at
    // once: it finishes what a previous process left interrupted.
    if (!need_open || OpenStore().ok()) {
      auto report = Reconcile();
      if (!report.ok()) {
        MZ_LOG(kWarn) << "fence reconcile: " << report.status().message();
      } else if (report->disabled + report->enabled > 0) {
        MZ_LOG(kInfo) << "fence reconcile: disabled " << report->disabled << " port(s), re-enabled "
                      << report->enabled;
      }
    }
    std::unique_lock<std::mutex> lock(run_mu_);
    if (run_cv_.wait_for(lock, options_.reconcile_interval, [this] { return stopping_; })) return;
  }
}

Readiness FenceService::StoreReadiness() const {
  std::lock_guard<std::mutex> lock(store_mu_);
  if (store_ == nullptr) {
    if (store_opening_) return Readiness::Initializing();
    return Readiness::Failed(store_error_);
  }
  if (!store_error_.ok()) return Readiness::Failed(store_error_);
  return Readiness::Ready();
}

void FenceService::RegisterWith(IdentityService& identity) {
  identity.AddReadinessCheck("fence store", [this] { return StoreReadiness(); });
  identity.AddNetworkFenceCapabilities();
}

void FenceService::NoteStoreError(const Status& s) {
  std::lock_guard<std::mutex> lock(store_mu_);
  store_error_ = s;
}

Result<FenceStore*> FenceService::Store() const {
  std::lock_guard<std::mutex> lock(store_mu_);
  if (store_ != nullptr) return store_.get();
  if (store_opening_) {
    return UnavailableError("fence store \"" + options_.fence_store +
                            "\" is still opening; retry shortly");
  }
  return FailedPreconditionError("fence store unusable: " + store_error_.message());
}

Result<std::unique_ptr<client::Client>> FenceService::NewClient() const {
  auto c = client::Client::Create(options_.mizarmp);
  if (!c.ok()) {
    return FailedPreconditionError("Mizar-MP client for " + RedactUrl(options_.mizarmp.base_url) +
                                   ": " + c.status().message());
  }
  return std::move(*c);
}

Result<EnforceReport> FenceService::Reconcile() {
  std::lock_guard<std::mutex> lock(enforce_mu_);
  return EnforceLocked();
}

Result<EnforceReport> FenceService::EnforceLocked() {
  ++passes_;
  MZ_ASSIGN_OR_RETURN(FenceStore * store, Store());
  auto snap = store->Snapshot();
  if (!snap.ok()) {
    NoteStoreError(snap.status());
    return snap.status();
  }
  NoteStoreError(Status::Ok());
  EnforceReport report;
  if (snap->fences.empty() && snap->unfences.empty()) return report;

  CidrSet fenced;
  for (const auto& e : snap->fences) fenced.Add(e.cidr);
  CidrSet unfencing;
  for (const auto& c : snap->unfences) unfencing.Add(c);

  const std::string what_left =
      std::to_string(snap->fences.size()) + " fence(s) and " +
      std::to_string(snap->unfences.size()) +
      " pending unfence(s) are stored and will be completed by a retry or the reconcile";
  MZ_ASSIGN_OR_RETURN(auto mp, NewClient());
  auto ports = mp->ListPorts();
  if (!ports.ok()) {
    const Status& e = ports.status();
    const std::string msg = "Mizar-MP at " + RedactUrl(options_.mizarmp.base_url) +
                            ": listing ports failed (" + e.ToString() + "); " + what_left;
    return e.code() == Code::kUnavailable || e.code() == Code::kDeadlineExceeded
               ? UnavailableError(msg)
               : UnknownError(msg);
  }

  // CIDRs (fences and unfences) with a port whose update failed: not complete.
  CidrSet incomplete;
  std::vector<std::string> left;
  Status first_error;
  int attempts = 0;
  for (const client::Port& port : *ports) {
    const std::vector<IpAddress> ips = PortIps(port);
    if (ips.empty()) continue;
    std::vector<IpAddress> in_fence;
    std::vector<IpAddress> in_unfence;
    for (const auto& ip : ips) {
      if (fenced.Contains(ip)) in_fence.push_back(ip);
      if (unfencing.Contains(ip)) in_unfence.push_back(ip);
    }
    bool want_up;
    if (!in_fence.empty()) {
      want_up = false;
    } else if (!in_unfence.empty()) {
      want_up = true;
    } else {
      continue;
    }
    if (port.admin_state_up == want_up) continue;
    ++attempts;
    auto updated = mp->UpdatePort(port.id, nlohmann::json{{"admin_state_up", want_up}});
    if (updated.ok() || updated.status().code() == Code::kNotFound) {
      // A port deleted meanwhile needs nothing more.
      if (updated.ok()) {
        (want_up ? report.enabled : report.disabled)++;
        MZ_LOG(kInfo) << (want_up ? "re-enabled " : "disabled ") << PortLabel(port, ips)
                      << " on host " << (port.host_id.empty() ? "?" : port.host_id);
      }
      continue;
    }
    ++report.failed;
    if (first_error.ok()) first_error = updated.status();
    left.push_back(PortLabel(port, ips) + (want_up ? " to re-enable" : " to disable"));
    for (const auto& c : fenced.cidrs()) {
      for (const auto& ip : want_up ? in_unfence : in_fence) {
        if (c.Contains(ip)) incomplete.Add(c);
      }
    }
    for (const auto& c : unfencing.cidrs()) {
      for (const auto& ip : in_unfence) {
        if (c.Contains(ip)) incomplete.Add(c);
      }
    }
  }

  for (const auto& e : snap->fences) {
    if (incomplete.Has(e.cidr)) continue;
    report.enforced.push_back(e.cidr);
  }
  for (const auto& c : snap->unfences) {
    if (!incomplete.Has(c)) report.unfenced.push_back(c);
  }
  // Only pending fences change state; the enforced ones stay enforced.
  std::vector<Cidr> newly_enforced;
  for (const auto& e : snap->fences) {
    if (e.state == FenceState::kPending && !incomplete.Has(e.cidr))
      newly_enforced.push_back(e.cidr);
  }
  Status s = store->MarkEnforced(newly_enforced);
  if (s.ok()) s = store->CompleteUnfences(report.unfenced);
  if (!s.ok()) {
    NoteStoreError(s);
    return s;
  }

  if (report.failed > 0) {
    const std::string msg = "Mizar-MP at " + RedactUrl(options_.mizarmp.base_url) + ": " +
                            std::to_string(report.failed) + " of " + std::to_string(attempts) +
                            " port update(s) failed (first: " + first_error.ToString() +
                            "); left: " + Join(left) + "; " + what_left;
    return first_error.code() == Code::kUnavailable || first_error.code() == Code::kDeadlineExceeded
               ? UnavailableError(msg)
               : UnknownError(msg);
  }
  return report;
}

Result<std::vector<FenceClient>> FenceService::FenceClients(
    const std::map<std::string, std::string>& params) {
  std::string only;
  if (auto it = params.find(kHostIdParameter); it != params.end()) {
    only = it->second;
    if (only.empty()) {
      return InvalidArgumentError(std::string("parameters[\"") + kHostIdParameter +
                                  "\"]: must not be empty");
    }
  }
  std::map<std::string, std::vector<Cidr>> by_node;
  auto wanted = [&](const std::string& host) { return only.empty() || host == only; };

  // 1. The plugin's attachment records on this node.
  auto listed = records_.Snapshot();
  if (!listed.ok()) {
    return UnavailableError("reading the plugin's attachment records under \"" +
                            options_.state_dir + "\": " + listed.status().message());
  }
  for (const auto& network : *listed) {
    for (const cni::Record& r : *network) {
      const std::string host = r.host_id.empty() ? options_.host_id : r.host_id;
      if (host.empty()) {
        MZ_LOG(kDebug) << "record " << r.network << "/" << r.container_id
                       << " has no host id and no hostId is configured; skipped";
        continue;
      }
      if (!wanted(host)) continue;
      for (const auto& ip : r.ips) {
        auto c = Cidr::Parse(ip.address, /*allow_bare=*/true);
        if (!c.ok()) continue;
        by_node[host].push_back(HostCidr(c->address()));
      }
      if (r.ips.empty()) by_node[host];  // the node exists even before its pod has an address
    }
  }

  // 2. Configured node addresses.
  for (const auto& [host, list] : options_.node_addresses) {
    if (!wanted(host)) continue;
    for (const auto& text : list) {
      auto c = Cidr::Parse(text, /*allow_bare=*/true);
      if (!c.ok()) continue;  // validated with the config
      by_node[host].push_back(c->has_host_bits() ? HostCidr(c->address()) : *c);
    }
    by_node[host];
  }

  // 3. The Mizar-MP port list (the whole cluster).
  if (options_.use_port_list) {
    MZ_ASSIGN_OR_RETURN(auto mp, NewClient());
    std::map<std::string, std::string> filters;
    if (!only.empty()) filters["binding:host_id"] = only;
    auto ports = mp->ListPorts(filters);
    if (!ports.ok()) {
      const Status& e = ports.status();
      const std::string msg = "Mizar-MP at " + RedactUrl(options_.mizarmp.base_url) +
                              ": listing ports failed: " + e.ToString();
      return e.code() == Code::kUnavailable || e.code() == Code::kDeadlineExceeded
                 ? UnavailableError(msg)
                 : UnknownError(msg);
    }
    for (const auto& port : *ports) {
      if (port.host_id.empty() || !wanted(port.host_id)) continue;
      for (const auto& ip : PortIps(port)) by_node[port.host_id].push_back(HostCidr(ip));
    }
  }

  std::vector<FenceClient> out;
  for (auto& [host, cidrs] : by_node) {
    FenceClient c;
    c.id = host;
    c.addresses = MergeCidrs(cidrs);
    if (c.addresses.empty()) continue;  // ClientDetails.addresses is required
    out.push_back(std::move(c));
  }
  return out;
}

Result<FenceService::Admitted> FenceService::Admit(
    const char* rpc, const google::protobuf::Map<std::string, std::string>& secrets,
    const google::protobuf::RepeatedPtrField<::fence::CIDR>* cidrs) {
  if (Status s = CheckSecrets(secrets, options_.expected_secrets); !s.ok()) {
    MZ_LOG(kWarn) << rpc << " refused: " << s.message();
    return s;
  }
  Admitted out;
  if (cidrs != nullptr) {
    MZ_ASSIGN_OR_RETURN(out.cidrs, RequestCidrs(*cidrs));
  }
  MZ_ASSIGN_OR_RETURN(out.store, Store());
  return out;
}

grpc::Status FenceService::FenceClusterNetwork(grpc::ServerContext*,
                                               const ::fence::FenceClusterNetworkRequest* request,
                                               ::fence::FenceClusterNetworkResponse*) {
  auto call = Admit("FenceClusterNetwork", request->secrets(), &request->cidrs());
  if (!call.ok()) return ToGrpcStatus(call.status());
  const CidrSet& cidrs = call->cidrs;
  FenceStore* store = call->store;

  std::lock_guard<std::mutex> lock(enforce_mu_);
  // Durable first: once this returns, a crash cannot lose the fence.
  if (Status s = store->AddFences(cidrs.cidrs()); !s.ok()) {
    NoteStoreError(s);
    MZ_LOG(kError) << "FenceClusterNetwork: " << s.ToString();
    return ToGrpcStatus(s.WithContext("storing the fence"));
  }
  const std::string names = Join(cidrs.Strings());
  MZ_LOG(kInfo) << "fence stored: " << names;
  auto report = EnforceLocked();
  if (!report.ok()) {
    MZ_LOG(kWarn) << "fence of " << names << " not yet enforced: " << report.status().message();
    return ToGrpcStatus(report.status().WithContext("fence of " + names + " is stored"));
  }
  MZ_LOG(kInfo) << "fence enforced: " << names << " (" << report->disabled << " port(s) disabled)";
  return grpc::Status::OK;
}

grpc::Status FenceService::UnfenceClusterNetwork(
    grpc::ServerContext*, const ::fence::UnfenceClusterNetworkRequest* request,
    ::fence::UnfenceClusterNetworkResponse*) {
  auto call = Admit("UnfenceClusterNetwork", request->secrets(), &request->cidrs());
  if (!call.ok()) return ToGrpcStatus(call.status());
  const CidrSet& cidrs = call->cidrs;
  FenceStore* store = call->store;

  std::lock_guard<std::mutex> lock(enforce_mu_);
  auto removed = store->RemoveFences(cidrs.cidrs());
  if (!removed.ok()) {
    NoteStoreError(removed.status());
    MZ_LOG(kError) << "UnfenceClusterNetwork: " << removed.status().ToString();
    return ToGrpcStatus(removed.status().WithContext("removing the fence"));
  }
  const std::string names = Join(cidrs.Strings());
  MZ_LOG(kInfo) << "unfence of " << names << ": lifted "
                << (removed->empty() ? std::string("nothing (not fenced)")
                                     : Join(CidrTexts(*removed)));
  auto report = EnforceLocked();
  if (!report.ok()) {
    MZ_LOG(kWarn) << "unfence of " << names << " not yet complete: " << report.status().message();
    return ToGrpcStatus(report.status().WithContext("unfence of " + names + " is stored"));
  }
  MZ_LOG(kInfo) << "unfence complete: " << names << " (" << report->enabled
                << " port(s) re-enabled)";
  return grpc::Status::OK;
}

grpc::Status FenceService::ListClusterFence(grpc::ServerContext*,
                                            const ::fence::ListClusterFenceRequest* request,
                                            ::fence::ListClusterFenceResponse* response) {
  auto call = Admit("ListClusterFence", request->secrets(), nullptr);
  if (!call.ok()) return ToGrpcStatus(call.status());
  FenceStore* store = call->store;
  auto fences = store->ListFences();
  if (!fences.ok()) {
    NoteStoreError(fences.status());
    return ToGrpcStatus(fences.status());
  }
  for (const auto& e : *fences) response->add_cidrs()->set_cidr(CanonicalCidr(e.cidr));
  return grpc::Status::OK;
}

grpc::Status FenceService::GetFenceClients(grpc::ServerContext*,
                                           const ::fence::GetFenceClientsRequest* request,
                                           ::fence::GetFenceClientsResponse* response) {
  if (Status s = CheckSecrets(request->secrets(), options_.expected_secrets); !s.ok()) {
    MZ_LOG(kWarn) << "GetFenceClients refused: " << s.message();
    return ToGrpcStatus(s);
  }
  std::map<std::string, std::string> params(request->parameters().begin(),
                                            request->parameters().end());
  auto clients = FenceClients(params);
  if (!clients.ok()) {
    MZ_LOG(kWarn) << "GetFenceClients: " << clients.status().ToString();
    return ToGrpcStatus(clients.status());
  }
  for (const auto& c : *clients) {
    auto* d = response->add_clients();
    d->set_id(c.id);
    for (const auto& a : c.addresses) d->add_addresses()->set_cidr(CanonicalCidr(a));
  }
  return grpc::Status::OK;
}

}  // namespace mizarmp::fence
