// GC: remove every attachment of this network that the runtime no longer lists as valid: first
// the stale records (port, record, lock), then the ports of this network on this host that no
// record knows about (state lost in a crash). Failures are collected, not fatal: GC does what it
// can and reports the rest as code 11 so the runtime calls it again.
#include <set>
#include <utility>
#include <vector>

#include "cni/attachment.h"
#include "cni/command.h"
#include "common/log.h"

namespace mizarmp::cni {

using nlohmann::json;
using records::Record;

namespace {

using Attachments = std::set<std::pair<std::string, std::string>>;  // {containerID, ifname}

// The config's valid attachments ("cni.dev/valid-attachments", or the older
// "cni.dev/attachments"); with neither key nothing is valid.
Result<Attachments> ValidAttachments(const json& raw) {
  Attachments valid;
  for (const char* key : {"cni.dev/valid-attachments", "cni.dev/attachments"}) {
    auto it = raw.find(key);
    if (it == raw.end() || it->is_null()) continue;
    if (!it->is_array()) {
      return InvalidArgumentError(std::string("config key \"") + key + "\" must be an array (got " +
                                  it->type_name() + ")");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& a = (*it)[i];
      if (!a.is_object() || !a.contains("containerID") || !a["containerID"].is_string() ||
          !a.contains("ifname") || !a["ifname"].is_string()) {
        return InvalidArgumentError("config key \"" + std::string(key) + "[" + std::to_string(i) +
                                    "]\" must be an object with string containerID and ifname");
      }
      valid.emplace(a["containerID"].get<std::string>(), a["ifname"].get<std::string>());
    }
  }
  return valid;
}

class GcCommand {
 public:
  explicit GcCommand(Invocation& invocation)
      : inv_(invocation), conf_(invocation.conf()), store_(invocation.store()) {}

  Outcome Run() {
    auto valid = ValidAttachments(conf_.raw);
    if (!valid.ok()) return Fail(InvalidConfig(valid.status().message()));
    for (const auto& [cid, ifname] : *valid) keep_ports_.insert(PortIdFor(conf_.name, cid, ifname));

    auto controller = inv_.Controller();
    if (!controller.ok()) return Fail(controller.status(), Stage::kConfig);
    client_ = *controller;
    if (StepError e = CollectStaleRecords(*valid)) return Fail(std::move(*e));

    auto host = inv_.HostId();
    if (!host.ok()) return Fail(host.status(), Stage::kConfig);
    CollectLeakedPorts(*host);

    if (!failures_.empty()) {
      return Fail(TryAgainLater("GC could not remove " + std::to_string(failures_.size()) +
                                " stale attachment(s): " + Joined(failures_, "; ")));
    }
    return Ok();
  }

 private:
  StepError CollectStaleRecords(const Attachments& valid) {
    auto records = store_.List(conf_.name);
    if (!records.ok()) return FromStatus(records.status(), Stage::kStateDir);
    for (const Record& r : *records) {
      if (valid.count({r.container_id, r.ifname})) {
        keep_ports_.insert(r.port_id);
        continue;
      }
      if (Status s = CollectStale(r); !s.ok()) {
        MZ_LOG(kWarn) << "GC: " << s.message();
        failures_.push_back(s.message());
        keep_ports_.insert(r.port_id);  // not attempted again by CollectLeakedPorts
      }
    }
    return std::nullopt;
  }

  // Deletes one stale attachment: its port, then its record and lock.
  Status CollectStale(const Record& r) {
    MZ_ASSIGN_OR_RETURN(FileLock lock, store_.Lock(conf_.name, r.container_id, r.ifname));
    // It may have changed while we waited for the lock.
    auto now = store_.Read(conf_.name, r.container_id, r.ifname);
    if (!now.ok()) {
      if (now.status().IsNotFound()) return lock.ReleaseAndRemove();
      return now.status();
    }
    MZ_LOG(kInfo) << "GC: removing stale attachment of container " << r.container_id
                  << " interface " << r.ifname << " (port " << now->port_id << ")";
    if (Status s = client_->DeletePort(now->port_id); !s.ok()) {
      return s.WithContext("container " + r.container_id + " interface " + r.ifname +
                           ": deleting port " + now->port_id);
    }
    deleted_.insert(now->port_id);
    MZ_RETURN_IF_ERROR(store_.Remove(conf_.name, r.container_id, r.ifname));
    return lock.ReleaseAndRemove();
  }

  // Ports of this network on this host that neither a valid attachment nor a record accounts
  // for. A controller that cannot list them now is a failure (try again); one that refuses the
  // listing outright only leaves this step out.
  void CollectLeakedPorts(const std::string& host) {
    auto ports = client_->ListPorts({{"binding:host_id", host}});
    if (!ports.ok()) {
      if (IsTryAgainLater(ports.status(), Stage::kController)) {
        failures_.push_back("listing ports of host " + host + ": " + ports.status().message());
      } else {
        MZ_LOG(kWarn) << "GC: cannot list the ports of host " << host << " ("
                      << CodeName(ports.status().code()) << ": " << ports.status().message()
                      << "); only records were collected";
      }
      return;
    }
    for (const client::Port& p : *ports) {
      if (!IsLeaked(p, host)) continue;
      MZ_LOG(kInfo) << "GC: deleting port " << p.id << " (" << p.description
                    << "): no valid attachment";
      if (Status s = client_->DeletePort(p.id); !s.ok()) {
        failures_.push_back("deleting leaked port " + p.id + ": " + s.message());
      }
    }
  }

  // A port this plugin made for this network on `host` (by its description and binding) that is
  // neither kept nor already deleted.
  bool IsLeaked(const client::Port& p, const std::string& host) const {
    if (p.id.empty() || keep_ports_.count(p.id) || deleted_.count(p.id)) return false;
    if (p.description.find("net:" + conf_.name + ",") == std::string::npos ||
        p.description.find("host:" + host + ",") == std::string::npos) {
      return false;
    }
    return p.host_id.empty() || p.host_id == host;
  }

  Invocation& inv_;
  const NetConf& conf_;
  const records::RecordStore& store_;
  client::Client* client_ = nullptr;
  std::set<std::string> keep_ports_;
  std::set<std::string> deleted_;
  std::vector<std::string> failures_;
};

}  // namespace

Outcome CmdGc(Invocation& invocation) { return GcCommand(invocation).Run(); }

}  // namespace mizarmp::cni
