// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The ADD result, shaped exactly per CNI version.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cni/result.h"

namespace mizarmp::cni {
namespace {

using nlohmann::json;

AddResult Sample(int mtu = 1400) {
  AddResult r;
  r.interfaces.push_back(InterfaceResult{"eth0", "0a:58:0a:f0:00:05", "/var/run/netns/x", mtu});
  auto ip = Cidr::Parse("10.240.0.5/16");
  auto gw = IpAddress::Parse("10.240.0.1");
  EXPECT_TRUE(ip.ok() && gw.ok());
  r.ips.push_back(IpResult{*ip, *gw, 0});
  r.routes.push_back(RouteResult{Cidr(IpAddress(), 0), *gw});
  r.dns.nameservers = {"10.240.0.10"};
  r.dns.search = {"svc.cluster.local"};
  return r;
}

TEST(CniResult, ZeroThreeAndZeroFourCarryIpVersion) {
  for (const char* v : {"0.3.0", "0.3.1", "0.4.0"}) {
    json got = ResultToJson(Sample(), v);
    json want = json::parse(R"({
      "cniVersion": "VERSION",
      "interfaces": [{"name": "eth0", "mac": "0a:58:0a:f0:00:05", "sandbox": "/var/run/netns/x"}],
      "ips": [{"version": "4", "address": "10.240.0.5/16", "gateway": "10.240.0.1",
               "interface": 0}],
      "routes": [{"dst": "0.0.0.0/0", "gw": "10.240.0.1"}],
      "dns": {"nameservers": ["10.240.0.10"], "search": ["svc.cluster.local"]}
    })");
    want["cniVersion"] = v;
    EXPECT_EQ(got, want) << v << ": " << got.dump();
  }
}

TEST(CniResult, OneZeroDropsIpVersionAndMtu) {
  json got = ResultToJson(Sample(), "1.0.0");
  json want = json::parse(R"({
    "cniVersion": "1.0.0",
    "interfaces": [{"name": "eth0", "mac": "0a:58:0a:f0:00:05", "sandbox": "/var/run/netns/x"}],
    "ips": [{"address": "10.240.0.5/16", "gateway": "10.240.0.1", "interface": 0}],
    "routes": [{"dst": "0.0.0.0/0", "gw": "10.240.0.1"}],
    "dns": {"nameservers": ["10.240.0.10"], "search": ["svc.cluster.local"]}
  })");
  EXPECT_EQ(got, want) << got.dump();
}

TEST(CniResult, OneOneReportsMtuOnlyWhenConfigured) {
  json got = ResultToJson(Sample(), "1.1.0");
  EXPECT_EQ(got["cniVersion"], "1.1.0");
  EXPECT_EQ(got["interfaces"][0]["mtu"], 1400);
  EXPECT_FALSE(got["ips"][0].contains("version"));
  EXPECT_EQ(got["ips"][0]["interface"], 0);
  json no_mtu = ResultToJson(Sample(0), "1.1.0");
  EXPECT_FALSE(no_mtu["interfaces"][0].contains("mtu")) << no_mtu.dump();
}

TEST(CniResult, IPv6AndEmptyParts) {
  AddResult r;
  r.interfaces.push_back(InterfaceResult{"eth0", "0a:58:00:00:00:01", "/n", 0});
  auto ip = Cidr::Parse("fd00::5/64");
  ASSERT_TRUE(ip.ok());
  r.ips.push_back(IpResult{*ip, std::nullopt, 0});
  json old = ResultToJson(r, "0.3.1");
  EXPECT_EQ(old["ips"][0]["version"], "6");
  EXPECT_EQ(old["ips"][0]["address"], "fd00::5/64");
  EXPECT_FALSE(old["ips"][0].contains("gateway"));
  EXPECT_FALSE(old.contains("routes"));
  EXPECT_FALSE(old.contains("dns")) << "empty dns is omitted";
  r.dns.domain = "example.org";
  json with_domain = ResultToJson(r, "1.0.0");
  EXPECT_EQ(with_domain["dns"], json({{"domain", "example.org"}}));
}

TEST(CniResult, PrevResultRoundTrip) {
  for (const char* v : {"0.4.0", "1.0.0", "1.1.0"}) {
    json j = ResultToJson(Sample(), v);
    auto back = ResultFromJson(j);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->interfaces.size(), 1u);
    EXPECT_EQ(back->interfaces[0].mac, "0a:58:0a:f0:00:05");
    EXPECT_EQ(back->interfaces[0].sandbox, "/var/run/netns/x");
    ASSERT_EQ(back->ips.size(), 1u);
    EXPECT_EQ(back->ips[0].address.ToString(), "10.240.0.5/16");
    EXPECT_EQ(back->ips[0].interface, 0);
    ASSERT_TRUE(back->ips[0].gateway.has_value());
    EXPECT_EQ(back->ips[0].gateway->ToString(), "10.240.0.1");
    ASSERT_EQ(back->routes.size(), 1u);
  }
  auto bad = ResultFromJson(json::parse(R"({"ips":[{"address":"10.0.0.300/8"}]})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("prevResult.ips[0].address"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(ResultFromJson(json::parse(R"({"interfaces":{}})")).ok());
}

}  // namespace
}  // namespace mizarmp::cni
