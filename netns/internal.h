// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Pieces shared by the netns sources; not part of the library's interface.
#pragma once

#include <functional>

#include "common/fd.h"
#include "common/status.h"

namespace mizarmp::netns::internal {

// A close-on-exec duplicate of fd.
Result<UniqueFd> DupFd(int fd);
// The calling thread's network namespace.
Result<UniqueFd> CurrentNsFd();
// Runs fn with the calling thread inside the namespace ns_fd and brings it back afterwards
// (aborting the process if it cannot come back, rather than working in the wrong namespace).
Status RunInNetns(int ns_fd, const std::function<Status()>& fn);
// A raw netlink socket subscribed to link notifications in the calling thread's namespace.
Result<UniqueFd> LinkListener();

}  // namespace mizarmp::netns::internal
