// Termination signals handled synchronously, for the long-running programs (mizarmp-addons,
// mizarmp-mock): SIGTERM and SIGINT are blocked and waited for with sigwait(), so no work ever
// runs in a signal handler.
#pragma once

#include <signal.h>

namespace mizarmp {

// Blocks SIGTERM and SIGINT (and ignores SIGPIPE) in the calling thread. Construct it in main()
// before any thread is started (threads inherit the mask), then call Wait().
class TerminationSignals {
 public:
  TerminationSignals();
  ~TerminationSignals();  // restores the previous mask
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Blocks until SIGTERM or SIGINT arrives; returns which.
  int Wait();

 private:
  sigset_t set_;
  sigset_t old_;
};

}  // namespace mizarmp
