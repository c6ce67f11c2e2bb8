// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Netlink: a libnl-route-3 socket bound to one network namespace.
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_addr.h>
#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include "common/log.h"
#include "netns/internal.h"
#include "netns/netns.h"

namespace mizarmp::netns {

std::string NetlinkLibraryVersion() {
  return "libnl " + std::to_string(nl_ver_maj) + "." + std::to_string(nl_ver_min) + "." +
         std::to_string(nl_ver_mic);
}

namespace {

// Owners for libnl objects.
struct LinkPut {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrPut {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct RoutePut {
  void operator()(rtnl_route* r) const { rtnl_route_put(r); }
};
struct NlAddrPut {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct CacheFree {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using LinkPtr = std::unique_ptr<rtnl_link, LinkPut>;
using AddrPtr = std::unique_ptr<rtnl_addr, AddrPut>;
using RoutePtr = std::unique_ptr<rtnl_route, RoutePut>;
using NlAddrPtr = std::unique_ptr<nl_addr, NlAddrPut>;
using CachePtr = std::unique_ptr<nl_cache, CacheFree>;

// A libnl error (a negative NLE_* value) as a Status naming what was being done.
Status NlError(std::string_view what, int nl_err) {
  const int e = nl_err < 0 ? -nl_err : nl_err;
  std::string msg = std::string(what) + ": " + nl_geterror(e);
  switch (e) {
    case NLE_OBJ_NOTFOUND:
    case NLE_NODEV:
    case NLE_NOADDR:
      return NotFoundError(std::move(msg));
    case NLE_EXIST:
      return AlreadyExistsError(std::move(msg));
    case NLE_PERM:
    case NLE_NOACCESS:
      return PermissionDeniedError(std::move(msg));
    case NLE_INVAL:
    case NLE_RANGE:
    case NLE_MSGSIZE:
      return InvalidArgumentError(std::move(msg));
    case NLE_BUSY:
    case NLE_AGAIN:
      return UnavailableError(std::move(msg));
    default:
      return InternalError(std::move(msg));
  }
}

bool IsNotFound(int nl_err) {
  const int e = nl_err < 0 ? -nl_err : nl_err;
  return e == NLE_OBJ_NOTFOUND || e == NLE_NODEV;
}

int AfOf(IpAddress::Family f) { return f == IpAddress::Family::kV4 ? AF_INET : AF_INET6; }

Result<NlAddrPtr> ToNlAddr(const IpAddress& ip, int prefix_len) {
  NlAddrPtr a(nl_addr_build(AfOf(ip.family()), ip.bytes().data(), ip.byte_length()));
  if (!a) return InternalError("out of memory building a netlink address");
  nl_addr_set_prefixlen(a.get(), prefix_len);
  return a;
}

// An nl_addr of family AF_INET/AF_INET6 as an IpAddress; a zero-length address (as libnl keeps
// the destination of a default route) is the family's all-zeroes address.
std::optional<IpAddress> FromNlAddr(nl_addr* a) {
  if (a == nullptr) return std::nullopt;
  const int family = nl_addr_get_family(a);
  const unsigned len = nl_addr_get_len(a);
  const auto* bytes = static_cast<const uint8_t*>(nl_addr_get_binary_addr(a));
  if (family == AF_INET) {
    if (len == 0) return IpAddress();
    if (len != 4) return std::nullopt;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | bytes[i];
    return IpAddress::V4(v);
  }
  if (family == AF_INET6) {
    std::array<uint8_t, 16> b{};
    if (len == 16) {
      for (int i = 0; i < 16; ++i) b[i] = bytes[i];
    } else if (len != 0) {
      return std::nullopt;
    }
    return IpAddress::V6(b);
  }
  return std::nullopt;
}

std::string MacString(nl_addr* a) {
  if (a == nullptr || nl_addr_get_len(a) == 0) return {};
  const auto* b = static_cast<const uint8_t*>(nl_addr_get_binary_addr(a));
  std::string out;
  char buf[4];
  for (unsigned i = 0; i < nl_addr_get_len(a); ++i) {
    std::snprintf(buf, sizeof(buf), i == 0 ? "%02x" : ":%02x", b[i]);
    out += buf;
  }
  return out;
}

LinkInfo InfoOf(rtnl_link* l) {
  LinkInfo info;
  info.index = rtnl_link_get_ifindex(l);
  if (const char* n = rtnl_link_get_name(l)) info.name = n;
  info.mac = MacString(rtnl_link_get_addr(l));
  info.mtu = static_cast<int>(rtnl_link_get_mtu(l));
  info.up = (rtnl_link_get_flags(l) & IFF_UP) != 0;
  if (const char* k = rtnl_link_get_type(l)) info.kind = k;
  info.master_index = rtnl_link_get_master(l);
  if (info.kind == "veth") {
    info.peer_index = static_cast<int>(rtnl_link_get_link(l));
    int32_t nsid = -1;
    if (rtnl_link_get_link_netnsid(l, &nsid) == 0) info.peer_netnsid = nsid;
  }
  return info;
}

Status CheckName(std::string_view name) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    return InvalidArgumentError("interface name \"" + std::string(name) +
                                "\" must be 1 to 15 characters long");
  }
  return Status::Ok();
}

Result<nl_sock*> ConnectedSocket() {
  nl_sock* s = nl_socket_alloc();
  if (s == nullptr) return InternalError("out of memory allocating a netlink socket");
  if (int err = nl_connect(s, NETLINK_ROUTE); err < 0) {
    nl_socket_free(s);
    return NlError("connecting a route netlink socket", err);
  }
  return s;
}

// libnl's callbacks for an RTM_GETNSID exchange: the answer's id, then the kernel's ACK.
struct NsidExchange {
  int nsid = -1;
  bool acked = false;
};

int CaptureNsid(nl_msg* msg, void* arg) {
  nlmsghdr* header = nlmsg_hdr(msg);
  if (header->nlmsg_type != RTM_NEWNSID) return NL_OK;
  nlattr* attrs[NETNSA_MAX + 1];
  if (nlmsg_parse(header, sizeof(rtgenmsg), attrs, NETNSA_MAX, nullptr) < 0) return NL_SKIP;
  if (attrs[NETNSA_NSID] != nullptr) {
    static_cast<NsidExchange*>(arg)->nsid = static_cast<int32_t>(nla_get_u32(attrs[NETNSA_NSID]));
  }
  return NL_OK;
}

int StopOnAck(nl_msg*, void* arg) {
  static_cast<NsidExchange*>(arg)->acked = true;
  return NL_STOP;
}

struct MsgFree {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
struct CbPut {
  void operator()(nl_cb* c) const { nl_cb_put(c); }
};

}  // namespace

// ------------------------------------------------------------------------------ lifecycle

Result<Netlink> Netlink::OpenIn(const Netns& ns) {
  nl_sock* s = nullptr;
  Status st = internal::RunInNetns(ns.fd(), [&]() -> Status {
    auto r = ConnectedSocket();
    if (!r.ok()) return r.status();
    s = *r;
    return Status::Ok();
  });
  if (!st.ok()) return st.WithContext("netlink in " + ns.path());
  Netlink nl;
  nl.sock_ = s;
  auto dup = internal::DupFd(ns.fd());
  if (!dup.ok()) return dup.status();
  nl.ns_fd_ = std::move(dup).value();
  return nl;
}

Netlink::Netlink(Netlink&& o) noexcept
    : sock_(std::exchange(o.sock_, nullptr)), ns_fd_(std::move(o.ns_fd_)) {}

Netlink& Netlink::operator=(Netlink&& o) noexcept {
  if (this != &o) {
    if (sock_ != nullptr) nl_socket_free(sock_);
    sock_ = std::exchange(o.sock_, nullptr);
    ns_fd_ = std::move(o.ns_fd_);
  }
  return *this;
}

Netlink::~Netlink() {
  if (sock_ != nullptr) nl_socket_free(sock_);
}

// ------------------------------------------------------------------------------------ links

Result<LinkInfo> Netlink::GetLink(std::string_view name) {
  return GetLinkOrError(name, "looking up link");
}

Result<int> Netlink::NetnsIdOf(const Netns& other) {
  std::unique_ptr<nl_msg, MsgFree> msg(nlmsg_alloc_simple(RTM_GETNSID, NLM_F_REQUEST));
  if (!msg) return InternalError("out of memory building a netlink message");
  rtgenmsg header{};
  header.rtgen_family = AF_UNSPEC;
  if (int err = nlmsg_append(msg.get(), &header, sizeof(header), NLMSG_ALIGNTO); err < 0) {
    return NlError("building RTM_GETNSID", err);
  }
  if (int err = nla_put_u32(msg.get(), NETNSA_FD, static_cast<uint32_t>(other.fd())); err < 0) {
    return NlError("building RTM_GETNSID", err);
  }
  nl_cb* socket_cb = nl_socket_get_cb(sock_);
  std::unique_ptr<nl_cb, CbPut> cb(nl_cb_clone(socket_cb));
  nl_cb_put(socket_cb);
  if (!cb) return InternalError("out of memory cloning netlink callbacks");
  NsidExchange exchange;
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, CaptureNsid, &exchange);
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, StopOnAck, &exchange);
  const std::string what = "asking the id of namespace " + other.path();
  if (int err = nl_send_auto(sock_, msg.get()); err < 0) return NlError(what, err);
  while (!exchange.acked) {
    if (int err = nl_recvmsgs(sock_, cb.get()); err < 0) return NlError(what, err);
  }
  return exchange.nsid;
}

Result<LinkInfo> Netlink::GetLinkOrError(std::string_view name, std::string_view action) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  const std::string n(name);
  rtnl_link* raw = nullptr;
  const int err = rtnl_link_get_kernel(sock_, 0, n.c_str(), &raw);
  if (err < 0) {
    if (IsNotFound(err)) return NotFoundError("link " + n + " does not exist");
    return NlError(std::string(action) + " " + n, err);
  }
  LinkPtr link(raw);
  return InfoOf(link.get());
}

Result<LinkInfo> Netlink::WaitForLink(std::string_view name, std::chrono::milliseconds timeout) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  auto found = GetLink(name);
  if (found.ok() || !found.status().IsNotFound()) return found;

  // Subscribe first, then look again, so a link that appears in between is not missed.
  MZ_ASSIGN_OR_RETURN(LinkWatch watch, LinkWatch::OpenInFd(ns_fd_.get(), name));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    found = GetLink(name);
    if (found.ok() || !found.status().IsNotFound()) return found;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return DeadlineExceededError("link " + std::string(name) + " did not appear within " +
                                   std::to_string(timeout.count()) + " ms");
    }
    // Look again at least every 100 ms, whatever the notifications say.
    watch.WaitUntil(std::min(deadline, now + std::chrono::milliseconds(100)));
  }
}

namespace {

// Applies `changes` to the kernel's link `name`.
Status ChangeLink(nl_sock* sock, std::string_view name, rtnl_link* changes, std::string_view what) {
  const std::string n(name);
  rtnl_link* raw = nullptr;
  int err = rtnl_link_get_kernel(sock, 0, n.c_str(), &raw);
  if (err < 0) {
    if (IsNotFound(err))
      return NotFoundError(std::string(what) + ": link " + n + " does not exist");
    return NlError(std::string(what) + " " + n, err);
  }
  LinkPtr orig(raw);
  err = rtnl_link_change(sock, orig.get(), changes, 0);
  if (err < 0) return NlError(std::string(what) + " " + n, err);
  return Status::Ok();
}

}  // namespace

Status Netlink::SetUp(std::string_view name, bool up) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  LinkPtr ch(rtnl_link_alloc());
  if (up) {
    rtnl_link_set_flags(ch.get(), IFF_UP);
  } else {
    rtnl_link_unset_flags(ch.get(), IFF_UP);
  }
  return ChangeLink(sock_, name, ch.get(), up ? "setting up" : "setting down");
}

Status Netlink::SetMtu(std::string_view name, int mtu) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  if (mtu < 68 || mtu > 65535) {
    return InvalidArgumentError("MTU " + std::to_string(mtu) + " is outside 68..65535");
  }
  LinkPtr ch(rtnl_link_alloc());
  rtnl_link_set_mtu(ch.get(), static_cast<unsigned>(mtu));
  return ChangeLink(sock_, name, ch.get(), "setting MTU " + std::to_string(mtu) + " on");
}

Status Netlink::SetMac(std::string_view name, std::string_view mac) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  nl_addr* raw = nullptr;
  const std::string m(mac);
  if (nl_addr_parse(m.c_str(), AF_LLC, &raw) < 0 || nl_addr_get_len(raw) != 6) {
    if (raw != nullptr) nl_addr_put(raw);
    return InvalidArgumentError(Quoted(m) + " is not a MAC address");
  }
  NlAddrPtr addr(raw);
  LinkPtr ch(rtnl_link_alloc());
  rtnl_link_set_addr(ch.get(), addr.get());
  return ChangeLink(sock_, name, ch.get(), "setting MAC " + m + " on");
}

// -------------------------------------------------------------------------------- addresses

namespace {

// An rtnl_addr for `address` on link `ifindex`.
Result<AddrPtr> BuildAddr(int ifindex, const Cidr& address) {
  MZ_ASSIGN_OR_RETURN(NlAddrPtr local, ToNlAddr(address.address(), address.prefix_len()));
  AddrPtr a(rtnl_addr_alloc());
  if (!a) return InternalError("out of memory building an address");
  rtnl_addr_set_ifindex(a.get(), ifindex);
  rtnl_addr_set_family(a.get(), AfOf(address.address().family()));
  if (int err = rtnl_addr_set_local(a.get(), local.get()); err < 0) {
    return NlError("preparing address " + address.ToString(), err);
  }
  rtnl_addr_set_prefixlen(a.get(), address.prefix_len());
  return a;
}

}  // namespace

Status Netlink::AddAddress(std::string_view name, const Cidr& address) {
  MZ_ASSIGN_OR_RETURN(LinkInfo link, GetLinkOrError(name, "adding an address to"));
  MZ_ASSIGN_OR_RETURN(AddrPtr a, BuildAddr(link.index, address));
  if (address.address().is_v6()) rtnl_addr_set_flags(a.get(), IFA_F_NODAD);
  const int err = rtnl_addr_add(sock_, a.get(), 0);
  if (err < 0 && -err != NLE_EXIST) {
    return NlError("adding " + address.ToString() + " to " + std::string(name), err);
  }
  return Status::Ok();
}

Result<std::vector<Cidr>> Netlink::ListAddresses(std::string_view name) {
  MZ_ASSIGN_OR_RETURN(LinkInfo link, GetLinkOrError(name, "listing the addresses of"));
  nl_cache* raw = nullptr;
  if (int err = rtnl_addr_alloc_cache(sock_, &raw); err < 0) {
    return NlError("listing addresses of " + std::string(name), err);
  }
  CachePtr cache(raw);
  std::vector<Cidr> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(a) != link.index) continue;
    std::optional<IpAddress> ip = FromNlAddr(rtnl_addr_get_local(a));
    if (!ip) continue;
    // Link-local IPv6 (fe80::/10) is the kernel's own, not something anyone assigned.
    if (ip->is_v6() && ip->bytes()[0] == 0xfe && (ip->bytes()[1] & 0xc0) == 0x80) continue;
    out.emplace_back(*ip, rtnl_addr_get_prefixlen(a));
  }
  return out;
}

// ----------------------------------------------------------------------------------- routes

Status Netlink::AddRoute(std::string_view name, const Cidr& dst, std::optional<IpAddress> gateway) {
  MZ_ASSIGN_OR_RETURN(LinkInfo link, GetLinkOrError(name, "adding a route out of"));
  if (gateway && gateway->family() != dst.address().family()) {
    return InvalidArgumentError("gateway " + gateway->ToString() + " is not of the family of " +
                                dst.ToString());
  }
  const Cidr net(dst.network(), dst.prefix_len());
  MZ_ASSIGN_OR_RETURN(NlAddrPtr d, ToNlAddr(net.address(), net.prefix_len()));
  RoutePtr r(rtnl_route_alloc());
  const int family = AfOf(dst.address().family());
  rtnl_route_set_family(r.get(), static_cast<uint8_t>(family));
  rtnl_route_set_table(r.get(), RT_TABLE_MAIN);
  rtnl_route_set_protocol(r.get(), RTPROT_BOOT);
  rtnl_route_set_type(r.get(), RTN_UNICAST);
  rtnl_route_set_scope(r.get(), gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK);
  if (int err = rtnl_route_set_dst(r.get(), d.get()); err < 0) {
    return NlError("preparing route " + net.ToString(), err);
  }
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  if (nh == nullptr) return InternalError("out of memory building a route");
  rtnl_route_nh_set_ifindex(nh, link.index);
  if (gateway) {
    auto gw = ToNlAddr(*gateway, gateway->bits());
    if (!gw.ok()) {
      rtnl_route_nh_free(nh);
      return gw.status();
    }
    rtnl_route_nh_set_gateway(nh, gw->get());  // takes its own reference
  }
  rtnl_route_add_nexthop(r.get(), nh);  // the route owns nh from here
  const int err = rtnl_route_add(sock_, r.get(), NLM_F_REPLACE);
  if (err < 0) {
    return NlError("adding route " + net.ToString() +
                       (gateway ? " via " + gateway->ToString() : std::string()) + " dev " +
                       std::string(name),
                   err);
  }
  return Status::Ok();
}

Result<std::vector<RouteInfo>> Netlink::ListRoutes(IpAddress::Family family) {
  nl_cache* raw = nullptr;
  if (int err = rtnl_route_alloc_cache(sock_, AfOf(family), 0, &raw); err < 0) {
    return NlError("listing routes", err);
  }
  CachePtr cache(raw);
  std::vector<RouteInfo> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_table(r) != RT_TABLE_MAIN || rtnl_route_get_type(r) != RTN_UNICAST) {
      continue;
    }
    nl_addr* d = rtnl_route_get_dst(r);
    std::optional<IpAddress> dst = FromNlAddr(d);
    if (!dst) {
      // No destination attribute: the default route of the family.
      dst = family == IpAddress::Family::kV4 ? IpAddress() : IpAddress::V6({});
    }
    RouteInfo info;
    info.dst = Cidr(*dst, d != nullptr ? static_cast<int>(nl_addr_get_prefixlen(d)) : 0);
    if (rtnl_nexthop* nh = rtnl_route_nexthop_n(r, 0)) {
      info.gateway = FromNlAddr(rtnl_route_nh_get_gateway(nh));
      info.oif_index = rtnl_route_nh_get_ifindex(nh);
    }
    out.push_back(std::move(info));
  }
  return out;
}

// ----------------------------------------------------------------------- creating links

Status Netlink::CreateVeth(std::string_view name, std::string_view peer_name, const Netns* peer_ns,
                           std::string_view peer_mac, int mtu) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  MZ_RETURN_IF_ERROR(CheckName(peer_name));
  const std::string n(name), pn(peer_name);
  LinkPtr link(rtnl_link_veth_alloc());
  if (!link) return InternalError("out of memory building a veth pair");
  LinkPtr peer(rtnl_link_veth_get_peer(link.get()));  // a counted reference
  rtnl_link_set_name(link.get(), n.c_str());
  rtnl_link_set_name(peer.get(), pn.c_str());
  if (mtu > 0) {
    rtnl_link_set_mtu(link.get(), static_cast<unsigned>(mtu));
    rtnl_link_set_mtu(peer.get(), static_cast<unsigned>(mtu));
  }
  NlAddrPtr mac;
  if (!peer_mac.empty()) {
    nl_addr* raw = nullptr;
    const std::string m(peer_mac);
    if (nl_addr_parse(m.c_str(), AF_LLC, &raw) < 0 || nl_addr_get_len(raw) != 6) {
      if (raw != nullptr) nl_addr_put(raw);
      return InvalidArgumentError(Quoted(m) + " is not a MAC address");
    }
    mac.reset(raw);
    rtnl_link_set_addr(peer.get(), mac.get());
  }
  if (peer_ns != nullptr) rtnl_link_set_ns_fd(peer.get(), peer_ns->fd());
  const int err = rtnl_link_add(sock_, link.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (err < 0) {
    return NlError("creating veth " + n + " <-> " + pn +
                       (peer_ns != nullptr ? " (peer in " + peer_ns->path() + ")" : std::string()),
                   err);
  }
  return Status::Ok();
}

Status Netlink::CreateBridge(std::string_view name) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  const std::string n(name);
  LinkPtr link(rtnl_link_alloc());
  rtnl_link_set_name(link.get(), n.c_str());
  if (int err = rtnl_link_set_type(link.get(), "bridge"); err < 0) {
    return NlError("preparing bridge " + n, err);
  }
  const int err = rtnl_link_add(sock_, link.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (err < 0 && -err != NLE_EXIST) return NlError("creating bridge " + n, err);
  return Status::Ok();
}

Status Netlink::SetMaster(std::string_view name, std::string_view bridge) {
  MZ_ASSIGN_OR_RETURN(LinkInfo master, GetLinkOrError(bridge, "looking up bridge"));
  LinkPtr ch(rtnl_link_alloc());
  rtnl_link_set_master(ch.get(), master.index);
  return ChangeLink(sock_, name, ch.get(), "attaching to " + std::string(bridge));
}

Status Netlink::DeleteLink(std::string_view name) {
  MZ_RETURN_IF_ERROR(CheckName(name));
  const std::string n(name);
  LinkPtr link(rtnl_link_alloc());
  rtnl_link_set_name(link.get(), n.c_str());
  const int err = rtnl_link_delete(sock_, link.get());
  if (err < 0 && !IsNotFound(err)) return NlError("deleting link " + n, err);
  return Status::Ok();
}

}  // namespace mizarmp::netns
