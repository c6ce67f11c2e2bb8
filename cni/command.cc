// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/command.h"

#include <unistd.h>

#include "cni/attachment.h"
#include "cni/ovs_plug.h"
#include "common/log.h"

namespace mizarmp::cni {

Invocation::Invocation(Env env, NetConf conf, const RunOptions& options)
    : env_(std::move(env)), conf_(std::move(conf)), options_(options), store_(conf_.state_dir) {}

Result<client::Client*> Invocation::Controller() {
  if (!client_) {
    MZ_ASSIGN_OR_RETURN(client_, client::Client::Create(ClientConfigFor(conf_)));
  }
  return client_.get();
}

Result<client::Client*> Invocation::ControllerOf(const records::Record& record) {
  const std::string& project = record.project_id.empty() ? conf_.project : record.project_id;
  if (record.mpurl.empty() || (record.mpurl == conf_.mpurl && project == conf_.project)) {
    return Controller();
  }
  auto& slot = others_[{record.mpurl, project}];
  if (!slot) {
    client::ClientConfig cc = ClientConfigFor(conf_);
    cc.base_url = record.mpurl;
    cc.project_id = project;
    MZ_LOG(kInfo) << "the record of port " << LogEscaped(record.port_id) << " names controller "
                  << LogEscaped(record.mpurl) << " project " << LogEscaped(project)
                  << " (the configuration names " << LogEscaped(conf_.mpurl) << " project "
                  << LogEscaped(conf_.project) << "): using the record's";
    auto made = client::Client::Create(std::move(cc));
    if (!made.ok()) {
      return made.status().WithContext("the controller the record of port " + record.port_id +
                                       " names");
    }
    slot = std::move(made).value();
  }
  return slot.get();
}

records::OvsPlug Invocation::OvsPlugOfConfig(const std::string& port_id) const {
  return records::OvsPlug{conf_.ovsdb_socket, conf_.ovs_bridge, AgentDeviceName(port_id)};
}

Result<records::OvsPlug> Invocation::PlugForAdd() {
  switch (conf_.plug) {
    case PlugMode::kAgent:
      return records::OvsPlug{};
    case PlugMode::kOvs:
      return OvsPlugOfConfig(PortId());
    case PlugMode::kAuto:
      break;
  }
  // Alcor's integration bridge on this node first: a node without it plugs nothing, and asks the
  // controller nothing more. Then the generation, as a controller that lists ports answers like
  // Alcor (and so does the seed's, whose agent places the NIC as v0.1's does: the bridge tells
  // the two apart).
  const records::OvsPlug plug = OvsPlugOfConfig(PortId());
  if (Status bridge = HasOvsBridge(plug, conf_.request_timeout); !bridge.ok()) {
    MZ_LOG(kDebug) << "not plugging: " << bridge.message();
    return records::OvsPlug{};
  }
  MZ_ASSIGN_OR_RETURN(client::Client * controller, Controller());
  MZ_ASSIGN_OR_RETURN(client::Dialect generation, controller->Generation());
  if (generation == client::Dialect::kAlcor) return plug;
  return records::OvsPlug{};
}

records::OvsPlug Invocation::PlugWithoutRecord(const std::string& port_id) const {
  if (conf_.plug == PlugMode::kOvs) return OvsPlugOfConfig(port_id);
  if (conf_.plug == PlugMode::kAuto && ::access(conf_.ovsdb_socket.c_str(), F_OK) == 0) {
    return OvsPlugOfConfig(port_id);
  }
  return records::OvsPlug{};
}

Result<std::string> Invocation::HostId() const {
  return ResolveHostId(conf_, options_.hostid_file);
}

bool Invocation::Cancelled() const {
  return options_.cancelled != nullptr && options_.cancelled->load(std::memory_order_relaxed);
}

std::string Invocation::PortId() const {
  return PortIdFor(conf_.name, env_.container_id, env_.ifname);
}

std::string Invocation::Attachment() const {
  return "container " + env_.container_id + " interface " + env_.ifname + " on network " +
         conf_.name;
}

std::string Invocation::RecordPath() const {
  return store_.RecordPath(conf_.name, env_.container_id, env_.ifname);
}

Result<FileLock> Invocation::LockAttachment() const {
  return store_.Lock(conf_.name, env_.container_id, env_.ifname);
}

Result<records::RecordLookup> Invocation::FindRecord() const {
  return store_.Find(conf_.name, env_.container_id, env_.ifname);
}

Result<records::Record> Invocation::ReadRecord() const {
  return store_.Read(conf_.name, env_.container_id, env_.ifname);
}

Status Invocation::RemoveRecord() const {
  return store_.Remove(conf_.name, env_.container_id, env_.ifname);
}

void ReleaseLock(FileLock& lock) {
  if (Status s = lock.ReleaseAndRemove(); !s.ok()) {
    MZ_LOG(kWarn) << s.message();
  }
}

}  // namespace mizarmp::cni
