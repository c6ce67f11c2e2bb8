// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// GC: remove every attachment of this network that the runtime no longer lists as valid: first
// the stale records (port, record, lock), then the ports of this network on this host that no
// record knows about (state lost in a crash). Failures are collected, not fatal: GC does what it
// can and reports the rest as code 11 so the runtime calls it again.
#include <chrono>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "cni/attachment.h"
#include "cni/command.h"
#include "cni/ovs_plug.h"
#include "common/log.h"

namespace mizarmp::cni {

using nlohmann::json;
using records::Record;

namespace {

using Attachments = std::set<std::pair<std::string, std::string>>;  // {containerID, ifname}

// Temp and lock files younger than this may be an in-flight command's and are never swept (a
// temp file lives milliseconds; a lock file that is held, however old, is never swept either).
constexpr std::chrono::seconds kStaleFileAge{60};

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
    SweepStaleFiles();

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
        MZ_LOG(kWarn) << "GC: " << LogEscaped(s.message());
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
    MZ_LOG(kInfo) << "GC: removing stale attachment of container " << LogEscaped(r.container_id)
                  << " interface " << LogEscaped(r.ifname) << " (port " << LogEscaped(now->port_id)
                  << ")";
    // At the controller the record names, even if the configuration names another one now.
    MZ_ASSIGN_OR_RETURN(client::Client * controller, inv_.ControllerOf(*now));
    MZ_RETURN_IF_ERROR(Unplug(now->ovs, "container " + r.container_id + " interface " + r.ifname));
    if (Status s = controller->DeletePort(now->port_id); !s.ok()) {
      return s.WithContext("container " + r.container_id + " interface " + r.ifname +
                           ": deleting port " + now->port_id);
    }
    deleted_.insert(now->port_id);
    MZ_RETURN_IF_ERROR(store_.Remove(conf_.name, r.container_id, r.ifname));
    return lock.ReleaseAndRemove();
  }

  // What plug mode made for an attachment (nothing in agent mode); `what` names it in errors.
  Status Unplug(const records::OvsPlug& plug, const std::string& what) const {
    return UnplugFromOvs(plug, conf_.request_timeout).WithContext(what);
  }

  // Temp files and lock files that interrupted commands left. Only logged when it fails: the
  // attachments are collected, and the next GC sweeps again.
  void SweepStaleFiles() {
    auto removed = store_.SweepStale(conf_.name, kStaleFileAge);
    if (!removed.ok()) {
      MZ_LOG(kWarn) << "GC: sweeping stale files: " << LogEscaped(removed.status().message());
    } else if (!removed->empty()) {
      MZ_LOG(kInfo) << "GC: removed " << removed->size() << " stale temp/lock file(s)";
    }
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
    for (const client::Port& p : ports->ports) {
      if (!IsLeaked(p, host)) continue;
      if (Status s = DeleteLeakedPort(p); !s.ok()) {
        failures_.push_back("deleting leaked port " + p.id + ": " + s.message());
      }
    }
  }

  // Deletes a port no record accounted for when the records were listed. An ADD may have made it
  // since (it writes its intent record, then creates the port, all under the attachment's
  // lock): so the port's attachment is locked and its record looked for again first, and a port
  // with a record is left alone. A port whose id is not the one its description's attachment
  // derives was not made by an ADD of this network, so no ADD can be making it.
  Status DeleteLeakedPort(const client::Port& p) {
    FileLock lock;
    if (auto attachment = AttachmentOf(p)) {
      MZ_ASSIGN_OR_RETURN(lock, store_.Lock(conf_.name, attachment->first, attachment->second));
      MZ_ASSIGN_OR_RETURN(records::RecordLookup found,
                          store_.Find(conf_.name, attachment->first, attachment->second));
      if (!found.absent()) {
        MZ_LOG(kInfo) << "GC: port " << LogEscaped(p.id) << " has a record now (an ADD made it "
                      << "meanwhile); leaving it";
        return Status::Ok();  // the lock file stays beside the record, as after an ADD
      }
    }
    MZ_LOG(kInfo) << "GC: deleting port " << LogEscaped(p.id) << " (" << LogEscaped(p.description)
                  << "): no valid attachment";
    Status s = Unplug(inv_.PlugWithoutRecord(p.id), "leaked port " + p.id);
    if (s.ok()) s = client_->DeletePort(p.id);
    if (s.ok()) deleted_.insert(p.id);
    if (lock.held()) ReleaseLock(lock);
    return s;
  }

  // The (container id, ifname) an ADD of this network made `p` for, read from its description
  // ("cni <containerId>, ..., if:<ifname>[, pod:...]") and confirmed by the port id derived
  // from them. None when the description names no attachment whose derived id is p.id.
  std::optional<std::pair<std::string, std::string>> AttachmentOf(const client::Port& p) const {
    const std::string& d = p.description;
    if (!d.starts_with("cni ")) return std::nullopt;
    const size_t cid_end = d.find(", ", 4);
    if (cid_end == std::string::npos) return std::nullopt;
    const std::string cid = d.substr(4, cid_end - 4);
    // An ifname has no whitespace: it runs to the next ' ' (then a ',' separator ends it) or to
    // the end. A pod name may hold ", if:" too, so every occurrence is tried.
    for (size_t at = d.find(", if:"); at != std::string::npos; at = d.find(", if:", at + 1)) {
      const size_t start = at + 5;
      const size_t space = d.find(' ', start);
      std::string ifname = d.substr(start, space == std::string::npos ? space : space - start);
      if (space != std::string::npos) {
        if (ifname.empty() || ifname.back() != ',') continue;
        ifname.pop_back();
      }
      if (!ifname.empty() && PortIdFor(conf_.name, cid, ifname) == p.id) {
        return std::make_pair(cid, ifname);
      }
    }
    return std::nullopt;
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
