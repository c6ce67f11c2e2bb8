// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Serving on a unix socket safely: the socket's directory is ours alone, and a stale socket
// left by a crash is cleared while a live one is never taken over. Shared by mizarmp-addons'
// gRPC endpoint (addons/server.cc) and the node's Mizar-MP relay (relay/relay.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "common/status.h"

namespace mizarmp {

// sun_path is 108 bytes including the terminating NUL.
inline constexpr size_t kMaxUnixPath = 107;

// `mode`'s permission bits as four octal digits ("0700"), for messages.
std::string OctalMode(mode_t mode);

// Whether something accepts connections on the unix socket at `path`.
// OK(true): live; OK(false): stale (connection refused); error otherwise.
Result<bool> SocketIsLive(const std::string& path);

// The socket's directory must be ours alone: whoever else could write to it (or owns it, or
// points a symlink somewhere) could swap the socket for their own between our bind() and a
// client's connect(). Made 0700 when missing; an existing one is checked, never "fixed".
Status CheckSocketDirectory(const std::string& dir);

// Checks the socket's directory and clears the way for bind(): a stale socket (nobody answers
// on it) is removed; a live one, a symlink or a non-socket is left alone and refused.
Status PrepareUnixSocket(const std::string& path);

// The socket file a server bound, told apart from whatever its path names later: someone may
// remove it (clients then find nothing), or a successor may bind its own there.
class BoundSocketFile {
 public:
  BoundSocketFile() = default;
  // The socket file at `path` now, right after bind(). Errors as lstat(2)'s.
  static Result<BoundSocketFile> At(const std::string& path);

  const std::string& path() const { return path_; }
  // Whether `path` still names this socket file (one lstat(2)); false for a default one.
  bool StillThere() const;
  // Unlinks `path` when it still names this socket file, and forgets it.
  void RemoveIfStillThere();

 private:
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace mizarmp
