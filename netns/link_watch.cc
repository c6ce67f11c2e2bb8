// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// LinkWatch: link notifications of one name, read off a raw netlink socket subscribed to
// RTMGRP_LINK inside the namespace (libnl's caches would re-read every link on each change).
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "netns/internal.h"
#include "netns/netns.h"

namespace mizarmp::netns {
namespace {

using Clock = std::chrono::steady_clock;

// The IFLA_IFNAME of an RTM_NEWLINK message; empty for other messages or when it has none.
std::string_view NewLinkName(const nlmsghdr* h) {
  if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) return {};
  const auto* info = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
  int left = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(ifinfomsg)));
  for (const rtattr* a = IFLA_RTA(info); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type != IFLA_IFNAME) continue;
    const char* name = static_cast<const char*>(RTA_DATA(a));
    return {name, strnlen(name, RTA_PAYLOAD(a))};
  }
  return {};
}

}  // namespace

namespace internal {

Result<UniqueFd> LinkListener() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
  if (!fd.valid()) return ErrnoError("opening a netlink listener", errno);
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    return ErrnoError("subscribing to link notifications", errno);
  }
  return fd;
}

}  // namespace internal

Result<LinkWatch> LinkWatch::OpenIn(const Netns& ns, std::string_view name) {
  return OpenInFd(ns.fd(), name);
}

Result<LinkWatch> LinkWatch::OpenInFd(int ns_fd, std::string_view name) {
  LinkWatch watch;
  watch.name_ = std::string(name);
  Status st = internal::RunInNetns(ns_fd, [&]() -> Status {
    MZ_ASSIGN_OR_RETURN(watch.fd_, internal::LinkListener());
    return Status::Ok();
  });
  if (st.ok()) st = watch.AskForLink();
  if (!st.ok()) return st.WithContext("watching link " + watch.name_);
  return watch;
}

// A link that was there before the subscription sends no notification: asking for it by name
// on the same socket makes the kernel answer with the same RTM_NEWLINK a new link would (or an
// error message, which Drain() passes over), so the first wait sees it either way.
Status LinkWatch::AskForLink() {
  struct {
    nlmsghdr header;
    ifinfomsg info;
    char attrs[RTA_SPACE(IFNAMSIZ)];
  } request{};
  if (name_.empty() || name_.size() >= IFNAMSIZ) {
    return InvalidArgumentError("link name \"" + name_ + "\" is empty or too long");
  }
  auto* attr = reinterpret_cast<rtattr*>(request.attrs);
  attr->rta_type = IFLA_IFNAME;
  attr->rta_len = static_cast<unsigned short>(RTA_LENGTH(name_.size() + 1));
  std::memcpy(RTA_DATA(attr), name_.c_str(), name_.size() + 1);
  request.header.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(sizeof(ifinfomsg)) + RTA_ALIGN(attr->rta_len));
  request.header.nlmsg_type = RTM_GETLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.info.ifi_family = AF_UNSPEC;
  if (::send(fd_.get(), &request, request.header.nlmsg_len, 0) < 0) {
    return ErrnoError("asking for link " + name_, errno);
  }
  return Status::Ok();
}

bool LinkWatch::WaitUntil(Clock::time_point until) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (n < 0 && errno != EINTR) return true;  // cannot wait: let the caller look now
    if (n > 0 && Drain()) return true;
  }
}

bool LinkWatch::Drain() {
  alignas(nlmsghdr) char buf[16384];
  bool seen = false;
  for (;;) {
    const ssize_t got = ::recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (got < 0) return seen || errno == ENOBUFS;  // ENOBUFS: the kernel dropped some
    if (got == 0) return seen;
    // NLMSG_OK/NLMSG_NEXT by hand: the macros compare signed and unsigned lengths.
    const size_t end = static_cast<size_t>(got);
    for (size_t off = 0; off + sizeof(nlmsghdr) <= end;) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buf + off);
      if (h->nlmsg_len < sizeof(nlmsghdr) || h->nlmsg_len > end - off) break;
      if (NewLinkName(h) == name_) seen = true;
      off += NLMSG_ALIGN(h->nlmsg_len);
    }
  }
}

}  // namespace mizarmp::netns
