#include "addons/identity.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>

#include "addons/grpc_status.h"
#include "addons/redact.h"
#include "common/log.h"
#include "common/version.h"

namespace mizarmp::addons {
namespace {

// `caps` in order, each kept only the first time it appears.
std::vector<identity::Capability> WithoutDuplicates(std::vector<identity::Capability> caps) {
  std::vector<identity::Capability> out;
  for (auto& c : caps) {
    const bool seen = std::any_of(out.begin(), out.end(), [&c](const identity::Capability& o) {
      return google::protobuf::util::MessageDifferencer::Equals(o, c);
    });
    if (!seen) out.push_back(std::move(c));
  }
  return out;
}

// The client of Probe's Mizar-MP check: a Probe must answer quickly, so one attempt with short
// timeouts.
Result<std::unique_ptr<client::Client>> ProbeClient(const IdentityOptions& options) {
  client::ClientConfig cc = options.mizarmp;
  cc.request_timeout = options.probe_timeout;
  cc.connect_timeout = std::min(cc.connect_timeout, options.probe_timeout);
  cc.max_attempts = 1;
  return client::Client::Create(std::move(cc));
}

}  // namespace

IdentityService::IdentityService(IdentityOptions options, std::vector<AddonsService*> services,
                                 std::vector<AddonsComponent*> components)
    : options_(std::move(options)) {
  if (options_.vendor_version.empty()) options_.vendor_version = std::string(Version());
  if (options_.commit.empty()) options_.commit = std::string(GitCommit());

  std::vector<identity::Capability> caps = capabilities();
  for (AddonsService* service : services) {
    for (auto& c : service->capabilities()) caps.push_back(std::move(c));
    for (auto& check : service->readiness_checks()) checks_.push_back(std::move(check));
  }
  for (AddonsComponent* component : components) {
    for (auto& check : component->readiness_checks()) checks_.push_back(std::move(check));
  }
  advertised_ = WithoutDuplicates(std::move(caps));

  if (!options_.mizarmp.base_url.empty()) {
    auto created = ProbeClient(options_);
    if (created.ok()) {
      mp_client_ = std::move(created).value();
    } else {
      mp_client_error_ =
          FailedPreconditionError("Mizar-MP client for " + RedactUrl(options_.mizarmp.base_url) +
                                  ": " + created.status().message());
    }
  }
}

IdentityService::~IdentityService() = default;

std::string IdentityService::health_name() const { return identity::Identity::service_full_name(); }

std::vector<identity::Capability> IdentityService::capabilities() const {
  identity::Capability service;
  service.mutable_service()->set_type(options_.mode == Mode::kNode
                                          ? identity::Capability::Service::NODE_SERVICE
                                          : identity::Capability::Service::CONTROLLER_SERVICE);
  return {service};
}

grpc::Status IdentityService::GetIdentity(grpc::ServerContext*, const identity::GetIdentityRequest*,
                                          identity::GetIdentityResponse* response) {
  response->set_name(options_.drivername);
  response->set_vendor_version(options_.vendor_version);
  auto& manifest = *response->mutable_manifest();
  manifest["mizarmp-url"] = RedactUrl(options_.mizarmp.base_url);
  manifest["commit"] = options_.commit;
  manifest["mode"] = std::string(ModeName(options_.mode));
  return grpc::Status::OK;
}

grpc::Status IdentityService::GetCapabilities(grpc::ServerContext*,
                                              const identity::GetCapabilitiesRequest*,
                                              identity::GetCapabilitiesResponse* response) {
  for (const auto& c : advertised_) *response->add_capabilities() = c;
  return grpc::Status::OK;
}

Status IdentityService::CallMizarMp() {
  ++mp_checks_;
  auto subnet = mp_client_->GetSubnet(options_.subnet_id);
  if (subnet.ok()) return Status::Ok();
  const std::string where = "Mizar-MP at " + RedactUrl(options_.mizarmp.base_url);
  if (subnet.status().IsNotFound()) {
    return FailedPreconditionError(where + ": subnet " + options_.subnet_id +
                                   " not found: " + subnet.status().message());
  }
  return FailedPreconditionError(where +
                                 " is unreachable or failing: " + subnet.status().ToString());
}

Status IdentityService::CheckMizarMp() {
  if (options_.mizarmp.base_url.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mp_mu_);
  if (!mp_client_error_.ok()) return mp_client_error_;
  const auto now = std::chrono::steady_clock::now();
  if (mp_cached_ && now - mp_cached_at_ < options_.probe_cache_ttl) return *mp_cached_;

  Status result = CallMizarMp();
  // Log changes only: a Probe comes every few seconds.
  if (!mp_cached_ || mp_cached_->ok() != result.ok()) {
    if (result.ok()) {
      MZ_LOG(kInfo) << "probe: Mizar-MP at " << RedactUrl(options_.mizarmp.base_url)
                    << " is reachable";
    } else {
      MZ_LOG(kWarn) << "probe: " << result.message();
    }
  }
  mp_cached_ = result;
  // Time the cache from the end of the call, so a slow answer is not immediately stale.
  mp_cached_at_ = std::chrono::steady_clock::now();
  return result;
}

Result<bool> IdentityService::CheckReady() {
  bool ready = true;
  for (const ReadinessCheck& check : checks_) {
    const Readiness r = check.check();
    if (!r.error.ok()) return FailedPreconditionError(check.name + ": " + r.error.message());
    ready = ready && r.ready;
  }
  MZ_RETURN_IF_ERROR(CheckMizarMp());
  return ready;
}

grpc::Status IdentityService::Probe(grpc::ServerContext*, const identity::ProbeRequest*,
                                    identity::ProbeResponse* response) {
  auto ready = CheckReady();
  if (!ready.ok()) return ToGrpcStatus(ready.status());
  response->mutable_ready()->set_value(*ready);
  return grpc::Status::OK;
}

uint64_t IdentityService::mizarmp_checks() const {
  std::lock_guard<std::mutex> lock(mp_mu_);
  return mp_checks_;
}

}  // namespace mizarmp::addons
