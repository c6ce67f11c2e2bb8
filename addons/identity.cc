// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/identity.h"

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/server_context.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <algorithm>

#include "common/log.h"
#include "common/strings.h"
#include "common/version.h"

namespace mizarmp::addons {
namespace {

using State = DependencyReadiness::State;

// Within a not-ready period the background evaluation runs this often: the sidecar's own retry
// interval on ready=false (probeInterval, kubernetes-csi-addons sidecar/internal/client/client.go).
constexpr std::chrono::milliseconds kNotReadyInterval{1000};

// The trailing metadata key of a ready=false Probe answer: why (for mizarmpctl and people;
// the CSI-Addons sidecar only reads `ready`).
constexpr const char* kNotReadyMetadata = "mizarmp-not-ready";

// `text` as a metadata value: printable ASCII only, at most 1 KiB.
std::string MetadataValue(const std::string& text) {
  std::string out = text.substr(0, 1024);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

const DependencyReadiness* Find(const ReadinessReport& report, const std::string& name) {
  for (const auto& d : report.dependencies) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

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

// Why `check` failed, naming its dependency.
std::string FailureReason(const ReadinessCheck& check, const Status& error) {
  if (check.message_names_dependency) return error.message();
  return check.name + ": " + error.message();
}

}  // namespace

Status IdentityOptions::Validate() const {
  return ValidateDriverName(drivername);
}

std::string ReadinessReport::Reason() const {
  for (State wanted : {State::kFailed, State::kInitializing}) {
    for (const auto& d : dependencies) {
      if (d.state == wanted) return d.reason;
    }
  }
  return "";
}

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
}

IdentityService::~IdentityService() { Stop(); }

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
  manifest["mizarmp-url"] = RedactUrl(options_.mizarmp_url);
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

ReadinessReport IdentityService::CheckReady() {
  uint64_t seq;
  {
    MutexLock lock(publish_mu_);
    seq = ++next_seq_;
  }
  ReadinessReport report;
  for (const ReadinessCheck& check : checks_) {
    const Readiness r = check.check();
    DependencyReadiness d{.name = check.name};
    if (!r.error.ok()) {
      d.state = State::kFailed;
      d.reason = FailureReason(check, r.error);
    } else if (!r.ready) {
      d.state = State::kInitializing;
      d.reason = check.name + ": initialising";
    }
    report.dependencies.push_back(std::move(d));
  }
  report.ready = std::all_of(report.dependencies.begin(), report.dependencies.end(),
                             [](const DependencyReadiness& d) { return d.state == State::kReady; });
  Publish(seq, report);
  return report;
}

void IdentityService::Publish(uint64_t seq, const ReadinessReport& report) {
  MutexLock lock(publish_mu_);
  if (seq <= published_seq_) return;  // a later evaluation was handed over already
  published_seq_ = seq;
  const ReadinessReport* before = published_ ? &*published_ : nullptr;
  // The usual case, a Probe finding what the last one found: nothing to tell anyone.
  if (before != nullptr && before->dependencies.size() == report.dependencies.size() &&
      std::equal(before->dependencies.begin(), before->dependencies.end(),
                 report.dependencies.begin(),
                 [](const DependencyReadiness& a, const DependencyReadiness& b) {
                   return a.name == b.name && a.state == b.state && a.reason == b.reason;
                 })) {
    return;
  }
  // The log: each dependency's change of state, once (Probe may come every second).
  for (const auto& d : report.dependencies) {
    const DependencyReadiness* was = before != nullptr ? Find(*before, d.name) : nullptr;
    if (was != nullptr && was->state == d.state) {
      if (d.state == State::kFailed && was->reason != d.reason) {
        MZ_LOG(kDebug) << "readiness: " << d.reason;
      }
      continue;
    }
    switch (d.state) {
      case State::kFailed:
        MZ_LOG(kWarn) << "readiness: not ready: " << d.reason;
        break;
      case State::kInitializing:
        MZ_LOG(kInfo) << "readiness: not ready yet: " << d.reason;
        break;
      case State::kReady:
        if (was != nullptr) {
          MZ_LOG(kInfo) << "readiness: " << d.name
                        << (was->state == State::kFailed ? " is usable again" : " is ready");
        }
        break;
    }
  }
  const bool changed = before == nullptr || before->ready != report.ready;
  if (changed && report.ready) {
    MZ_LOG(kInfo) << "readiness: ready (Probe answers ready=true)";
  } else if (changed) {
    MZ_LOG(kInfo) << "readiness: Probe answers ready=false while " << report.Reason();
  }
  if (ready_gauge_ != nullptr) {
    ready_gauge_->Set(report.ready ? 1 : 0);
    for (const auto& d : report.dependencies) {
      auto it = dependency_gauges_.find(d.name);
      if (it != dependency_gauges_.end()) it->second->Set(d.state == State::kReady ? 1 : 0);
    }
  }
  published_ = report;
  if (changed && listener_) listener_(report.ready);
}

void IdentityService::OnReadinessChange(std::function<void(bool ready)> listener) {
  MutexLock lock(publish_mu_);
  listener_ = std::move(listener);
  if (published_ && listener_) listener_(published_->ready);
}

void IdentityService::RegisterMetrics(const std::shared_ptr<prometheus::Registry>& registry) {
  MutexLock lock(publish_mu_);
  registry_ = registry;
  ready_gauge_ = &prometheus::BuildGauge()
                      .Name("mizarmp_addons_ready")
                      .Help("1 when Probe answers ready=true (every dependency usable), else 0")
                      .Register(*registry)
                      .Add({});
  auto& family =
      prometheus::BuildGauge()
          .Name("mizarmp_addons_dependency_ready")
          .Help(
              "1 when the dependency Probe checks is usable, 0 while it is initialising or "
              "unusable (the log says why)")
          .Register(*registry);
  std::vector<std::string> names;
  for (const ReadinessCheck& check : checks_) names.push_back(check.name);
  for (const auto& name : names) dependency_gauges_[name] = &family.Add({{"dependency", name}});
  if (published_) {
    ready_gauge_->Set(published_->ready ? 1 : 0);
    for (const auto& d : published_->dependencies) {
      auto it = dependency_gauges_.find(d.name);
      if (it != dependency_gauges_.end()) it->second->Set(d.state == State::kReady ? 1 : 0);
    }
  }
}

void IdentityService::Start() {
  if (options_.readiness_interval.count() <= 0) return;
  loop_.Start([this] { return CheckReadiness(); });
}

void IdentityService::Stop() { loop_.Stop(); }

std::chrono::milliseconds IdentityService::CheckReadiness() {
  const bool ready = CheckReady().ready;
  return ready ? options_.readiness_interval
               : std::min<std::chrono::milliseconds>(options_.readiness_interval,
                                                     kNotReadyInterval);
}

grpc::Status IdentityService::Probe(grpc::ServerContext* context, const identity::ProbeRequest*,
                                    identity::ProbeResponse* response) {
  // Never an error (see the header): the sidecar would exit on one.
  const ReadinessReport report = CheckReady();
  response->mutable_ready()->set_value(report.ready);
  if (!report.ready && context != nullptr) {
    context->AddTrailingMetadata(kNotReadyMetadata, MetadataValue(report.Reason()));
  }
  return grpc::Status::OK;
}

}  // namespace mizarmp::addons
