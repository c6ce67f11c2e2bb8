// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// FenceOptions::Validate and PublisherOptions::Validate (fence/service/options.h): what mizarmp-addons'
// configuration, FenceService and Publisher refuse, each refusal naming the configuration key a
// user sets.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/status.h"
#include "fence/service/fence_service.h"
#include "fence/service/options.h"
#include "fence/service/publisher.h"
#include "tests/support/refusals.h"

namespace mizarmp::fence {
namespace {

using namespace std::chrono_literals;

FenceOptions ValidOptions() {
  FenceOptions o;
  o.state_dir = "/var/lib/cni/mizarmp";
  o.fence_store = "/var/lib/mizarmp/fence.db";
  return o;
}

using testing::ExpectRefused;

TEST(FenceOptions, ValidOptionsPass) {
  EXPECT_TRUE(ValidOptions().Validate().ok());
  FenceOptions shared = ValidOptions();
  shared.fence_store = "etcd://10.0.0.1:2379,10.0.0.2:2379";
  const Status s = shared.Validate();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(FenceOptions, RefusesEachBadKeyNamingIt) {
  FenceOptions o = ValidOptions();
  o.state_dir = "cni";
  ExpectRefused(o, "stateDir \"cni\": must be an absolute path");
  o = ValidOptions();
  o.fence_store = "fence.db";
  ExpectRefused(o, "fenceStore \"fence.db\": must be an absolute path or etcd://");
  o = ValidOptions();
  o.etcd.prefix = "/elsewhere/";
  ExpectRefused(o, "etcdPrefix: only for an etcd:// fenceStore");
  o = ValidOptions();
  o.host_id = "node a";
  ExpectRefused(o, "hostId \"node a\"");
  o = ValidOptions();
  o.reconcile_interval = 0ms;
  ExpectRefused(o, "reconcileIntervalMs: must be > 0");
  o = ValidOptions();
  o.update_connections = 65;
  ExpectRefused(o, "updateConnections: 65 is out of range (1..64)");
}

TEST(FenceOptions, RefusesEtcdSettingsThatCannotWork) {
  FenceOptions o = ValidOptions();
  o.fence_store = "etcd://10.0.0.1:2379";
  o.etcd.prefix = "mizarmp";
  ExpectRefused(o, "etcdPrefix \"mizarmp\": want /SOME/PATH/");
  o.etcd.prefix = "/mizarmp/fence/";
  o.etcd.client.cert_file = "/etc/mizarmp/etcd.crt";
  ExpectRefused(o, "etcdCertFile/etcdKeyFile: set both or neither");
  o.etcd.client.cert_file.clear();
  // The lease must cover a port update: 2 s connect + 5 s request does not fit in 5 s.
  o.etcd.lease_ttl = 5s;
  o.mizarmp.connect_timeout = 2000ms;
  o.mizarmp.request_timeout = 5000ms;
  ExpectRefused(o, "leaseTtlSeconds 5: too short");
}

// The service asks the same before it opens anything: the options a caller built itself are
// refused as the configuration would refuse them, and nothing is created.
TEST(FenceOptions, TheServiceRefusesWhatTheConfigurationWould) {
  FenceOptions o = ValidOptions();
  o.fence_store = "relative/fence.db";
  FenceService service(o);
  const Status s = service.StartAndWait();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("fenceStore"), std::string::npos) << s.ToString();
  // Probe then reports the refusal as the store's, as for any store that will not open.
  const Status readiness = service.StoreReadiness().error;
  EXPECT_NE(readiness.message().find("fenceStore"), std::string::npos) << readiness.ToString();
}

PublisherOptions ValidPublisher() {
  PublisherOptions o;
  o.target = "tcp://controller:9811";
  o.node = "node-7";
  o.insecure = true;  // the TLS files are checked on their own below
  return o;
}

TEST(PublisherOptions, RefusesEachBadKeyNamingIt) {
  EXPECT_TRUE(ValidPublisher().Validate().ok());
  PublisherOptions o = ValidPublisher();
  o.target = "unix:///run/controller.sock";
  ExpectRefused(o, "publishTo \"unix:///run/controller.sock\": must be tcp://HOST:PORT");
  o = ValidPublisher();
  o.node.clear();
  ExpectRefused(o, "hostId: a node agent that publishes must know its node's name");
  o = ValidPublisher();
  o.interval = 0ms;
  ExpectRefused(o, "publishIntervalMs: must be > 0");
  o = ValidPublisher();
  o.insecure = false;
  ExpectRefused(o, "publishCaFile, publishCertFile and publishKeyFile: all three are needed");
  o.ca_file = o.cert_file = o.key_file = "/nonexistent/mizarmp/publish.pem";
  ExpectRefused(o, "publishCaFile");
}

// Publisher::Create asks the same, so a publisher built without the configuration is refused
// as the configuration would refuse it.
TEST(PublisherOptions, ThePublisherRefusesWhatTheConfigurationWould) {
  PublisherOptions o = ValidPublisher();
  o.interval = -1ms;
  auto publisher = Publisher::Create(o);
  ASSERT_FALSE(publisher.ok());
  EXPECT_EQ(publisher.status().code(), Code::kInvalidArgument);
  EXPECT_NE(publisher.status().message().find("publishIntervalMs"), std::string::npos)
      << publisher.status().ToString();
}

}  // namespace
}  // namespace mizarmp::fence
