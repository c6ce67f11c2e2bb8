// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Network namespaces: open one by path, and run a netlink socket inside it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/ipaddr.h"
#include "common/status.h"

struct nl_sock;
struct nl_cache;

namespace mizarmp::netns {

// "libnl 3.7.0": the libnl the netlink code runs on.
std::string NetlinkLibraryVersion();

// An open network namespace: a file descriptor on a bind-mounted netns file
// ("/var/run/netns/x") or a /proc/<pid>/ns/net path.
class Netns {
 public:
  // NOT_FOUND if the path is missing; INVALID_ARGUMENT if it is not a network namespace.
  static Result<Netns> Open(const std::string& path);
  // The calling thread's current namespace.
  static Result<Netns> Current();
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  // Runs `fn` with the calling thread inside this namespace; the thread is back in its own on
  // return (the process aborts rather than go on in the wrong one). For libraries that open
  // their own sockets where the thread is, as libnftables does.
  Status Run(const std::function<Status()>& fn) const;

 private:
  UniqueFd fd_;
  std::string path_;
};

struct LinkInfo {
  int index = 0;
  std::string name;
  std::string mac;  // lower-case "aa:bb:cc:dd:ee:ff", empty if none
  int mtu = 0;
  bool up = false;       // IFF_UP set
  std::string kind;      // "veth", "bridge", ... empty if none
  int master_index = 0;  // 0 if not enslaved
  // A veth's peer: its index (IFLA_LINK), in the namespace this link's namespace calls
  // peer_netnsid (IFLA_LINK_NETNSID; -1 when the peer is in the same namespace). 0 for others.
  int peer_index = 0;
  int peer_netnsid = -1;
};

struct RouteInfo {
  Cidr dst;  // 0.0.0.0/0 or ::/0 for a default route
  std::optional<IpAddress> gateway;
  int oif_index = 0;
};

// A route netlink socket (libnl-route-3) bound to one namespace. The socket stays in the
// namespace it was opened in, whatever namespace the calling thread is in later, so a
// multi-threaded process (the mock's agent) can work in many namespaces without setns races.
// Not thread-safe: one Netlink per thread.
class Netlink {
 public:
  // Opens the socket inside `ns`; the calling thread is back in its own namespace on return.
  static Result<Netlink> OpenIn(const Netns& ns);
  Netlink(Netlink&&) noexcept;
  Netlink& operator=(Netlink&&) noexcept;
  ~Netlink();

  Result<LinkInfo> GetLink(std::string_view name);  // NOT_FOUND if absent
  // The id this socket's namespace gives `other` (RTM_GETNSID), -1 when it has given none.
  Result<int> NetnsIdOf(const Netns& other);
  // Returns as soon as the link appears (netlink notifications, not sleeps); DEADLINE_EXCEEDED
  // naming the link and the timeout otherwise.
  Result<LinkInfo> WaitForLink(std::string_view name, std::chrono::milliseconds timeout);

  Status SetUp(std::string_view name, bool up = true);
  Status SetMtu(std::string_view name, int mtu);
  Status SetMac(std::string_view name, std::string_view mac);
  // Adds `address` (host bits kept, e.g. 10.0.0.5/24). Already present is success. IPv6
  // addresses are added with IFA_F_NODAD so they are usable at once.
  Status AddAddress(std::string_view name, const Cidr& address);
  Result<std::vector<Cidr>> ListAddresses(
      std::string_view name);  // both families, no link-local v6
  // Adds or replaces a route in the main table via `gateway` (or on-link when absent) out of
  // `name`.
  Status AddRoute(std::string_view name, const Cidr& dst, std::optional<IpAddress> gateway);
  Result<std::vector<RouteInfo>> ListRoutes(IpAddress::Family family);  // main table

  // Creates a veth pair: `name` here, `peer_name` with `peer_mac` (if non-empty) placed directly in
  // `peer_ns` (or here when null). Both ends are left down.
  Status CreateVeth(std::string_view name, std::string_view peer_name, const Netns* peer_ns,
                    std::string_view peer_mac = {}, int mtu = 0);
  Status CreateBridge(std::string_view name);  // already present is success
  Status SetMaster(std::string_view name, std::string_view bridge);
  Status DeleteLink(std::string_view name);  // absent is success

 private:
  Netlink() = default;
  Result<LinkInfo> GetLinkOrError(std::string_view name, std::string_view action);
  nl_sock* sock_ = nullptr;
  UniqueFd ns_fd_;  // the namespace the socket lives in (for WaitForLink's listener)
};

// Notifications of one link name in one namespace (a netlink socket subscribed to link changes,
// opened inside it). The plugin waits on one between readiness polls: the agent placing the
// pod's NIC is the sign that the port is about to be ready.
class LinkWatch {
 public:
  // Subscribes inside `ns`; the calling thread is back in its own namespace on return.
  static Result<LinkWatch> OpenIn(const Netns& ns, std::string_view name);
  // Waits until `until`. True as soon as a link named as watched appeared or changed (or the
  // kernel dropped notifications, so one may have been missed); false at `until`.
  bool WaitUntil(std::chrono::steady_clock::time_point until);
  // The same without waiting: whether that happened since the last look.
  bool Seen() { return Drain(); }

 private:
  friend class Netlink;  // WaitForLink watches through its own namespace descriptor
  LinkWatch() = default;
  static Result<LinkWatch> OpenInFd(int ns_fd, std::string_view name);
  // Reads what arrived; true if it names the watched link (or notifications were lost).
  bool Drain();
  // Asks the kernel for the link by name, so one already there is seen like a new one.
  Status AskForLink();
  UniqueFd fd_;
  std::string name_;
};

// What the plugin needs done inside a pod's namespace for one interface.
struct InterfaceSetup {
  std::string ifname;
  std::string expected_mac;     // if non-empty, the link must carry this MAC (set it if it differs)
  std::vector<Cidr> addresses;  // with prefix, host bits kept
  struct Route {
    Cidr dst;
    std::optional<IpAddress> gateway;
  };
  std::vector<Route> routes;
  int mtu = 0;  // 0: leave as is
  std::chrono::milliseconds wait_for_link{10000};
};

struct ConfiguredInterface {
  LinkInfo link;  // as configured, read back inside the pod's namespace
  // The name of its veth peer when that peer is in the caller's namespace (where chained
  // plugins such as bandwidth look for the pod's host-side interface); empty otherwise.
  std::string host_peer;
};

// In the namespace at netns_path: wait for ifname, set MAC check/MTU/addresses, bring it and
// `lo` up, add the routes.
Result<ConfiguredInterface> ConfigureInterface(const std::string& netns_path,
                                               const InterfaceSetup& setup);

// What is actually there, for CHECK.
struct InterfaceState {
  LinkInfo link;
  std::vector<Cidr> addresses;
  std::vector<RouteInfo> routes;  // routes of both families whose oif is this link
};
Result<InterfaceState> InspectInterface(const std::string& netns_path, const std::string& ifname);

}  // namespace mizarmp::netns
