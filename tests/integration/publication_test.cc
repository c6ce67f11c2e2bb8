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
#include <httplib.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "addons/server.h"
#include "common/fileutil.h"
#include "fence/service/admin_service.h"
#include "fence/service/fence_service.h"
#include "fence/service/publication_service.h"
#include "fence/service/publisher.h"
#include "mizarmp/fence_admin.grpc.pb.h"
#include "mizarmp/port_index.grpc.pb.h"
#include "mock-server/mock.h"
#include "netns/netns.h"
#include "records/records.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/port_spec.h"
#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/started_mock.h"
#include "tests/support/support.h"

namespace mizarmp::fence {
namespace {

using mizarmp::testing::Pki;
using mizarmp::testing::TempDir;
using namespace std::chrono_literals;

constexpr const char* kSubnet = "a87e0f87-a2d9-44ef-9194-9a62f178594e";
// The controller's address on the link to a node in a namespace of its own.
constexpr const char* kControllerAddress = "10.253.0.1";

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
  // The node agents these tests run in process enforce the fence set in this host's own
  // nftables (fence/host_filter.h); their table goes with the test. The addresses (10.236/16)
  // are no other test's, so a test running beside this one is not cut off meanwhile.
  void TearDown() override { testing::Shell("nft delete table inet mizarmp_fence 2>/dev/null"); }

  // The mock and the controller; `lease` and `reconcile` as the controller's options.
  // `before` (when set) is called with the controller's options once the mock runs, before the
  // controller starts: another replica started there leads.
  void StartController(std::chrono::seconds lease, std::chrono::milliseconds reconcile,
                       const std::string& etcd_store = "",
                       const std::function<void(const FenceOptions&)>& before = {}) {
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    mock::Options m;
    m.cidr = "10.236.0.0/16";
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
    f.node_addresses = node_addresses_;
    if (before) {
      ASSERT_NO_FATAL_FAILURE(before(f));
    }
    fences_ = std::make_unique<FenceService>(f);
    publication_ = std::make_unique<PublicationService>(*fences_);
    admin_ = std::make_unique<FenceAdminService>(*fences_);
    addons::ServerOptions s;
    s.endpoint = "unix://" + dir_.path() + "/run/csi-addons.sock";
    // Every address: a node agent in a namespace of its own comes in on kControllerAddress.
    s.additional_endpoint = "tcp://0.0.0.0:0";
    s.tls_cert_file = pki_.server_cert;
    s.tls_key_file = pki_.server_key;
    s.tls_client_ca_file = pki_.ca;
    server_ = std::make_unique<addons::Server>(s);
    server_->Register(*fences_);
    server_->Register(*publication_);
    server_->Register(*admin_);
    const Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    ASSERT_TRUE(WaitUntil(
        [&] { return fences_->StoreReadiness().error.ok() && fences_->StoreReadiness().ready; }));
  }

  std::string PublicationTarget() const {
    return "tcp://127.0.0.1:" + std::to_string(server_->additional_port());
  }

  std::string StateDir(const std::string& node) const { return dir_.path() + "/" + node + "-cni"; }

  // To this test's controller, or to `target`.
  std::unique_ptr<Publisher> StartPublisher(const std::string& node,
                                            const std::string& target = "") {
    PublisherOptions o;
    o.target = target.empty() ? PublicationTarget() : target;
    o.ca_file = pki_.ca;
    const Pki::KeyPair own = pki_.NodeClient(node);
    EXPECT_TRUE(pki_.error.empty()) << pki_.error;
    o.cert_file = own.cert;
    o.key_file = own.key;
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
    record.pod_namespace = "shop";
    record.pod_name = "pod-" + container;
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

  // A stub on the publication endpoint with `certificate` as its client certificate, or none.
  std::unique_ptr<::mizarmp::v1::PortIndex::Stub> Stub(
      const std::optional<Pki::KeyPair>& certificate) const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ReadFile(pki_.ca);
    if (certificate) {
      ssl.pem_cert_chain = *ReadFile(certificate->cert);
      ssl.pem_private_key = *ReadFile(certificate->key);
    }
    return ::mizarmp::v1::PortIndex::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->additional_port()), grpc::SslCredentials(ssl)));
  }

  // The controller's CSI-Addons socket, as mizarmpctl and the csi-addons sidecar reach it: calls
  // through it pass the server's interceptor, which gives each its request id.
  std::shared_ptr<grpc::Channel> SocketChannel() const {
    return grpc::CreateChannel("unix:" + dir_.path() + "/run/csi-addons.sock",
                               grpc::InsecureChannelCredentials());
  }

  ::mizarmp::v1::PreviewFenceResponse Preview(const std::string& cidr) const {
    ::mizarmp::v1::PreviewFenceRequest request;
    request.add_cidrs()->set_cidr(cidr);
    ::mizarmp::v1::PreviewFenceResponse response;
    grpc::ClientContext context;
    const grpc::Status s = ::mizarmp::v1::FenceAdmin::NewStub(SocketChannel())
                               ->PreviewFence(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  ::mizarmp::v1::ListNodesResponse ListNodes() const {
    ::mizarmp::v1::ListNodesResponse response;
    grpc::ClientContext context;
    const grpc::Status s = ::mizarmp::v1::FenceAdmin::NewStub(SocketChannel())
                               ->ListNodes(&context, ::mizarmp::v1::ListNodesRequest(), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  // FenceClusterNetwork (or Unfence) of `cidr` over the socket, under `request_id`.
  void ChangeOverSocket(const std::string& cidr, const std::string& request_id, bool fence) const {
    auto stub = ::fence::FenceController::NewStub(SocketChannel());
    grpc::ClientContext context;
    context.AddMetadata("x-request-id", request_id);
    grpc::Status s;
    if (fence) {
      ::fence::FenceClusterNetworkRequest request;
      request.add_cidrs()->set_cidr(cidr);
      ::fence::FenceClusterNetworkResponse response;
      s = stub->FenceClusterNetwork(&context, request, &response);
    } else {
      ::fence::UnfenceClusterNetworkRequest request;
      request.add_cidrs()->set_cidr(cidr);
      ::fence::UnfenceClusterNetworkResponse response;
      s = stub->UnfenceClusterNetwork(&context, request, &response);
    }
    EXPECT_TRUE(s.ok()) << s.error_message();
  }

  std::vector<::mizarmp::v1::AuditEntry> Audit() const {
    ::mizarmp::v1::ListAuditRequest request;
    ::mizarmp::v1::ListAuditResponse response;
    grpc::ClientContext context;
    const grpc::Status s = ::mizarmp::v1::FenceAdmin::NewStub(SocketChannel())
                               ->ListAudit(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {response.entries().begin(), response.entries().end()};
  }

  // The mock's journal of port updates it accepted: the ports set down and set up, in order.
  struct Journal {
    std::vector<std::string> down, up;
  };
  Journal UpdatesAccepted() const {
    httplib::Client http(mock_->base_url());
    auto answer = http.Get("/mock/requests");
    EXPECT_TRUE(answer && answer->status == 200);
    Journal journal;
    if (!answer) return journal;
    const nlohmann::json doc = nlohmann::json::parse(answer->body);
    for (const auto& u : doc.at("updates")) {
      if (u.value("status", 0) != 200 || !u.contains("admin_state_up")) continue;
      (u["admin_state_up"].get<bool>() ? journal.up : journal.down)
          .push_back(u["port"].get<std::string>());
    }
    return journal;
  }

  void PreviewNamesWhatTheFenceCutsAndTheAuditMatchesTheJournal(const std::string& store);

  std::map<std::string, std::vector<std::string>> node_addresses_;  // the controller's
  TempDir dir_;
  Pki pki_{std::string("IP:127.0.0.1,IP:") + kControllerAddress + ",DNS:localhost"};
  std::unique_ptr<mock::MockServer> mock_;
  std::unique_ptr<client::Client> mp_;
  std::unique_ptr<FenceService> fences_;
  std::unique_ptr<PublicationService> publication_;
  std::unique_ptr<FenceAdminService> admin_;
  std::unique_ptr<addons::Server> server_;
};

TEST_F(PublicationTest, ANewPortInsideAFenceIsCutOffOnceItsNodePublishesIt) {
  // No reconcile within the test: only the publication can make the pass.
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.236.0.10", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("a2", "node-a", "10.236.1.10", true));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));

  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24"));
  EXPECT_FALSE(Up("a1"));
  EXPECT_TRUE(Up("a2"));  // outside the fence

  const auto made = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(AddPort("a3", "node-a", "10.236.0.77", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("a4", "node-a", "10.236.2.77", true));
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
  ASSERT_NO_FATAL_FAILURE(AddPort("r1", "node-r", "10.236.0.11", true));
  auto agent = StartPublisher("node-r");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24"));
  ASSERT_FALSE(Up("r1"));

  // A publication that reached the controller while the fence's own pass ran found r1 inside
  // the fence and not held yet, and may have asked for one more pass: the count is taken once a
  // whole renewal went by without a pass.
  uint64_t passes = fences_->reconcile_passes();
  for (int settled = 0; settled < 5; ++settled) {
    const uint64_t renewed = agent->published();
    ASSERT_TRUE(WaitUntil([&] { return agent->published() > renewed; }))
        << "the node did not renew its lease";
    if (fences_->reconcile_passes() == passes) break;
    passes = fences_->reconcile_passes();
  }
  const uint64_t published = agent->published();
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= published + 2; }))
      << "the node did not renew its lease";
  EXPECT_EQ(fences_->reconcile_passes(), passes) << "a renewal of a held port made a pass";

  // A new port inside the fence still asks for one, and is cut off by it.
  ASSERT_NO_FATAL_FAILURE(AddPort("r2", "node-r", "10.236.0.12", true));
  EXPECT_TRUE(WaitUntil([&] { return !Up("r2"); })) << "the new port inside the fence stayed up";
  EXPECT_GT(fences_->reconcile_passes(), passes);
}

// Before a fence, the operator's preview (mizarmpctl fence --dry-run) names each port it would
// find: its node, its pod as the node's agent published it, and whether it is down already. The
// fence then cuts off exactly the previewed ports that were up, and the audit names the request
// and exactly the ports Mizar-MP accepted as changed, as the mock's journal shows them.
void PublicationTest::PreviewNamesWhatTheFenceCutsAndTheAuditMatchesTheJournal(
    const std::string& store) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h, store));
  ASSERT_NO_FATAL_FAILURE(AddPort("d1", "node-d", "10.236.0.21", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("d2", "node-d", "10.236.0.22", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("d3", "node-d", "10.236.1.23", true));  // outside the fence
  // A node whose agent never published: the preview finds it as a pass does, without a pod.
  ASSERT_NO_FATAL_FAILURE(AddPort("q1", "node-q", "10.236.0.24", false));
  // Down before any fence (an operator's quarantine): previewed as such, never re-enabled.
  ASSERT_TRUE(mp_->UpdatePort("port-d2", nlohmann::json{{"admin_state_up", false}}).ok());
  auto agent = StartPublisher("node-d");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));

  const auto preview = Preview("10.236.0.0/24");
  ASSERT_EQ(preview.ports_size(), 3) << preview.DebugString();
  const auto& d1 = preview.ports(0);
  EXPECT_EQ(d1.port_id(), "port-d1");
  EXPECT_EQ(d1.node(), "node-d");
  EXPECT_EQ(d1.pod_namespace() + "/" + d1.pod_name(), "shop/pod-d1");
  EXPECT_EQ(std::vector<std::string>(d1.ips().begin(), d1.ips().end()),
            std::vector<std::string>{"10.236.0.21"});
  EXPECT_FALSE(d1.down());
  EXPECT_EQ(preview.ports(1).port_id(), "port-d2");
  EXPECT_TRUE(preview.ports(1).down());
  EXPECT_EQ(preview.ports(2).port_id(), "port-q1");
  EXPECT_EQ(preview.ports(2).node(), "node-q");
  EXPECT_TRUE(preview.ports(2).pod_name().empty());
  EXPECT_TRUE(Up("d1") && Up("q1")) << "the preview changed a port";
  EXPECT_TRUE(UpdatesAccepted().down.size() == 1) << "the preview made a port update";

  std::set<std::string> would_cut;
  for (const auto& p : preview.ports()) {
    if (!p.down()) would_cut.insert(p.port_id());
  }
  const Journal before = UpdatesAccepted();
  ChangeOverSocket("10.236.0.0/24", "req-fence-7", /*fence=*/true);
  const Journal fenced = UpdatesAccepted();
  const std::set<std::string> cut(fenced.down.begin() + static_cast<long>(before.down.size()),
                                  fenced.down.end());
  EXPECT_EQ(cut, would_cut);
  EXPECT_TRUE(Up("d3"));
  ChangeOverSocket("10.236.0.0/24", "req-unfence-8", /*fence=*/false);
  const Journal lifted = UpdatesAccepted();
  EXPECT_EQ(std::set<std::string>(lifted.up.begin(), lifted.up.end()), would_cut);
  EXPECT_FALSE(Up("d2")) << "the quarantined port came up";

  // The audit: each request with its id, caller and CIDRs, and each pass's changes exactly.
  std::vector<std::string> requests;
  std::vector<std::string> audited_down, audited_up;
  for (const auto& e : Audit()) {
    if (e.action() == "pass") {
      audited_down.insert(audited_down.end(), e.disabled_ports().begin(), e.disabled_ports().end());
      audited_up.insert(audited_up.end(), e.enabled_ports().begin(), e.enabled_ports().end());
      EXPECT_EQ(std::vector<std::string>(e.cidrs().begin(), e.cidrs().end()),
                std::vector<std::string>{"10.236.0.0/24"});
      continue;
    }
    requests.push_back(e.action() + " " + e.request_id() + " " + e.cidrs(0));
    EXPECT_EQ(e.replica(), "publication-test");
    EXPECT_EQ(e.caller().rfind("unix:", 0), 0u) << e.caller();
  }
  EXPECT_EQ(requests, (std::vector<std::string>{"fence req-fence-7 10.236.0.0/24",
                                                "unfence req-unfence-8 10.236.0.0/24"}));
  // The journal's first update is the test's own quarantine, which no pass made.
  const std::vector<std::string> journal_down(lifted.down.begin() + 1, lifted.down.end());
  EXPECT_EQ(std::set<std::string>(audited_down.begin(), audited_down.end()),
            std::set<std::string>(journal_down.begin(), journal_down.end()));
  EXPECT_EQ(audited_down.size(), journal_down.size());
  EXPECT_EQ(std::set<std::string>(audited_up.begin(), audited_up.end()),
            std::set<std::string>(lifted.up.begin(), lifted.up.end()));
  EXPECT_EQ(audited_up.size(), lifted.up.size());
}

TEST_F(PublicationTest, APreviewNamesWhatTheFenceCutsAndTheAuditMatchesTheJournalOnSqlite) {
  PreviewNamesWhatTheFenceCutsAndTheAuditMatchesTheJournal("");
}

TEST_F(PublicationTest, APreviewNamesWhatTheFenceCutsAndTheAuditMatchesTheJournalOnEtcd) {
  testing::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.error().empty()) << etcd.error();
  PreviewNamesWhatTheFenceCutsAndTheAuditMatchesTheJournal(etcd.Location());
}

TEST_F(PublicationTest, AnEtcdStoresIndexServesTheFencesOfEveryReplica) {
  testing::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.error().empty()) << etcd.error();
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h, etcd.Location()));
  ASSERT_NO_FATAL_FAILURE(AddPort("e1", "node-e", "10.236.0.40", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("e2", "node-e", "10.236.5.40", true));
  auto agent = StartPublisher("node-e");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24"));
  EXPECT_FALSE(Up("e1"));
  EXPECT_TRUE(Up("e2"));
  ASSERT_NO_FATAL_FAILURE(AddPort("e3", "node-e", "10.236.0.41", true));
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
  ASSERT_NO_FATAL_FAILURE(AddPort("f1", "node-f", "10.236.0.50", true));
  auto agent = StartPublisher("node-f");  // publishes to this test's controller, the follower
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24", leader.get()));
  EXPECT_FALSE(Up("f1"));

  const auto made = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(AddPort("f2", "node-f", "10.236.0.51", true));
  ASSERT_NO_FATAL_FAILURE(AddPort("f3", "node-f", "10.236.9.51", true));
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
  ASSERT_NO_FATAL_FAILURE(AddPort("b1", "node-b", "10.236.0.20", true));
  auto agent = StartPublisher("node-b");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24"));
  EXPECT_FALSE(Up("b1"));

  // The node's agent dies; a port appears on the node that nobody publishes, inside the fence,
  // and one outside it.
  agent->Stop();
  const auto died = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(AddPort("b2", "node-b", "10.236.0.21", false));
  ASSERT_NO_FATAL_FAILURE(AddPort("b3", "node-b", "10.236.3.21", false));
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
  ASSERT_NO_FATAL_FAILURE(AddPort("p1", "node-p", "10.236.0.60", true));
  auto agent = StartPublisher("node-p");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  ASSERT_NO_FATAL_FAILURE(AddPort("z1", "node-z", "10.236.0.61", false));
  ASSERT_NO_FATAL_FAILURE(AddPort("z2", "node-z", "10.236.7.61", false));

  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24"));
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
  // Alcor's agent ignores admin_state_up=false; the node agent cuts its pods inside the set.
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 1h));  // republication every second
  const std::string tag = std::to_string(::getpid() % 100000);
  const std::string fenced = "mzcut" + tag, outside = "mzout" + tag, down = "mzdn" + tag;
  HostLinks links;
  ASSERT_NO_FATAL_FAILURE(links.Make(fenced, true));
  ASSERT_NO_FATAL_FAILURE(links.Make(outside, true));
  ASSERT_NO_FATAL_FAILURE(links.Make(down, false));  // down for another reason
  ASSERT_NO_FATAL_FAILURE(AddPort("p1", "node-a", "10.236.0.10", true, fenced));
  ASSERT_NO_FATAL_FAILURE(AddPort("p2", "node-a", "10.236.1.10", true, outside));
  ASSERT_NO_FATAL_FAILURE(AddPort("p3", "node-a", "10.236.0.11", true, down));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));

  // Cut before node-a acknowledged the set, so by the time the fence answers.
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.0/24"));
  EXPECT_FALSE(links.Up(fenced)) << "the fenced pod's link was up when the fence answered";
  EXPECT_TRUE(links.Up(outside));

  ASSERT_NO_FATAL_FAILURE(Unfence("10.236.0.0/24"));
  EXPECT_TRUE(links.Up(fenced)) << "the link was not restored when the unfence answered";
  EXPECT_TRUE(Up("p1"));
  const auto restored = agent->published();
  EXPECT_TRUE(WaitUntil([&] { return agent->published() >= restored + 2; }));
  EXPECT_FALSE(links.Up(down)) << "a link down for another reason was set up";
  EXPECT_TRUE(links.Up(outside));
}

// Agent mode (v0.1, the seed's controller): Mizar-MP's agent placed the pod's interface and a port
// update never reaches a host, so a live fenced node cuts its pod's own interface, in the pod's
// namespace, before it acknowledges the fence; the unfence restores it, and only it.
TEST_F(PublicationTest, AnAgentModePodIsCutInItsOwnNamespaceWhenTheFenceAnswers) {
  MZ_REQUIRE_NETNS();
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  testing::ScopedNetns pod(testing::UniqueName("mzpod")), other(testing::UniqueName("mzpod"));
  ASSERT_TRUE(pod.ok() && other.ok());
  for (const testing::ScopedNetns* ns : {&pod, &other}) {
    const std::string ip = "ip -n " + ns->name() + " link ";
    ASSERT_EQ(testing::Shell(ip + "add eth0 type veth peer name eth0p"), 0);
    ASSERT_EQ(testing::Shell(ip + "set eth0 up"), 0);
  }
  const auto eth0_up = [](const testing::ScopedNetns& ns) {
    std::string out;
    return testing::Shell("ip -n " + ns.name() + " -o link show dev eth0 up", &out) == 0 &&
           !out.empty();
  };
  ASSERT_TRUE(eth0_up(pod) && eth0_up(other));
  // testing::CompleteRecord: ifname eth0 in /var/run/netns/<container>.
  ASSERT_NO_FATAL_FAILURE(AddPort(pod.name(), "node-a", "10.236.0.40", true));
  ASSERT_NO_FATAL_FAILURE(AddPort(other.name(), "node-a", "10.236.1.40", true));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));

  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.40/32"));
  EXPECT_FALSE(eth0_up(pod)) << "the fenced pod's interface was up when the fence answered";
  EXPECT_TRUE(eth0_up(other));
  ASSERT_NO_FATAL_FAILURE(Unfence("10.236.0.40/32"));
  EXPECT_TRUE(eth0_up(pod)) << "the interface was not restored when the unfence answered";
  EXPECT_TRUE(eth0_up(other));
}

// The cutter's state file is read back by an agent restarted while a fence stood; a damaged one
// gives up only its damaged lines.
TEST(LinkCutterState, KeepsWhatItCutAcrossARestartAndSkipsDamagedLines) {
  TempDir dir;
  const std::string file = dir.path() + "/.fenced-links";
  ASSERT_TRUE(WriteFileAtomic(file,
                              "tap0123456789ab\n"
                              "eth0\t/var/run/netns/pod-a\n"
                              "eth1\trelative/path\n"
                              "a-name-far-too-long-for-a-link\n"
                              "eth2\t/var/run/netns/\x01" "bad\n",
                              0600)
                  .ok());
  LinkCutter cutter(file);
  auto cut = cutter.Cut();
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(*cut, (std::set<CutLink>{{"", "tap0123456789ab"}, {"/var/run/netns/pod-a", "eth0"}}));
}

TEST_F(PublicationTest, RefusesUnauthenticatedAndMalformedPublications) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  const Pki::KeyPair node_a = pki_.NodeClient("node-a");
  ASSERT_TRUE(pki_.error.empty()) << pki_.error;
  ::mizarmp::v1::PublishRequest request;
  request.set_node("node-a");
  auto* attachment = request.add_attachments();
  attachment->set_port_id("port-x");
  attachment->add_ips("10.236.0.5");
  ::mizarmp::v1::PublishResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    const grpc::Status s = Stub(std::nullopt)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  {
    grpc::ClientContext context;
    const grpc::Status s = Stub(node_a)->Publish(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.lease_seconds(), 30u);
  }
  attachment->add_ips("10.236.0.999");
  {
    grpc::ClientContext context;
    const grpc::Status s = Stub(node_a)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("attachments[0].ips[1]"), std::string::npos)
        << s.error_message();
  }
  request.set_node("");
  {
    grpc::ClientContext context;
    const grpc::Status s = Stub(node_a)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("node is empty"), std::string::npos) << s.error_message();
  }
  // What a node says it enforces is stored as it came: only a fence set's digest is taken.
  request.set_node("node-a");
  attachment->clear_ips();
  attachment->add_ips("10.236.0.5");
  for (const std::string& digest : {std::string(4096, 'a'), std::string("1-ABC\n")}) {
    request.set_fence_set_digest(digest);
    grpc::ClientContext context;
    const grpc::Status s = Stub(node_a)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("fence_set_digest"), std::string::npos) << s.error_message();
  }
  request.clear_fence_set_digest();
  // A pod's namespace comes with a name and cannot hide a '/'.
  request.set_node("node-a");
  attachment->clear_ips();
  attachment->add_ips("10.236.0.5");
  for (const auto& [pod_namespace, pod_name, field] :
       std::vector<std::array<std::string, 3>>{{"shop", "", "attachments[0].pod_name is empty"},
                                               {"sh/op", "cart", "pod_namespace holds a '/'"}}) {
    attachment->set_pod_namespace(pod_namespace);
    attachment->set_pod_name(pod_name);
    grpc::ClientContext context;
    const grpc::Status s = Stub(node_a)->Publish(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find(field), std::string::npos) << s.error_message();
  }
  // podman's CNI backend names a container's pod without a namespace: accepted as it is.
  attachment->set_pod_namespace("");
  attachment->set_pod_name("demo-b");
  grpc::ClientContext named_alone;
  const grpc::Status podman = Stub(node_a)->Publish(&named_alone, request, &response);
  EXPECT_TRUE(podman.ok()) << podman.error_message();
}

// A fence reaches a node over its WatchFenceSet stream, and the node's acknowledgement is what
// the fence's answer waits for: with a 30 s lease the agent publishes every 10 s, and the fence
// and the unfence below answer with no publication in between.
TEST_F(PublicationTest, AFenceIsPushedToEachNodeAndAnswersOnItsAcknowledgement) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.236.0.10", true));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  // Answered once node-a acknowledged, by whichever way: after it, only the stream is left.
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.9.0/24"));

  const uint64_t publications = agent->published();
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.10/32"));
  std::string table;
  testing::Shell("nft list table inet mizarmp_fence", &table);
  EXPECT_NE(table.find("10.236.0.10"), std::string::npos) << "not enforced when it answered:\n"
                                                            << table;
  EXPECT_EQ(agent->published(), publications) << "the fence waited for a publication";
  EXPECT_FALSE(Up("a1"));

  ASSERT_NO_FATAL_FAILURE(Unfence("10.236.0.10/32"));
  table.clear();
  testing::Shell("nft list table inet mizarmp_fence", &table);
  EXPECT_EQ(table.find("10.236.0.10"), std::string::npos) << "still enforced:\n" << table;
  EXPECT_EQ(agent->published(), publications) << "the unfence waited for a publication";
}

// A node agent says it is ready (Probe's "fence set") only once it enforces a fence set the
// controller gave it; restarted while the controller is away, it puts the last one back first,
// and keeps it.
TEST_F(PublicationTest, ANodeAgentIsReadyOnlyOnceItEnforcesTheControllersFenceSet) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.236.0.10", true));
  const auto ready = [](Publisher& agent) {
    const auto checks = agent.readiness_checks();
    EXPECT_EQ(checks.size(), 1u);
    const addons::Readiness r = checks.front().check();
    EXPECT_TRUE(r.error.ok()) << r.error.ToString();
    return r.ready && r.error.ok();
  };
  const std::string nowhere = "tcp://127.0.0.1:1";
  auto stranded = StartPublisher("node-n", nowhere);
  ASSERT_NE(stranded, nullptr);
  EXPECT_FALSE(ready(*stranded)) << "ready without ever hearing which fences stand";
  stranded.reset();

  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  EXPECT_TRUE(WaitUntil([&] { return ready(*agent); }));
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.10/32"));
  agent.reset();

  auto restarted = StartPublisher("node-a", nowhere);
  ASSERT_NE(restarted, nullptr);
  EXPECT_TRUE(WaitUntil([&] { return ready(*restarted); }));
  std::string table;
  testing::Shell("nft list table inet mizarmp_fence", &table);
  EXPECT_NE(table.find("10.236.0.10"), std::string::npos) << "the fence was lifted:\n" << table;
}

// The stream and the acknowledgement as a node agent speaks them, and what they refuse: another
// node's name, a node that never published, a digest that is no fence set's.
TEST_F(PublicationTest, WatchFenceSetAndAcknowledgeSpeakForTheCallersOwnNodeOnly) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  const Pki::KeyPair node_a = pki_.NodeClient("node-a");
  const Pki::KeyPair node_b = pki_.NodeClient("node-b");
  ASSERT_TRUE(pki_.error.empty()) << pki_.error;
  const auto acknowledge = [&](const Pki::KeyPair& certificate, const std::string& node,
                               const std::string& digest) {
    ::mizarmp::v1::AcknowledgeRequest request;
    request.set_node(node);
    request.set_fence_set_digest(digest);
    ::mizarmp::v1::AcknowledgeResponse response;
    grpc::ClientContext context;
    return Stub(certificate)->Acknowledge(&context, request, &response);
  };
  {
    ::mizarmp::v1::WatchFenceSetRequest request;
    request.set_node("node-b");
    grpc::ClientContext context;
    auto reader = Stub(node_a)->WatchFenceSet(&context, request);
    ::mizarmp::v1::FenceSetUpdate update;
    EXPECT_FALSE(reader->Read(&update));
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  }
  grpc::Status s = acknowledge(node_a, "node-b", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  s = acknowledge(node_a, "node-a", "1-ABC\n");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("fence_set_digest"), std::string::npos) << s.error_message();
  s = acknowledge(node_a, "node-a", "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();

  // node-a publishes, so a fence waits for it; its stream brings the set, and its
  // acknowledgement lets the fence answer.
  ::mizarmp::v1::PublishRequest publish;
  publish.set_node("node-a");
  ::mizarmp::v1::PublishResponse published;
  grpc::ClientContext publish_context;
  ASSERT_TRUE(Stub(node_a)->Publish(&publish_context, publish, &published).ok());
  ::mizarmp::v1::WatchFenceSetRequest request;
  request.set_node("node-a");
  request.set_fence_set_digest(published.fence_set_digest());
  grpc::ClientContext watch_context;
  auto reader = Stub(node_a)->WatchFenceSet(&watch_context, request);
  ::mizarmp::v1::FenceSetUpdate update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.fence_set_digest(), published.fence_set_digest());
  EXPECT_EQ(update.fenced_cidrs_size(), 0) << "the node holds this set already";

  std::thread fence([&] { Fence("10.236.0.10/32"); });
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(std::vector<std::string>(update.fenced_cidrs().begin(), update.fenced_cidrs().end()),
            std::vector<std::string>{"10.236.0.10/32"});
  s = acknowledge(node_a, "node-a", update.fence_set_digest());
  EXPECT_TRUE(s.ok()) << s.error_message();
  fence.join();  // answered: node-a acknowledged
  watch_context.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// As NodeRestriction keeps a kubelet to its own Node: a node's certificate publishes for that
// node only. Were another node's empty publication accepted under a dead node's name, the index
// would hold that node as live with nothing on it, and a fence would never find its ports.
TEST_F(PublicationTest, ANodeCannotPublishForAnotherNorHideItsPortsFromAFence) {
  ASSERT_NO_FATAL_FAILURE(StartController(30s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.236.0.10", true));
  auto agent = StartPublisher("node-a");
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(WaitUntil([&] { return agent->published() >= 1; }));
  agent.reset();  // node-a's agent is gone; its lease still runs

  const Pki::KeyPair node_b = pki_.NodeClient("node-b");
  const Pki::KeyPair not_a_node{pki_.client_cert, pki_.client_key};  // CN mizarmp-client
  ASSERT_TRUE(pki_.error.empty()) << pki_.error;
  ::mizarmp::v1::PublishRequest empty_for_a;
  empty_for_a.set_node("node-a");
  for (const auto& [certificate, caller] :
       std::vector<std::pair<Pki::KeyPair, std::string>>{{node_b, "system:node:node-b"},
                                                          {not_a_node, "mizarmp-client"}}) {
    grpc::ClientContext context;
    ::mizarmp::v1::PublishResponse response;
    const grpc::Status s = Stub(certificate)->Publish(&context, empty_for_a, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << caller;
    EXPECT_NE(s.error_message().find("\"" + caller + "\" may not publish for node \"node-a\""),
              std::string::npos)
        << s.error_message();
  }

  // node-a's lease still runs, so the fence is in place at Mizar-MP but waits for node-a to
  // enforce it or lapse: within the caller's deadline it answers which node it waits for.
  auto stub = ::fence::FenceController::NewStub(SocketChannel());
  grpc::ClientContext fence_context;
  fence_context.set_deadline(std::chrono::system_clock::now() + 3s);
  ::fence::FenceClusterNetworkRequest fence;
  fence.add_cidrs()->set_cidr("10.236.0.0/24");
  ::fence::FenceClusterNetworkResponse fenced;
  const grpc::Status waited = stub->FenceClusterNetwork(&fence_context, fence, &fenced);
  EXPECT_EQ(waited.error_code(), grpc::StatusCode::UNAVAILABLE) << waited.error_message();
  EXPECT_NE(waited.error_message().find("do not enforce it yet: node-a"), std::string::npos)
      << waited.error_message();
  EXPECT_FALSE(Up("a1")) << "a refused publication hid node-a's port from the fence";

  // The controller's own unix socket is its operator's (0600 in a 0700 directory).
  grpc::ClientContext context;
  ::mizarmp::v1::PublishRequest for_c;
  for_c.set_node("node-c");
  ::mizarmp::v1::PublishResponse response;
  const grpc::Status s =
      ::mizarmp::v1::PortIndex::NewStub(SocketChannel())->Publish(&context, for_c, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// Two nodes, each a network namespace: node-a holds pod A's address and has no agent (it died);
// node-b runs mizarmp-addons in node mode, publishing to this controller over a link of its own.
// A fence of A's address is enforced by node-b itself: no packet passes between A and node-b
// either way, whatever node-a does, and the unfence restores both directions.
// Two nodes in namespaces of their own, linked: node-a (no agent: the dead node) at its
// addresses, node-b at 10.236.0.20 with an agent publishing to the controller, which it reaches
// at kControllerAddress.
class SurvivingNodeTest : public PublicationTest {
 protected:
  void LinkNodes(const std::vector<std::string>& a_addresses) {
    ASSERT_TRUE(node_a_.ok() && node_b_.ok());
    const std::string tag = std::to_string(::getpid() % 100000);
    const std::string ab = "mzab" + tag, ba = "mzba" + tag, bc = "mzbc" + tag;
    controller_link_ = "mzcb" + tag;
    std::vector<std::string> steps = {
        "ip link add " + ab + " netns " + node_a_.name() + " type veth peer " + ba + " netns " +
            node_b_.name(),
        "ip -n " + node_b_.name() + " addr add 10.236.0.20/24 dev " + ba,
        "ip link add " + controller_link_ + " type veth peer " + bc + " netns " + node_b_.name(),
        std::string("ip addr add ") + kControllerAddress + "/30 dev " + controller_link_,
        "ip -n " + node_b_.name() + " addr add 10.253.0.2/30 dev " + bc,
        "ip link set " + controller_link_ + " up",
        "ip -n " + node_a_.name() + " link set " + ab + " up",
        "ip -n " + node_b_.name() + " link set " + ba + " up",
        "ip -n " + node_b_.name() + " link set " + bc + " up"};
    for (const std::string& address : a_addresses) {
      steps.push_back("ip -n " + node_a_.name() + " addr add " + address + " dev " + ab);
    }
    for (const std::string& step : steps) {
      std::string out;
      ASSERT_EQ(testing::Shell(step, &out), 0) << step << ": " << out;
    }
  }

  void TearDown() override {
    agent_.Stop();
    if (!controller_link_.empty()) testing::Shell("ip link del " + controller_link_ + " 2>/dev/null");
    PublicationTest::TearDown();
  }

  // node-b's agent: mizarmp-addons in node mode in node-b's namespace, publishing every 100 ms.
  void StartNodeBAgent() {
    const Pki::KeyPair own = pki_.NodeClient("node-b");
    ASSERT_TRUE(pki_.error.empty()) << pki_.error;
    const std::string agent_dir = dir_.path() + "/node-b-agent";
    ASSERT_TRUE(MakeDirs(agent_dir + "/cni", 0700).ok());
    agent_log_ = agent_dir + "/addons.log";
    ASSERT_TRUE(agent_.Start(
        {"/usr/sbin/ip", "netns", "exec", node_b_.name(), testing::BinDir() + "/mizarmp-addons",
         "--mode=node", "--endpoint=unix://" + agent_dir + "/run/addons.sock",
         "--key-store-dir=" + agent_dir + "/keys", "--state-dir=" + agent_dir + "/cni",
         "--host-id=node-b",
         "--publish-to=tcp://" + std::string(kControllerAddress) + ":" +
             std::to_string(server_->additional_port()),
         "--publish-ca-file=" + pki_.ca, "--publish-cert-file=" + own.cert,
         "--publish-key-file=" + own.key, "--publish-interval-ms=100"},
        agent_log_));
    ASSERT_TRUE(WaitUntil([&] { return Enforced(0) >= 1; })) << AgentLog();
  }

  std::string AgentLog() const {
    auto text = ReadFile(agent_log_);
    return text.ok() ? *text : std::string("(no log)");
  }
  // The number of times node-b's agent has put a fence set of `count` CIDRs in place.
  size_t Enforced(int count) const {
    const std::string line = "this node enforces " + std::to_string(count) + " fenced CIDR(s)";
    const std::string text = AgentLog();
    size_t n = 0;
    for (size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) ++n;
    return n;
  }

  // A pod of node-b at `ip` whose data plane reaches node-a without crossing node-b's IP
  // hooks, as Open vSwitch's userspace datapath or an XDP data plane carries it: its link goes
  // straight to node-a. The plugin's record of it is in node-b's agent's state dir.
  void AddNodeBPod(const testing::ScopedNetns& pod, const std::string& ip) {
    const std::string tag = ip.substr(ip.rfind('.') + 1) + std::to_string(::getpid() % 10000);
    const std::string pod_end = "mzpb" + tag, node_a_end = "mzap" + tag;
    for (const std::string& step : std::vector<std::string>{
             "ip link add " + pod_end + " netns " + pod.name() + " type veth peer " +
                 node_a_end + " netns " + node_a_.name(),
             "ip -n " + pod.name() + " addr add " + ip + "/24 dev " + pod_end,
             "ip -n " + pod.name() + " link set " + pod_end + " up",
             "ip -n " + node_a_.name() + " link set " + node_a_end + " up",
             "ip -n " + node_a_.name() + " route add " + ip + "/32 dev " + node_a_end}) {
      std::string out;
      ASSERT_EQ(testing::Shell(step, &out), 0) << step << ": " << out;
    }
    const std::string state_dir = dir_.path() + "/node-b-agent/cni";
    ASSERT_TRUE(MakeDirs(state_dir, 0700).ok());
    records::Record record = testing::CompleteRecord("mizarmp", pod.name(), "node-b", {ip + "/24"});
    record.netns = pod.path();
    record.ifname = pod_end;
    const Status written = records::RecordStore(state_dir).Write(record);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }
  static bool PodReaches(const testing::ScopedNetns& pod, const std::string& ip) {
    return pod.Exec("ping -c1 -W1 " + ip + " >/dev/null 2>&1") == 0;
  }
  bool AReaches(const std::string& ip) {
    return node_a_.Exec("ping -c1 -W1 " + ip + " >/dev/null 2>&1") == 0;
  }

  bool BReaches(const std::string& ip) {
    return node_b_.Exec("ping -c1 -W1 " + ip + " >/dev/null 2>&1") == 0;
  }
  bool AReachesB() { return node_a_.Exec("ping -c1 -W1 10.236.0.20 >/dev/null 2>&1") == 0; }

  testing::ScopedNetns node_a_{testing::UniqueName("mzna")};
  testing::ScopedNetns node_b_{testing::UniqueName("mznb")};
  std::string controller_link_;
  testing::Daemon agent_;
  std::string agent_log_;
};

TEST_F(SurvivingNodeTest, ASurvivingNodeCutsOffAFencedPodOfADeadNode) {
  MZ_REQUIRE_NETNS();
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.236.0.10", false));
  ASSERT_NO_FATAL_FAILURE(LinkNodes({"10.236.0.10/24"}));
  ASSERT_TRUE(BReaches("10.236.0.10") && AReachesB());
  ASSERT_NO_FATAL_FAILURE(StartNodeBAgent());

  // In place when it answers: node-b has acknowledged the set that holds the fence, so the very
  // next packet is dropped, with no wait.
  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.10/32"));
  EXPECT_FALSE(Up("a1"));
  EXPECT_GE(Enforced(1), 1u) << AgentLog();
  EXPECT_FALSE(BReaches("10.236.0.10")) << "node-b still reaches the fenced pod";
  EXPECT_FALSE(AReachesB()) << "the fenced pod still reaches node-b";
  // Debian's nftables.service flushes the whole ruleset as it starts: the agent puts it back.
  ASSERT_EQ(node_b_.Exec("nft flush ruleset"), 0);
  EXPECT_TRUE(WaitUntil([&] { return AgentLog().find("the fence set is back") !=
                                     std::string::npos; }))
      << AgentLog();
  EXPECT_FALSE(BReaches("10.236.0.10")) << "a flushed ruleset let node-b reach the fenced pod";

  ASSERT_NO_FATAL_FAILURE(Unfence("10.236.0.10/32"));
  EXPECT_GE(Enforced(0), 2u) << AgentLog();
  EXPECT_TRUE(BReaches("10.236.0.10"));
  EXPECT_TRUE(AReachesB());
  std::string ruleset;
  node_b_.Exec("nft list ruleset", &ruleset);
  EXPECT_EQ(ruleset.find("mizarmp_fence"), std::string::npos) << "the unfence left " << ruleset;
}

// node-b's pod is cut off from the dead node's fenced pod in its own namespace, although its
// traffic never crosses node-b's netfilter; the unfence restores it and leaves nothing there.
TEST_F(SurvivingNodeTest, ASurvivingNodesPodIsCutOffWhateverItsDataPlane) {
  MZ_REQUIRE_NETNS();
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 1h));
  ASSERT_NO_FATAL_FAILURE(AddPort("a1", "node-a", "10.236.0.10", false));
  ASSERT_NO_FATAL_FAILURE(LinkNodes({"10.236.0.10/24"}));
  const testing::ScopedNetns b1(testing::UniqueName("mzpb")), b2(testing::UniqueName("mzpb"));
  ASSERT_NO_FATAL_FAILURE(AddNodeBPod(b1, "10.236.0.30"));
  ASSERT_TRUE(PodReaches(b1, "10.236.0.10") && AReaches("10.236.0.30"));
  ASSERT_NO_FATAL_FAILURE(StartNodeBAgent());

  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.10/32"));
  EXPECT_FALSE(PodReaches(b1, "10.236.0.10")) << "node-b's pod still reaches the fenced pod\n"
                                              << AgentLog();
  EXPECT_FALSE(AReaches("10.236.0.30")) << "the fenced pod still reaches node-b's pod";
  EXPECT_EQ(b1.Exec("sh -c 'ip link show up | grep -q mzpb'"), 0)
      << "an unfenced pod's link was touched";
  // A pod added to node-b while the fence stands is cut off from it once its record is there.
  ASSERT_NO_FATAL_FAILURE(AddNodeBPod(b2, "10.236.0.31"));
  EXPECT_TRUE(WaitUntil([&] { return b2.Exec("nft list table inet mizarmp_fence") == 0; }))
      << AgentLog();
  EXPECT_FALSE(PodReaches(b2, "10.236.0.10")) << "a new pod of node-b reaches the fenced pod";
  EXPECT_FALSE(AReaches("10.236.0.31")) << "the fenced pod reaches a new pod of node-b";

  ASSERT_NO_FATAL_FAILURE(Unfence("10.236.0.10/32"));
  for (const testing::ScopedNetns* pod : {&b1, &b2}) {
    EXPECT_TRUE(PodReaches(*pod, "10.236.0.10")) << pod->name();
    std::string ruleset;
    pod->Exec("nft list ruleset", &ruleset);
    EXPECT_EQ(ruleset.find("mizarmp_fence"), std::string::npos) << "the unfence left " << ruleset;
  }
  EXPECT_TRUE(AReaches("10.236.0.30") && AReaches("10.236.0.31"));
}

// rook fences a failed node's own address (its host-network storage clients): the fence covers
// the pods that node published before it died, as GetFenceClients reports them with the node.
TEST_F(SurvivingNodeTest, AFenceOfADeadNodesAddressCutsOffItsPodsToo) {
  MZ_REQUIRE_NETNS();
  node_addresses_ = {{"node-a", {"10.236.0.1"}}};
  ASSERT_NO_FATAL_FAILURE(StartController(3s, 1h));
  ASSERT_NO_FATAL_FAILURE(LinkNodes({"10.236.0.10/24", "10.236.0.1/24"}));
  ASSERT_NO_FATAL_FAILURE(StartNodeBAgent());
  // node-a's last publication, before it died: its pod at 10.236.0.10.
  ASSERT_TRUE(fences_->Publish("node-a", {{*IpAddress::Parse("10.236.0.10"), "port-a1", "shop/pod-a1"}}, "").ok());
  ASSERT_TRUE(BReaches("10.236.0.10") && BReaches("10.236.0.1") && AReachesB());

  ASSERT_NO_FATAL_FAILURE(Fence("10.236.0.1/32"));
  EXPECT_GE(Enforced(2), 1u) << AgentLog();
  // What `mizarmpctl nodes` shows: node-b enforces the standing set, node-a lapsed without it.
  const ::mizarmp::v1::ListNodesResponse nodes = ListNodes();
  ASSERT_EQ(nodes.nodes_size(), 2) << nodes.DebugString();
  EXPECT_TRUE(nodes.fence_set_digest().starts_with("2-")) << nodes.DebugString();
  EXPECT_EQ(nodes.nodes(0).node(), "node-a");
  EXPECT_FALSE(nodes.nodes(0).live());
  EXPECT_FALSE(nodes.nodes(0).current());
  EXPECT_EQ(nodes.nodes(0).ports(), 1u);
  EXPECT_EQ(nodes.nodes(1).node(), "node-b");
  EXPECT_TRUE(nodes.nodes(1).live());
  EXPECT_TRUE(nodes.nodes(1).current());
  EXPECT_EQ(nodes.nodes(1).fence_set_digest(), nodes.fence_set_digest());
  EXPECT_FALSE(BReaches("10.236.0.1")) << "node-b still reaches the fenced node";
  EXPECT_FALSE(BReaches("10.236.0.10")) << "node-b still reaches the fenced node's pod";
  EXPECT_FALSE(AReachesB()) << "the fenced node's pod still reaches node-b";

  ASSERT_NO_FATAL_FAILURE(Unfence("10.236.0.1/32"));
  EXPECT_GE(Enforced(0), 2u) << AgentLog();
  EXPECT_TRUE(BReaches("10.236.0.1"));
  EXPECT_TRUE(BReaches("10.236.0.10"));
  EXPECT_TRUE(AReachesB());
}

TEST(NodeAttachments, PublishesEveryAddressOfThisNodesRecordsOnce) {
  auto mine = std::make_shared<std::vector<records::Record>>();
  mine->push_back(testing::CompleteRecord("n", "c1", "node-a", {"10.0.0.2/16", "fd00::2/64"}));
  mine->back().pod_namespace = "shop";  // what a runtime's K8S_POD_* arguments recorded
  mine->back().pod_name = "c1";
  mine->push_back(testing::CompleteRecord("n", "c2", "", {"10.0.0.3/16"}));  // no host: ours
  mine->push_back(testing::CompleteRecord("n", "c3", "node-b", {"10.0.0.4/16"}));
  records::Record intent = testing::CompleteRecord("n", "c4", "node-a", {});
  intent.state = records::Record::State::kIntent;  // no address yet: nothing to publish
  mine->push_back(intent);
  const std::vector<records::RecordCache::Records> all = {mine, mine};  // seen twice: once
  const std::vector<AddressedPort> published = NodeAttachments(all, "node-a");
  const std::vector<AddressedPort> want = {{*IpAddress::Parse("10.0.0.2"), "port-c1", "shop/c1"},
                                           {*IpAddress::Parse("10.0.0.3"), "port-c2"},
                                           {*IpAddress::Parse("fd00::2"), "port-c1", "shop/c1"}};
  EXPECT_EQ(published, want);
}

}  // namespace
}  // namespace mizarmp::fence
