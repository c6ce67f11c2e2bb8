#include "bench/support.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace mizarmp::bench {

namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// argv/envp arrays prepared before fork, so the child only calls async-signal-safe functions.
struct CArgs {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  CArgs(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
    storage.reserve(args.size() + env.size());
    for (const auto& a : args) storage.push_back(a);
    for (const auto& [k, v] : env) storage.push_back(k + "=" + v);
    for (size_t i = 0; i < args.size(); ++i) argv.push_back(storage[i].data());
    argv.push_back(nullptr);
    for (size_t i = args.size(); i < storage.size(); ++i) envp.push_back(storage[i].data());
    envp.push_back(nullptr);
  }
};

}  // namespace

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

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
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    r.err = std::string("pipe2: ") + std::strerror(errno);
    for (int* p : {in, out, err}) {
      CloseFd(p[0]);
      CloseFd(p[1]);
    }
    return r;
  }
  int ns_fd = -1;
  if (!exec.netns_path.empty()) {
    ns_fd = ::open(exec.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) {
      r.err = "open " + exec.netns_path + ": " + std::strerror(errno);
      for (int* p : {in, out, err}) {
        CloseFd(p[0]);
        CloseFd(p[1]);
      }
      return r;
    }
  }

  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) != 0) ::_exit(126);
    ::execve(c.argv[0], c.argv.data(), c.envp.data());
    ::_exit(127);
  }
  CloseFd(in[0]);
  CloseFd(out[1]);
  CloseFd(err[1]);
  if (ns_fd >= 0) ::close(ns_fd);
  if (pid < 0) {
    r.err = std::string("fork: ") + std::strerror(errno);
    CloseFd(in[1]);
    CloseFd(out[0]);
    CloseFd(err[0]);
    return r;
  }

  // stdin first (configs are far below a pipe's buffer), then drain both outputs to EOF.
  size_t off = 0;
  while (off < exec.stdin_data.size()) {
    ssize_t n = ::write(in[1], exec.stdin_data.data() + off, exec.stdin_data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  CloseFd(in[1]);

  const auto deadline = start + exec.timeout;
  bool killed = false;
  char buf[16384];
  while (out[0] >= 0 || err[0] >= 0) {
    pollfd fds[2];
    int nfds = 0;
    if (out[0] >= 0) fds[nfds++] = {out[0], POLLIN, 0};
    if (err[0] >= 0) fds[nfds++] = {err[0], POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    int pr = ::poll(fds, nfds, static_cast<int>(left.count()));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    for (int i = 0; i < nfds; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      const bool is_out = fds[i].fd == out[0];
      if (n <= 0) {
        CloseFd(is_out ? out[0] : err[0]);
      } else {
        (is_out ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  CloseFd(out[0]);
  CloseFd(err[0]);
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  r.wall_ms = Ms(Clock::now() - start);
  r.maxrss_kib = ru.ru_maxrss;
  r.user_ms = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
  r.sys_ms = ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  if (killed)
    r.err += "\n[bench: killed at the " + std::to_string(exec.timeout.count()) + " ms timeout]";
  return r;
}

int Shell(const std::string& command, std::string* out) {
  std::string cmd = command + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  int st = ::pclose(p);
  if (out != nullptr) *out = std::move(text);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Netns::Netns(std::string name) : name_(std::move(name)) {
  ok_ = Shell("ip netns add " + name_) == 0;
}

Netns::~Netns() {
  if (ok_) Shell("ip netns del " + name_);
}

int Netns::CountLinks(const std::string& type) const {
  std::string out;
  const std::string cmd =
      "ip -n " + name_ + " -o link show" + (type.empty() ? std::string() : " type " + type);
  if (Shell(cmd, &out) != 0) return -1;
  int n = 0;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.find(": lo:") != std::string::npos) continue;
    ++n;
  }
  return n;
}

Daemon::~Daemon() { Stop(); }

bool Daemon::Start(const std::vector<std::string>& argv, const std::string& log_path,
                   const std::map<std::string, std::string>& extra_env) {
  std::map<std::string, std::string> env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  for (const auto& [k, v] : extra_env) env[k] = v;
  CArgs c(argv, env);
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) return false;
  pid_ = ::fork();
  if (pid_ == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::execve(c.argv[0], c.argv.data(), c.envp.data());
    ::_exit(127);
  }
  ::close(log);
  return pid_ > 0;
}

void Daemon::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200; ++i) {  // 10 s, then SIGKILL
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || r < 0) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
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

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + std::to_string(::getpid() % 100000) + "x" + std::to_string(counter++);
}

Stats Summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&v](double p) {
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    if (k == 0) k = 1;
    return v[std::min(k, v.size()) - 1];
  };
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

}  // namespace mizarmp::bench
