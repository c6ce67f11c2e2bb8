// Test helpers: run a program the way a container runtime runs a CNI plugin, temporary
// directories and network namespaces, and the rule for tests that need root.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace mizarmp::testing {

// Where CMake put the binaries (mizarmp, mizarmp-mock, ...).
std::string BinDir();
std::string SourceDir();

struct ProcessResult {
  int exit_code = -1;  // -1 if killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// fork/exec `argv` with exactly `env` (no inherited environment), `stdin_data` on stdin,
// stdout/stderr captured. Killed with SIGKILL after `timeout`.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_data,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Starts a process in the background with stdout/stderr sent to `log_path`. Returns its pid.
pid_t SpawnProcess(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env, const std::string& stdin_data,
                   const std::string& log_path);
// waitpid with a timeout; returns the raw status, or -1 on timeout.
int WaitProcess(pid_t pid, std::chrono::milliseconds timeout);

// Runs a shell command, returns its exit code; output goes to `out` if given.
int Shell(const std::string& command, std::string* out = nullptr);

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A named network namespace (`ip netns add`), deleted on destruction unless already gone.
class ScopedNetns {
 public:
  explicit ScopedNetns(std::string name);
  ~ScopedNetns();
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;
  const std::string& name() const { return name_; }
  std::string path() const { return "/var/run/netns/" + name_; }
  // Runs `command` inside the namespace (ip netns exec), returns its exit code.
  int Exec(const std::string& command, std::string* out = nullptr) const;
  void Remove();

 private:
  std::string name_;
  bool removed_ = false;
};

// Whether this process can create network namespaces and links (root with CAP_NET_ADMIN).
// Returns an empty string when it can, else the reason it cannot.
std::string NetnsUnavailableReason();

// A short name unique to this process and call, for netns, bridges and links ("mzt1a2b3").
std::string UniqueName(const std::string& prefix);

}  // namespace mizarmp::testing

// In a test body: skip with the printed reason where netns is truly unavailable; fail instead
// when running in CI (CI=true), where these tests must never be skipped.
#define MZ_REQUIRE_NETNS()                                                          \
  do {                                                                              \
    std::string mz_reason_ = ::mizarmp::testing::NetnsUnavailableReason();          \
    if (!mz_reason_.empty()) {                                                      \
      const char* mz_ci_ = std::getenv("CI");                                       \
      if (mz_ci_ != nullptr && std::string(mz_ci_) == "true") {                     \
        FAIL() << "netns required in CI but unavailable: " << mz_reason_;           \
      }                                                                             \
      GTEST_SKIP() << "needs network namespaces: " << mz_reason_;                   \
    }                                                                               \
  } while (0)
