// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp-install: the installer DaemonSet's two containers. `install` (the init container) puts
// the plugins and the network configuration onto the node (install/installer.h); `wait` (the main
// container) only keeps the pod running until it is deleted, so a new image re-runs `install`.
#include <iostream>
#include <string>
#include <vector>

#include "common/flags.h"
#include "common/log.h"
#include "common/signals.h"
#include "common/version.h"
#include "install/installer.h"

namespace {

namespace mz = mizarmp;

constexpr const char* kUsage =
    R"(usage: mizarmp-install install --from DIR --bin-dir DIR --conflist FILE --conf-dir DIR [flags]
       mizarmp-install wait
       mizarmp-install --version

install  copies every file of --from into --bin-dir and writes --conf-dir/--conf-name from the
         --conflist template with the host id set, each by rename over the old file (safe while
         a runtime executes the old plugin); nothing is written when the template is invalid.
wait     sleeps until SIGTERM or SIGINT (the DaemonSet's main container).

Flags of install:
)";

mz::FlagTable InstallFlags(mz::install::InstallOptions* o) {
  mz::FlagTable t;
  t.String("from", "DIR", "the plugins to install (every regular file)", &o->from_dir);
  t.String("bin-dir", "DIR", "the host's CNI plugin directory (/opt/cni/bin)", &o->bin_dir);
  t.String("conflist", "FILE", "the network configuration template (a conflist)",
           &o->conflist_template);
  t.String("conf-dir", "DIR", "the host's CNI config directory (/etc/cni/net.d)", &o->conf_dir);
  t.String("conf-name", "NAME",
           std::string("the file written there (default ") + mz::install::kDefaultConfName + ")",
           &o->conf_name);
  t.String("host-id", "ID",
           "this node's Mizar-MP host id, set as every mizarmp plugin's hostId (default: the "
           "template's)",
           &o->host_id);
  return t;
}

mz::Status CheckRequired(const mz::install::InstallOptions& o) {
  const std::pair<const char*, const std::string*> required[] = {{"from", &o.from_dir},
                                                                 {"bin-dir", &o.bin_dir},
                                                                 {"conflist", &o.conflist_template},
                                                                 {"conf-dir", &o.conf_dir}};
  for (const auto& [flag, value] : required) {
    if (value->empty())
      return mz::InvalidArgumentError(std::string("flag --") + flag + ": required");
  }
  if (o.conf_name.empty() || o.conf_name.find('/') != std::string::npos) {
    return mz::InvalidArgumentError("flag --conf-name: a file name, without '/'");
  }
  return mz::Status::Ok();
}

int RunInstall(const std::vector<std::string>& args) {
  mz::install::InstallOptions options;
  const mz::FlagTable flags = InstallFlags(&options);
  bool help = false;
  mz::Status parsed = flags.Parse(args, &help);
  if (help) {
    std::cout << kUsage << flags.Help();
    return 0;
  }
  if (parsed.ok()) parsed = CheckRequired(options);
  if (!parsed.ok()) {
    std::cerr << "mizarmp-install: " << parsed.message() << "\n";
    return 2;
  }
  if (mz::Status s = mz::install::Install(options); !s.ok()) {
    MZ_LOG(kError) << "install failed: " << s.ToString();
    return 1;
  }
  return 0;
}

int RunWait() {
  mz::TerminationSignals signals;
  MZ_LOG(kInfo) << "installed; waiting for the pod to be deleted";
  signals.Wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  mz::log::SetTag("mizarmp-install");
  mz::log::SetLevel(mz::log::Level::kInfo);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string command = args.empty() ? "" : args[0];
  const std::vector<std::string> rest(args.empty() ? args.end() : args.begin() + 1, args.end());
  if (command == "install") return RunInstall(rest);
  if (command == "wait" && rest.empty()) return RunWait();
  if (command == "--version") {
    std::cout << "mizarmp-install " << mz::Version() << " (" << mz::GitCommit() << ")\n";
    return 0;
  }
  if (command == "--help" || command == "-h") return RunInstall({"--help"});
  std::cerr << "mizarmp-install: expected `install`, `wait` or --version; --help says more\n";
  return 2;
}
