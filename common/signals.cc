#include "common/signals.h"

#include <pthread.h>

namespace mizarmp {

TerminationSignals::TerminationSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  ::signal(SIGPIPE, SIG_IGN);
}

TerminationSignals::~TerminationSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

int TerminationSignals::Wait() {
  int sig = 0;
  while (sigwait(&set_, &sig) != 0) {
  }
  return sig;
}

}  // namespace mizarmp
