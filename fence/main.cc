// mizarmp-addons: the CSI-Addons gRPC server. Parses flags/config, wires the services into the
// server, serves until SIGTERM/SIGINT, then drains and exits 0. Exit 2 on a bad configuration,
// 1 when the server cannot start.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "fence/config.h"
#include "fence/fence_service.h"
#include "fence/identity.h"
#include "fence/server.h"
#include "keyrotation/service.h"

#ifndef MIZARMP_VERSION
#define MIZARMP_VERSION "0.0.0"
#endif
#ifndef MIZARMP_GIT_COMMIT
#define MIZARMP_GIT_COMMIT "unknown"
#endif

namespace mz = mizarmp;
namespace mzf = mizarmp::fence;

int main(int argc, char** argv) {
  // Before any thread exists, so every gRPC thread inherits the blocked mask.
  mzf::TerminationSignals signals;

  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = mzf::ParseCommandLine(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "mizarmp-addons: %s\n", parsed.status().message().c_str());
    return 2;
  }
  if (parsed->help) {
    std::fputs(mzf::Usage().c_str(), stdout);
    return 0;
  }
  if (parsed->version) {
    std::printf("mizarmp-addons %s (%s)\n", MIZARMP_VERSION, MIZARMP_GIT_COMMIT);
    return 0;
  }
  const mzf::ServerConfig& config = parsed->config;

  mz::log::SetTag("mizarmp-addons");
  mz::log::SetLevel(config.log_level);
  if (mz::Status s = mz::log::SetFile(config.log_file); !s.ok()) {
    std::fprintf(stderr, "mizarmp-addons: logFile: %s\n", s.message().c_str());
    return 2;
  }
  MZ_LOG(kInfo) << "mizarmp-addons " << MIZARMP_VERSION << " (" << MIZARMP_GIT_COMMIT
                << ") mode=" << mzf::ModeName(config.mode) << " driver=" << config.drivername
                << " endpoint=" << config.endpoint
                << " mpurl=" << mzf::RedactUrl(config.mizarmp.base_url);

  mzf::IdentityService identity(mzf::IdentityOptions::FromConfig(config));
  mzf::Server server(mzf::ServerOptions::FromConfig(config));
  server.AddService(&identity, identity::Identity::service_full_name());
  // Operation services plug in here, each adding its capabilities to `identity` as it is
  // registered.

  // Controller mode: FenceController (fence/fence_service.h). The store opens on a background
  // thread (Probe says ready=false meanwhile), then the reconcile loop runs.
  std::unique_ptr<mzf::FenceService> fencing;
  if (config.mode == mzf::Mode::kController) {
    fencing = std::make_unique<mzf::FenceService>(mzf::FenceOptions::FromConfig(config));
    server.AddService(fencing.get(), ::fence::FenceController::service_full_name());
    fencing->RegisterWith(identity);
  }

  // Node mode: EncryptionKeyRotationController (keyrotation/), advertised by Identity.
  std::unique_ptr<mz::keyrotation::NodeKeyRotation> keyrotation;
  if (config.mode == mzf::Mode::kNode) {
    auto made = mz::keyrotation::NodeKeyRotation::Create(
        {config.key_store_dir, config.mount_table, config.expected_secrets});
    if (!made.ok()) {
      MZ_LOG(kError) << "cannot start key rotation: " << made.status().ToString();
      std::fprintf(stderr, "mizarmp-addons: %s\n", made.status().message().c_str());
      return 1;
    }
    keyrotation = std::move(*made);
    server.AddService(keyrotation->service(), mz::keyrotation::NodeKeyRotation::service_name());
    identity.AddEncryptionKeyRotationCapability();
  }

  if (mz::Status s = server.Start(); !s.ok()) {
    MZ_LOG(kError) << "cannot start: " << s.ToString();
    std::fprintf(stderr, "mizarmp-addons: %s\n", s.message().c_str());
    return 1;
  }
  if (fencing) fencing->Start();

  const int sig = signals.Wait();
  MZ_LOG(kInfo) << "received signal " << sig;
  server.Shutdown();
  if (fencing) fencing->Stop();
  return 0;
}
