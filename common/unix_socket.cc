// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/unix_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/fd.h"
#include "common/fileutil.h"
#include "common/log.h"

namespace mizarmp {

Result<bool> SocketIsLive(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError("socket(AF_UNIX)", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("socket path \"" + path + "\" is too long");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return true;
  if (errno == ECONNREFUSED || errno == ENOENT) return false;
  // EAGAIN: a live listener with a full backlog.
  if (errno == EAGAIN) return true;
  return ErrnoError("connect to the existing socket \"" + path + "\"", errno);
}

std::string OctalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

Status CheckSocketDirectory(const std::string& dir) {
  Status made = MakeDirs(dir, 0700);
  if (!made.ok()) return made.WithContext("socket directory \"" + dir + "\"");
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return ErrnoError("lstat \"" + dir + "\"", errno);
  const std::string what = "socket directory \"" + dir + "\"";
  if (S_ISLNK(st.st_mode)) {
    return FailedPreconditionError(what +
                                   " is a symlink; refusing to make the socket through "
                                   "it (give the real directory)");
  }
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(what + " is not a directory");
  if (st.st_uid != ::geteuid()) {
    return FailedPreconditionError(what + " is owned by uid " + std::to_string(st.st_uid) +
                                   ", not by this server (uid " + std::to_string(::geteuid()) +
                                   "); use a directory of its own");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return FailedPreconditionError(what + " is writable by group or others (mode " +
                                   OctalMode(st.st_mode) +
                                   "); chmod go-w it, or let the server create it (0700)");
  }
  return Status::Ok();
}

Status PrepareUnixSocket(const std::string& path) {
  MZ_RETURN_IF_ERROR(CheckSocketDirectory(DirName(path)));

  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError("lstat \"" + path + "\"", errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return FailedPreconditionError("endpoint \"" + path +
                                   "\" is a symlink; refusing to replace it or follow it");
  }
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPreconditionError("endpoint \"" + path +
                                   "\" exists and is not a socket; refusing to replace it");
  }
  MZ_ASSIGN_OR_RETURN(bool live, SocketIsLive(path));
  if (live) {
    return AlreadyExistsError("endpoint \"" + path +
                              "\": another server is listening on this socket");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("removing the stale socket \"" + path + "\"", errno);
  }
  MZ_LOG(kInfo) << "removed stale socket " << path;
  return Status::Ok();
}

Result<BoundSocketFile> BoundSocketFile::At(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return ErrnoError("lstat \"" + path + "\"", errno);
  BoundSocketFile bound;
  bound.path_ = path;
  bound.dev_ = st.st_dev;
  bound.ino_ = st.st_ino;
  return bound;
}

bool BoundSocketFile::StillThere() const {
  struct stat st {};
  return !path_.empty() && ::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
         st.st_dev == dev_ && st.st_ino == ino_;
}

void BoundSocketFile::RemoveIfStillThere() {
  if (StillThere() && ::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    MZ_LOG(kWarn) << "removing socket " << path_ << ": " << std::strerror(errno);
  }
  path_.clear();
}

}  // namespace mizarmp
