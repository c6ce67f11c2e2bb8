// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/containerd.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace mizarmp::testing {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kNsenter = "/usr/bin/nsenter";
constexpr const char* kSetpriv = "/usr/bin/setpriv";
// The containerd namespace CRI keeps its pods and images in.
constexpr const char* kCriNamespace = "k8s.io";
// Generous: containerd, its CRI plugin and the first shim start on a loaded 2-core machine.
constexpr std::chrono::seconds kStartDeadline{60};

std::string ReadWhole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool WriteWhole(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  std::error_code ec;
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, ec);
  return f.good() && !ec;
}

// A TOML basic string. The paths written come from mkdtemp and the caller's options; escaping
// keeps a quote or backslash in one from breaking the file.
std::string Toml(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The process ids of every running process whose command line (NUL-separated) contains `needle`.
std::vector<pid_t> ProcessesWithArgument(const std::string& needle) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    if (ReadWhole(entry.path() / "cmdline").find(needle) != std::string::npos) {
      pids.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return pids;
}

// Mount points of the cgroup hierarchies (v1 controllers or the v2 unified tree).
std::vector<std::string> CgroupMounts() {
  std::vector<std::string> out;
  std::istringstream mounts(ReadWhole("/proc/self/mounts"));
  std::string device, point, type, rest;
  while (mounts >> device >> point >> type && std::getline(mounts, rest)) {
    if (type == "cgroup" || type == "cgroup2") out.push_back(point);
  }
  return out;
}

// `root` and every directory below it, deepest first (the order rmdir needs).
std::vector<std::string> DirectoriesDeepestFirst(const std::string& root) {
  std::vector<std::string> dirs;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return dirs;
  dirs.push_back(root);
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path());
  }
  std::sort(dirs.begin(), dirs.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return dirs;
}

// /proc/self/mounts escapes blanks and backslashes in paths as octal (\040).
std::string UnescapeMountPath(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string ContainerdUnavailableReason() {
  if (::geteuid() != 0) return "not running as root";
  for (const char* binary :
       {kContainerdBinary, kCtrBinary, kContainerdShimBinary, kRuncBinary, kNsenter, kSetpriv}) {
    if (::access(binary, X_OK) != 0) {
      return std::string(binary) + " is not installed (Debian: containerd, runc, util-linux)";
    }
  }
  return "";
}

Containerd::Containerd(ContainerdOptions options) : options_(std::move(options)) {
  cgroup_parent_ = "/mizarmp-cri-" + UniqueName("t");
  error_ = ContainerdUnavailableReason();
  if (error_.empty()) error_ = StartAndImport();
  if (!error_.empty()) std::fprintf(stderr, "[Containerd] %s\n", error_.c_str());
}

Containerd::~Containerd() {
  if (Running() && runtime_) {
    const std::string failure = RemoveAllSandboxes();
    if (!failure.empty()) std::fprintf(stderr, "[Containerd] cleanup: %s\n", failure.c_str());
  }
  daemon_.reset();  // SIGTERM, SIGKILL after 10 s, reaped
  KillLeftovers();
  DetachMounts();
  RemoveCgroups();
}

std::unique_ptr<grpc::ClientContext> Containerd::Call(std::chrono::seconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

std::string Containerd::netns_dir() const {
  // netns_mounts_under_state_dir: the CRI plugin's state dir, not /var/run/netns.
  return dir_.path() + "/state/io.containerd.grpc.v1.cri/netns";
}

std::string Containerd::log_dir() const { return dir_.path() + "/pod-logs"; }

std::string Containerd::StartAndImport() {
  if (std::string e = WriteLayout(); !e.empty()) return e;
  if (!Start()) return "could not start " + std::string(kContainerdBinary);
  auto channel = grpc::CreateChannel("unix://" + dir_.path() + "/containerd.sock",
                                     grpc::InsecureChannelCredentials());
  runtime_ = runtime::v1::RuntimeService::NewStub(channel);
  images_ = runtime::v1::ImageService::NewStub(channel);
  const auto deadline = Clock::now() + kStartDeadline;
  if (std::string e = WaitForCri(kStartDeadline); !e.empty()) return e;
  if (std::string e = ImportSandboxImage(); !e.empty()) return e;
  const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
  return WaitForImage(std::max(left, std::chrono::seconds(10)));
}

std::string Containerd::WriteLayout() const {
  const std::string d = dir_.path();
  std::error_code ec;
  for (const char* sub :
       {"root", "state", "tmp", "opt", "runc", "cni-bin", "cni-conf", "pod-logs"}) {
    fs::create_directories(d + "/" + sub, ec);
    if (ec) return "cannot create " + d + "/" + sub + ": " + ec.message();
  }
  for (const std::string& plugin : options_.cni_plugins) {
    fs::create_symlink(plugin, d + "/cni-bin/" + fs::path(plugin).filename().string(), ec);
    if (ec) return "cannot link CNI plugin " + plugin + ": " + ec.message();
  }
  if (!WriteWhole(d + "/cni-conf/10-test.conflist", options_.conflist) ||
      !WriteWhole(d + "/config.toml", ConfigToml())) {
    return "cannot write containerd's config files under " + d;
  }
  return "";
}

std::string Containerd::ConfigToml() const {
  const std::string d = dir_.path();
  const std::string cri = "[plugins.\"io.containerd.grpc.v1.cri\"";
  std::ostringstream t;
  t << "version = 2\n"
    << "root = " << Toml(d + "/root") << "\n"
    << "state = " << Toml(d + "/state") << "\n"
    << "temp = " << Toml(d + "/tmp")
    << "\n"
    // Without its CRI plugin containerd would start anyway and the test would only time out.
    << "required_plugins = [\"io.containerd.grpc.v1.cri\"]\n"
    // Only the native snapshotter (plain directories: nothing to leak on a kill, and no
    // device-mapper, btrfs or zfs here).
    << "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", "
       "\"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.devmapper\", "
       "\"io.containerd.snapshotter.v1.overlayfs\", \"io.containerd.snapshotter.v1.zfs\"]\n"
    << "[grpc]\n  address = " << Toml(d + "/containerd.sock") << "\n"
    << "[ttrpc]\n  address = " << Toml(d + "/containerd.sock.ttrpc") << "\n"
    << "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = " << Toml(d + "/opt") << "\n"
    << cri << "]\n"
    << "  sandbox_image = " << Toml(options_.sandbox_image)
    << "\n"
    // Root here lacks CAP_SYS_RESOURCE (no lowering of oom_score_adj) and there is no AppArmor.
    << "  restrict_oom_score_adj = true\n"
    << "  disable_apparmor = true\n"
    << "  netns_mounts_under_state_dir = true\n"
    << "  stream_server_address = \"127.0.0.1\"\n"
    << "  stream_server_port = \"0\"\n"
    << cri << ".containerd]\n"
    << "  snapshotter = \"native\"\n"
    << "  default_runtime_name = \"runc\"\n"
    << cri << ".containerd.runtimes.runc]\n"
    << "  runtime_type = \"io.containerd.runc.v2\"\n"
    << cri << ".containerd.runtimes.runc.options]\n"
    << "  Root = " << Toml(d + "/runc") << "\n"
    << cri << ".cni]\n"
    << "  bin_dir = " << Toml(d + "/cni-bin") << "\n"
    << "  conf_dir = " << Toml(d + "/cni-conf") << "\n"
    << "  max_conf_num = 1\n";
  return t.str();
}

bool Containerd::Start() {
  std::vector<std::string> argv = {kSetpriv, "--pdeathsig", "KILL", "--"};
  if (!options_.netns_path.empty()) {
    // Only the network namespace: containerd keeps the caller's mount namespace, so the pods'
    // netns mounts it makes are visible to the test.
    argv.insert(argv.end(), {kNsenter, "--net=" + options_.netns_path, "--"});
  }
  argv.insert(argv.end(), {kContainerdBinary, "--config", dir_.path() + "/config.toml"});
  daemon_ = std::make_unique<Daemon>();
  return daemon_->Start(argv, dir_.path() + "/containerd.log", {{"TMPDIR", dir_.path() + "/tmp"}});
}

bool Containerd::Running() const {
  return daemon_ && daemon_->pid() > 0 && daemon_->Wait(std::chrono::milliseconds(0)) == -1;
}

std::string Containerd::WaitForCri(std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  grpc::Status last;
  while (Clock::now() < deadline) {
    if (!Running()) return "containerd exited during start; its log ends:\n" + LogTail();
    runtime::v1::VersionResponse version;
    last = runtime_->Version(Call(std::chrono::seconds(2)).get(), {}, &version);
    if (last.ok()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return "containerd's CRI did not answer Version within " + std::to_string(timeout.count()) +
         " s (last: " + last.error_message() + "); its log ends:\n" + LogTail();
}

std::string Containerd::ImportSandboxImage() {
  const ExecResult r = RunProcess(
      {kCtrBinary, "--address", dir_.path() + "/containerd.sock", "--namespace", kCriNamespace,
       "images", "import", "--snapshotter", "native", options_.sandbox_image_archive},
      {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}, {"TMPDIR", dir_.path() + "/tmp"}}, "",
      std::chrono::seconds(120));
  if (r.ok()) return "";
  return "ctr images import " + options_.sandbox_image_archive + " failed: " + r.Describe();
}

std::string Containerd::WaitForImage(std::chrono::seconds timeout) {
  // CRI learns of an image imported through ctr from containerd's events, a moment later.
  const auto deadline = Clock::now() + timeout;
  runtime::v1::ImageStatusRequest request;
  request.mutable_image()->set_image(options_.sandbox_image);
  grpc::Status last;
  while (Clock::now() < deadline) {
    runtime::v1::ImageStatusResponse response;
    last = images_->ImageStatus(Call(std::chrono::seconds(5)).get(), request, &response);
    if (last.ok() && response.has_image()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "CRI does not report the sandbox image " + options_.sandbox_image + " (" +
         (last.ok() ? "absent" : last.error_message()) + ")";
}

std::string Containerd::RemoveAllSandboxes() {
  runtime::v1::ListPodSandboxResponse list;
  grpc::Status st = runtime_->ListPodSandbox(Call().get(), {}, &list);
  if (!st.ok()) return "ListPodSandbox: " + st.error_message();
  std::string first_failure;
  for (const auto& sandbox : list.items()) {
    runtime::v1::StopPodSandboxRequest stop;
    stop.set_pod_sandbox_id(sandbox.id());
    runtime::v1::StopPodSandboxResponse stopped;
    st = runtime_->StopPodSandbox(Call().get(), stop, &stopped);
    if (st.ok()) {
      runtime::v1::RemovePodSandboxRequest remove;
      remove.set_pod_sandbox_id(sandbox.id());
      runtime::v1::RemovePodSandboxResponse removed;
      st = runtime_->RemovePodSandbox(Call().get(), remove, &removed);
    }
    if (!st.ok() && first_failure.empty()) {
      first_failure = "sandbox " + sandbox.id() + ": " + st.error_message();
    }
  }
  return first_failure;
}

void Containerd::KillLeftovers() const {
  // Shims outlive containerd by design; ours are the ones given our socket's address.
  for (pid_t pid : ProcessesWithArgument(dir_.path() + "/containerd.sock")) ::kill(pid, SIGKILL);
  // The pods' processes (pause) are in cgroups under our cgroup parent.
  for (const std::string& mount : CgroupMounts()) {
    for (const std::string& dir : DirectoriesDeepestFirst(mount + cgroup_parent_)) {
      std::istringstream procs(ReadWhole(dir + "/cgroup.procs"));
      for (pid_t pid; procs >> pid;) ::kill(pid, SIGKILL);
    }
  }
}

void Containerd::DetachMounts() const {
  // The snapshots' bind mounts and the pods' netns mounts, deepest first.
  std::vector<std::string> points;
  std::istringstream mounts(ReadWhole("/proc/self/mounts"));
  std::string device, point, rest;
  while (mounts >> device >> point && std::getline(mounts, rest)) {
    point = UnescapeMountPath(point);
    if (point.rfind(dir_.path() + "/", 0) == 0) points.push_back(point);
  }
  std::sort(points.begin(), points.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& p : points) ::umount2(p.c_str(), MNT_DETACH);
}

void Containerd::RemoveCgroups() const {
  // A killed process leaves its cgroup a moment after SIGKILL: retry for up to 5 s.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (const std::string& mount : CgroupMounts()) {
    const std::string root = mount + cgroup_parent_;
    while (fs::exists(root) && Clock::now() < deadline) {
      for (const std::string& dir : DirectoriesDeepestFirst(root)) ::rmdir(dir.c_str());
      if (fs::exists(root)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

std::string Containerd::LogTail() const {
  const std::string log = ReadWhole(dir_.path() + "/containerd.log");
  constexpr size_t kTail = 4000;
  return log.size() > kTail ? "..." + log.substr(log.size() - kTail) : log;
}

}  // namespace mizarmp::testing
