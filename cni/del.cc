// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// DEL: unplug the pod from Open vSwitch in plug mode, delete the attachment's port at the
// controller, then its record and lock. Idempotent: an attachment with no record still has its
// derived port (and OVS port and veth) deleted, as a crashed ADD may have made them, and what is
// already gone is success.
#include "cni/command.h"
#include "cni/ovs_plug.h"
#include "common/log.h"

namespace mizarmp::cni {

namespace {

// Which port DEL deletes (and where), and whether the record found is this attachment's to
// remove.
struct Target {
  std::string port_id;
  const records::Record* record = nullptr;  // the attachment's valid record: its controller
  bool owns_record = false;
  bool no_record = false;  // nothing at the record path at all
};

Target TargetOf(const Invocation& inv, const records::RecordLookup& found) {
  Target t;
  t.port_id = inv.PortId();
  if (found.absent()) {
    t.no_record = true;
  } else if (found.corrupt()) {
    MZ_LOG(kWarn) << found.problem << "; deleting the derived port " << t.port_id;
    t.owns_record = true;
  } else if (found.record.container_id == inv.env().container_id &&
             found.record.ifname == inv.env().ifname) {
    t.owns_record = true;
    t.port_id = found.record.port_id;
    t.record = &found.record;
  } else {
    MZ_LOG(kWarn) << "record " << inv.RecordPath() << " belongs to container "
                  << LogEscaped(found.record.container_id) << " interface "
                  << LogEscaped(found.record.ifname) << "; leaving it";
  }
  return t;
}

}  // namespace

Outcome CmdDel(Invocation& inv) {
  auto controller = inv.Controller();
  if (!controller.ok()) return Fail(controller.status(), Stage::kConfig);
  auto lock = inv.LockAttachment();
  if (!lock.ok()) return Fail(lock.status(), Stage::kStateDir);
  auto found = inv.FindRecord();
  if (!found.ok()) return Fail(found.status(), Stage::kStateDir);
  const Target target = TargetOf(inv, *found);
  // The port is deleted at the controller the record names, even if the config changed since.
  if (target.record != nullptr) controller = inv.ControllerOf(*target.record);
  if (!controller.ok()) {
    return Fail(FromStatus(controller.status(), Stage::kConfig)
                    .WithNote("record " + inv.RecordPath() + " kept for a retry"));
  }

  const records::OvsPlug plug =
      target.record != nullptr ? target.record->ovs : inv.PlugWithoutRecord(target.port_id);
  if (Status s = UnplugFromOvs(plug, inv.conf().request_timeout); !s.ok()) {
    CniError e = FromStatus(s, Stage::kNetns);
    if (target.owns_record) e = e.WithNote("record " + inv.RecordPath() + " kept for a retry");
    return Fail(std::move(e));
  }
  if (Status s = (*controller)->DeletePort(target.port_id); !s.ok()) {
    CniError e = FromStatus(s.WithContext("deleting port " + target.port_id), Stage::kController);
    if (target.owns_record) e = e.WithNote("record " + inv.RecordPath() + " kept for a retry");
    return Fail(std::move(e));
  }
  if (target.owns_record) {
    if (Status s = inv.RemoveRecord(); !s.ok()) return Fail(s, Stage::kStateDir);
  }
  // Someone else's record keeps its lock file; otherwise none is left behind.
  if (target.owns_record || target.no_record) ReleaseLock(*lock);
  MZ_LOG(kInfo) << "deleted port " << target.port_id;
  return Ok();
}

}  // namespace mizarmp::cni
