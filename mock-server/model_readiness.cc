// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The model's readiness (mock-server/model.h): the timer that brings ports ACTIVE when their
// delay is up, the host agent's plug and unplug of each port's device, and admin_state_up kept
// in step with the agent.
#include "mock-server/model.h"

#include <utility>

#include "common/log.h"

namespace mizarmp::mock {

using Clock = std::chrono::steady_clock;

void Model::TimerLoop() {
  MutexLock lk(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    auto next = now + std::chrono::seconds(1);
    std::vector<std::string> due;
    for (const std::string& id : waiting_) {
      const auto it = ports_.find(id);
      if (it == ports_.end() || it->second.gets < options_.gets_before_ready) continue;
      const PortRecord& r = it->second;
      const auto at = r.created + options_.ready_delay;
      if (at <= now) {
        due.push_back(id);
      } else {
        next = std::min(next, at);
      }
    }
    if (!due.empty() || !unplugs_.empty()) {
      lk.Unlock();
      DrainUnplugs();
      for (const auto& id : due) Activate(id);
      lk.Lock();
      continue;
    }
    lk.WaitUntil(cv_, next, [this]() MZ_REQUIRES(mu_) { return stopping_ || kicked_; });
    kicked_ = false;
  }
}

// Several threads may call this for the same port; only one does the work, the others see the
// port pending (activating) meanwhile.
void Model::Activate(const std::string& id) {
  uint64_t seq = 0;
  const std::optional<PlugRequest> request = BeginActivation(id, &seq);
  if (!request) return;
  if (ovs_) {
    // A worker waits for the port's OVS port, so the timer (and a GET) never block on it.
    // Strict Alcor admits ports of options_.vpc_id only: every port is of that VPC.
    ovs_->Watch(seq, id, options_.vpc_id, [this, id, seq, request = *request](Result<int> vlan) {
      FinishOvsActivation(id, seq, request, vlan);
    });
    // A DELETE between BeginActivation and Watch found no worker to cancel: this one is it.
    bool gone = false;
    {
      MutexLock lk(mu_);
      auto it = ports_.find(id);
      gone = it == ports_.end() || it->second.seq != seq;
    }
    if (gone) ovs_->Cancel(seq);
    return;
  }
  DrainUnplugs();  // the agent's order: what was deleted before goes first
  const Status plugged = agent_->Plug(*request);
  FinishActivation(id, seq, *request, plugged);
}

// Moves a due port to failed or (without the agent) ready at once; with the agent, marks it
// activating, reserves its host-end name and returns what to plug.
std::optional<PlugRequest> Model::BeginActivation(const std::string& id, uint64_t* seq) {
  MutexLock lk(mu_);
  auto it = ports_.find(id);
  if (it == ports_.end() || stopping_) return std::nullopt;
  PortRecord& r = it->second;
  if (!Due(r, Clock::now())) return std::nullopt;
  if (r.fail_ready) {
    r.error = "injected fault: fail_ready";
    SetPhase(r, Phase::kFailed);
    MZ_LOG(kInfo) << "port " << id << " failed (" << r.error << ")";
    return std::nullopt;
  }
  if (!agent_ && !ovs_) {
    SetPhase(r, Phase::kReady);
    MZ_LOG(kDebug) << "port " << id << " ready";
    return std::nullopt;
  }
  SetPhase(r, Phase::kActivating);
  // The OVS port's name is Alcor's rule, not the mock's to choose: nothing to reserve.
  r.host_name = ovs_ ? OvsAgent::PortName(id) : ReserveHostName(id);
  *seq = r.seq;
  return PlugRequest{.port_id = id,
                     .host_name = r.host_name,
                     .netns_path = r.port.network_ns,
                     .veth_name = r.port.veth_name,
                     .mac = r.port.mac_address,
                     .admin_up = r.port.admin_state_up};
}

// Records the agent's result on the port, unless the port was deleted (or reset) while the
// agent worked: then what the agent made is removed again.
void Model::FinishActivation(const std::string& id, uint64_t seq, const PlugRequest& request,
                             const Status& plugged) {
  bool orphan = false;
  bool admin_changed = false;
  {
    MutexLock lk(mu_);
    auto it = ports_.find(id);
    orphan = it == ports_.end() || it->second.seq != seq;
    if (orphan) {
      // A failed Plug left nothing behind but the name.
      if (!plugged.ok()) host_names_.erase(request.host_name);
    } else if (plugged.ok()) {
      PortRecord& r = it->second;
      r.plugged = true;
      SetPhase(r, Phase::kReady);
      // A PUT may have changed admin_state_up while the agent applied the old value.
      admin_changed = r.port.admin_state_up != request.admin_up;
      MZ_LOG(kDebug) << "port " << id << " ready on " << request.host_name;
    } else {
      PortRecord& r = it->second;
      r.error = plugged.message();
      host_names_.erase(r.host_name);
      r.host_name.clear();
      SetPhase(r, Phase::kFailed);
      MZ_LOG(kWarn) << "port " << id << " failed: " << plugged.ToString();
    }
  }
  if (orphan && plugged.ok()) Unplug(request.host_name, "");
  if (admin_changed) (void)SyncAdmin(id);
}

void Model::FinishOvsActivation(const std::string& id, uint64_t seq, const PlugRequest& request,
                                const Result<int>& vlan) {
  if (vlan.ok()) {
    MutexLock lk(mu_);
    auto it = ports_.find(id);
    if (it != ports_.end() && it->second.seq == seq) it->second.vlan = *vlan;
  }
  FinishActivation(id, seq, request, vlan.status());
  // A port created with admin_state_up=false: nothing applied it yet (a veth is plugged down).
  if (vlan.ok() && !request.admin_up) (void)SyncAdmin(id);
}

Status Model::SyncAdmin(const std::string& id) {
  MutexLock serial(admin_mu_);
  std::string host;
  bool up = true;
  {
    MutexLock lk(mu_);
    auto it = ports_.find(id);
    if (it == ports_.end() || !it->second.plugged) return Status::Ok();
    host = it->second.host_name;
    up = it->second.port.admin_state_up;
  }
  Status st = ovs_ ? ovs_->SetAdmin(host, up) : agent_->SetAdmin(host, up);
  if (!st.ok()) {
    MZ_LOG(kWarn) << "port " << id << ": " << st.ToString();
  }
  return st;
}

void Model::UnplugDeleted(const std::string& host_name, const std::string& context) {
  if (!options_.agent_unplugs_later) return Unplug(host_name, context);
  MutexLock lk(mu_);
  unplugs_.push_back(host_name);
  WakeTimer();
}

void Model::DrainUnplugs() {
  MutexLock serial(drain_mu_);
  for (;;) {
    std::string host;
    {
      MutexLock lk(mu_);
      if (unplugs_.empty()) return;
      host = std::move(unplugs_.front());
      unplugs_.pop_front();
      ++unplugging_;
    }
    Unplug(host, "deleted port's " + host + ": ");
    MutexLock lk(mu_);
    --unplugging_;
  }
}

void Model::Unplug(const std::string& host_name, const std::string& context) {
  // The OVS agent unplugs nothing: OVS ports are nova's (aca_ovs_l2_programmer.cpp
  // delete_port).
  Status st = agent_ ? agent_->Unplug(host_name) : Status::Ok();
  if (!st.ok()) {
    MZ_LOG(kWarn) << context << st.ToString();
  }
  MutexLock lk(mu_);
  host_names_.erase(host_name);
}

}  // namespace mizarmp::mock
