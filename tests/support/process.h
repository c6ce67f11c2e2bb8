// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Running programs the way the project's callers do, for tests and benchmarks alike: a CNI
// plugin exec'd as a container runtime execs it (fork/exec, exactly the given environment,
// config on stdin, stdout and stderr read to EOF, optionally inside a netns), background
// servers, shell commands and named network namespaces. No test framework here: bench/ links
// this library without GoogleTest.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace mizarmp::testing {

struct Exec {
  std::vector<std::string> argv;           // argv[0] is the path executed
  // The whole environment: nothing is inherited but the sanitizer runtimes' *SAN_OPTIONS.
  std::map<std::string, std::string> env;
  std::string stdin_data;
  std::string netns_path;                    // when set, the child enters this netns before execve
  std::chrono::milliseconds timeout{60000};  // then SIGKILL
  std::string mountns_path;                  // when set, a mount namespace (/proc/PID/ns/mnt) too
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
  // "exit=N signal=N stdout=... stderr=..." (each output cut at 400 bytes), for failures.
  std::string Describe() const;
};

// Runs `exec` to completion. Safe to call from several threads at once: the child does only
// async-signal-safe work between fork and execve.
ExecResult Run(const Exec& exec);

// The same, for the common case.
using ProcessResult = ExecResult;
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_data,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Starts a process in the background, `stdin_data` on its stdin and stdout/stderr appended to
// `log_path`. Returns its pid (-1 when it could not be started).
pid_t SpawnProcess(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env, const std::string& stdin_data,
                   const std::string& log_path);
// waitpid with a timeout; returns the raw status, or -1 on timeout.
int WaitProcess(pid_t pid, std::chrono::milliseconds timeout);

// A background server started with SpawnProcess, SIGTERM'ed (SIGKILL after 10 s) and reaped
// on destruction unless Wait() reaped it already.
class Daemon {
 public:
  Daemon() = default;
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  // `env` is added to PATH=/usr/sbin:/usr/bin:/sbin:/bin. False when it could not be started.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::map<std::string, std::string>& env = {});
  void Stop();
  // Waits for it to exit by itself (after a signal the caller sent): the raw wait status, or -1
  // when it is still running after `timeout`.
  int Wait(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Runs a shell command (/bin/sh -c), returns its exit code; stdout and stderr go to `out`.
int Shell(const std::string& command, std::string* out = nullptr);

// Waits until `path` exists and is non-empty; returns its content ("" on timeout).
std::string WaitForFile(const std::string& path, std::chrono::milliseconds timeout);

// Waits until someone is blocked in flock() on the file at `path`, i.e. /proc/locks lists a
// waiter ("->") for its inode. The kernel sends no notification for that, so it is looked up
// every few milliseconds. False on timeout or when `path` cannot be stat'ed.
bool WaitForLockWaiter(const std::string& path, std::chrono::milliseconds timeout);

// A short name unique to this process and call, for netns, bridges and links (at most 15
// characters, the kernel's limit for a link name).
std::string UniqueName(const std::string& prefix);

// A named network namespace (`ip netns add`), deleted on destruction unless already gone.
class ScopedNetns {
 public:
  explicit ScopedNetns(std::string name);
  ~ScopedNetns();
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;
  bool ok() const { return created_; }  // `ip netns add` succeeded
  const std::string& name() const { return name_; }
  std::string path() const { return "/var/run/netns/" + name_; }
  // Runs `command` inside the namespace (ip netns exec), returns its exit code.
  int Exec(const std::string& command, std::string* out = nullptr) const;
  // Number of links of `type` ("veth"; "" for all) in the namespace, lo not counted; -1 on error.
  // `listing`, when given, gets ip's whole output (for a failure message).
  int CountLinks(const std::string& type, std::string* listing = nullptr) const;
  void Remove();

 private:
  std::string name_;
  bool created_ = false;
  bool removed_ = false;
};

}  // namespace mizarmp::testing
