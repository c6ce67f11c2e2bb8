// Benchmark helpers: exec a program the way a container runtime execs a CNI plugin (fork/exec,
// exactly the given environment, config on stdin, stdout and stderr read to EOF) and time it,
// named network namespaces, child processes that serve, and order statistics.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mizarmp::bench {

using Clock = std::chrono::steady_clock;

struct Exec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the whole environment (nothing inherited)
  std::string stdin_data;
  std::string netns_path;  // when set, the child enters this netns before execve
  std::chrono::milliseconds timeout{60000};
};

struct ExecResult {
  int exit_code = -1;  // -1 when killed by a signal or not started
  int signal = 0;
  std::string out;
  std::string err;
  double wall_ms = 0;   // fork to reaped, stdout and stderr read to EOF
  long maxrss_kib = 0;  // the child's peak RSS (wait4 rusage)
  double user_ms = 0;
  double sys_ms = 0;
  bool ok() const { return exit_code == 0; }
  std::string Describe() const;
};

// Safe to call from several threads at once (the child does only async-signal-safe work).
ExecResult Run(const Exec& exec);

// A shell command (/bin/sh -c); returns its exit status, output (stdout+stderr) into *out.
int Shell(const std::string& command, std::string* out = nullptr);

// A named netns (`ip netns add`), deleted on destruction.
class Netns {
 public:
  explicit Netns(std::string name);
  ~Netns();
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  std::string path() const { return "/var/run/netns/" + name_; }
  // Number of links of `type` ("veth", "" for all but lo) in the namespace.
  int CountLinks(const std::string& type) const;

 private:
  std::string name_;
  bool ok_ = false;
};

// A background process (stdout+stderr to a log file), SIGTERM'ed and reaped on destruction.
class Daemon {
 public:
  Daemon() = default;
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  // `env` is added to PATH=/usr/sbin:/usr/bin:/sbin:/bin.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::map<std::string, std::string>& env = {});
  void Stop();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Waits until `path` exists and is non-empty; returns its content ("" on timeout).
std::string WaitForFile(const std::string& path, std::chrono::milliseconds timeout);

// A unique short name ("mzb" + pid + counter) for netns and links (<= 15 chars).
std::string UniqueName(const std::string& prefix);

struct Stats {
  size_t n = 0;
  double min = 0, median = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles of the samples.
Stats Summarize(std::vector<double> samples);

double Ms(Clock::duration d);

}  // namespace mizarmp::bench
