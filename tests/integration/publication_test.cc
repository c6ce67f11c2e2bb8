// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index fed by its node agents, end to end in one process: a controller's server
// (FenceService and the publication service, its publication endpoint on loopback TCP with
// client certificates) and node agents' Publishers reading attachment records, against the
// strict Alcor mock. What an operator relies on: a port made inside a fenced range is cut off
// once its node publishes it, without waiting for the reconcile; a node whose agent died is
// covered by the controller once its lease lapses; publications are authenticated and checked.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "addons/server.h"
#include "common/fileutil.h"
#include "fence/fence_service.h"
#include "fence/publication_service.h"
#include "fence/publisher.h"
#include "mizarmp/port_index.grpc.pb.h"
#include "mock-server/mock.h"
#include "netns/netns.h"
#include "records/records.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/port_spec.h"
#include "tests/support/records.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using mizarmp::testing::Pki;
using mizarmp::testing::TempDir;
using namespace std::chrono_literals;

constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

// Polls `done` (a look at the mock or a counter) until it holds or `limit` passed.
template <typename Predicate>
bool WaitUntil(Predicate done, std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

class PublicationTest : public ::testing::Test {
 protected:
  // The mock and the controller; `lease` and `reconcile` as the controller's options.
  // `before` (when set) is called with the controller's options once the mock runs, before the
  // controller starts: another replica started there leads.
  void StartController(std::chrono::seconds lease, std::chrono::milliseconds reconcile,
                       const std::string& etcd_store = "",
                       const std::function<void(const FenceOptions&)>& before = {}) {
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    mock::Options m;
    m.cidr = "10.240.0.0/16";
    m.strict = true;
    m.dialect = mock::Dialect::kAlcor;
    ASSERT_NO_FATAL_FAILURE(testing::StartMock(m, &mock_));
    client::ClientConfig cc;
    cc.base_url = mock_->base_url();
    cc.project_id = client::kDefaultProjectId;
    auto mp = client::Client::Create(cc);
    ASSERT_TRUE(mp.ok()) << mp.status().ToString();
    mp_ = std::move(*mp);

    FenceOptions f;
    f.mizarmp = cc;
    f.state_dir = dir_.path() + "/controller-cni";
    f.fence_store = etcd_store.empty() ? dir_.path() + "/lib/fence.db" : etcd_store;
    f.port_index = true;
    f.publication_lease = lease;
    f.reconcile_interval = reconcile;
    f.replica_id = "publication-test";
    if (before) {
      ASSERT_NO_FATAL_FAILURE(before(f));
    }
    fences_ = std::make_unique<FenceService>(f);
    publication_ = std::make_unique<PublicationService>(*fences_);
    addons::ServerOptions s;
    s.endpoint = "unix://" + dir_.path() + "/run/csi-addons.sock";
    s.additional_endpoint = "tcp://127.0.0.1:0";
    s.tls_cert_file = pki_.server_cert;
    s.tls_key_file = pki_.server_key;
    s.tls_client_ca_file = pki_.ca;
    server_ = std::make_unique<addons::Server>(s);
    server_->Register(*fences_);
    server_->Register(*publication_);
    const Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    ASSERT_TRUE(WaitUntil(
        [&] { return fences_->StoreReadiness().error.ok() && fences_->StoreReadiness().ready; }));
  }

  std::string PublicationTarget() const {
    return "tcp://127.0.0.1:" + std::to_string(server_->additional_port());
  }

  std::string StateDir(const std::string& node) const { return dir_.path() + "/" + node + "-cni"; }

  std::unique_ptr<Publisher> StartPublisher(const std::string& node) {
    PublisherOptions o;
    o.target = PublicationTarget();
    o.ca_file = pki_.ca;
    o.cert_file = pki_.client_cert;
    o.key_file = pki_.client_key;
    o.node = node;
    o.state_dir = StateDir(node);
    o.interval = 50ms;
    auto made = Publisher::Create(o);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (!made.ok()) return nullptr;
    (*made)->Start();
    return std::move(*made);
  }

  // A port at Mizar-MP bound to `node` at `ip`; with `recorded`, also the plugin's record on
  // that node (what its agent publishes).
  void AddPort(const std::string& container, const std::string& node, const std::string& ip,
               bool recorded, const std::string& plugged_link = "") {
    const std::string id = "port-" + container;  // testing::CompleteRecord's port id
    client::PortSpec spec = testing::PortSpecFor(id, "/var/run/netns/none", node);
    spec.network_id = client::kDefaultVpcId;
    spec.fixed_ips.push_back({kSubnet, ip});
    auto created = mp_->CreatePort(spec);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    if (!recorded) return;
    const records::RecordStore store(StateDir(node));
    records::Record record = testing::CompleteRecord("mizarmp", container, node, {ip + "/16"});
    if (!plugged_link.empty()) record.ovs = {"/run/openvswitch/db.sock", "br-int", plugged_link};
    const Status written = store.Write(record);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

  bool Up(const std::string& container) const {
    for (const auto& p : mock_->Ports()) {
      if (p.id == "port-" + container) return p.admin_state_up;
    }
    ADD_FAILURE() << "no port " << container << " at the mock";
    return false;
  }

  // Through this test's controller, or through `replica`.
  void Fence(const std::string& cidr, FenceService* replica = nullptr) {
    ::fence::FenceClusterNetworkRequest request;
    request.add_cidrs()->set_cidr(cidr);
    ::fence::FenceClusterNetworkResponse response;
    grpc::ServerContext context;
    FenceService& through = replica != nullptr ? *replica : *fences_;
    const grpc::Status s = through.FenceClusterNetwork(&context, &request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  void Unfence(const std::string& cidr) {
    ::fence::UnfenceClusterNetworkRequest request;
    request.add_cidrs()->set_cidr(cidr);
    ::fence::UnfenceClusterNetworkResponse response;
    grpc::ServerContext context;
    const grpc::Status s = fences_->UnfenceClusterNetwork(&context, &request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // A stub on the publication endpoint with this test's client certificate, or without one.
  std::unique_ptr<::mizarmp::v1::PortIndex::Stub> Stub(bool with_certificate) const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ReadFile(pki_.ca);
    if (with_certificate) {
      ssl.pem_cert_chain = *ReadFile(pki_.client_cert);
      ssl.pem_private_key = *ReadFile(pki_.client_key);
    }
    return ::mizarmp::v1::PortIndex::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->additional_port()), grpc::SslCredentials(ssl)));
  }

  TempDir dir_;
  Pki pki_;
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<client::Client> mp_;
  std::unique_ptr<FenceService> fences_;
  std::unique_ptr<PublicationService> publication_;
  std::unique_ptr<addons::Server> server_;
};

TEST_F(PublicationTest, ANewPortInsideAFenceIsCutOffOnceItsNodePublishesIt) {
  // No reconcile within the test: only the publication can make the pass.
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.240.0.10", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("a2", "node-a", "10.240.1.10", true));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));

  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24"));
  EXPECT_FALSE(Up("a1"));
  EXPECT_TRUE(Up("a2"));  // outside the fence

  const auto made = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(AddPort("a3", "node-a", "10.240.0.77", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("a4", "node-a", "10.240.2.77", true));
  EXPECT_TRUE(WaitUntil([&] { return !Up("a3"); })) << "the new port inside the fence stayed up";
  std::cout << "new port inside the fence cut off after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - made)
                   .count()
            << " ms\n";
  EXPECT_TRUE(Up("a2"));
  EXPECT_TRUE(Up("a4"));  // published with a3, outside the fence
}

// A node renews its lease every third of it with the same ports. Once a fence holds them, a
// renewal has nothing for a pass to do and must not ask for one: a cluster of nodes renewing
// would otherwise keep the leader passing without pause.
TEST_F(PublicationTest, RenewalsOfPortsAFenceHoldsAskForNoPass) {
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 1h));  // renewals every second; no reconcile
  // The first pass of the controller's term, which comes once its store is open.
  ASSERT_TRUE(WaitUntil([&] { return fences_->reconcile_passes() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(AddPort("r1", "node-r", "10.240.0.11", true));
  auto agent = StartPublisher("node-r");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24"));
  ASSERT_FALSE(Up("r1"));

  const uint64_t passes = fences_->reconcile_passes();
  const uint64_t published = agent->published();
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= published + 2; }))
      << "the node did not renew its lease";
  EXPECT_EQ(fences_->reconcile_passes(), passes) << "a renewal of a held port made a pass";

  // A new port inside the fence still asks for one, and is cut off by it.
  ASSERT_NO_FATAL_FAILURE(AddPort("r2", "node-r", "10.240.0.12", true));
  EXPECT_TRUE(WaitUntil([&] { return !Up("r2"); })) << "the new port inside the fence stayed up";
  EXPECT_GT(fences_->reconcile_passes(), passes);
}

TEST_F(PublicationTest, AnEtcdStoresIndexServesTheFencesOfEveryReplica) {
  testing::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.error().empty()) << etcd.error();
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h, etcd.Location()));
  ASSERT_NO_FATAL_FAILURE(AddPort("e1", "node-e", "10.240.0.40", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("e2", "node-e", "10.240.5.40", true));
  auto agent = StartPublisher("node-e");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24"));
  EXPECT_FALSE(Up("e1"));
  EXPECT_TRUE(Up("e2"));
  ASSERT_NO_FATAL_FAILURE(AddPort("e3", "node-e", "10.240.0.41", true));
  EXPECT_TRUE(WaitUntil([&] { return !Up("e3"); })) << "the new port inside the fence stayed up";
  // The index is beside the store's keys, not among them: the store reads its whole prefix.
  const std::string store_prefix = EtcdStoreOptions{}.prefix;
  const std::string index_prefix = PortIndexPrefix(store_prefix);
  EXPECT_EQ(index_prefix, "/mizarmp/fence-index/");
  EXPECT_NE(index_prefix.compare(0, store_prefix.size(), store_prefix), 0);
}

// Publications reach whichever replica the node's connection lands on; the leader, which alone
// changes ports, must still pass at once. Neither replica reconciles within the test.
TEST_F(PublicationTest, APublicationToAFollowerMakesTheLeaderPassAtOnce) {
  testing::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.error().empty()) << etcd.error();
  std::unique_ptr<FenceService> leader;
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h, etcd.Location(), [&](FenceOptions f) {
    f.replica_id = "the-leader";  // started first, so it leads
    leader = std::make_unique<FenceService>(f);
    const Status started = leader->StartAndWait();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }));
  ASSERT_NO_FATAL_FAILURE(AddPort("f1", "node-f", "10.240.0.50", true));
  auto agent = StartPublisher("node-f");  // publishes to this test's controller, the follower
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24", leader.get()));
  EXPECT_FALSE(Up("f1"));

  const auto made = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(AddPort("f2", "node-f", "10.240.0.51", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("f3", "node-f", "10.240.9.51", true));
  EXPECT_TRUE(WaitUntil([&] { return !Up("f2"); }))
      << "the leader did not pass for a publication its follower took";
  std::cout << "new port published to the follower cut off by the leader after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - made)
                   .count()
            << " ms\n";
  EXPECT_TRUE(Up("f3"));
  leader->Stop();
}

TEST_F(PublicationTest, ADeadNodesPortsAreCoveredOnceItsLeaseLapses) {
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 200ms));
  ASSERT_NO_FATAL_FAILURE(AddPort("b1", "node-b", "10.240.0.20", true));
  auto agent = StartPublisher("node-b");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24"));
  EXPECT_FALSE(Up("b1"));

  // The node's agent dies; a port appears on the node that nobody publishes, inside the fence,
  // and one outside it.
  agent->Stop();
  const auto died = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(AddPort("b2", "node-b", "10.240.0.21", false));
  ASSERT_NO_FATAL_FAILURE(AddPort("b3", "node-b", "10.240.3.21", false));
  EXPECT_TRUE(WaitUntil([&] { return !Up("b2"); }))
      << "the dead node's port inside the fence stayed up";
  std::cout << "dead node's port cut off "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - died)
                   .count()
            << " ms after its agent stopped (lease 3 s)\n";
  EXPECT_TRUE(Up("b3"));
}

// Host links, as plug mode leaves them (the veth's host end), made for a test and removed after.
// A node Mizar-MP knows but whose agent never published (not deployed yet, or crashed before
// its first publication) has no lease to lapse; Alcor's node list names it all the same.
TEST_F(PublicationTest, ANodeThatNeverPublishedIsCoveredThroughMizarMpsNodeList) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("p1", "node-p", "10.240.0.60", true));
  auto agent = StartPublisher("node-p");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(AddPort("z1", "node-z", "10.240.0.61", false));
  ASSERT_NO_FATAL_FAILURE(AddPort("z2", "node-z", "10.240.7.61", false));

  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24"));
  EXPECT_FALSE(Up("p1"));
  EXPECT_FALSE(Up("z1")) << "the fence missed a port of a node that never published";
  EXPECT_TRUE(Up("z2"));
}

class HostLinks {
 public:
  HostLinks() {
    auto self = netns::Netns::Current();
    if (self.ok()) nl_ = netns::Netlink::OpenIn(*self);
  }
  ~HostLinks() {
    for (const std::string& l : made_) (void)nl_->DeleteLink(l);
  }
  // A veth pair `name`/`name`p, `name` up or down.
  void Make(const std::string& name, bool up) {
    ASSERT_TRUE(nl_.ok()) << nl_.status().ToString();
    (void)nl_->DeleteLink(name);
    ASSERT_TRUE(nl_->CreateVeth(name, name + "p", nullptr).ok());
    made_.push_back(name);
    ASSERT_TRUE(nl_->SetUp(name, up).ok());
  }
  bool Up(const std::string& name) {
    auto link = nl_->GetLink(name);
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    return link.ok() && link->up;
  }

 private:
  Result<netns::Netlink> nl_ = UnavailableError("not opened");
  std::vector<std::string> made_;
};

TEST_F(PublicationTest, APlugModePodsHostLinkIsCutWhileAFenceHoldsItsPort) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make and cut host links";
  // Alcor's agent ignores admin_state_up=false; the node agent cuts the link it was told of.
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 1h));  // republication every second
  const std::string tag = std::to_string(::getpid() % 100000);
  const std::string fenced = "mzcut" + tag, outside = "mzout" + tag, down = "mzdn" + tag;
  HostLinks links;
  ASSERT_NO_FATAL_FAILURE(links.Make(fenced, true));
  ASSERT_NO_FATAL_FAILURE(links.Make(outside, true));
  ASSERT_NO_FATAL_FAILURE(links.Make(down, false));  // down for another reason
  ASSERT_NO_FATAL_FAILURE(AddPort("p1", "node-a", "10.240.0.10", true, fenced));
  ASSERT_NO_FATAL_FAILURE(AddPort("p2", "node-a", "10.240.1.10", true, outside));
  ASSERT_NO_FATAL_FAILURE(AddPort("p3", "node-a", "10.240.0.11", true, down));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));

  ASSERT_NO_FATAL_FAILURE(Fence("10.240.0.0/24"));
  EXPECT_TRUE(WaitUntil([&] { return !links.Up(fenced); })) << "the fenced pod's link stayed up";
  EXPECT_TRUE(links.Up(outside));

  ASSERT_NO_FATAL_FAILURE(Unfence("10.240.0.0/24"));
  EXPECT_TRUE(WaitUntil([&] { return links.Up(fenced); })) << "the link was not restored";
  EXPECT_TRUE(Up("p1"));
  const auto restored = agent->published();
  EXPECT_TRUE(WaitUntil([&] { return agent->published() >= restored + 2; }));
  EXPECT_FALSE(links.Up(down)) << "a link down for another reason was set up";
  EXPECT_TRUE(links.Up(outside));
}

TEST_F(PublicationTest, RefusesUnauthenticatedAndMalformedPublications) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ::mizarmp::v1::PublishRequest request;
  request.set_node("node-a");
  auto* attachment = request.add_attachments();
  attachment->set_port_id("port-x");
  attachment->add_ips("10.240.0.5");
  ::mizarmp::v1::PublishResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    const grpc::Status s = Stub(/*with_certificate=*/false)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  {
    grpc::ClientContext context;
    const grpc::Status s = Stub(true)->Publish(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.lease_seconds(), 30u);
  }
  attachment->add_ips("10.240.0.999");
  {
    grpc::ClientContext context;
    const grpc::Status s = Stub(true)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("attachments[0].ips[1]"), std::string::npos)
        << s.error_message();
  }
  request.set_node("");
  {
    grpc::ClientContext context;
    const grpc::Status s = Stub(true)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("node is empty"), std::string::npos) << s.error_message();
  }
}

TEST(NodeAttachments, PublishesEveryAddressOfThisNodesRecordsOnce) {
  auto mine = std::make_shared<std::vector<records::Record>>();
  mine->push_back(testing::CompleteRecord("n", "c1", "node-a", {"10.0.0.2/16", "fd00::2/64"}));
  mine->push_back(testing::CompleteRecord("n", "c2", "", {"10.0.0.3/16"}));  // no host: ours
  mine->push_back(testing::CompleteRecord("n", "c3", "node-b", {"10.0.0.4/16"}));
  records::Record intent = testing::CompleteRecord("n", "c4", "node-a", {});
  intent.state = records::Record::State::kIntent;  // no address yet: nothing to publish
  mine->push_back(intent);
  const std::vector<records::RecordCache::Records> all = {mine, mine};  // seen twice: once
  const std::vector<AddressedPort> published = NodeAttachments(all, "node-a");
  const std::vector<AddressedPort> want = {{*IpAddress::Parse("10.0.0.2"), "port-c1"},
                                           {*IpAddress::Parse("10.0.0.3"), "port-c2"},
                                           {*IpAddress::Parse("fd00::2"), "port-c1"}};
  EXPECT_EQ(published, want);
}

}  // namespace
}  // namespace mizarmp::fence
