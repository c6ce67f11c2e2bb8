// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/service/publisher.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>

#include <algorithm>

#include "common/fileutil.h"
#include "common/log.h"
#include "endpoint/endpoint.h"
#include "fence/cidrset.h"
#include "mizarmp/port_index.grpc.pb.h"

namespace mizarmp::fence {
namespace {

// How long one Publish call may take: well inside the shortest lease a controller grants.
constexpr std::chrono::seconds kPublishDeadline{10};
// How soon a fence set stream that ended is opened again.
constexpr std::chrono::milliseconds kWatchRetry{1000};
// How often the records are looked at while a fence stands, at the most: a pod added meanwhile
// gets the set (fence/pod_filters.h) within this of its record (a stat per network directory).
constexpr std::chrono::milliseconds kFencedLook{500};

// TLS towards the controller: its CA, and this node's certificate, which the publication
// endpoint requires (it authenticates node agents by client certificate).
Result<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const PublisherOptions& o) {
  if (o.insecure) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  MZ_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile("publishCaFile", o.ca_file));
  MZ_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPemFile("publishCertFile", o.cert_file));
  MZ_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPemFile("publishKeyFile", o.key_file));
  return grpc::SslCredentials(ssl);
}

// The controller's addresses, which the host filter never cuts: an unfence travels this way
// even when a fenced CIDR covers the controller. None when the name does not resolve now (the
// controller is then unreachable as well).
std::vector<KeptPeer> ControllerPeers(const endpoint::Endpoint& target) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(target.host.c_str(), nullptr, &hints, &found) != 0) {
    MZ_LOG(kWarn) << "publication: " << target.host << " does not resolve; the fence set may cut it";
    return {};
  }
  std::vector<KeptPeer> peers;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* bytes =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (::inet_ntop(a->ai_family, bytes, text, sizeof text) == nullptr) continue;
    auto ip = IpAddress::Parse(text);
    if (ip.ok()) peers.push_back({*ip, static_cast<uint16_t>(target.port)});
  }
  ::freeaddrinfo(found);
  return peers;
}

}  // namespace

std::vector<AddressedPort> NodeAttachments(
    const std::vector<records::RecordCache::Records>& records, const std::string& node) {
  std::vector<AddressedPort> ports;
  for (const records::RecordCache::Records& network : records) {
    for (const records::Record& r : *network) {
      if (r.port_id.empty() || (!r.host_id.empty() && r.host_id != node)) continue;
      const std::string pod = r.pod_name.empty() ? "" : r.pod_namespace + "/" + r.pod_name;
      for (const records::RecordIp& address : r.ips) {
        auto cidr = Cidr::Parse(address.address, /*allow_bare=*/true);
        if (cidr.ok()) ports.push_back({cidr->address(), r.port_id, pod});
      }
    }
  }
  std::sort(ports.begin(), ports.end(), [](const AddressedPort& a, const AddressedPort& b) {
    return std::tie(a.ip, a.port_id) < std::tie(b.ip, b.port_id);
  });
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

std::set<CutLink> FencedLinks(const std::vector<records::RecordCache::Records>& records,
                             const std::string& node, const FenceSet& set) {
  std::set<CutLink> links;
  if (set.cidrs.empty()) return links;
  const CidrSet fences(set.cidrs);
  for (const records::RecordCache::Records& network : records) {
    for (const records::Record& r : *network) {
      if (!r.host_id.empty() && r.host_id != node) continue;
      const bool fenced = std::any_of(r.ips.begin(), r.ips.end(), [&](const records::RecordIp& a) {
        auto cidr = Cidr::Parse(a.address, /*allow_bare=*/true);
        return cidr.ok() && !fences.Covering(cidr->address()).empty();
      });
      if (!fenced) continue;
      if (!r.ovs.empty()) {
        links.insert({"", r.ovs.port});  // plug mode: the host end the plugin made
      } else if (!r.netns.empty() && !r.ifname.empty()) {
        links.insert({r.netns, r.ifname});  // agent mode: the pod's own interface
      }
    }
  }
  return links;
}

Result<std::unique_ptr<Publisher>> Publisher::Create(PublisherOptions options) {
  MZ_RETURN_IF_ERROR(options.Validate());
  MZ_ASSIGN_OR_RETURN(const endpoint::Endpoint target, endpoint::ParseEndpoint(options.target));
  MZ_ASSIGN_OR_RETURN(auto credentials, Credentials(options));
  auto channel = grpc::CreateChannel(target.GrpcAddress(), credentials);
  return std::unique_ptr<Publisher>(
      new Publisher(std::move(options), std::move(channel), ControllerPeers(target)));
}

Publisher::Publisher(PublisherOptions options, std::shared_ptr<grpc::Channel> channel,
                     std::vector<KeptPeer> controller)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      filter_(options_.state_dir + "/.fence-set", std::move(controller)) {}

Publisher::~Publisher() { Stop(); }

void Publisher::Start() {
  if (loop_.running()) return;
  {
    MutexLock lock(mu_);
    stopping_ = false;
  }
  loop_.Start([this] { return Turn(); });
  watcher_.Start([this] {
    Watch();
    return kWatchRetry;
  });
}

void Publisher::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;  // no new stream opens
    if (watch_call_ != nullptr) watch_call_->TryCancel();
  }
  loop_.Stop();
  watcher_.Stop();
}

std::vector<addons::ReadinessCheck> Publisher::readiness_checks() {
  return {{"fence set", [this] {
             MutexLock lock(mu_);
             if (!enforce_error_.ok()) return addons::Readiness::Failed(enforce_error_);
             return enforced_.empty() ? addons::Readiness::Initializing()
                                      : addons::Readiness::Ready();
           }}};
}

uint64_t Publisher::published() const {
  MutexLock lock(mu_);
  return published_;
}

std::chrono::milliseconds Publisher::Turn() {
  if (!restored_) {
    // A rebooted node enforces the last set it knew before it publishes: it never lifts a
    // fence it has not seen lifted.
    if (Status restored = filter_.Restore(); !restored.ok()) {
      MZ_LOG(kWarn) << "fence: " << restored.ToString();
    }
    restored_ = true;
    MutexLock lock(mu_);
    enforced_ = filter_.digest();
  }
  Look();
  return filter_.enforced().cidrs.empty()
             ? options_.interval
             : std::min<std::chrono::milliseconds>(options_.interval, kFencedLook);
}

void Publisher::Look() {
  if (Status repaired = filter_.Repair(); !repaired.ok()) {
    MZ_LOG(kWarn) << "fence: " << repaired.ToString();
  }
  auto snapshot = records_.Snapshot();
  if (!snapshot.ok()) {
    MZ_LOG(kWarn) << "publication: reading the records: " << snapshot.status().message();
  }
  EnforcePushed(snapshot.ok() ? &*snapshot : nullptr);
  if (!snapshot.ok()) return;
  EnforceOnPods(*snapshot);  // pods made since the last look
  std::vector<AddressedPort> ports = NodeAttachments(*snapshot, options_.node);
  const bool changed = !accepted_any_ || ports != accepted_;
  if (!changed && std::chrono::steady_clock::now() < republish_at_) return;
  Status published = Publish(ports);
  // A new fence set is acknowledged at once, once this node's pods enforce it too: a fence
  // answers only once every live node enforces it (fence/service/fence_service.h, AwaitNodes).
  if (published.ok() && unacknowledged_) {
    EnforceOnPods(*snapshot);
    published = Publish(ports);
  }
  if (!published.ok()) {
    MZ_LOG(kWarn) << "publication to " << options_.target << ": " << published.ToString();
    return;
  }
  accepted_ = std::move(ports);
  accepted_any_ = true;
}

void Publisher::EnforceOnPods(const std::vector<records::RecordCache::Records>& records) {
  if (records == pods_enforced_for_records_ && filter_.digest() == pods_enforced_for_set_) return;
  Status filtered =
      pod_filters_.Apply(PodNamespaces(records, options_.node), filter_.shared_enforced());
  Status cut = cutter_.Apply(FencedLinks(records, options_.node, filter_.enforced()));
  for (const Status* s : {&filtered, &cut}) {
    if (!s->ok()) {
      MZ_LOG(kWarn) << "fence: " << s->ToString();
    }
  }
  if (!filtered.ok() || !cut.ok()) return;  // tried again at the next look
  pods_enforced_for_records_ = records;
  pods_enforced_for_set_ = filter_.digest();
}

Status Publisher::Publish(const std::vector<AddressedPort>& ports) {
  ::mizarmp::v1::PublishRequest request;
  request.set_node(options_.node);
  request.set_fence_set_digest(filter_.digest());
  ::mizarmp::v1::Attachment* current = nullptr;
  std::vector<const AddressedPort*> by_port;
  for (const AddressedPort& p : ports) by_port.push_back(&p);
  std::stable_sort(by_port.begin(), by_port.end(),
                   [](const auto* a, const auto* b) { return a->port_id < b->port_id; });
  for (const AddressedPort* p : by_port) {
    if (current == nullptr || current->port_id() != p->port_id) {
      current = request.add_attachments();
      current->set_port_id(p->port_id);
      if (const size_t slash = p->pod.find('/'); slash != std::string::npos) {
        current->set_pod_namespace(p->pod.substr(0, slash));
        current->set_pod_name(p->pod.substr(slash + 1));
      }
    }
    current->add_ips(p->ip.ToString());
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kPublishDeadline);
  ::mizarmp::v1::PublishResponse response;
  auto stub = ::mizarmp::v1::PortIndex::NewStub(channel_);
  const grpc::Status s = stub->Publish(&context, request, &response);
  if (!s.ok()) {
    return Status(static_cast<Code>(s.error_code()), "Publish: " + s.error_message());
  }
  // A third of the lease: two more tries before the node lapses.
  republish_at_ = std::chrono::steady_clock::now() +
                  std::chrono::seconds(std::max<uint32_t>(1, response.lease_seconds() / 3));
  unacknowledged_ = Enforce(response.fence_set_digest(),
                            {response.fenced_cidrs().begin(), response.fenced_cidrs().end()},
                            "Publish answer");
  MutexLock lock(mu_);
  ++published_;
  return Status::Ok();
}

bool Publisher::Enforce(const std::string& digest, const std::vector<std::string>& cidrs,
                        const std::string& source) {
  if (digest.empty() || digest == filter_.digest()) return false;
  auto set = ParseFenceSet(cidrs, source + ": fenced_cidrs");
  if (set.ok() && set->digest != digest) {
    set = InternalError(source + ": fenced_cidrs do not make the set its digest names");
  }
  Status applied = set.ok() ? filter_.Apply(*set) : set.status();
  MutexLock lock(mu_);
  if (set.ok()) enforce_error_ = applied;  // nftables' verdict (a bad answer is not this node's)
  if (!applied.ok()) {
    // The set enforced before stands; the next publication asks for this one again.
    MZ_LOG(kWarn) << "fence: " << applied.ToString();
    return false;
  }
  MZ_LOG(kInfo) << "fence: this node enforces " << set->cidrs.size() << " fenced CIDR(s)";
  enforced_ = filter_.digest();
  return true;
}

void Publisher::EnforcePushed(const std::vector<records::RecordCache::Records>* records) {
  std::unique_ptr<::mizarmp::v1::FenceSetUpdate> update;
  {
    MutexLock lock(mu_);
    update = std::move(pushed_);
  }
  if (update == nullptr) return;
  Enforce(update->fence_set_digest(),
          {update->fenced_cidrs().begin(), update->fenced_cidrs().end()}, "fence set update");
  if (filter_.digest() != update->fence_set_digest()) {
    // An update without the CIDRs this node lacks (it enforced another set meanwhile), or one
    // it could not enforce: the next publication asks for the set and acknowledges it.
    republish_at_ = {};
    return;
  }
  // This node's pods enforce the set before it says it enforces the set. Without
  // the records (unreadable now) it does not say so: the next look tries again.
  if (records == nullptr) {
    republish_at_ = {};
    return;
  }
  EnforceOnPods(*records);
  if (Status acked = Acknowledge(update->fence_set_digest()); !acked.ok()) {
    MZ_LOG(kWarn) << "fence: " << acked.ToString() << "; the next publication acknowledges it";
    republish_at_ = {};
  }
}

Status Publisher::Acknowledge(const std::string& digest) {
  ::mizarmp::v1::AcknowledgeRequest request;
  request.set_node(options_.node);
  request.set_fence_set_digest(digest);
  ::mizarmp::v1::AcknowledgeResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kPublishDeadline);
  const grpc::Status s =
      ::mizarmp::v1::PortIndex::NewStub(channel_)->Acknowledge(&context, request, &response);
  if (!s.ok()) {
    return Status(static_cast<Code>(s.error_code()), "Acknowledge: " + s.error_message());
  }
  unacknowledged_ = false;
  return Status::Ok();
}

void Publisher::Watch() {
  const Status ended = WatchOnce();
  // One line per kind of failure, not one per retry while the controller stays away.
  if (!ended.ok() && ended.ToString() != last_watch_failure_) {
    MZ_LOG(kWarn) << "fence set stream from " << options_.target << ": " << ended.ToString()
                  << "; retrying every " << kWatchRetry.count() << " ms meanwhile";
  }
  last_watch_failure_ = ended.ok() ? "" : ended.ToString();
}

Status Publisher::WatchOnce() {
  grpc::ClientContext context;
  ::mizarmp::v1::WatchFenceSetRequest request;
  request.set_node(options_.node);
  {
    MutexLock lock(mu_);
    if (stopping_) return Status::Ok();
    watch_call_ = &context;
    request.set_fence_set_digest(enforced_);
  }
  auto stub = ::mizarmp::v1::PortIndex::NewStub(channel_);
  auto reader = stub->WatchFenceSet(&context, request);
  auto update = std::make_unique<::mizarmp::v1::FenceSetUpdate>();
  while (reader->Read(update.get())) {
    {
      MutexLock lock(mu_);
      pushed_ = std::move(update);
    }
    loop_.Wake();
    update = std::make_unique<::mizarmp::v1::FenceSetUpdate>();
  }
  const grpc::Status s = reader->Finish();
  MutexLock lock(mu_);
  watch_call_ = nullptr;
  if (s.ok() || stopping_) return Status::Ok();
  return Status(static_cast<Code>(s.error_code()), "WatchFenceSet: " + s.error_message());
}

}  // namespace mizarmp::fence
