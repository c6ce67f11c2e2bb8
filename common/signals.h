// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Termination signals handled synchronously, for the long-running programs (mizarmp-addons,
// mizarmp-mock): SIGTERM and SIGINT are blocked and waited for with sigwait(), so no work ever
// runs in a signal handler. SIGHUP reopens the log file (logrotate's postrotate) and waiting
// goes on.
#pragma once

#include <signal.h>

namespace mizarmp {

// Blocks SIGTERM, SIGINT and SIGHUP (and ignores SIGPIPE) in the calling thread. Construct it in main()
// before any thread is started (threads inherit the mask), then call Wait().
class TerminationSignals {
 public:
  TerminationSignals();
  ~TerminationSignals();  // restores the previous mask
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Blocks until SIGTERM or SIGINT arrives; returns which. Each SIGHUP meanwhile reopens the
  // log file (log::Reopen).
  int Wait();

 private:
  sigset_t set_;
  sigset_t old_;
};

}  // namespace mizarmp
