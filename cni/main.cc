// mizarmp: the CNI plugin. Wires the process's environment, stdin and stdout to cni::Run();
// everything else lives in the mizarmp_cni library.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>

#include "cni/plugin.h"

extern char** environ;

namespace {

std::atomic<bool> g_cancelled{false};

void OnSignal(int) { g_cancelled.store(true); }

std::string ReadAll(int fd) {
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

int main() {
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
  const std::string input = version ? std::string() : ReadAll(STDIN_FILENO);

  mizarmp::cni::RunOptions options;
  options.cancelled = &g_cancelled;
  std::string out;
  int rc = mizarmp::cni::Run(env, input, &out, options);
  if (!out.empty()) WriteAll(STDOUT_FILENO, out);
  return rc;
}
