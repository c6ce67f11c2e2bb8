// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A CSI-Addons service as fence/ or keyrotation/ registers one with the addons framework, and a
// component that serves no RPC as relay/ attaches one, for the framework's own tests: a
// generated service base (every method UNIMPLEMENTED), the capabilities and readiness checks
// each is given, and a record of Start()/Stop() calls.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addons/service.h"

namespace mizarmp::addons::testing {

// `Generated` is the class protoc generates for a service (e.g. fence::FenceController).
template <typename Generated>
class FakeService : public AddonsService {
 public:
  explicit FakeService(std::vector<identity::Capability> capabilities = {},
                       std::vector<ReadinessCheck> checks = {},
                       std::vector<std::string>* events = nullptr)
      : capabilities_(std::move(capabilities)), checks_(std::move(checks)), events_(events) {}

  grpc::Service* grpc_service() override { return &service_; }
  std::string health_name() const override { return Generated::service_full_name(); }
  std::vector<identity::Capability> capabilities() const override { return capabilities_; }
  std::vector<ReadinessCheck> readiness_checks() override { return checks_; }
  // Appended to `events` (when given): "start <health name>" / "stop <health name>".
  void Start() override { Record("start"); }
  void Stop() override { Record("stop"); }

 private:
  void Record(const std::string& what) {
    if (events_ != nullptr) events_->push_back(what + " " + health_name());
  }

  typename Generated::Service service_;
  std::vector<identity::Capability> capabilities_;
  std::vector<ReadinessCheck> checks_;
  std::vector<std::string>* events_;
};

// A component named `name`: its readiness checks, "start <name>" / "stop <name>" in `events`.
class FakeComponent : public AddonsComponent {
 public:
  FakeComponent(std::string name, std::vector<ReadinessCheck> checks,
                std::vector<std::string>* events = nullptr)
      : name_(std::move(name)), checks_(std::move(checks)), events_(events) {}

  std::vector<ReadinessCheck> readiness_checks() override { return checks_; }
  void Start() override { Record("start"); }
  void Stop() override { Record("stop"); }

 private:
  void Record(const std::string& what) {
    if (events_ != nullptr) events_->push_back(what + " " + name_);
  }

  std::string name_;
  std::vector<ReadinessCheck> checks_;
  std::vector<std::string>* events_;
};

// The capabilities the FenceController advertises in controller mode.
inline std::vector<identity::Capability> NetworkFenceCapabilities() {
  identity::Capability c;
  c.mutable_network_fence()->set_type(identity::Capability::NetworkFence::NETWORK_FENCE);
  return {c};
}

}  // namespace mizarmp::addons::testing
