// The sandbox ("pause") process of the CRI test's pods: containerd's sandbox_image runs it as
// the pod's first process. It holds the pod's namespaces open, reaps the children re-parented
// to it (it is PID 1 of the pod), and exits 0 on SIGINT or SIGTERM, which StopPodSandbox sends.
// Linked statically: the image holds nothing but this file.
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>

static volatile sig_atomic_t stop_requested = 0;

static void on_termination(int signo) {
  (void)signo;
  stop_requested = 1;
}

// Reaps every child that has exited, without blocking.
static void on_child(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

static int install(int signo, void (*handler)(int)) {
  struct sigaction action = {0};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  return sigaction(signo, &action, NULL);
}

int main(void) {
  // The signals stay blocked except inside sigsuspend, so a SIGTERM arriving between the check
  // of stop_requested and the wait cannot be lost.
  sigset_t handled, waiting;
  sigemptyset(&handled);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &handled, &waiting) != 0) return 1;
  sigdelset(&waiting, SIGINT);
  sigdelset(&waiting, SIGTERM);
  sigdelset(&waiting, SIGCHLD);
  if (install(SIGINT, on_termination) != 0 || install(SIGTERM, on_termination) != 0 ||
      install(SIGCHLD, on_child) != 0) {
    return 1;
  }
  while (!stop_requested) sigsuspend(&waiting);
  return 0;
}
