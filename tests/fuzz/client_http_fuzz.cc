// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Mizar-MP client reading whatever a controller answers: a Client (one per dialect, kept
// alive) against an in-process cpp-httplib server that answers every request with the status and
// body taken from the input.
//
// Input: byte 0 picks the call (GetPort, ListPorts, GetSubnet, DeletePort, UpdatePort,
// CreatePort, CreatePorts), byte 1 the HTTP status (kStatuses), byte 2 the client's dialect;
// the rest is the response body (Content-Type: application/json).
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mizarmp-client/client.h"
#include "tests/support/port_spec.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace client = mizarmp::client;
using mizarmp::fuzz::Require;

constexpr int kStatuses[] = {200, 201, 202, 204, 400, 404, 405, 409, 500, 503};

struct Answer {
  std::mutex mu;
  int status = 200;
  std::string body;
};

Answer* g_answer = nullptr;
std::unique_ptr<client::Client> g_clients[3];

void Serve(const httplib::Request&, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(g_answer->mu);
  res.status = g_answer->status;
  res.set_content(g_answer->body, "application/json");
}

// Starts the server on a free loopback port; returns its base URL.
std::string StartServer() {
  auto* server = new httplib::Server();  // lives for the whole run
  server->set_tcp_nodelay(true);         // no Nagle delay on the small answers: keeps it fast
  server->Get(".*", Serve);
  server->Post(".*", Serve);
  server->Put(".*", Serve);
  server->Delete(".*", Serve);
  const int port = server->bind_to_any_port("127.0.0.1");
  Require(port > 0, "harness could not bind its HTTP server");
  std::thread([server] { server->listen_after_bind(); }).detach();
  while (!server->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return "http://127.0.0.1:" + std::to_string(port);
}

client::PortSpec Spec(const std::string& id) {
  return mizarmp::testing::PortSpecFor(id, "/var/run/netns/fuzz");
}

void Call(client::Client& c, int op) {
  const std::string id = "0b9d0c38-7a6c-4d3a-9f5c-7a1b2c3d4e5f";
  switch (op) {
    case 0:
      (void)c.GetPort(id);
      break;
    case 1: {
      auto list = c.ListPorts({{"binding:host_id", "node-a"}});
      if (list.ok()) {
        for (const auto& port : list->ports) (void)port.state();
      }
      break;
    }
    case 2:
      (void)c.GetSubnet(client::kDefaultSubnetId);
      break;
    case 3:
      (void)c.DeletePort(id);
      break;
    case 4:
      (void)c.UpdatePort(id, nlohmann::json{{"admin_state_up", false}});
      break;
    case 5:
      (void)c.CreatePort(Spec(id));
      break;
    default:
      (void)c.CreatePorts({Spec(id), Spec("1c8e1d49-8b7d-4e4b-8a6d-8b2c3d4e5f60")});
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mizarmp::fuzz::QuietLogs();
  g_answer = new Answer();
  const std::string url = StartServer();
  const client::Dialect dialects[] = {client::Dialect::kAuto, client::Dialect::kV01,
                                      client::Dialect::kAlcor};
  for (int i = 0; i < 3; ++i) {
    client::ClientConfig config;
    config.base_url = url;
    config.dialect = dialects[i];
    config.max_attempts = 1;  // one answer per call: a retry would only see the same body
    config.connect_timeout = std::chrono::milliseconds(1000);
    config.request_timeout = std::chrono::milliseconds(2000);
    auto made = client::Client::Create(config);
    Require(made.ok(), "harness could not create a Client");
    g_clients[i] = std::move(made).value();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int op = data[0] % 7;
  {
    std::lock_guard<std::mutex> lock(g_answer->mu);
    g_answer->status = kStatuses[data[1] % (sizeof(kStatuses) / sizeof(kStatuses[0]))];
    g_answer->body.assign(reinterpret_cast<const char*>(data + 3), size - 3);
  }
  Call(*g_clients[data[2] % 3], op);
  return 0;
}
