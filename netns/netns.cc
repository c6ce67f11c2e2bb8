// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "netns/netns.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdlib>

#include "common/log.h"
#include "netns/internal.h"

namespace mizarmp::netns {

namespace {

constexpr const char kThreadNetns[] = "/proc/thread-self/ns/net";

Result<UniqueFd> OpenNsFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT) return NotFoundError("network namespace " + path + " does not exist");
    return ErrnoError("opening network namespace " + path, err);
  }
  const int type = ::ioctl(fd.get(), NS_GET_NSTYPE);
  if (type < 0) {
    const int err = errno;
    if (err == ENOTTY || err == EINVAL) {
      return InvalidArgumentError(path + " is not a namespace file");
    }
    return ErrnoError("inspecting namespace file " + path, err);
  }
  if (type != CLONE_NEWNET) {
    return InvalidArgumentError(path + " is a namespace, but not a network namespace");
  }
  return fd;
}

}  // namespace

Result<Netns> Netns::Open(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("network namespace path is empty");
  MZ_ASSIGN_OR_RETURN(UniqueFd fd, OpenNsFile(path));
  Netns ns;
  ns.fd_ = std::move(fd);
  ns.path_ = path;
  return ns;
}

Result<Netns> Netns::Current() { return Open(kThreadNetns); }

Status Netns::Run(const std::function<Status()>& fn) const {
  return internal::RunInNetns(fd(), fn).WithContext("in network namespace " + path_);
}

namespace internal {

Result<UniqueFd> DupFd(int fd) {
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) return ErrnoError("duplicating a namespace descriptor", errno);
  return copy;
}

Result<UniqueFd> CurrentNsFd() {
  UniqueFd fd(::open(kThreadNetns, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(std::string("opening ") + kThreadNetns, errno);
  return fd;
}

Status RunInNetns(int ns_fd, const std::function<Status()>& fn) {
  MZ_ASSIGN_OR_RETURN(UniqueFd home, CurrentNsFd());
  if (::setns(ns_fd, CLONE_NEWNET) != 0) {
    return ErrnoError("entering a network namespace (setns)", errno);
  }
  Status st = fn();
  if (::setns(home.get(), CLONE_NEWNET) != 0) {
    // Carrying on would run this thread's later work in a pod's namespace: never do that.
    MZ_LOG(kError) << "cannot return to the original network namespace (errno " << errno
                   << "); aborting";
    std::abort();
  }
  return st;
}

}  // namespace internal

}  // namespace mizarmp::netns
