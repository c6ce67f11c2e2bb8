// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Node mode's GetFenceClients (fence/service/node_clients.h): this node's records and configured
// addresses under this node's id, nothing for another node, the fence RPCs left to the controller.
#include <grpcpp/server_context.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fence/service/node_clients.h"
#include "records/records.h"
#include "tests/support/records.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using testing::TempDir;
using Answer = std::map<std::string, std::vector<std::string>>;  // id -> CIDRs

class NodeFenceClientsTest : public ::testing::Test {
 protected:
  FenceOptions Options() const {
    FenceOptions o;
    o.state_dir = dir_.path() + "/cni";
    o.host_id = "node-a";
    return o;
  }

  void Record(const std::string& container, const std::string& host,
              const std::vector<std::string>& addresses) {
    ASSERT_TRUE(records::RecordStore(dir_.path() + "/cni")
                    .Write(testing::CompleteRecord("net1", container, host, addresses))
                    .ok());
  }

  static Answer Ask(NodeFenceClients& service, const std::map<std::string, std::string>& params,
                    grpc::Status* status = nullptr,
                    const std::map<std::string, std::string>& secrets = {}) {
    grpc::ServerContext ctx;
    ::fence::GetFenceClientsRequest req;
    for (const auto& [k, v] : params) (*req.mutable_parameters())[k] = v;
    for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
    ::fence::GetFenceClientsResponse resp;
    const grpc::Status s = service.GetFenceClients(&ctx, &req, &resp);
    if (status != nullptr) *status = s;
    Answer out;
    for (const auto& c : resp.clients()) {
      for (const auto& a : c.addresses()) out[c.id()].push_back(a.cidr());
    }
    return out;
  }

  TempDir dir_;
};

TEST_F(NodeFenceClientsTest, AnswersThisNodesRecordsAndAddressesUnderItsId) {
  Record("c1", "node-a", {"10.240.1.10/16"});
  Record("c2", "", {"10.240.1.11/16"});
  // Written by a plugin configured with another host id: still a pod on this node.
  Record("c3", "plugin-name-for-a", {"fd00:240::5/64"});
  FenceOptions o = Options();
  o.node_addresses = {{"node-a", {"192.168.10.4/24"}}, {"node-b", {"192.168.10.5"}}};
  NodeFenceClients service(o);
  grpc::Status s;
  EXPECT_EQ(Ask(service, {}, &s),
            (Answer{{"node-a", {"10.240.1.10/31", "192.168.10.4/32", "fd00:240::5/128"}}}));
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Ask(service, {{kHostIdParameter, "node-a"}}).size(), 1u);
}

TEST_F(NodeFenceClientsTest, AnotherNodeGetsAnEmptyListAndAnEmptyNodeIsInvalid) {
  Record("c1", "node-a", {"10.240.1.10/16"});
  NodeFenceClients service(Options());
  grpc::Status s;
  EXPECT_TRUE(Ask(service, {{kHostIdParameter, "node-b"}}, &s).empty());
  EXPECT_TRUE(s.ok()) << s.error_message();
  Ask(service, {{kHostIdParameter, ""}}, &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("hostId"), std::string::npos) << s.error_message();
}

TEST_F(NodeFenceClientsTest, ANodeWithoutPodsOrAddressesAnswersNoClient) {
  NodeFenceClients service(Options());  // the state dir does not even exist yet
  grpc::Status s;
  EXPECT_TRUE(Ask(service, {}, &s).empty());
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(NodeFenceClientsTest, RequestsWithoutTheSecretsAreRefused) {
  Record("c1", "node-a", {"10.240.1.10/16"});
  FenceOptions o = Options();
  o.expected_secrets = {{"token", "s3cret"}};
  NodeFenceClients service(o);
  grpc::Status s;
  EXPECT_TRUE(Ask(service, {}, &s, {{"token", "wrong"}}).empty());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Ask(service, {}, &s, {{"token", "s3cret"}}).size(), 1u);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(NodeFenceClientsTest, FencingIsTheControllersAndOnlyGetClientsIsAdvertised) {
  NodeFenceClients service(Options());
  grpc::ServerContext ctx;
  ::fence::FenceClusterNetworkRequest fence;
  fence.add_cidrs()->set_cidr("10.240.1.0/24");
  ::fence::FenceClusterNetworkResponse fenced;
  const grpc::Status s = service.FenceClusterNetwork(&ctx, &fence, &fenced);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(s.error_message().find("controller mode"), std::string::npos) << s.error_message();
  const auto caps = service.capabilities();
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(caps[0].network_fence().type(),
            identity::Capability::NetworkFence::GET_CLIENTS_TO_FENCE);
}

}  // namespace
}  // namespace mizarmp::fence
