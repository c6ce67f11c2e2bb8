// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace mizarmp::testing {

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double Ms(const timeval& tv) { return static_cast<double>(tv.tv_sec) * 1e3 + tv.tv_usec / 1e3; }

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The sanitizer runtimes' settings (scripts/test.sh: suppressions, fatal reports) are passed on
// to every child from our own environment, unless the caller set them: they configure the
// checking of a sanitizer build and change nothing a runtime or an operator would observe.
std::map<std::string, std::string> WithSanitizerOptions(std::map<std::string, std::string> env) {
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr) env.emplace(name, value);
  }
  return env;
}

// argv/envp arrays prepared before fork, so the child only calls async-signal-safe functions.
struct CArgs {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  CArgs(const std::vector<std::string>& args, const std::map<std::string, std::string>& given) {
    const std::map<std::string, std::string> env = WithSanitizerOptions(given);
    storage.reserve(args.size() + env.size());
    for (const auto& a : args) storage.push_back(a);
    for (const auto& [k, v] : env) storage.push_back(k + "=" + v);
    for (size_t i = 0; i < args.size(); ++i) argv.push_back(storage[i].data());
    argv.push_back(nullptr);
    for (size_t i = args.size(); i < storage.size(); ++i) envp.push_back(storage[i].data());
    envp.push_back(nullptr);
  }
};

// The parent's ends of the child's stdin, stdout and stderr, closed on destruction.
struct Pipes {
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  ~Pipes() {
    for (int* p : {in, out, err}) {
      CloseFd(p[0]);
      CloseFd(p[1]);
    }
  }
  bool Open() {
    return ::pipe2(in, O_CLOEXEC) == 0 && ::pipe2(out, O_CLOEXEC) == 0 &&
           ::pipe2(err, O_CLOEXEC) == 0;
  }
};

// Feeds stdin and drains stdout/stderr in one poll loop, so a large stdin never deadlocks
// against a child that writes before it has read everything, and a child that exits without
// reading costs an EPIPE, not a SIGPIPE. Returns false when the deadline passed.
bool Pump(Pipes& p, const std::string& stdin_data, Clock::time_point deadline, ExecResult& r) {
  ::fcntl(p.in[1], F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (stdin_data.empty()) CloseFd(p.in[1]);
  char buf[16384];
  while (p.out[0] >= 0 || p.err[0] >= 0) {
    pollfd fds[3];
    int n = 0;
    if (p.in[1] >= 0) fds[n++] = {p.in[1], POLLOUT, 0};
    if (p.out[0] >= 0) fds[n++] = {p.out[0], POLLIN, 0};
    if (p.err[0] >= 0) fds[n++] = {p.err[0], POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    const int ready = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return true;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == p.in[1]) {
        const ssize_t w =
            ::write(p.in[1], stdin_data.data() + written, stdin_data.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == stdin_data.size()) {
          CloseFd(p.in[1]);
        }
        continue;
      }
      const ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got < 0 && errno == EINTR) continue;
      const bool is_out = fds[i].fd == p.out[0];
      if (got <= 0) {
        CloseFd(is_out ? p.out[0] : p.err[0]);
      } else {
        (is_out ? r.out : r.err).append(buf, static_cast<size_t>(got));
      }
    }
  }
  return true;
}

// Holds SIGPIPE blocked in this thread for its lifetime (a write to a pipe whose reader exited
// then fails with EPIPE instead of killing the process), and drops a SIGPIPE raised meanwhile.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SigpipeBlocked() {
    const timespec zero{};
    while (sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t set_;
  sigset_t old_;
};

}  // namespace

std::string ExecResult::Describe() const {
  std::string s = "exit=" + std::to_string(exit_code) + " signal=" + std::to_string(signal);
  if (!out.empty()) s += " stdout=" + out.substr(0, 400);
  if (!err.empty()) s += " stderr=" + err.substr(0, 400);
  return s;
}

ExecResult Run(const Exec& exec) {
  ExecResult r;
  if (exec.argv.empty()) {
    r.err = "empty argv";
    return r;
  }
  CArgs c(exec.argv, exec.env);
  Pipes p;
  if (!p.Open()) {
    r.err = std::string("pipe2: ") + std::strerror(errno);
    return r;
  }
  int ns_fd = -1;
  int mnt_fd = -1;
  // Opened before the fork: the child makes only async-signal-safe calls.
  auto open_ns = [&r](const std::string& path, int* fd) {
    if (path.empty()) return true;
    *fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (*fd < 0) r.err = "open " + path + ": " + std::strerror(errno);
    return *fd >= 0;
  };
  if (!open_ns(exec.netns_path, &ns_fd) || !open_ns(exec.mountns_path, &mnt_fd)) {
    if (ns_fd >= 0) ::close(ns_fd);
    return r;
  }

  SigpipeBlocked no_sigpipe;
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p.in[0], 0);
    ::dup2(p.out[1], 1);
    ::dup2(p.err[1], 2);
    if (mnt_fd >= 0 && ::setns(mnt_fd, CLONE_NEWNS) != 0) ::_exit(126);
    if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) != 0) ::_exit(126);
    ::execve(c.argv[0], c.argv.data(), c.envp.data());
    ::_exit(127);
  }
  CloseFd(p.in[0]);
  CloseFd(p.out[1]);
  CloseFd(p.err[1]);
  if (ns_fd >= 0) ::close(ns_fd);
  if (mnt_fd >= 0) ::close(mnt_fd);
  if (pid < 0) {
    r.err = std::string("fork: ") + std::strerror(errno);
    return r;
  }

  const bool in_time = Pump(p, exec.stdin_data, start + exec.timeout, r);
  if (!in_time) ::kill(pid, SIGKILL);
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  r.wall_ms = Ms(Clock::now() - start);
  r.maxrss_kib = ru.ru_maxrss;
  r.user_ms = Ms(ru.ru_utime);
  r.sys_ms = Ms(ru.ru_stime);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  if (!in_time) {
    r.err += "\n[killed at the " + std::to_string(exec.timeout.count()) + " ms timeout]";
  }
  return r;
}

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_data, std::chrono::milliseconds timeout) {
  return Run(Exec{argv, env, stdin_data, {}, timeout});
}

pid_t SpawnProcess(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env, const std::string& stdin_data,
                   const std::string& log_path) {
  if (argv.empty()) return -1;
  CArgs c(argv, env);
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return -1;
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  SigpipeBlocked no_sigpipe;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    ::execve(c.argv[0], c.argv.data(), c.envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  if (log >= 0) ::close(log);
  // Servers read their stdin rarely and only briefly: a blocking write of a small input is fine.
  for (size_t off = 0; pid > 0 && off < stdin_data.size();) {
    const ssize_t n = ::write(in[1], stdin_data.data() + off, stdin_data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::close(in[1]);
  return pid;
}

int WaitProcess(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Daemon::~Daemon() { Stop(); }

bool Daemon::Start(const std::vector<std::string>& argv, const std::string& log_path,
                   const std::map<std::string, std::string>& extra_env) {
  std::map<std::string, std::string> env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  for (const auto& [k, v] : extra_env) env[k] = v;
  pid_ = SpawnProcess(argv, env, "", log_path);
  return pid_ > 0;
}

int Daemon::Wait(std::chrono::milliseconds timeout) {
  const int raw = pid_ > 0 ? WaitProcess(pid_, timeout) : -1;
  if (raw != -1) pid_ = -1;
  return raw;
}

void Daemon::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (WaitProcess(pid_, std::chrono::seconds(10)) == -1) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

int Shell(const std::string& command, std::string* out) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  const int status = ::pclose(p);
  if (out != nullptr) *out = std::move(text);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string WaitForFile(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    std::ifstream f(path);
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      if (!ss.str().empty()) return ss.str();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

namespace {

// Whether a /proc/locks line is a blocked request ("N: -> FLOCK ...") on the inode `st` names.
// The file is named as MAJOR:MINOR:INODE, the device numbers in hex.
bool IsWaiterOn(const std::string& line, const struct stat& st) {
  std::istringstream fields(line);
  std::string id, arrow;
  if (!(fields >> id >> arrow) || arrow != "->") return false;
  char want[64];
  std::snprintf(want, sizeof(want), "%02x:%02x:%llu", ::major(st.st_dev), ::minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  for (std::string field; fields >> field;) {
    if (field == want) return true;
  }
  return false;
}

bool HasLockWaiter(const struct stat& st) {
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    if (IsWaiterOn(line, st)) return true;
  }
  return false;
}

}  // namespace

bool WaitForLockWaiter(const std::string& path, std::chrono::milliseconds timeout) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  const auto deadline = Clock::now() + timeout;
  while (!HasLockWaiter(st)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<unsigned> counter{0};
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s%x%x", prefix.c_str(),
                static_cast<unsigned>(::getpid()) & 0xfffff, counter.fetch_add(1) & 0xff);
  std::string s = buf;
  if (s.size() > 15) s = s.substr(s.size() - 15);
  return s;
}

ScopedNetns::ScopedNetns(std::string name) : name_(std::move(name)) {
  created_ = Shell("ip netns add " + name_) == 0;
}

ScopedNetns::~ScopedNetns() { Remove(); }

void ScopedNetns::Remove() {
  if (removed_) return;
  removed_ = true;
  Shell("ip netns del " + name_);
}

int ScopedNetns::Exec(const std::string& command, std::string* out) const {
  return Shell("ip netns exec " + name_ + " " + command, out);
}

int ScopedNetns::CountLinks(const std::string& type, std::string* listing) const {
  std::string out;
  const std::string cmd =
      "ip -n " + name_ + " -o link show" + (type.empty() ? std::string() : " type " + type);
  const int rc = Shell(cmd, &out);
  if (listing != nullptr) *listing = out;
  if (rc != 0) return -1;
  // Only the link lines ("3: name@peer: <...> ..."): ip also prints an "Error: ..." line when a
  // namespace another test is deleting vanishes while it maps the links' peer namespaces.
  int n = 0;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t digits = line.find_first_not_of("0123456789");
    const bool link = digits > 0 && digits != std::string::npos && line[digits] == ':';
    if (link && line.find(": lo:") == std::string::npos) ++n;
  }
  return n;
}

}  // namespace mizarmp::testing
