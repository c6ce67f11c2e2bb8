#include "fence/identity.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>

#include "common/log.h"

#ifndef MIZARMP_VERSION
#define MIZARMP_VERSION "0.0.0"
#endif
#ifndef MIZARMP_GIT_COMMIT
#define MIZARMP_GIT_COMMIT "unknown"
#endif

namespace mizarmp::fence {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(status.code())),
                      status.message());
}

IdentityOptions IdentityOptions::FromConfig(const ServerConfig& config) {
  IdentityOptions o;
  o.drivername = config.drivername;
  o.mode = config.mode;
  o.mizarmp = config.mizarmp;
  o.subnet_id = config.subnet_id;
  o.probe_timeout = config.probe_timeout;
  return o;
}

IdentityService::IdentityService(IdentityOptions options) : options_(std::move(options)) {
  if (options_.vendor_version.empty()) options_.vendor_version = MIZARMP_VERSION;
  if (options_.commit.empty()) options_.commit = MIZARMP_GIT_COMMIT;

  identity::Capability service;
  service.mutable_service()->set_type(options_.mode == Mode::kNode
                                          ? identity::Capability::Service::NODE_SERVICE
                                          : identity::Capability::Service::CONTROLLER_SERVICE);
  capabilities_.push_back(service);

  if (!options_.mizarmp.base_url.empty()) {
    client::ClientConfig cc = options_.mizarmp;
    // A Probe must answer quickly: one attempt, short timeouts.
    cc.request_timeout = options_.probe_timeout;
    cc.connect_timeout = std::min(cc.connect_timeout, options_.probe_timeout);
    cc.max_attempts = 1;
    auto created = client::Client::Create(std::move(cc));
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

void IdentityService::AddCapability(const identity::Capability& capability) {
  std::lock_guard<std::mutex> lock(caps_mu_);
  for (const auto& c : capabilities_) {
    if (google::protobuf::util::MessageDifferencer::Equals(c, capability)) return;
  }
  capabilities_.push_back(capability);
}

void IdentityService::AddNetworkFenceCapabilities() {
  for (auto type : {identity::Capability::NetworkFence::NETWORK_FENCE,
                    identity::Capability::NetworkFence::GET_CLIENTS_TO_FENCE}) {
    identity::Capability c;
    c.mutable_network_fence()->set_type(type);
    AddCapability(c);
  }
}

void IdentityService::AddEncryptionKeyRotationCapability() {
  identity::Capability c;
  c.mutable_encryption_key_rotation()->set_type(
      identity::Capability::EncryptionKeyRotation::ENCRYPTIONKEYROTATION);
  AddCapability(c);
}

std::vector<identity::Capability> IdentityService::Capabilities() const {
  std::lock_guard<std::mutex> lock(caps_mu_);
  return capabilities_;
}

void IdentityService::AddReadinessCheck(std::string name, std::function<Readiness()> check) {
  std::lock_guard<std::mutex> lock(caps_mu_);
  checks_.emplace_back(std::move(name), std::move(check));
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
  for (auto& c : Capabilities()) *response->add_capabilities() = std::move(c);
  return grpc::Status::OK;
}

Status IdentityService::CheckMizarMp() {
  if (options_.mizarmp.base_url.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mp_mu_);
  if (!mp_client_error_.ok()) return mp_client_error_;
  const auto now = std::chrono::steady_clock::now();
  if (mp_cached_ && now - mp_cached_at_ < options_.probe_cache_ttl) return *mp_cached_;

  ++mp_checks_;
  auto subnet = mp_client_->GetSubnet(options_.subnet_id);
  Status result;
  if (!subnet.ok()) {
    const std::string where = "Mizar-MP at " + RedactUrl(options_.mizarmp.base_url);
    if (subnet.status().code() == Code::kNotFound) {
      result = FailedPreconditionError(where + ": subnet " + options_.subnet_id +
                                       " not found: " + subnet.status().message());
    } else {
      result = FailedPreconditionError(where +
                                       " is unreachable or failing: " + subnet.status().ToString());
    }
  }
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
  std::vector<std::pair<std::string, std::function<Readiness()>>> checks;
  {
    std::lock_guard<std::mutex> lock(caps_mu_);
    checks = checks_;
  }
  bool ready = true;
  for (const auto& [name, check] : checks) {
    Readiness r = check();
    if (!r.error.ok()) return FailedPreconditionError(name + ": " + r.error.message());
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

}  // namespace mizarmp::fence
