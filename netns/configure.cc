// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What the plugin does inside a pod's namespace: configure one interface, or report its state.
#include <net/if.h>

#include "common/log.h"
#include "common/strings.h"
#include "netns/netns.h"

namespace mizarmp::netns {

namespace {

// The name of `link`'s veth peer when the peer is in the calling thread's namespace; empty
// otherwise. The peer's index means something only in the namespace IFLA_LINK_NETNSID names, so
// that id is compared with the one the pod's namespace gives ours before the index is looked up.
Result<std::string> HostPeerName(Netlink& pod, const LinkInfo& link) {
  if (link.peer_index <= 0 || link.peer_netnsid < 0) return std::string();
  MZ_ASSIGN_OR_RETURN(Netns here, Netns::Current());
  MZ_ASSIGN_OR_RETURN(int here_id, pod.NetnsIdOf(here));
  if (here_id != link.peer_netnsid) return std::string();
  char name[IF_NAMESIZE] = {};
  if (::if_indextoname(static_cast<unsigned>(link.peer_index), name) == nullptr) {
    return std::string();  // gone meanwhile: the host agent's business, not a reason to fail
  }
  return std::string(name);
}

}  // namespace

Result<ConfiguredInterface> ConfigureInterface(const std::string& netns_path,
                                               const InterfaceSetup& setup) {
  MZ_ASSIGN_OR_RETURN(Netns ns, Netns::Open(netns_path));
  MZ_ASSIGN_OR_RETURN(Netlink nl, Netlink::OpenIn(ns));
  const std::string& ifname = setup.ifname;
  MZ_ASSIGN_OR_RETURN(LinkInfo link, nl.WaitForLink(ifname, setup.wait_for_link));

  if (!setup.expected_mac.empty() && AsciiLower(setup.expected_mac) != link.mac) {
    // Most drivers refuse a new MAC on a running link.
    if (link.up) MZ_RETURN_IF_ERROR(nl.SetUp(ifname, false));
    MZ_RETURN_IF_ERROR(nl.SetMac(ifname, setup.expected_mac));
  }
  if (setup.mtu > 0 && link.mtu != setup.mtu) MZ_RETURN_IF_ERROR(nl.SetMtu(ifname, setup.mtu));
  for (const Cidr& a : setup.addresses) MZ_RETURN_IF_ERROR(nl.AddAddress(ifname, a));
  MZ_RETURN_IF_ERROR(nl.SetUp(ifname, true));

  auto lo = nl.GetLink("lo");
  if (!lo.ok()) return lo.status().WithContext("loopback in " + netns_path);
  if (!lo->up) MZ_RETURN_IF_ERROR(nl.SetUp("lo", true));

  for (const InterfaceSetup::Route& r : setup.routes) {
    MZ_RETURN_IF_ERROR(nl.AddRoute(ifname, r.dst, r.gateway));
  }
  ConfiguredInterface configured;
  MZ_ASSIGN_OR_RETURN(configured.link, nl.GetLink(ifname));
  // Only chained plugins need the host side, so not finding it is no reason to fail the pod.
  auto peer = HostPeerName(nl, configured.link);
  if (peer.ok()) {
    configured.host_peer = std::move(peer).value();
  } else {
    MZ_LOG(kWarn) << "the host side of " << ifname << " in " << netns_path
                  << " is left out of the result: " << peer.status().message();
  }
  return configured;
}

Result<InterfaceState> InspectInterface(const std::string& netns_path, const std::string& ifname) {
  MZ_ASSIGN_OR_RETURN(Netns ns, Netns::Open(netns_path));
  MZ_ASSIGN_OR_RETURN(Netlink nl, Netlink::OpenIn(ns));
  InterfaceState state;
  MZ_ASSIGN_OR_RETURN(state.link, nl.GetLink(ifname));
  MZ_ASSIGN_OR_RETURN(state.addresses, nl.ListAddresses(ifname));
  for (IpAddress::Family f : {IpAddress::Family::kV4, IpAddress::Family::kV6}) {
    MZ_ASSIGN_OR_RETURN(std::vector<RouteInfo> routes, nl.ListRoutes(f));
    for (RouteInfo& r : routes) {
      if (r.oif_index == state.link.index) state.routes.push_back(std::move(r));
    }
  }
  return state;
}

}  // namespace mizarmp::netns
