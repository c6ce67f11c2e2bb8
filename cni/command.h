// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Internal to cni/: what one plugin invocation shares between plugin.cc (which parses and
// dispatches) and the command files (add.cc, del.cc, check.cc, gc.cc, status.cc), one per CNI
// command, like containernetworking/plugins' cmdAdd/cmdDel/... .
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cni/config.h"
#include "cni/env.h"
#include "cni/errors.h"
#include "cni/plugin.h"
#include "common/fileutil.h"
#include "common/status.h"
#include "mizarmp-client/client.h"
#include "records/records.h"

namespace mizarmp::cni {

// What a command produced: its output on success (possibly empty), or the error to print.
struct Outcome {
  std::optional<CniError> error;
  std::string output;
};

inline Outcome Ok(std::string output = {}) { return Outcome{std::nullopt, std::move(output)}; }
inline Outcome Fail(CniError error) { return Outcome{std::move(error), {}}; }
inline Outcome Fail(const Status& status, Stage stage) { return Fail(FromStatus(status, stage)); }

// One step of a command: nothing when it worked, else the error the command prints.
using StepError = std::optional<CniError>;

// The state of one invocation: the CNI environment, the network configuration, the record store
// under its state dir, and the one REST client of the process (made on first use, so commands
// that fail before they need the controller never open a connection).
class Invocation {
 public:
  Invocation(Env env, NetConf conf, const RunOptions& options);

  const Env& env() const { return env_; }
  const NetConf& conf() const { return conf_; }
  const records::RecordStore& store() const { return store_; }

  // The REST client for conf().mpurl; INVALID_ARGUMENT for a client configuration it refuses.
  Result<client::Client*> Controller();
  // The REST client for the controller and project `record` names (the ones its port was made
  // at), with this configuration's TLS, token and timeouts: a port is deleted where it is even
  // after "mpurl" or "project" changed. conf()'s client when the record names no controller
  // (records of old versions) or the same one.
  Result<client::Client*> ControllerOf(const records::Record& record);
  // Where ADD plugs the pod into Open vSwitch (plug mode "ovs"), or an empty OvsPlug when the
  // controller's agent places the NIC. "auto" asks the controller its generation: Alcor's agent
  // places none (cni/ovs_plug.h).
  Result<records::OvsPlug> PlugForAdd();
  // Where this configuration would have plugged port `port_id`, for DEL and GC of an attachment
  // whose record is gone: with "ovs", and with "auto" on a node that has the OVS database; else
  // empty.
  records::OvsPlug PlugWithoutRecord(const std::string& port_id) const;
  // This node's host id: the config's, else the host id file's, else the host name.
  Result<std::string> HostId() const;
  // Whether a signal asked to abandon the command.
  bool Cancelled() const;
  // Whether the process can be asked to abandon the command at all (RunOptions::cancelled).
  bool Cancellable() const { return options_.cancelled != nullptr; }

  // The port id derived from the attachment named by the environment.
  std::string PortId() const;
  // "container <id> interface <ifname> on network <name>", for messages.
  std::string Attachment() const;
  // Where the attachment's record lives.
  std::string RecordPath() const;

  // Takes the attachment's lock, then finds its record (see RecordStore::Find).
  Result<FileLock> LockAttachment() const;
  Result<records::RecordLookup> FindRecord() const;
  // The attachment's valid record: NOT_FOUND if there is none, DATA_LOSS if it is corrupt.
  Result<records::Record> ReadRecord() const;
  // Removes the attachment's record file (absent is success).
  Status RemoveRecord() const;

 private:
  records::OvsPlug OvsPlugOfConfig(const std::string& port_id) const;

  Env env_;
  NetConf conf_;
  const RunOptions& options_;
  records::RecordStore store_;
  std::unique_ptr<client::Client> client_;
  // Clients for other controllers or projects than the configuration's, by (mpurl, project).
  std::map<std::pair<std::string, std::string>, std::unique_ptr<client::Client>> others_;
};

// Releases an attachment's lock and removes its file. A failure is only logged: the lock is
// released either way, and a lock file left behind is taken again by the next command.
void ReleaseLock(FileLock& lock);

// The commands. Each runs with the configuration already parsed and its version checked.
Outcome CmdAdd(Invocation& invocation);
Outcome CmdDel(Invocation& invocation);
Outcome CmdCheck(Invocation& invocation);
Outcome CmdGc(Invocation& invocation);
Outcome CmdStatus(Invocation& invocation);

}  // namespace mizarmp::cni
