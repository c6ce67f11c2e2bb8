// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Attachment records: one JSON file per (network, container, interface) under the state dir,
//   <stateDir>/<network>/<containerId>:<ifname>.json   (dirs 0700, files 0600, atomic writes)
// with a lock file beside it (<same>.lock) that serialises every command on the attachment.
//
// Why ':' separates the two: a CNI container id is [A-Za-z0-9][A-Za-z0-9_.-]* and holds no ':',
// so the first ':' of a name ends the container id, and an interface name holds no '/' (it is
// one path component): every (container, interface) pair gets its own file and lock, and a file
// name names one pair. The previous versions' "<containerId>_<ifname>.json" did not ('_' may
// appear in both: container "a_b" + ifname "c" and container "a" + ifname "b_c" shared one
// file). Records under that legacy name are still read (only when the record inside names the
// attachment asked for) and removed, never written; RecordStore refuses a container id with
// ':' or '/' and an interface name with '/', which keeps the mapping one-to-one.
// ADD writes an "intent" record (port id first) before it asks the controller for anything and
// completes it at the end; DEL and GC remove it. The CSI-Addons fencing server reads them too.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/fileutil.h"
#include "common/status.h"

namespace mizarmp::records {

inline constexpr int kRecordSchema = 1;

struct RecordIp {
  std::string address;  // "10.240.0.5/16"
  std::string gateway;  // may be empty
  friend bool operator==(const RecordIp&, const RecordIp&) = default;
};

// Where ADD plugged the pod into Open vSwitch itself (plug mode "ovs", cni/ovs_plug.h), so that
// DEL and GC unplug it from there whatever the configuration says later. Empty in agent mode.
struct OvsPlug {
  std::string socket;  // ovsdb-server's unix socket
  std::string bridge;  // the integration bridge
  std::string port;    // the OVS port and the veth's host end, both named as Alcor's agent wants
  bool empty() const { return port.empty(); }
  friend bool operator==(const OvsPlug&, const OvsPlug&) = default;
};

struct Record {
  enum class State { kIntent, kComplete };
  int schema = kRecordSchema;
  State state = State::kIntent;
  std::string network;
  std::string container_id;
  std::string ifname;
  std::string netns;
  std::string port_id;
  std::string project_id;
  std::string subnet_id;
  std::string host_id;
  std::string mpurl;
  std::string mac;  // complete records only
  std::vector<RecordIp> ips;
  std::string pod_namespace;
  std::string pod_name;
  std::string created_at;  // RFC 3339 UTC
  OvsPlug ovs;             // written with the intent, before anything is plugged

  bool complete() const { return state == State::kComplete; }
};

nlohmann::json RecordToJson(const Record& record);
// INVALID_ARGUMENT naming the field for a document of the wrong shape or schema.
Result<Record> RecordFromJson(const nlohmann::json& j);

// `at` as "2024-05-01T12:34:56Z" (whole seconds, UTC).
std::string Rfc3339(std::chrono::system_clock::time_point at);
// Now, as Rfc3339 writes it.
std::string NowRfc3339();

// What is on disk for one attachment. A file that is there but is not a valid record (cut-off
// JSON, wrong shape, a schema this build does not read) is kCorrupt, not an error: the plugin
// replaces it, and only a file it cannot read at all is a failure.
struct RecordLookup {
  enum class Kind { kAbsent, kCorrupt, kValid };
  Kind kind = Kind::kAbsent;
  Record record;        // kValid only
  std::string problem;  // kCorrupt only: "attachment record <path>: <what is wrong>"

  bool absent() const { return kind == Kind::kAbsent; }
  bool corrupt() const { return kind == Kind::kCorrupt; }
  bool valid() const { return kind == Kind::kValid; }
};

// Records under one state dir. Methods that take (network, container, ifname) do no locking of
// their own: hold Lock() for the attachment around read-modify-write sequences.
class RecordStore {
 public:
  explicit RecordStore(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  const std::string& state_dir() const { return state_dir_; }

  std::string NetworkDir(std::string_view network) const;
  std::string RecordPath(std::string_view network, std::string_view container_id,
                         std::string_view ifname) const;
  std::string LockPath(std::string_view network, std::string_view container_id,
                       std::string_view ifname) const;
  // Where versions before the ':' naming wrote the record ("<containerId>_<ifname>.json").
  std::string LegacyRecordPath(std::string_view network, std::string_view container_id,
                               std::string_view ifname) const;

  // Creates the network directory (0700) if needed and takes the attachment's lock.
  Result<FileLock> Lock(std::string_view network, std::string_view container_id,
                        std::string_view ifname) const;
  // Whether the attachment has a record, a file that is not one, or nothing. An error only when
  // the file exists but cannot be read. Without a record under its name, a legacy-named record
  // (see above) that names this attachment is returned.
  Result<RecordLookup> Find(std::string_view network, std::string_view container_id,
                            std::string_view ifname) const;
  // The attachment's valid record: NOT_FOUND if there is none, DATA_LOSS (with the problem) if
  // the file is not a valid record, for callers that treat both as "no usable record".
  Result<Record> Read(std::string_view network, std::string_view container_id,
                      std::string_view ifname) const;
  // Atomically (re)writes the record, creating the network directory (0700) if needed, and
  // then removes this attachment's legacy-named record, so one attachment never has two.
  Status Write(const Record& record) const;
  // Removes the record file and this attachment's legacy-named one (absent is success). The
  // caller releases the lock, normally with FileLock::ReleaseAndRemove() so no lock file is
  // left behind.
  Status Remove(std::string_view network, std::string_view container_id,
                std::string_view ifname) const;

  // Removes what interrupted commands left in one network's directory: temp files of atomic
  // writes, and lock files with no record beside them, both only when older than `min_age` (an
  // in-flight command's files are younger) and a lock file only when nobody holds it. Returns
  // the names removed; a file that cannot be removed is logged and left for the next sweep.
  Result<std::vector<std::string>> SweepStale(std::string_view network,
                                              std::chrono::seconds min_age) const;

  // Every readable record of one network / of the whole state dir (a missing directory is an
  // empty list). Lock files, temp files, other files and unreadable records are skipped (and
  // logged), never fatal.
  Result<std::vector<Record>> List(std::string_view network) const;
  Result<std::vector<Record>> ListAll() const;
  // The names of the state dir's entries that may be network directories, sorted (dot entries
  // skipped; whether each is a directory is up to the caller). A missing state dir is empty.
  Result<std::vector<std::string>> ListNetworks() const;

 private:
  Result<RecordLookup> FindPath(const std::string& path) const;
  // The legacy-named record if it is a valid record of this very attachment, else absent.
  Result<RecordLookup> FindLegacy(std::string_view network, std::string_view container_id,
                                  std::string_view ifname) const;
  Status RemoveLegacy(std::string_view network, std::string_view container_id,
                      std::string_view ifname) const;

  std::string state_dir_;
};

}  // namespace mizarmp::records
