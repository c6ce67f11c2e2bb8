// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What this build is: the project version (CMake's project(VERSION)) and the commit it was built
// from. Only common/version.cc is compiled with them, so a new commit rebuilds one file.
#pragma once

#include <string>
#include <string_view>

namespace mizarmp {

std::string_view Version();    // "0.1.0"
std::string_view GitCommit();  // 12 hex digits, or "unknown" outside a git checkout
std::string LibcVersion();     // "glibc 2.36": the C library the running program has

}  // namespace mizarmp
