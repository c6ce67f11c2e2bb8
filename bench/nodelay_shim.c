/* LD_PRELOAD shim for the benchmark's mock only: sets TCP_NODELAY on every socket the process
 * accepts. Debian's cpp-httplib is a compiled library whose Server defaults to Nagle on and
 * writes a response's headers and body in two send()s; against a client's delayed ACK the body
 * then waits ~40 ms. A server without that stall is what the plugin is measured against; the
 * stock mock is measured beside it in the same run (see RESULTS.md). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static void set_nodelay(int fd) {
  if (fd >= 0) {
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
}

int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  static int (*real)(int, struct sockaddr*, socklen_t*);
  if (!real) real = (int (*)(int, struct sockaddr*, socklen_t*))dlsym(RTLD_NEXT, "accept");
  int c = real(fd, addr, len);
  set_nodelay(c);
  return c;
}

int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  static int (*real)(int, struct sockaddr*, socklen_t*, int);
  if (!real) real = (int (*)(int, struct sockaddr*, socklen_t*, int))dlsym(RTLD_NEXT, "accept4");
  int c = real(fd, addr, len, flags);
  set_nodelay(c);
  return c;
}
