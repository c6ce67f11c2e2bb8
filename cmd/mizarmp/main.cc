// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmp: the CNI plugin. Wires the process's environment, stdin and stdout to cni::Run();
// everything else lives in the mizarmp_cni library.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "cni/plugin.h"
#include "cni/version.h"
#include "common/fileutil.h"

extern char** environ;

namespace {

std::atomic<bool> g_cancelled{false};

void OnSignal(int) { g_cancelled.store(true); }

// Stdin up to one byte past the configuration bound: enough for Run() to refuse an oversized
// configuration by its size without this process holding (or waiting for) all of it.
std::string ReadBoundedStdin() {
  const size_t max = mizarmp::cni::kMaxConfigBytes + 1;
  std::string input;
  char buf[65536];
  while (input.size() < max) {
    const ssize_t n = ::read(STDIN_FILENO, buf, std::min(sizeof(buf), max - input.size()));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // an unreadable stdin is handled as what arrived: Run() reports what is missing
    }
    input.append(buf, static_cast<size_t>(n));
  }
  return input;
}

// cmd/mizarmp/CMakeLists.txt defines MIZARMP_STATIC_PLUGIN for the static executable.
#ifdef MIZARMP_STATIC_PLUGIN
constexpr auto kLinkage = mizarmp::cni::Linkage::kStatic;
#else
constexpr auto kLinkage = mizarmp::cni::Linkage::kDynamic;
#endif

// By hand, `mizarmp --version` (stdout) or a run with no CNI_COMMAND (stderr: stdout is the
// runtime's channel, as for the reference plugins) says what this is and exits 0 without
// reading stdin.
bool PrintAboutIfRunByHand(int argc, char** argv) {
  const bool version_flag = argc > 1 && std::string_view(argv[1]) == "--version";
  const char* command = std::getenv("CNI_COMMAND");
  if (!version_flag && command != nullptr && *command != '\0') return false;
  (void)mizarmp::WriteAllFd(version_flag ? STDOUT_FILENO : STDERR_FILENO,
                            mizarmp::cni::AboutText(kLinkage));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (PrintAboutIfRunByHand(argc, argv)) return 0;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  // VERSION needs no configuration; do not wait on a stdin nobody writes to.
  auto cmd = env.find("CNI_COMMAND");
  const bool version = cmd != env.end() && cmd->second == "VERSION";
  std::string input;
  if (!version) input = ReadBoundedStdin();

  mizarmp::cni::RunOptions options;
  options.cancelled = &g_cancelled;
  std::string out;
  int rc = mizarmp::cni::Run(env, input, &out, options);
  if (!out.empty()) (void)mizarmp::WriteAllFd(STDOUT_FILENO, out);
  return rc;
}
