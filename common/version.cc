// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/version.h"

#include <gnu/libc-version.h>

#ifndef MIZARMP_VERSION
#error "MIZARMP_VERSION must be defined by the build (common/CMakeLists.txt)"
#endif
#ifndef MIZARMP_GIT_COMMIT
#error "MIZARMP_GIT_COMMIT must be defined by the build (common/CMakeLists.txt)"
#endif

namespace mizarmp {

std::string_view Version() { return MIZARMP_VERSION; }
std::string_view GitCommit() { return MIZARMP_GIT_COMMIT; }
std::string LibcVersion() { return std::string("glibc ") + gnu_get_libc_version(); }

}  // namespace mizarmp
