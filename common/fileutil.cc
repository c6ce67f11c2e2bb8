// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/fileutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/random.h"

namespace mizarmp {

std::string DirName(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string BaseName(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

FileVersion VersionOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return FileVersion{};
  return FileVersion{st.st_dev, st.st_ino, st.st_size,
                     int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                     int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

std::string FileVersion::ToString() const {
  return std::to_string(dev) + ":" + std::to_string(ino) + ":" + std::to_string(size) + ":" +
         std::to_string(mtime_ns) + ":" + std::to_string(ctime_ns);
}

Status WriteAllFd(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("writing fd " + std::to_string(fd), errno);
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open " + path, errno);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read " + path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::string> ReadPemFile(std::string_view setting, const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return InvalidArgumentError(std::string(setting) + " \"" + path +
                                "\": " + text.status().message());
  }
  if (text->find("-----BEGIN") == std::string::npos) {
    return InvalidArgumentError(std::string(setting) + " \"" + path + "\": not a PEM file");
  }
  return std::move(text).value();
}

static Status FsyncDir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open directory " + dir, errno);
  if (::fsync(fd.get()) != 0) return ErrnoError("fsync directory " + dir, errno);
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode,
                       Durability durability) {
  const std::string dir = DirName(path);
  // Unique per writer: pid plus a random suffix, so concurrent writers never share a temp file.
  const std::string tmp = dir + "/." + BaseName(path) + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(UniqueRandom64() & 0xffffffff);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.valid()) return ErrnoError("create " + tmp, errno);
  // The umask must not widen or narrow what the caller asked for.
  if (::fchmod(fd.get(), mode) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return ErrnoError("chmod " + tmp, e);
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::unlink(tmp.c_str());
      return ErrnoError("write " + tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  const bool durable = durability == Durability::kDurable;
  if (durable && ::fsync(fd.get()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return ErrnoError("fsync " + tmp, e);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return ErrnoError("rename " + tmp + " to " + path, e);
  }
  return durable ? FsyncDir(dir) : Status::Ok();
}

Status RemoveFileDurable(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError("remove " + path, errno);
  }
  return FsyncDir(DirName(path));
}

Status MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return InvalidArgumentError("empty directory path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return FailedPreconditionError(path + " exists and is not a directory");
    return Status::Ok();
  }
  const std::string parent = DirName(path);
  if (parent != path) MZ_RETURN_IF_ERROR(MakeDirs(parent, mode));
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    return ErrnoError("mkdir " + path, errno);
  // mkdir honours the umask; make the mode exactly what was asked for.
  if (::chmod(path.c_str(), mode) != 0) return ErrnoError("chmod " + path, errno);
  return Status::Ok();
}

Result<std::vector<std::string>> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("open directory " + dir, errno);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  return names;
}

Result<FileLock> FileLock::Acquire(const std::string& path, mode_t mode) {
  for (;;) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode));
    if (!fd.valid()) return ErrnoError("open lock " + path, errno);
    while (::flock(fd.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return ErrnoError("flock " + path, errno);
    }
    // The previous holder may have unlinked the file between our open and our flock; then we
    // hold a lock nobody else can see and must start over on the path as it is now.
    struct stat held {
    }, now{};
    if (::fstat(fd.get(), &held) != 0) return ErrnoError("fstat " + path, errno);
    if (::stat(path.c_str(), &now) == 0 && now.st_ino == held.st_ino && now.st_dev == held.st_dev) {
      FileLock lock;
      lock.fd_ = std::move(fd);
      lock.path_ = path;
      return lock;
    }
  }
}

Status FileLock::ReleaseAndRemove() {
  if (!fd_.valid()) return Status::Ok();
  Status s = Status::Ok();
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT)
    s = ErrnoError("remove lock " + path_, errno);
  fd_.reset();
  return s;
}

}  // namespace mizarmp
