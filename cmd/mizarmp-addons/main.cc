// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-addons: the CSI-Addons gRPC server. Parses the configuration, builds the services the
// mode asks for (and the node's relay), registers them and Identity with the server, serves until
// SIGTERM/SIGINT, then drains and exits 0. Exit 2 on a bad configuration, 1 when the server cannot
// start.
#include <absl/synchronization/mutex.h>
#include <malloc.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "addons/cni_outcomes.h"
#include "addons/identity.h"
#include "addons/server.h"
#include "addons/service.h"
#include "cmd/mizarmp-addons/config.h"
#include "common/log.h"
#include "common/signals.h"
#include "common/strings.h"
#include "common/version.h"
#include "fence/service/admin_service.h"
#include "fence/service/fence_service.h"
#include "fence/service/node_clients.h"
#include "fence/service/publication_service.h"
#include "fence/service/publisher.h"
#include "keyrotation/hooks.h"
#include "keyrotation/service/rotation_service.h"
#include "relay/relay_component.h"

namespace {

namespace mz = mizarmp;
using Services = std::vector<std::unique_ptr<mz::addons::AddonsService>>;

std::string VersionLine() {
  return "mizarmp-addons " + std::string(mz::Version()) + " (" + std::string(mz::GitCommit()) + ")";
}

// Controller mode: the FenceController, the operator's FenceAdmin beside it, and with portIndex
// the node agents' publication into it. Its store opens in the background once the server runs
// (Probe says ready=false meanwhile).
Services ControllerServices(const mz::cmd::ServerConfig& config) {
  Services services;
  auto fences = std::make_unique<mz::fence::FenceService>(config.fence, config.mizarmp_check);
  auto admin = std::make_unique<mz::fence::FenceAdminService>(*fences);
  std::unique_ptr<mz::fence::PublicationService> publication;
  if (config.fence.port_index) {
    publication = std::make_unique<mz::fence::PublicationService>(*fences);
  }
  services.push_back(std::move(fences));
  // After the FenceService, so the server stops them first (Stop runs in reverse order).
  services.push_back(std::move(admin));
  if (publication != nullptr) services.push_back(std::move(publication));
  return services;
}

// Node mode: the EncryptionKeyRotationController, with the test hooks this binary was linked
// with (none in production), and GetFenceClients for this node.
mz::Result<Services> NodeServices(const mz::cmd::ServerConfig& config) {
  MZ_ASSIGN_OR_RETURN(auto hooks, mz::keyrotation::RotationHooksFromEnvironment());
  MZ_ASSIGN_OR_RETURN(auto rotation, mz::keyrotation::NodeKeyRotation::Create(config.keyrotation,
                                                                              std::move(hooks)));
  Services services;
  services.push_back(std::move(rotation));
  services.push_back(std::make_unique<mz::fence::NodeFenceClients>(config.fence));
  return services;
}

std::vector<mz::addons::AddonsService*> Pointers(const Services& services) {
  std::vector<mz::addons::AddonsService*> out;
  for (const auto& s : services) out.push_back(s.get());
  return out;
}

// The parts of a node's server that serve no RPC of their own: the plugin's relay, the
// publication to the controller's port index (and the fence set it enforces), the plugin's
// outcome log. Each is there when the configuration asks for it.
struct NodeComponents {
  std::unique_ptr<mz::relay::RelayComponent> relay;
  std::unique_ptr<mz::fence::Publisher> publisher;
  std::unique_ptr<mz::addons::CniOutcomesComponent> cni_outcomes;

  std::vector<mz::addons::AddonsComponent*> All() const {
    std::vector<mz::addons::AddonsComponent*> all;
    if (relay != nullptr) all.push_back(relay.get());
    if (publisher != nullptr) all.push_back(publisher.get());
    if (cni_outcomes != nullptr) all.push_back(cni_outcomes.get());
    return all;
  }
};

// The node's components; the error names the one that could not start.
mz::Result<NodeComponents> StartNodeComponents(const mz::cmd::ServerConfig& config) {
  NodeComponents made;
  if (!config.relay.socket_path.empty()) {
    auto started = mz::relay::RelayComponent::Start(config.relay, config.mizarmp_check);
    if (!started.ok()) return started.status().WithContext("cannot start the relay");
    made.relay = std::move(*started);
  }
  // The plugin on this node appends its outcomes in the state dir both read.
  made.cni_outcomes = std::make_unique<mz::addons::CniOutcomesComponent>(
      mz::CniOutcomeLogPath(config.fence.state_dir));
  if (!config.publisher.target.empty()) {
    auto publisher = mz::fence::Publisher::Create(config.publisher);
    if (!publisher.ok()) return publisher.status().WithContext("cannot publish to the port index");
    made.publisher = std::move(*publisher);
  }
  return made;
}

// What the process sets before any thread exists.
void TuneProcess() {
  // glibc gives each new thread under contention an arena of its own, up to 8 per core, and
  // keeps what each arena once held: gRPC's sync server starts and retires request threads as
  // load moves, so under steady traffic RSS climbed in steps by tens of MB while the live heap
  // stayed under 5 MB (bench/RESULTS.md, Soak). Two arenas bound that; the server's malloc
  // traffic (a few hundred RPCs a second at most) never contends for more.
  ::mallopt(M_ARENA_MAX, 2);
  // Debian builds abseil without NDEBUG, so absl::Mutex, which every gRPC lock is, runs its
  // debug-build deadlock detector on each Lock: a lock-order graph kept behind one process-wide
  // spin lock (four times the instructions of the lock itself), and abort() on a cycle it
  // suspects. abseil's release builds ignore cycles; the server does the same. (CI's TSan pass
  // still reports lock-order inversions among our own locks.)
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

int CannotStart(const char* what, const mz::Status& status) {
  MZ_LOG(kError) << what << ": " << status.ToString();
  std::fprintf(stderr, "mizarmp-addons: %s\n", status.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so every gRPC thread inherits the blocked mask.
  mz::TerminationSignals signals;
  TuneProcess();

  auto parsed = mz::cmd::ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    std::fprintf(stderr, "mizarmp-addons: %s\n", parsed.status().message().c_str());
    return 2;
  }
  if (parsed->help) {
    std::fputs(mz::cmd::Usage().c_str(), stdout);
    return 0;
  }
  if (parsed->version) {
    std::printf("%s\n", VersionLine().c_str());
    return 0;
  }
  const mz::cmd::ServerConfig& config = parsed->config;

  mz::log::SetTag("mizarmp-addons");
  mz::log::SetLevel(config.log_level);
  if (mz::Status s = mz::log::SetFile(config.log_file); !s.ok()) {
    std::fprintf(stderr, "mizarmp-addons: logFile: %s\n", s.message().c_str());
    return 2;
  }
  MZ_LOG(kInfo) << VersionLine() << " mode=" << mz::addons::ModeName(config.identity.mode)
                << " driver=" << config.identity.drivername
                << " endpoint=" << config.server.endpoint
                << " mpurl=" << mz::RedactUrl(config.mizarmp.base_url);

  Services services;
  NodeComponents node;
  if (config.identity.mode == mz::addons::Mode::kController) {
    services = ControllerServices(config);
  } else {
    auto made = NodeServices(config);
    if (!made.ok()) return CannotStart("cannot start key rotation", made.status());
    services = std::move(made).value();
    auto started = StartNodeComponents(config);
    if (!started.ok()) return CannotStart("node components", started.status());
    node = std::move(*started);
  }
  const std::vector<mz::addons::AddonsComponent*> components = node.All();
  mz::addons::IdentityService identity(config.identity, Pointers(services), components);

  mz::addons::Server server(config.server);
  // grpc.health.v1 ("" and the services) follows readiness: NOT_SERVING until Identity's first
  // evaluation finds every dependency ready, and whenever Probe would answer ready=false
  // ("liveness" stays SERVING: an outage is not cured by a restart).
  server.SetServing(false);
  identity.OnReadinessChange([&server](bool ready) { server.SetServing(ready); });
  server.Register(identity);
  for (const auto& service : services) server.Register(*service);
  for (mz::addons::AddonsComponent* component : components) server.Attach(*component);
  if (mz::Status s = server.Start(); !s.ok()) return CannotStart("cannot start", s);

  const int sig = signals.Wait();
  MZ_LOG(kInfo) << "received signal " << sig;
  server.Shutdown();
  return 0;
}
