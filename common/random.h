// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Numbers for names and ids that must not collide (temporary files, request ids), not for
// secrets (UuidV4 and the key rotation read the kernel's CSPRNG themselves).
#pragma once

#include <cstdint>

namespace mizarmp {

// A 64-bit number no other call in this process returns, and unlikely to be another process's:
// the process draws one seed from the kernel, then each call maps its own count through a
// bijection (SplitMix64's finaliser). Thread-safe and lock-free; no per-thread set-up, which
// gRPC's short-lived server threads would pay again and again. A forked child goes on with its
// parent's sequence: names that a forked process may also make carry the pid as well.
uint64_t UniqueRandom64();

}  // namespace mizarmp
