// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// fence/cidrset: parsing what a FenceClusterNetwork request carries, canonical form, exact
// merging (IPv4 and IPv6), containment.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fence/cidrset.h"
#include "fence/fence_set.h"

namespace mizarmp::fence {
namespace {

std::vector<std::string> Texts(const std::vector<Cidr>& cidrs) {
  std::vector<std::string> out;
  for (const auto& c : cidrs) out.push_back(c.ToString());
  return out;
}

std::vector<std::string> Merge(const std::vector<std::string>& texts) {
  std::vector<Cidr> in;
  for (const auto& t : texts) {
    auto c = Cidr::Parse(t, /*allow_bare=*/true);
    EXPECT_TRUE(c.ok()) << t;
    if (c.ok()) in.push_back(*c);
  }
  return Texts(MergeCidrs(in));
}

TEST(FenceCidrTest, ParsesV4AndV6Canonically) {
  auto a = ParseFenceCidr("10.1.0.0/16");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(CanonicalCidr(*a), "10.1.0.0/16");
  auto b = ParseFenceCidr("2001:0DB8:0000::/32");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(CanonicalCidr(*b), "2001:db8::/32");
  auto c = ParseFenceCidr("0.0.0.0/0");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(CanonicalCidr(*c), "0.0.0.0/0");
  auto d = ParseFenceCidr("::/0");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(CanonicalCidr(*d), "::/0");
}

TEST(FenceCidrTest, BareAddressIsHostCidr) {
  auto a = ParseFenceCidr("10.240.0.7");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(CanonicalCidr(*a), "10.240.0.7/32");
  auto b = ParseFenceCidr("fd00::1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(CanonicalCidr(*b), "fd00::1/128");
}

TEST(FenceCidrTest, RejectsMalformedNamingTheValue) {
  for (const std::string bad :
       {"", "10.0.0.0/33", "10.0.0/24", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/08", "banana",
        "fd00::/129", "fd00:::1/64", "10.0.0.0/24 ", " 10.0.0.0/24", "10.0.0.0/24/1",
        "fe80::1%eth0/128", "[fd00::]/64", "010.0.0.0/8"}) {
    auto r = ParseFenceCidr(bad);
    ASSERT_FALSE(r.ok()) << "accepted \"" << bad << "\"";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("\"" + bad + "\""), std::string::npos)
        << r.status().message();
  }
}

TEST(FenceCidrTest, RejectsHostBitsAndSuggestsTheNetwork) {
  auto r = ParseFenceCidr("10.0.0.1/24");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("\"10.0.0.1/24\""), std::string::npos);
  EXPECT_NE(r.status().message().find("host bits"), std::string::npos);
  EXPECT_NE(r.status().message().find("10.0.0.0/24"), std::string::npos);
  auto v6 = ParseFenceCidr("fd00::1/64");
  ASSERT_FALSE(v6.ok());
  EXPECT_NE(v6.status().message().find("fd00::/64"), std::string::npos);
}

TEST(FenceCidrSetTest, DuplicatesCollapseAndOrderIsCanonical) {
  auto s = CidrSet::Parse({"fd00::/64", "10.0.0.0/24", "10.0.0.0/24", "FD00:0::/64", "10.0.0.5",
                           "10.0.0.5/32", "9.0.0.0/8"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->Strings(),
            (std::vector<std::string>{"9.0.0.0/8", "10.0.0.0/24", "10.0.0.5/32", "fd00::/64"}));
}

TEST(FenceCidrSetTest, FirstBadValueFailsTheWholeSet) {
  auto s = CidrSet::Parse({"10.0.0.0/24", "10.0.0.300", "nope"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("10.0.0.300"), std::string::npos);
}

TEST(FenceCidrSetTest, ContainmentAndRemoval) {
  auto s = CidrSet::Parse({"10.1.0.0/16", "fd00:1::/48"});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Contains(*IpAddress::Parse("10.1.255.255")));
  EXPECT_FALSE(s->Contains(*IpAddress::Parse("10.2.0.0")));
  EXPECT_TRUE(s->Contains(*IpAddress::Parse("fd00:1:0:ffff::1")));
  EXPECT_FALSE(s->Contains(*IpAddress::Parse("fd00:2::1")));
  // An IPv4-mapped IPv6 address is not an IPv4 address.
  EXPECT_FALSE(s->Contains(*IpAddress::Parse("::ffff:10.1.0.1")));
  EXPECT_TRUE(s->Contains(*Cidr::Parse("10.1.2.0/24")));
  EXPECT_FALSE(s->Contains(*Cidr::Parse("10.0.0.0/8")));
  EXPECT_TRUE(s->Has(*Cidr::Parse("10.1.0.0/16")));
  EXPECT_FALSE(s->Has(*Cidr::Parse("10.1.2.0/24")));
  EXPECT_TRUE(s->Remove(*Cidr::Parse("10.1.0.0/16")));
  EXPECT_FALSE(s->Remove(*Cidr::Parse("10.1.0.0/16")));
  EXPECT_FALSE(s->Contains(*IpAddress::Parse("10.1.0.1")));
  EXPECT_EQ(s->size(), 1u);
}

// A deterministic pseudo-random sequence (the same on every run).
struct Lcg {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  uint32_t Next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 32);
  }
};

// Random IPv4 CIDRs of mixed lengths inside 10.0.0.0/8 (so they nest and overlap), and some
// IPv6 ones.
std::vector<Cidr> RandomCidrs(size_t n, Lcg& rng) {
  std::vector<Cidr> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (i % 10 == 9) {
      std::array<uint8_t, 16> b{0xfd, 0x00};
      for (int k = 2; k < 16; ++k) b[k] = static_cast<uint8_t>(rng.Next());
      const int len = 48 + static_cast<int>(rng.Next() % 81);
      out.emplace_back(IpAddress::V6(b).Masked(len), len);
      continue;
    }
    const int len = 12 + static_cast<int>(rng.Next() % 21);  // /12 .. /32
    const IpAddress ip = IpAddress::V4((10u << 24) | (rng.Next() & 0x00ffffffu));
    out.emplace_back(ip.Masked(len), len);
  }
  return out;
}

TEST(FenceCidrSetTest, LookupsAgreeWithAScanOfEveryMember) {
  Lcg rng;
  const std::vector<Cidr> members = RandomCidrs(20000, rng);
  const CidrSet set(members);
  EXPECT_LE(set.size(), members.size());
  for (int probe = 0; probe < 2000; ++probe) {
    const IpAddress ip = probe % 10 == 9 ? members[probe].network()  // hits, v4 and v6
                                         : IpAddress::V4((10u << 24) | (rng.Next() & 0xffffffu));
    std::vector<Cidr> want;
    for (const Cidr& c : members) {
      if (c.Contains(ip)) want.push_back(c);
    }
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    EXPECT_EQ(Texts(set.Covering(ip)), Texts(want)) << ip.ToString();
    EXPECT_EQ(set.Contains(ip), !want.empty()) << ip.ToString();
    const Cidr host(ip, ip.bits());
    EXPECT_EQ(set.Contains(host), !want.empty()) << ip.ToString();
  }
}

TEST(FenceCidrSetTest, TwoHundredThousandMembersBuildAndAnswer) {
  // Built at once (sorted, not inserted one by one), then every member found and an address
  // outside all of them not. ctest's timeout bounds the run.
  std::vector<std::string> texts;
  for (uint32_t i = 0; i < 200000; ++i)
    texts.push_back(IpAddress::V4((11u << 24) + i * 4).ToString() + "/30");
  texts.push_back(texts.front());  // a duplicate collapses
  auto set = CidrSet::Parse(texts);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->size(), 200000u);
  for (uint32_t i = 0; i < 200000; i += 997) {
    const IpAddress ip = IpAddress::V4((11u << 24) + i * 4 + 3);
    ASSERT_EQ(set->Covering(ip).size(), 1u) << ip.ToString();
    EXPECT_TRUE(set->Has(Cidr(IpAddress::V4((11u << 24) + i * 4), 30)));
  }
  EXPECT_FALSE(set->Contains(IpAddress::V4((11u << 24) + 200000u * 4)));
  EXPECT_TRUE(set->Contains(*Cidr::Parse("11.0.0.0/30")));
  EXPECT_FALSE(set->Contains(*Cidr::Parse("11.0.0.0/29")));  // wider than any member
}

TEST(FenceMergeTest, AdjacentAlignedPairsMerge) {
  EXPECT_EQ(Merge({"10.0.0.2", "10.0.0.3"}), (std::vector<std::string>{"10.0.0.2/31"}));
  EXPECT_EQ(Merge({"10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3"}),
            (std::vector<std::string>{"10.0.0.0/30"}));
  EXPECT_EQ(Merge({"10.0.0.0/25", "10.0.0.128/25"}), (std::vector<std::string>{"10.0.0.0/24"}));
}

TEST(FenceMergeTest, NeverCoversMoreThanTheInputs) {
  // Adjacent but not aligned: 10.0.0.1 and 10.0.0.2 cannot be one block.
  EXPECT_EQ(Merge({"10.0.0.1", "10.0.0.2"}),
            (std::vector<std::string>{"10.0.0.1/32", "10.0.0.2/32"}));
  // 1..6 -> .1/32 .2/31 .4/31 .6/32
  EXPECT_EQ(Merge({"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}),
            (std::vector<std::string>{"10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/31", "10.0.0.6/32"}));
  EXPECT_EQ(Merge({"10.0.0.5", "10.0.0.9"}),
            (std::vector<std::string>{"10.0.0.5/32", "10.0.0.9/32"}));
}

TEST(FenceMergeTest, ContainedAndOverlappingCollapse) {
  EXPECT_EQ(Merge({"10.0.0.0/24", "10.0.0.7", "10.0.0.64/26", "10.0.0.0/24"}),
            (std::vector<std::string>{"10.0.0.0/24"}));
  EXPECT_EQ(Merge({"10.0.1.0/24", "10.0.0.0/24", "10.0.2.0/23"}),
            (std::vector<std::string>{"10.0.0.0/22"}));
  // Host bits in an input stand for the whole prefix.
  EXPECT_EQ(Merge({"10.0.0.9/24"}), (std::vector<std::string>{"10.0.0.0/24"}));
}

TEST(FenceMergeTest, FamiliesStaySeparateV4First) {
  EXPECT_EQ(Merge({"fd00::1", "10.0.0.1", "fd00::", "10.0.0.0"}),
            (std::vector<std::string>{"10.0.0.0/31", "fd00::/127"}));
  // The v4 all-ones and the v6 zero address are not adjacent.
  EXPECT_EQ(Merge({"255.255.255.255", "::"}),
            (std::vector<std::string>{"255.255.255.255/32", "::/128"}));
}

TEST(FenceMergeTest, Ipv6Needs128BitArithmetic) {
  // Two halves of the whole space.
  EXPECT_EQ(Merge({"::/1", "8000::/1"}), (std::vector<std::string>{"::/0"}));
  EXPECT_EQ(Merge({"0.0.0.0/1", "128.0.0.0/1"}), (std::vector<std::string>{"0.0.0.0/0"}));
  // The very last addresses of the space, no overflow.
  EXPECT_EQ(
      Merge({"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}),
      (std::vector<std::string>{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127"}));
  EXPECT_EQ(Merge({"255.255.255.254", "255.255.255.255", "255.255.255.253"}),
            (std::vector<std::string>{"255.255.255.253/32", "255.255.255.254/31"}));
  // Across a 64-bit boundary: ...:0:ffff:ffff:ffff:ffff and the next address.
  EXPECT_EQ(Merge({"fd00:0:0:0:ffff:ffff:ffff:ffff", "fd00:0:0:1::"}),
            (std::vector<std::string>{"fd00::ffff:ffff:ffff:ffff/128", "fd00:0:0:1::/128"}));
  EXPECT_EQ(Merge({"fd00::/65", "fd00:0:0:0:8000::/65"}), (std::vector<std::string>{"fd00::/64"}));
  // A range that is not one block: fd00::1 .. fd00::6.
  EXPECT_EQ(Merge({"fd00::1", "fd00::2", "fd00::3", "fd00::4", "fd00::5", "fd00::6"}),
            (std::vector<std::string>{"fd00::1/128", "fd00::2/127", "fd00::4/127", "fd00::6/128"}));
}

TEST(FenceMergeTest, MergedCoversExactlyTheInputs) {
  // Brute force over a /24: a pseudo-random subset of addresses merges into blocks that
  // contain every chosen address and no other.
  uint32_t state = 12345;
  for (int round = 0; round < 20; ++round) {
    std::vector<Cidr> in;
    std::vector<bool> chosen(256, false);
    for (int i = 0; i < 256; ++i) {
      state = state * 1103515245u + 12345u;
      if ((state >> 16) % 3 != 0) {
        chosen[i] = true;
        in.emplace_back(IpAddress::V4(0x0a000000u + static_cast<uint32_t>(i)), 32);
      }
    }
    auto merged = MergeCidrs(in);
    for (int i = 0; i < 256; ++i) {
      const IpAddress ip = IpAddress::V4(0x0a000000u + static_cast<uint32_t>(i));
      int covering = 0;
      for (const auto& c : merged) covering += c.Contains(ip) ? 1 : 0;
      EXPECT_EQ(covering, chosen[i] ? 1 : 0) << ip.ToString() << " round " << round;
    }
    // Fewest: no two output blocks could be one (siblings of the same parent).
    for (size_t i = 0; i + 1 < merged.size(); ++i) {
      const Cidr& a = merged[i];
      const Cidr& b = merged[i + 1];
      if (a.prefix_len() == b.prefix_len() && a.prefix_len() > 0) {
        const Cidr parent(a.network().Masked(a.prefix_len() - 1), a.prefix_len() - 1);
        EXPECT_FALSE(parent.Contains(b)) << a.ToString() << " + " << b.ToString();
      }
    }
  }
}

TEST(FenceMergeTest, EmptyInput) { EXPECT_TRUE(MergeCidrs({}).empty()); }

// A fence of a node's address covers the node (and so its pods): an address with host bits
// stands for itself, a block for the whole block, which a fence must contain entirely.
TEST(CoveredNodesTest, ANodeIsCoveredOnlyByAFenceHoldingItsAddressOrItsWholeBlock) {
  const std::map<std::string, std::vector<std::string>> nodes = {
      {"node-a", {"192.168.1.10"}},
      {"node-b", {"192.168.1.20/24"}},        // the address alone
      {"node-c", {"10.8.0.0/24"}},            // a block
      {"node-d", {"fd00::d", "192.168.2.1"}},  // any one address
  };
  const auto covered = [&](const std::vector<std::string>& fences) {
    return CoveredNodes(*CidrSet::Parse(fences), nodes);
  };
  EXPECT_TRUE(covered({}).empty());
  EXPECT_EQ(covered({"192.168.1.10/32"}), std::vector<std::string>{"node-a"});
  EXPECT_EQ(covered({"192.168.1.20/32"}), std::vector<std::string>{"node-b"});
  EXPECT_EQ(covered({"192.168.1.0/24"}), (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_TRUE(covered({"192.168.1.11/32", "10.8.0.0/25", "10.8.0.5/32"}).empty());
  EXPECT_EQ(covered({"10.0.0.0/8"}), std::vector<std::string>{"node-c"});
  EXPECT_EQ(covered({"fd00::/64"}), std::vector<std::string>{"node-d"});
}

}  // namespace
}  // namespace mizarmp::fence
