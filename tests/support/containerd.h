// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A real containerd (Debian's package) with its CRI plugin, isolated for one test: its own root,
// state, socket, runc root, config and CNI directories under a temporary directory, started in
// the network namespace the test gives it (the "node": the CNI plugins containerd execs run
// there, so hostPort rules and bandwidth qdiscs land there and not in the host's namespace), and
// a CRI v1 client (proto/cri/api.proto) on its socket. It never talks to a system containerd.
//
// At the end (also when a test failed) every pod sandbox is stopped and removed through CRI, so
// the CNI DEL runs; containerd is stopped, any shim and pod process it left is killed by pid,
// the mounts under its directories are detached, its cgroup parent and directories removed.
// containerd also dies (setpriv --pdeathsig KILL) when the thread that started it exits.
// What stays global: the shims' sockets under /run/containerd/s (containerd 1.6 puts them
// there whatever the state dir; each shim removes its own) and libcni's result cache under
// /var/lib/cni (an entry per attachment, removed on DEL).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cri/api.grpc.pb.h"
#include "tests/support/process.h"
#include "tests/support/support.h"

namespace mizarmp::testing {

// Where Debian's containerd, runc and util-linux packages put what the fixture runs.
inline constexpr const char* kContainerdBinary = "/usr/bin/containerd";
inline constexpr const char* kCtrBinary = "/usr/bin/ctr";
inline constexpr const char* kContainerdShimBinary = "/usr/bin/containerd-shim-runc-v2";
inline constexpr const char* kRuncBinary = "/usr/sbin/runc";

// Empty when containerd can run here (root; containerd, ctr, the runc shim, runc, nsenter and
// setpriv installed), else the reason it cannot.
std::string ContainerdUnavailableReason();

struct ContainerdOptions {
  // The network namespace containerd runs in (a path such as /run/netns/NAME); empty: the
  // caller's. Pod namespaces are created fresh either way.
  std::string netns_path;
  // Executables made available in CNI's bin_dir under their own base names.
  std::vector<std::string> cni_plugins;
  // The network configuration list, written to CNI's conf_dir (the only file there).
  std::string conflist;
  // An image archive (`docker save` layout) imported into the CRI namespace, and its reference,
  // which becomes the sandbox ("pause") image.
  std::string sandbox_image_archive;
  std::string sandbox_image;
};

class Containerd {
 public:
  // Writes the config, starts containerd, waits (up to 60 s) until CRI answers Version, imports
  // the sandbox image and waits until CRI reports it. error() says what failed otherwise.
  explicit Containerd(ContainerdOptions options);
  // Removes every pod sandbox through CRI, stops containerd and cleans up (see above).
  ~Containerd();
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  // Empty when containerd serves CRI with the sandbox image; else the cause and the log's tail.
  std::string error() const { return error_; }

  // The CRI runtime service on containerd's socket.
  runtime::v1::RuntimeService::Stub& runtime() { return *runtime_; }
  // A client context whose deadline is `timeout` from now, for one CRI call.
  static std::unique_ptr<grpc::ClientContext> Call(
      std::chrono::seconds timeout = std::chrono::seconds(120));

  // Where containerd bind-mounts the pods' network namespaces (one file per pod).
  std::string netns_dir() const;
  // A cgroup parent unique to this fixture: pods given it (PodSandboxConfig.linux) are found and
  // removed at the end even if containerd could not remove them.
  const std::string& cgroup_parent() const { return cgroup_parent_; }
  // A directory for the pods' log_directory, removed with the fixture.
  std::string log_dir() const;

  // Stops and removes every pod sandbox containerd knows; the first failure, or "".
  std::string RemoveAllSandboxes();

  // The last 4000 bytes of containerd's log, for failure messages.
  std::string LogTail() const;

 private:
  std::string StartAndImport();
  std::string WriteLayout() const;
  std::string ConfigToml() const;
  bool Start();
  std::string WaitForCri(std::chrono::seconds timeout);
  std::string ImportSandboxImage();
  std::string WaitForImage(std::chrono::seconds timeout);
  bool Running() const;
  void KillLeftovers() const;
  void DetachMounts() const;
  void RemoveCgroups() const;

  ContainerdOptions options_;
  TempDir dir_;
  std::string cgroup_parent_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<runtime::v1::RuntimeService::Stub> runtime_;
  std::unique_ptr<runtime::v1::ImageService::Stub> images_;
  std::string error_;
};

}  // namespace mizarmp::testing

// Skips (or, under CI=true, fails) a test body where containerd cannot run here.
#define MZ_REQUIRE_CONTAINERD() \
  MZ_REQUIRE_CAPABILITY_(::mizarmp::testing::ContainerdUnavailableReason(), "containerd")
