// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The EtcdCluster fixture (tests/support/etcd_cluster.h) against the real etcd: a 3-member
// cluster replicates writes between members, survives the loss of one member, refuses writes
// without a quorum, and serves again, with nothing lost, once a member comes back. Also the
// TLS and user-authentication modes the fence store's etcd tests rely on.
#include "tests/support/etcd_cluster.h"

#include <gtest/gtest.h>

#include <string>

namespace mizarmp::testing {
namespace {

bool Contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// `etcdctl get key` through `member`, printing the value only ("" when absent or failed).
std::string Get(const EtcdCluster& cluster, const std::string& key, int member) {
  const ExecResult r = cluster.Etcdctl({"get", "--print-value-only", key}, member);
  return r.ok() ? r.out : "";
}

TEST(EtcdCluster, ReplicatesLosesQuorumAndRecovers) {
  MZ_REQUIRE_ETCD();
  EtcdCluster cluster(3);
  ASSERT_EQ(cluster.error(), "");
  ASSERT_EQ(cluster.endpoints().size(), 3u);
  const std::string all = cluster.Location();
  EXPECT_EQ(all.rfind("etcd://127.0.0.1:", 0), 0u) << all;
  EXPECT_EQ(cluster.Location(2), "etcd://" + cluster.endpoints()[2]);
  EXPECT_TRUE(Contains(
      all, cluster.endpoints()[0] + "," + cluster.endpoints()[1] + "," + cluster.endpoints()[2]))
      << all;

  const ExecResult put = cluster.Etcdctl({"put", "/fence/a", "one"}, 0);
  ASSERT_TRUE(put.ok()) << put.Describe();
  EXPECT_EQ(Get(cluster, "/fence/a", 2), "one\n");

  cluster.Kill(1);
  EXPECT_FALSE(cluster.Healthy(1));
  // Member 1 may have been the leader: a write proposed before the others elect a new one is
  // dropped by raft and times out, so wait for the election first.
  ASSERT_TRUE(cluster.WaitForQuorum(std::chrono::seconds(30)));
  const ExecResult with_two = cluster.Etcdctl({"put", "/fence/b", "two"}, 0);
  EXPECT_TRUE(with_two.ok()) << "two of three members are a quorum: " << with_two.Describe()
                             << "\nmember 0:\n"
                             << cluster.LogTail(0) << "\nmember 2:\n"
                             << cluster.LogTail(2);

  cluster.Kill(2);
  // --command-timeout=2s bounds the attempt; without a quorum the write cannot commit.
  const ExecResult without_quorum =
      cluster.Etcdctl({"put", "/fence/c", "three"}, 0, std::chrono::seconds(2));
  EXPECT_FALSE(without_quorum.ok()) << without_quorum.Describe();
  EXPECT_FALSE(cluster.Healthy(0));

  ASSERT_TRUE(cluster.Restart(1));
  EXPECT_TRUE(cluster.WaitForQuorum(std::chrono::seconds(30)));
  const ExecResult after = cluster.Etcdctl({"put", "/fence/d", "four"}, 0);
  EXPECT_TRUE(after.ok()) << after.Describe();
  EXPECT_EQ(Get(cluster, "/fence/a", 1), "one\n");
  EXPECT_EQ(Get(cluster, "/fence/b", 1), "two\n");
  EXPECT_EQ(Get(cluster, "/fence/d", 0), "four\n");
}

TEST(EtcdCluster, TlsClientCertificatesAndUserAuthentication) {
  MZ_REQUIRE_ETCD();
  EtcdCluster cluster(1, EtcdTls{.enabled = true});
  ASSERT_EQ(cluster.error(), "");
  ASSERT_NE(cluster.pki(), nullptr);
  const std::string https = "--endpoints=https://" + cluster.endpoints()[0];
  const Pki& pki = *cluster.pki();

  // Without a client certificate the server refuses the handshake.
  const ExecResult no_cert = RunProcess(
      {kEtcdctlBinary, https, "--cacert=" + pki.ca, "--command-timeout=2s", "get", "/x"}, {}, "");
  EXPECT_FALSE(no_cert.ok()) << no_cert.Describe();

  ASSERT_TRUE(cluster.EnableAuth("fencer", "s3cret")) << cluster.error();
  const std::vector<std::string> tls = {kEtcdctlBinary,
                                        https,
                                        "--cacert=" + pki.ca,
                                        "--cert=" + pki.client_cert,
                                        "--key=" + pki.client_key,
                                        "--command-timeout=5s"};
  auto as = [&](const std::string& password, const std::vector<std::string>& args) {
    std::vector<std::string> argv = tls;
    argv.insert(argv.end(), {"--user=fencer", "--password=" + password});
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, {}, "");
  };
  const ExecResult put = as("s3cret", {"put", "/fence/x", "v"});
  EXPECT_TRUE(put.ok()) << put.Describe();
  const ExecResult wrong = as("wrong", {"put", "/fence/x", "w"});
  EXPECT_FALSE(wrong.ok());
  EXPECT_TRUE(Contains(wrong.err, "authentication failed")) << wrong.Describe();
  // The fixture itself keeps working as root.
  EXPECT_EQ(Get(cluster, "/fence/x", 0), "v\n");
}

}  // namespace
}  // namespace mizarmp::testing
