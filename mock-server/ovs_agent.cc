// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/ovs_agent.h"

#include <vector>

#include "common/log.h"

namespace mizarmp::mock {

namespace {

// How long opening a connection to ovsdb-server may take (a local unix socket: instant, or
// nothing is there).
constexpr std::chrono::milliseconds kConnectTimeout{5000};

}  // namespace

Result<int> VlanAllocator::For(const std::string& vpc_id) {
  MutexLock lk(mu_);
  if (auto it = vlans_.find(vpc_id); it != vlans_.end()) return it->second;
  // aca_set_port_vlan_workitem refuses 0 and 4095 and up.
  if (next_ > 4094) {
    return Status(Code::kResourceExhausted, "agent: no VLAN left for VPC " + vpc_id);
  }
  vlans_[vpc_id] = next_;
  return next_++;
}

std::string OvsAgent::PortName(const std::string& port_id) {
  // aca_util.h: TAP_PREFIX "tap", PORT_NAME_LEN 14.
  return ("tap" + port_id).substr(0, 14);
}

Result<std::unique_ptr<OvsAgent>> OvsAgent::Create(const std::string& ovsdb_socket,
                                                   const std::string& bridge) {
  if (ovsdb_socket.empty()) return InvalidArgumentError("agent: the ovsdb socket path is empty");
  if (bridge.empty()) return InvalidArgumentError("agent: the OVS bridge name is empty");
  std::unique_ptr<OvsAgent> a(new OvsAgent());
  a->socket_ = ovsdb_socket;
  a->bridge_ = bridge;
  return a;
}

OvsAgent::~OvsAgent() { Stop(); }

Status OvsAgent::Start() {
  auto db = ovsdb::Connection::Open(socket_, kConnectTimeout);
  if (!db.ok()) return db.status().WithContext("agent");
  auto ports = ovsdb::ListPorts(*db, bridge_);
  if (!ports.ok()) return ports.status().WithContext("agent");
  MZ_LOG(kInfo) << "agent: OVS bridge " << bridge_ << " at " << socket_ << " (" << ports->size()
                << " ports), admin state recorded only";
  MutexLock lk(mu_);
  stopping_ = false;
  return Status::Ok();
}

void OvsAgent::Stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  CancelAll();
}

void OvsAgent::Watch(uint64_t key, const std::string& port_id, const std::string& vpc_id,
                     Done done) {
  Reap();
  MutexLock lk(mu_);
  if (stopping_ || workers_.count(key) != 0) return;
  auto worker = std::make_unique<Worker>();
  Worker* w = worker.get();
  // The thread starts under mu_, so it finds itself in workers_ before it can finish.
  w->thread = std::thread(&OvsAgent::Run, this, w, port_id, vpc_id, std::move(done));
  workers_.emplace(key, std::move(worker));
}

void OvsAgent::Cancel(uint64_t key) {
  std::unique_ptr<Worker> worker;
  {
    MutexLock lk(mu_);
    auto it = workers_.find(key);
    if (it == workers_.end()) return;
    worker = std::move(it->second);
    workers_.erase(it);
    worker->cancelled = true;
    // Wakes the worker out of its "wait": its transaction fails, and it sees `cancelled`.
    if (worker->connection != nullptr) worker->connection->Shutdown();
  }
  worker->thread.join();
}

void OvsAgent::CancelAll() {
  std::vector<uint64_t> keys;
  {
    MutexLock lk(mu_);
    for (const auto& [key, w] : workers_) keys.push_back(key);
  }
  for (uint64_t key : keys) Cancel(key);
}

size_t OvsAgent::waiting() const {
  MutexLock lk(mu_);
  size_t n = 0;
  for (const auto& [key, w] : workers_) n += w->finished ? 0 : 1;
  return n;
}

void OvsAgent::Reap() {
  std::vector<std::unique_ptr<Worker>> done;
  {
    MutexLock lk(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->second->finished) {
        done.push_back(std::move(it->second));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : done) w->thread.join();
}

void OvsAgent::Run(Worker* w, std::string port_id, std::string vpc_id, Done done) {
  const std::string name = PortName(port_id);
  const std::string what = "agent: port " + port_id + " (OVS port " + name + ")";
  auto cancelled = [&] {
    MutexLock lk(mu_);
    return w->cancelled;
  };
  auto finish = [&] {
    MutexLock lk(mu_);
    w->connection = nullptr;
    w->finished = true;
  };
  auto db = ovsdb::Connection::Open(socket_, kConnectTimeout);
  if (!db.ok()) {
    if (!cancelled()) done(db.status().WithContext(what));
    return finish();
  }
  {
    MutexLock lk(mu_);
    if (w->cancelled) {
      w->finished = true;
      return;
    }
    w->connection = &*db;
  }
  auto found = ovsdb::WaitForPort(*db, name, kPortWait);
  if (cancelled()) return finish();  // the port was deleted: nothing is done
  if (!found.ok()) {
    done(found.status().WithContext(what));
    return finish();
  }
  if (!*found) {
    // aca_set_port_vlan_workitem logs and gives up; nothing tells the controller (its "TODO:
    // provide the result back to DPM"), so the port stays as it was.
    MZ_LOG(kWarn) << what << ": not able to set the VLAN tag even after waiting "
                  << kPortWait.count() / 1000 << " s";
    return finish();
  }
  auto vlan = vlans_.For(vpc_id);
  Status tagged = vlan.ok() ? ovsdb::SetTag(*db, name, *vlan) : vlan.status();
  if (cancelled()) return finish();
  if (tagged.ok()) {
    MZ_LOG(kInfo) << what << ": tag " << *vlan << " (VPC " << vpc_id << ") on bridge " << bridge_;
    done(*vlan);
  } else {
    done(tagged.WithContext(what));
  }
  finish();
}

Status OvsAgent::SetAdmin(const std::string& port_name, bool up) {
  // aca_dataplane_ovs.cpp: "TODO: handle admin_state_up = false".
  MZ_LOG(kInfo) << "agent: " << port_name << " admin_state_up=" << (up ? "true" : "false")
                << " recorded, not enforced (as the real agent)";
  return Status::Ok();
}

}  // namespace mizarmp::mock
