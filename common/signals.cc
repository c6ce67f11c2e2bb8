// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/signals.h"

#include <pthread.h>

#include "common/log.h"

namespace mizarmp {

TerminationSignals::TerminationSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  ::signal(SIGPIPE, SIG_IGN);
}

TerminationSignals::~TerminationSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

int TerminationSignals::Wait() {
  for (;;) {
    int sig = 0;
    if (sigwait(&set_, &sig) != 0) continue;
    if (sig != SIGHUP) return sig;
    if (Status s = log::Reopen(); s.ok()) {
      MZ_LOG(kInfo) << "SIGHUP: log file reopened";
    } else {
      MZ_LOG(kError) << "SIGHUP: " << s.message() << "; still logging to the old file";
    }
  }
}

}  // namespace mizarmp
