// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// How the plugin names an attachment at the controller: the derived port id and description.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cni/attachment.h"
#include "cni/ovs_plug.h"
#include "common/uuid.h"

namespace mizarmp::cni {
namespace {

// The name Alcor's agent looks for on br-int: "tap" + the port id, 14 characters in all
// (alcor-control-agent include/aca_util.h), which also fits a link name's 15.
TEST(CniAttachment, AgentDeviceNameIsTapAndThePortIdCutTo14) {
  EXPECT_EQ(AgentDeviceName("1b4e28ba-2fa1-11d2-883f-0016d3cca427"), "tap1b4e28ba-2f");
  EXPECT_EQ(AgentDeviceName("abc"), "tapabc");
}

TEST(CniAttachment, PortIdsAreStableAndDistinct) {
  const std::string id = PortIdFor("net1", "c1", "eth0");
  EXPECT_TRUE(IsUuid(id)) << id;
  EXPECT_EQ(id, PortIdFor("net1", "c1", "eth0"));
  auto direct = UuidV5(kPortIdNamespace, "net1/c1/eth0");
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(id, *direct);
  std::set<std::string> ids = {id, PortIdFor("net2", "c1", "eth0"), PortIdFor("net1", "c2", "eth0"),
                               PortIdFor("net1", "c1", "eth1"), PortIdFor("net1", "c1e", "th0")};
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(PortDescription("c1", "/var/run/netns/x", "node-a", "net1", "eth0"),
            "cni c1, ns:/var/run/netns/x, host:node-a, net:net1, if:eth0");
  EXPECT_EQ(PortDescription("c1", "/n", "h", "net1", "eth0", "default", "web-0"),
            "cni c1, ns:/n, host:h, net:net1, if:eth0, pod:default/web-0");
}

}  // namespace
}  // namespace mizarmp::cni
