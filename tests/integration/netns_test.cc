// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The netns library against the kernel: namespaces, veth pairs across namespaces, addresses,
// routes, waiting for a link, and the plugin's configure/inspect pair.
#include "netns/netns.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tests/support/support.h"

namespace mizarmp::netns {
namespace {

using mizarmp::testing::ScopedNetns;
using mizarmp::testing::TempDir;
using mizarmp::testing::UniqueName;

Cidr C(const char* text) { return *Cidr::Parse(text); }
IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

bool HasAddress(const std::vector<Cidr>& list, const Cidr& want) {
  return std::find(list.begin(), list.end(), want) != list.end();
}

TEST(NetnsOpenTest, MissingPathIsNotFoundAndRegularFileIsInvalid) {
  auto missing = Netns::Open("/var/run/netns/" + UniqueName("none"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);

  TempDir dir;
  const std::string file = dir.path() + "/plain";
  ASSERT_EQ(mizarmp::testing::Shell("touch " + file), 0);
  auto plain = Netns::Open(file);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), Code::kInvalidArgument);
  EXPECT_NE(plain.status().message().find(file), std::string::npos);

  auto user_ns = Netns::Open("/proc/self/ns/uts");
  ASSERT_FALSE(user_ns.ok());
  EXPECT_EQ(user_ns.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Netns::Open("").status().code() == Code::kInvalidArgument);
}

TEST(NetnsOpenTest, CurrentNamespaceOpens) {
  auto cur = Netns::Current();
  ASSERT_TRUE(cur.ok()) << cur.status().ToString();
  EXPECT_GE(cur->fd(), 0);
}

class NetlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_NETNS();
    host_ = std::make_unique<ScopedNetns>(UniqueName("mznh"));
    pod_ = std::make_unique<ScopedNetns>(UniqueName("mznp"));
    auto h = Netns::Open(host_->path());
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    host_ns_.emplace(std::move(h).value());
    auto p = Netns::Open(pod_->path());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pod_ns_.emplace(std::move(p).value());
  }

  Netlink Host() {
    auto nl = Netlink::OpenIn(*host_ns_);
    EXPECT_TRUE(nl.ok()) << nl.status().ToString();
    return std::move(nl).value();
  }
  Netlink Pod() {
    auto nl = Netlink::OpenIn(*pod_ns_);
    EXPECT_TRUE(nl.ok()) << nl.status().ToString();
    return std::move(nl).value();
  }

  std::unique_ptr<ScopedNetns> host_, pod_;
  std::optional<Netns> host_ns_, pod_ns_;
};

TEST_F(NetlinkTest, VethPeerLandsInThePodWithItsMacAndMtu) {
  Netlink host = Host();
  ASSERT_TRUE(host.CreateVeth("hv0", "eth0", &*pod_ns_, "0a:58:0a:f1:00:07", 1400).ok());
  auto here = host.GetLink("hv0");
  ASSERT_TRUE(here.ok()) << here.status().ToString();
  EXPECT_EQ(here->kind, "veth");
  EXPECT_EQ(here->mtu, 1400);
  EXPECT_FALSE(here->up);
  EXPECT_EQ(host.GetLink("eth0").status().code(), Code::kNotFound);

  Netlink pod = Pod();
  auto peer = pod.GetLink("eth0");
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  EXPECT_EQ(peer->mac, "0a:58:0a:f1:00:07");
  EXPECT_EQ(peer->mtu, 1400);

  // A second pair with the same names is refused, not silently reused.
  Status again = host.CreateVeth("hv0", "eth0", &*pod_ns_);
  EXPECT_EQ(again.code(), Code::kAlreadyExists) << again.ToString();

  ASSERT_TRUE(host.DeleteLink("hv0").ok());
  EXPECT_EQ(pod.GetLink("eth0").status().code(), Code::kNotFound);  // the pair goes together
  EXPECT_TRUE(host.DeleteLink("hv0").ok());                         // absent is success
}

TEST_F(NetlinkTest, BadNamesAndMacsAreInvalidArgument) {
  Netlink host = Host();
  EXPECT_EQ(host.GetLink("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(host.GetLink("a-name-far-too-long").status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(host.CreateVeth("hv1", "hv1p", nullptr).ok());
  Status bad_mac = host.SetMac("hv1", "zz:zz");
  EXPECT_EQ(bad_mac.code(), Code::kInvalidArgument);
  EXPECT_NE(bad_mac.message().find("zz:zz"), std::string::npos);
  EXPECT_EQ(host.SetMtu("hv1", 20).code(), Code::kInvalidArgument);
  EXPECT_EQ(host.SetUp("nosuchlink").code(), Code::kNotFound);
}

TEST_F(NetlinkTest, AddressesAndRoutesBothFamilies) {
  Netlink host = Host();
  ASSERT_TRUE(host.CreateVeth("hv2", "hv2p", nullptr).ok());
  ASSERT_TRUE(host.SetUp("hv2").ok());
  ASSERT_TRUE(host.SetUp("hv2p").ok());
  ASSERT_TRUE(host.AddAddress("hv2", C("10.77.0.5/24")).ok());
  ASSERT_TRUE(host.AddAddress("hv2", C("10.77.0.5/24")).ok());  // already there: success
  ASSERT_TRUE(host.AddAddress("hv2", C("fd77::5/64")).ok());
  auto addrs = host.ListAddresses("hv2");
  ASSERT_TRUE(addrs.ok()) << addrs.status().ToString();
  EXPECT_TRUE(HasAddress(*addrs, C("10.77.0.5/24")));
  EXPECT_TRUE(HasAddress(*addrs, C("fd77::5/64")));
  for (const Cidr& a : *addrs) {  // the kernel's link-local address is not reported
    EXPECT_FALSE(a.address().is_v6() && a.address().bytes()[0] == 0xfe) << a.ToString();
  }

  ASSERT_TRUE(host.AddRoute("hv2", C("0.0.0.0/0"), Ip("10.77.0.1")).ok());
  ASSERT_TRUE(host.AddRoute("hv2", C("0.0.0.0/0"), Ip("10.77.0.1")).ok());  // replace: success
  ASSERT_TRUE(host.AddRoute("hv2", C("::/0"), Ip("fd77::1")).ok());
  ASSERT_TRUE(host.AddRoute("hv2", C("192.168.50.0/24"), std::nullopt).ok());
  auto link = host.GetLink("hv2");
  ASSERT_TRUE(link.ok());

  auto v4 = host.ListRoutes(IpAddress::Family::kV4);
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  bool def4 = false, onlink = false;
  for (const RouteInfo& r : *v4) {
    if (r.dst == C("0.0.0.0/0") && r.gateway == Ip("10.77.0.1") && r.oif_index == link->index) {
      def4 = true;
    }
    if (r.dst == C("192.168.50.0/24") && !r.gateway && r.oif_index == link->index) onlink = true;
  }
  EXPECT_TRUE(def4);
  EXPECT_TRUE(onlink);
  auto v6 = host.ListRoutes(IpAddress::Family::kV6);
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  bool def6 = false;
  for (const RouteInfo& r : *v6) {
    if (r.dst.prefix_len() == 0 && r.gateway == Ip("fd77::1")) def6 = true;
  }
  EXPECT_TRUE(def6);

  Status mixed = host.AddRoute("hv2", C("0.0.0.0/0"), Ip("fd77::1"));
  EXPECT_EQ(mixed.code(), Code::kInvalidArgument);
}

TEST_F(NetlinkTest, BridgeAndMaster) {
  Netlink host = Host();
  ASSERT_TRUE(host.CreateBridge("mzbrt").ok());
  ASSERT_TRUE(host.CreateBridge("mzbrt").ok());  // already present is success
  ASSERT_TRUE(host.CreateVeth("hv3", "hv3p", nullptr).ok());
  ASSERT_TRUE(host.SetMaster("hv3", "mzbrt").ok());
  auto br = host.GetLink("mzbrt");
  auto port = host.GetLink("hv3");
  ASSERT_TRUE(br.ok() && port.ok());
  EXPECT_EQ(br->kind, "bridge");
  EXPECT_EQ(port->master_index, br->index);
  EXPECT_EQ(host.SetMaster("hv3", "nobridge").code(), Code::kNotFound);
}

TEST_F(NetlinkTest, WaitForLinkReturnsWhenTheLinkAppearsAndTimesOutOtherwise) {
  Netlink pod = Pod();
  auto none = pod.WaitForLink("eth9", std::chrono::milliseconds(50));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kDeadlineExceeded);
  EXPECT_NE(none.status().message().find("eth9"), std::string::npos);

  std::thread creator([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto host = Netlink::OpenIn(*host_ns_);
    ASSERT_TRUE(host.ok());
    ASSERT_TRUE(host->CreateVeth("hv4", "eth9", &*pod_ns_, "0a:58:00:00:00:09").ok());
  });
  auto link = pod.WaitForLink("eth9", std::chrono::seconds(10));
  creator.join();
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  EXPECT_EQ(link->mac, "0a:58:00:00:00:09");
}

// A watch wakes for its own link name only: another link arriving in the pod is no sign.
TEST_F(NetlinkTest, LinkWatchWakesForItsLinkAndNoOther) {
  auto watch = LinkWatch::OpenIn(*pod_ns_, "eth9");
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  Netlink host = Host();
  ASSERT_TRUE(host.CreateVeth("hv5", "eth8", &*pod_ns_).ok());
  EXPECT_FALSE(watch->WaitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(200)))
      << "woke for eth8";
  ASSERT_TRUE(host.CreateVeth("hv6", "eth9", &*pod_ns_).ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  EXPECT_TRUE(watch->WaitUntil(until));
  EXPECT_LT(std::chrono::steady_clock::now(), until) << "waited out the whole time";
  // Nothing more about eth9 arrived: the next wait runs to its end.
  EXPECT_FALSE(watch->WaitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));

  // A watch opened when the link is already there sees it at once.
  auto late = LinkWatch::OpenIn(*pod_ns_, "eth9");
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  const auto until_late = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  EXPECT_TRUE(late->WaitUntil(until_late));
  EXPECT_LT(std::chrono::steady_clock::now(), until_late) << "missed the link already there";
}

TEST_F(NetlinkTest, ConfigureThenInspectInterface) {
  Netlink host = Host();
  ASSERT_TRUE(host.CreateBridge("mzbrc").ok());
  ASSERT_TRUE(host.AddAddress("mzbrc", C("10.78.0.1/24")).ok());
  ASSERT_TRUE(host.SetUp("mzbrc").ok());
  ASSERT_TRUE(host.CreateVeth("hv5", "eth0", &*pod_ns_, "0a:58:0a:4e:00:02").ok());
  ASSERT_TRUE(host.SetMaster("hv5", "mzbrc").ok());
  ASSERT_TRUE(host.SetUp("hv5").ok());

  InterfaceSetup setup;
  setup.ifname = "eth0";
  setup.expected_mac = "0A:58:0A:4E:00:03";  // differs: the plugin sets the controller's MAC
  setup.addresses = {C("10.78.0.2/24")};
  setup.routes = {{C("0.0.0.0/0"), Ip("10.78.0.1")}};
  setup.mtu = 1450;
  auto configured = ConfigureInterface(pod_->path(), setup);
  ASSERT_TRUE(configured.ok()) << configured.status().ToString();
  EXPECT_EQ(configured->link.mac, "0a:58:0a:4e:00:03");
  EXPECT_EQ(configured->link.mtu, 1450);
  EXPECT_TRUE(configured->link.up);
  // The host end is in another namespace than this process's: no host peer to report.
  EXPECT_EQ(configured->host_peer, "");

  auto state = InspectInterface(pod_->path(), "eth0");
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(HasAddress(state->addresses, C("10.78.0.2/24")));
  bool def = false;
  for (const RouteInfo& r : state->routes) {
    if (r.dst.prefix_len() == 0 && r.gateway == Ip("10.78.0.1")) def = true;
  }
  EXPECT_TRUE(def);
  // lo is up and the pod reaches the gateway for real.
  EXPECT_EQ(pod_->Exec("ping -c1 -W2 127.0.0.1 >/dev/null"), 0);
  EXPECT_EQ(pod_->Exec("ping -c1 -W2 10.78.0.1 >/dev/null"), 0);

  EXPECT_EQ(InspectInterface(pod_->path(), "eth7").status().code(), Code::kNotFound);
  const std::string gone = "/var/run/netns/" + UniqueName("gone");
  EXPECT_EQ(InspectInterface(gone, "eth0").status().code(), Code::kNotFound);

  InterfaceSetup missing = setup;
  missing.ifname = "eth5";
  missing.wait_for_link = std::chrono::milliseconds(20);
  auto timed_out = ConfigureInterface(pod_->path(), missing);
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), Code::kDeadlineExceeded);
}

TEST_F(NetlinkTest, ConfigureInterfaceNamesTheVethPeerInTheCallersNamespace) {
  auto here = Netns::Current();
  ASSERT_TRUE(here.ok()) << here.status().ToString();
  auto own = Netlink::OpenIn(*here);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  const std::string host_end = UniqueName("mzhp");
  ASSERT_TRUE(own->CreateVeth(host_end, "eth0", &*pod_ns_, "0a:58:0a:4f:00:02").ok());

  InterfaceSetup setup;
  setup.ifname = "eth0";
  setup.addresses = {C("10.79.0.2/24")};
  auto configured = ConfigureInterface(pod_->path(), setup);
  const Status removed = own->DeleteLink(host_end);
  ASSERT_TRUE(configured.ok()) << configured.status().ToString();
  EXPECT_EQ(configured->host_peer, host_end);
  EXPECT_EQ(configured->link.kind, "veth");
  EXPECT_TRUE(removed.ok()) << removed.ToString();
}

TEST_F(NetlinkTest, OpeningInAnotherNamespaceLeavesTheThreadWhereItWas) {
  // Opening in another namespace must leave the calling thread where it was.
  auto self_ns = [] {
    char buf[64] = {};
    ssize_t n = ::readlink("/proc/thread-self/ns/net", buf, sizeof(buf) - 1);
    return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
  };
  const std::string a = self_ns();
  Netlink pod = Pod();
  ASSERT_TRUE(pod.CreateVeth("pv0", "pv0p", nullptr).ok());
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(self_ns(), a);
  EXPECT_EQ(pod_->Exec("ip link show pv0 >/dev/null"), 0);
  EXPECT_NE(mizarmp::testing::Shell("ip link show pv0 >/dev/null 2>&1"), 0);
}

}  // namespace
}  // namespace mizarmp::netns
