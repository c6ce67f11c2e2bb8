#include "tests/support/support.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/fileutil.h"

#ifndef MIZARMP_BIN_DIR
#error "MIZARMP_BIN_DIR must be defined by the build"
#endif

namespace mizarmp::testing {

std::string BinDir() { return MIZARMP_BIN_DIR; }
std::string SourceDir() { return MIZARMP_SOURCE_DIR; }

namespace {

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::vector<std::string> EnvStrings(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv_in,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_data, std::chrono::milliseconds timeout) {
  ProcessResult r;
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    r.err = "pipe failed";
    return r;
  }
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> envs = EnvStrings(env);
  auto cargv = CStrings(argv);
  auto cenv = CStrings(envs);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  std::thread writer([fd = in[1], &stdin_data] {
    (void)WriteAllFd(fd, stdin_data);
    ::close(fd);
  });
  auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    int n = ::poll(fds, 2, killed ? 1000 : static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (killed) break;
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  writer.join();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

pid_t SpawnProcess(const std::vector<std::string>& argv_in,
                   const std::map<std::string, std::string>& env, const std::string& stdin_data,
                   const std::string& log_path) {
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> envs = EnvStrings(env);
  auto cargv = CStrings(argv);
  auto cenv = CStrings(envs);
  pid_t pid = ::fork();
  if (pid == 0) {
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(in[0], 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  (void)WriteAllFd(in[1], stdin_data);
  ::close(in[1]);
  return pid;
}

int WaitProcess(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int Shell(const std::string& command, std::string* out) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  int status = ::pclose(p);
  if (out != nullptr) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/mizarmp-test-XXXXXX";
  const char* p = ::mkdtemp(tmpl);
  path_ = p != nullptr ? p : "/tmp/mizarmp-test-failed";
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ScopedNetns::ScopedNetns(std::string name) : name_(std::move(name)) {
  Shell("ip netns add " + name_);
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

std::string NetnsUnavailableReason() {
  if (::geteuid() != 0) return "not running as root";
  // Try it for real in a throwaway thread-free child: unshare a netns and create a dummy link.
  std::string out;
  const std::string name = UniqueName("mzprobe");
  if (Shell("ip netns add " + name, &out) != 0) return "ip netns add failed: " + out;
  int rc = Shell(
      "ip netns exec " + name + " ip link add " + name + "a type veth peer name " + name + "b",
      &out);
  Shell("ip netns del " + name);
  if (rc != 0) return "cannot create veth pairs: " + out;
  return "";
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

}  // namespace mizarmp::testing
