// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The ovsdb library against a real ovsdb-server (OvsSandbox, database only), and against
// servers of its own that misbehave: what the plugin and the mock's OVS agent rely on.
#include "ovsdb/ovsdb.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include "tests/support/ovs_sandbox.h"
#include "tests/support/support.h"

namespace mizarmp::ovsdb {
namespace {

using nlohmann::json;
using testing::OvsSandbox;
using testing::OvsSandboxOptions;
using testing::TempDir;
using namespace std::chrono_literals;

class OvsdbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MZ_REQUIRE_OVS();
    sandbox_ = std::make_unique<OvsSandbox>(OvsSandboxOptions{.vswitchd = false});
    ASSERT_EQ(sandbox_->error(), "");
    db_ = Open();
  }

  std::unique_ptr<Connection> Open() {
    auto c = Connection::Open(sandbox_->socket_path(), 10s);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    return std::make_unique<Connection>(std::move(c).value());
  }

  std::string Vsctl(const std::string& args) {
    std::string out;
    EXPECT_EQ(sandbox_->Vsctl(args, &out), 0) << args << ": " << out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  std::unique_ptr<OvsSandbox> sandbox_;
  std::unique_ptr<Connection> db_;
};

TEST_F(OvsdbTest, AddFindListDelete) {
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapa", {{"iface-id", "a"}, {"attached-mac", "m"}}).ok());
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapb", {}).ok());
  auto found = FindPort(*db_, "tapa");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->name, "tapa");
  EXPECT_EQ((*found)->bridge, "br-int");
  EXPECT_FALSE((*found)->tag.has_value());
  EXPECT_EQ((*found)->external_ids,
            (std::map<std::string, std::string>{{"iface-id", "a"}, {"attached-mac", "m"}}));
  // ovs-vsctl reads what the library wrote.
  EXPECT_EQ(Vsctl("list-ports br-int"), "tapa\ntapb");
  EXPECT_EQ(Vsctl("get interface tapa external_ids:iface-id"), "a");

  // The bridge's own internal port is left out, as ovs-vsctl list-ports does.
  auto listed = ListPorts(*db_, "br-int");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, "tapa");
  EXPECT_EQ((*listed)[1].name, "tapb");

  ASSERT_TRUE(DeletePort(*db_, "tapa").ok());
  found = FindPort(*db_, "tapa");
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  // The Interface went with its Port (garbage collection of non-root rows).
  EXPECT_EQ(Vsctl("--columns=name find interface name=tapa"), "");
  EXPECT_EQ(Vsctl("list-ports br-int"), "tapb");
}

TEST_F(OvsdbTest, ListPortsOfMissingBridgeIsNotFound) {
  auto listed = ListPorts(*db_, "br-none");
  EXPECT_TRUE(listed.status().IsNotFound()) << listed.status().ToString();
}

TEST_F(OvsdbTest, BridgeExistsTellsTheBridgeFromOthers) {
  auto found = BridgeExists(*db_, "br-int");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_TRUE(*found);
  found = BridgeExists(*db_, "br-none");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_FALSE(*found);
}

TEST_F(OvsdbTest, AddIsIdempotent) {
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapa", {{"iface-id", "a"}}).ok());
  const Status again = AddPort(*db_, "br-int", "tapa", {{"iface-id", "a"}});
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(Vsctl("list-ports br-int"), "tapa");
}

TEST_F(OvsdbTest, AddOnAnotherBridgeIsRefused) {
  Vsctl("--no-wait add-br br-other");
  ASSERT_TRUE(AddPort(*db_, "br-other", "tapa", {}).ok());
  const Status st = AddPort(*db_, "br-int", "tapa", {});
  EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("br-other"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("br-int"), std::string::npos) << st.ToString();
  EXPECT_EQ(Vsctl("port-to-br tapa"), "br-other");
}

TEST_F(OvsdbTest, AddToMissingBridgeIsNotFoundAndLeavesNoRows) {
  const Status st = AddPort(*db_, "br-none", "tapa", {{"iface-id", "a"}});
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find("br-none"), std::string::npos) << st.ToString();
  EXPECT_EQ(Vsctl("--columns=name find port name=tapa"), "");
  EXPECT_EQ(Vsctl("--columns=name find interface name=tapa"), "");
}

// What AddPort's leading "wait" guards against: a mutate that matches no bridge counts 0 yet
// the transaction commits, and ovsdb-server then drops the inserted rows as unreferenced.
TEST_F(OvsdbTest, MutateOfMissingBridgeCommitsButKeepsNoRows) {
  const json ops = json::array({
      json{{"op", "insert"},
           {"table", "Interface"},
           {"uuid-name", "i"},
           {"row", {{"name", "tapz"}}}},
      json{{"op", "insert"},
           {"table", "Port"},
           {"uuid-name", "p"},
           {"row", {{"name", "tapz"}, {"interfaces", json::array({"named-uuid", "i"})}}}},
      json{{"op", "mutate"},
           {"table", "Bridge"},
           {"where", json::array({json::array({"name", "==", "nope"})})},
           {"mutations",
            json::array({json::array(
                {"ports", "insert",
                 json::array({"set", json::array({json::array({"named-uuid", "p"})})})})})}},
  });
  auto results = db_->Transact(ops);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ((*results)[2]["count"], 0) << results->dump();
  auto found = FindPort(*db_, "tapz");
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(found->has_value());
  EXPECT_EQ(Vsctl("--columns=name find interface name=tapz"), "");
}

// What AddPort's race handling relies on: a second row of an indexed name fails the commit
// with "constraint violation" (and commits nothing).
TEST_F(OvsdbTest, DuplicateNameIsAConstraintViolation) {
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapa", {}).ok());
  const json ops = json::array(
      {json{{"op", "insert"},
            {"table", "Interface"},
            {"uuid-name", "i"},
            {"row", {{"name", "tapa"}}}},
       json{{"op", "insert"},
            {"table", "Port"},
            {"uuid-name", "p"},
            {"row", {{"name", "tapa"}, {"interfaces", json::array({"named-uuid", "i"})}}}},
       json{{"op", "mutate"},
            {"table", "Bridge"},
            {"where", json::array({json::array({"name", "==", "br-int"})})},
            {"mutations",
             json::array({json::array(
                 {"ports", "insert",
                  json::array({"set", json::array({json::array({"named-uuid", "p"})})})})})}}});
  auto raw = db_->TransactRaw(ops);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  bool violation = false;
  for (const json& r : *raw) {
    if (r.is_object() && r.value("error", "") == "constraint violation") violation = true;
  }
  EXPECT_TRUE(violation) << raw->dump();
  EXPECT_EQ(Vsctl("list-ports br-int"), "tapa");
}

TEST_F(OvsdbTest, DeleteAbsentIsOk) {
  const Status st = DeletePort(*db_, "tapnone");
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST_F(OvsdbTest, SetTagReadsBack) {
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapa", {}).ok());
  ASSERT_TRUE(SetTag(*db_, "tapa", 7).ok());
  auto found = FindPort(*db_, "tapa");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->tag, 7);
  EXPECT_EQ(Vsctl("get port tapa tag"), "7");
  Vsctl("--no-wait set port tapa tag=4094");
  found = FindPort(*db_, "tapa");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->tag, 4094);
}

TEST_F(OvsdbTest, SetTagRefusesBadTagsAndMissingPorts) {
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapa", {}).ok());
  EXPECT_TRUE(SetTag(*db_, "tapa", 0).IsInvalidArgument());
  EXPECT_TRUE(SetTag(*db_, "tapa", 4095).IsInvalidArgument());
  const Status st = SetTag(*db_, "tapnone", 5);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
}

TEST_F(OvsdbTest, WaitForPortReturnsWhenAnotherConnectionAddsIt) {
  Result<bool> waited = InternalError("not run");
  // A minute's wait: the test finishing at all shows the server answered on the insert.
  std::thread waiter([&] { waited = WaitForPort(*db_, "tapw", 60s); });
  std::unique_ptr<Connection> other = Open();
  ASSERT_NE(other, nullptr);
  const Status added = AddPort(*other, "br-int", "tapw", {});
  waiter.join();
  ASSERT_TRUE(added.ok()) << added.ToString();
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_TRUE(*waited);
}

TEST_F(OvsdbTest, WaitForPresentPortIsTrue) {
  ASSERT_TRUE(AddPort(*db_, "br-int", "tapa", {}).ok());
  auto waited = WaitForPort(*db_, "tapa", 60s);
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_TRUE(*waited);
}

TEST_F(OvsdbTest, WaitForPortTimesOutFalse) {
  auto waited = WaitForPort(*db_, "tapnone", 200ms);
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_FALSE(*waited);
  // The connection is still good afterwards.
  EXPECT_TRUE(AddPort(*db_, "br-int", "tapa", {}).ok());
}

TEST_F(OvsdbTest, ShutdownWakesAWaiter) {
  Result<bool> waited = true;
  std::thread waiter([&] { waited = WaitForPort(*db_, "tapnone", 60s); });
  // Whether Shutdown comes before the wait is sent or while it blocks, the wait fails at once.
  db_->Shutdown();
  waiter.join();
  EXPECT_EQ(waited.status().code(), Code::kUnavailable) << waited.status().ToString();
}

TEST(OvsdbOpenTest, MissingSocketIsUnavailable) {
  TempDir dir;
  auto c = Connection::Open(dir.path() + "/db.sock", 1s);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable) << c.status().ToString();
  EXPECT_NE(c.status().message().find(dir.path() + "/db.sock"), std::string::npos);
}

// A server of our own on a unix socket: accepts one connection and runs `script` on it.
class FakeServer {
 public:
  explicit FakeServer(std::function<void(int)> script) : path_(dir_.path() + "/db.sock") {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, path_.size());
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listener_, 4), 0);
    thread_ = std::thread([this, script = std::move(script)] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      script(fd);
      ::close(fd);
    });
  }
  ~FakeServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
  int listener_ = -1;
  std::thread thread_;
};

// Reads one request (whatever arrives in one read: the client sends it in one write).
json ReadRequest(int fd) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n <= 0) return json();
  return json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, false);
}

void Write(int fd, const std::string& s) {
  EXPECT_EQ(::write(fd, s.data(), s.size()), (ssize_t)s.size());
}

Result<json> TransactWith(const FakeServer& server, std::chrono::milliseconds timeout = 5s) {
  auto c = Connection::Open(server.path(), timeout);
  if (!c.ok()) return c.status();
  return c->Transact(
      json::array({json{{"op", "select"}, {"table", "Port"}, {"where", json::array()}}}));
}

TEST(OvsdbGarbageTest, NonsenseIsInternal) {
  FakeServer server([](int fd) {
    ReadRequest(fd);
    Write(fd, "HTTP/1.1 400 Bad Request\r\n\r\n");
  });
  auto r = TransactWith(server);
  EXPECT_EQ(r.status().code(), Code::kInternal) << r.status().ToString();
}

TEST(OvsdbGarbageTest, ClosedConnectionIsUnavailable) {
  FakeServer server([](int fd) { ReadRequest(fd); });
  auto r = TransactWith(server);
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find(server.path()), std::string::npos);
}

TEST(OvsdbGarbageTest, TooDeepIsInternal) {
  FakeServer server([](int fd) {
    ReadRequest(fd);
    Write(fd, "{\"id\":1,\"result\":" + std::string(100, '[') + std::string(100, ']') + "}");
  });
  auto r = TransactWith(server);
  EXPECT_EQ(r.status().code(), Code::kInternal) << r.status().ToString();
}

TEST(OvsdbGarbageTest, WrongShapeIsInternal) {
  FakeServer server([](int fd) {
    ReadRequest(fd);
    Write(fd, R"({"id":1,"result":"yes","error":null})");
  });
  auto r = TransactWith(server);
  EXPECT_EQ(r.status().code(), Code::kInternal) << r.status().ToString();
}

TEST(OvsdbGarbageTest, SilenceIsDeadlineExceeded) {
  FakeServer server([](int fd) {
    ReadRequest(fd);
    ReadRequest(fd);  // until the client goes away
  });
  auto r = TransactWith(server, 200ms);
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded) << r.status().ToString();
}

// The server's echo is answered, a stale reply and a notification are skipped, and a reply
// split across writes (strings holding brackets and escaped quotes) is framed whole.
TEST(OvsdbGarbageTest, EchoStaleRepliesAndSplitMessages) {
  json echoed;
  FakeServer server([&echoed](int fd) {
    const json request = ReadRequest(fd);
    Write(fd, R"({"method":"echo","params":["ping"],"id":"echo"})");
    echoed = ReadRequest(fd);
    Write(fd, R"( {"id":99,"result":[],"error":null}{"method":"update","params":[],"id":null})");
    const std::string reply = R"({"id":)" + request["id"].dump() +
                              R"(,"result":[{"rows":[{"name":"a]}\"{["}]}],"error":null})";
    Write(fd, reply.substr(0, 20));
    Write(fd, reply.substr(20));
  });
  auto r = TransactWith(server);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0]["rows"][0]["name"], "a]}\"{[");
  EXPECT_EQ(echoed, (json{{"id", "echo"}, {"result", {"ping"}}, {"error", nullptr}}));
}

}  // namespace
}  // namespace mizarmp::ovsdb
