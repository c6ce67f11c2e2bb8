// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/etcd_cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace mizarmp::testing {

namespace {

using Clock = std::chrono::steady_clock;

// Generous enough for three Go processes starting at once on a loaded 2-core machine.
constexpr std::chrono::seconds kStartDeadline{30};
// Port collisions with other tests (ctest -j) are retried with fresh ports this many times.
constexpr int kStartAttempts = 3;
constexpr const char* kSetpriv = "/usr/bin/setpriv";
constexpr const char* kProbeKey = "mizarmp-etcd-cluster-probe";

// Where the members keep their data: on tmpfs (/dev/shm) when it has room. etcd fsyncs its WAL
// for every write, and on a disk a build is writing to at the same time (scripts/test.sh builds
// the next tree during the tests) one fsync can stall for seconds, which holds up the lease
// renewals the tests' short leases depend on. Tests kill members, never the machine, so a disk
// adds no durability they check. A 3-member cluster's WAL files take about 200 MB.
std::string MemberDataParent() {
  constexpr uint64_t kRoomNeeded = 1ULL << 30;
  struct statvfs fs {};
  if (::statvfs("/dev/shm", &fs) == 0 && ::access("/dev/shm", W_OK) == 0 &&
      static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize >= kRoomNeeded) {
    return "/dev/shm";
  }
  return "/tmp";
}

// An open socket bound to a free loopback port chosen by the kernel. The caller keeps it open
// until every port of a cluster is chosen, so the kernel cannot hand out one port twice.
class BoundPort {
 public:
  BoundPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~BoundPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  BoundPort(const BoundPort&) = delete;
  BoundPort& operator=(const BoundPort&) = delete;
  int port() const { return port_; }  // 0 when no port could be bound

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::string RandomHex(size_t bytes) {
  std::random_device rd;
  std::string out;
  char buf[3];
  for (size_t i = 0; i < bytes; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", rd() & 0xff);
    out += buf;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::string EtcdUnavailableReason() {
  for (const char* binary : {kEtcdBinary, kEtcdctlBinary, kSetpriv}) {
    if (::access(binary, X_OK) != 0) {
      return std::string(binary) + " is not installed (Debian: etcd-server, etcd-client)";
    }
  }
  return "";
}

EtcdCluster::EtcdCluster(int members, EtcdTls tls) : dir_(MemberDataParent()) {
  if (members != 1 && members != 3) {
    error_ = "EtcdCluster supports 1 or 3 members, not " + std::to_string(members);
    return;
  }
  error_ = EtcdUnavailableReason();
  if (!error_.empty()) return;
  if (tls.enabled) {
    pki_ = std::make_unique<Pki>();
    if (!pki_->error.empty()) {
      error_ = "making the etcd certificates failed: " + pki_->error;
      return;
    }
  }
  members_.resize(static_cast<size_t>(members));
  StartAll();
}

EtcdCluster::~EtcdCluster() {
  for (int i = 0; i < size(); ++i) Kill(i);
}

bool EtcdCluster::StartAll() {
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    for (int i = 0; i < size(); ++i) Kill(i);
    if (!AssignPortsAndDirs(attempt)) return false;
    error_.clear();
    bool launched = true;
    for (auto& m : members_) launched = launched && Launch(m);
    const auto deadline = Clock::now() + kStartDeadline;
    for (int i = 0; launched && i < size(); ++i) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (WaitServing(i, left)) continue;
      error_ = "etcd member " + std::to_string(i) + " did not serve a linearizable read within " +
               std::to_string(kStartDeadline.count()) + " s (" +
               (Running(i) ? "still running" : "exited") + "); its log ends:\n" + LogTail(i);
      break;
    }
    if (!launched) error_ = "could not start " + std::string(kEtcdBinary);
    if (error_.empty()) return true;
    // Another process took a port between our probe and etcd's bind: pick new ports.
    if (error_.find("address already in use") == std::string::npos) break;
  }
  std::fprintf(stderr, "[EtcdCluster] %s\n", error_.c_str());
  return false;
}

bool EtcdCluster::AssignPortsAndDirs(int attempt) {
  std::vector<std::unique_ptr<BoundPort>> held;
  for (size_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    held.push_back(std::make_unique<BoundPort>());
    held.push_back(std::make_unique<BoundPort>());
    m.client_port = held[held.size() - 2]->port();
    m.peer_port = held.back()->port();
    if (m.client_port == 0 || m.peer_port == 0) {
      error_ = "could not bind a free loopback port";
      return false;
    }
    m.name = "m" + std::to_string(i);
    m.dir = dir_.path() + "/a" + std::to_string(attempt) + "-" + m.name;
    std::error_code ec;
    std::filesystem::create_directories(m.dir, ec);
    std::filesystem::permissions(m.dir, std::filesystem::perms::owner_all, ec);
  }
  // A token unique to this cluster, so a member never joins a stale peer on a reused port.
  token_ = "mizarmp-test-" + std::to_string(::getpid()) + "-" + RandomHex(8);
  return true;
}

std::vector<std::string> EtcdCluster::MemberArgv(const Member& m) const {
  std::vector<std::string> peers;
  for (const auto& p : members_) {
    peers.push_back(p.name + "=http://127.0.0.1:" + std::to_string(p.peer_port));
  }
  const std::string client_url =
      std::string(pki_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(m.client_port);
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(m.peer_port);
  // setpriv: the member gets SIGKILL when the thread that started it dies (test crash or
  // ctest timeout), instead of lingering with its ports.
  std::vector<std::string> argv = {
      kSetpriv, "--pdeathsig", "KILL", "--", kEtcdBinary, "--name=" + m.name,
      "--data-dir=" + m.dir + "/data", "--listen-client-urls=" + client_url,
      "--advertise-client-urls=" + client_url, "--listen-peer-urls=" + peer_url,
      "--initial-advertise-peer-urls=" + peer_url, "--initial-cluster=" + Join(peers, ","),
      "--initial-cluster-state=new", "--initial-cluster-token=" + token_,
      // Tests kill members: a new leader within about a second.
      "--heartbeat-interval=50", "--election-timeout=500", "--logger=zap", "--log-outputs=stderr"};
  if (pki_) {
    argv.insert(argv.end(), {"--client-cert-auth", "--trusted-ca-file=" + pki_->ca,
                             "--cert-file=" + pki_->server_cert, "--key-file=" + pki_->server_key});
  }
  return argv;
}

bool EtcdCluster::Launch(Member& m) {
  m.process = std::make_unique<Daemon>();
  return m.process->Start(MemberArgv(m), m.dir + "/etcd.log");
}

EtcdCluster::Member& EtcdCluster::At(int member) {
  return members_.at(static_cast<size_t>(member));
}

const EtcdCluster::Member& EtcdCluster::At(int member) const {
  return members_.at(static_cast<size_t>(member));
}

bool EtcdCluster::Running(int member) const {
  const auto& p = At(member).process;
  return p && p->pid() > 0 && ::kill(p->pid(), 0) == 0;
}

bool EtcdCluster::WaitServing(int member, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (!Running(member)) return false;
    if (Etcdctl({"get", kProbeKey}, member, std::chrono::seconds(2)).ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string EtcdCluster::ClientUrl(int member) const {
  return std::string(pki_ ? "https" : "http") + "://" + endpoints().at(static_cast<size_t>(member));
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (const auto& m : members_) out.push_back("127.0.0.1:" + std::to_string(m.client_port));
  return out;
}

std::string EtcdCluster::Location() const { return "etcd://" + Join(endpoints(), ","); }

std::string EtcdCluster::Location(int member) const {
  return "etcd://" + endpoints().at(static_cast<size_t>(member));
}

std::string EtcdCluster::LogTail(int member) const {
  const std::string log = ReadFile(At(member).dir + "/etcd.log");
  constexpr size_t kTail = 3000;
  return log.size() > kTail ? "..." + log.substr(log.size() - kTail) : log;
}

void EtcdCluster::Kill(int member) {
  auto& p = At(member).process;
  if (!p || p->pid() <= 0) return;
  ::kill(p->pid(), SIGKILL);
  p->Wait(std::chrono::seconds(10));
  p.reset();
}

void EtcdCluster::Stop(int member) { At(member).process.reset(); }

void EtcdCluster::Freeze(int member) {
  if (Running(member)) ::kill(At(member).process->pid(), SIGSTOP);
}

void EtcdCluster::Thaw(int member) {
  if (Running(member)) ::kill(At(member).process->pid(), SIGCONT);
}

bool EtcdCluster::Restart(int member) {
  Member& m = At(member);
  Kill(member);
  if (!Launch(m)) return false;
  // The data directory exists, so etcd rejoins with its stored membership; the
  // --initial-cluster flags are ignored.
  if (WaitServing(member, kStartDeadline)) return true;
  std::fprintf(stderr, "[EtcdCluster] member %d did not serve after restart; log ends:\n%s\n",
               member, LogTail(member).c_str());
  return false;
}

bool EtcdCluster::Healthy(int member) {
  return Running(member) && Etcdctl({"endpoint", "health"}, member, std::chrono::seconds(2)).ok();
}

bool EtcdCluster::WaitForQuorum(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  do {
    for (int i = 0; i < size(); ++i) {
      if (Running(i) && Etcdctl({"get", kProbeKey}, i, std::chrono::seconds(2)).ok()) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (Clock::now() < deadline);
  return false;
}

ExecResult EtcdCluster::Etcdctl(const std::vector<std::string>& args, int member,
                                std::chrono::seconds command_timeout) const {
  std::vector<std::string> urls;
  for (int i = 0; i < size(); ++i) {
    if (member < 0 || member == i) urls.push_back(ClientUrl(i));
  }
  std::vector<std::string> argv = {
      kEtcdctlBinary, "--endpoints=" + Join(urls, ","), "--dial-timeout=2s",
      "--command-timeout=" + std::to_string(command_timeout.count()) + "s"};
  if (pki_) {
    argv.insert(argv.end(), {"--cacert=" + pki_->ca, "--cert=" + pki_->client_cert,
                             "--key=" + pki_->client_key});
  }
  if (!root_password_.empty()) {
    argv.insert(argv.end(), {"--user=root", "--password=" + root_password_});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  // Dial plus command, with slack for a slow start of etcdctl itself.
  const auto process_timeout = command_timeout + std::chrono::seconds(10);
  return RunProcess(argv, {{"ETCDCTL_API", "3"}}, "",
                    std::chrono::duration_cast<std::chrono::milliseconds>(process_timeout));
}

bool EtcdCluster::EnableAuth(const std::string& user, const std::string& password) {
  const std::string root_password = RandomHex(16);
  const std::string role = user + "-readwrite";
  const std::vector<std::vector<std::string>> steps = {
      {"user", "add", "root", "--new-user-password=" + root_password},
      {"role", "add", role},
      {"role", "grant-permission", role, "--prefix=true", "readwrite", "/"},
      {"user", "add", user, "--new-user-password=" + password},
      {"user", "grant-role", user, role},
      {"auth", "enable"}};
  for (const auto& step : steps) {
    const ExecResult r = Etcdctl(step);
    if (!r.ok()) {
      // The step's arguments carry passwords: name the command, print etcdctl's output only.
      error_ = "etcdctl " + step[0] + " " + step[1] + " failed: " + r.out + r.err;
      return false;
    }
  }
  root_password_ = root_password;
  return true;
}

}  // namespace mizarmp::testing
