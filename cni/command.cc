#include "cni/command.h"

#include "cni/attachment.h"
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
