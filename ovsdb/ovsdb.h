// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Open vSwitch's configuration database, spoken as RFC 7047 JSON-RPC over ovsdb-server's unix
// socket: the few operations a node needs on the Open_vSwitch schema
// (/usr/share/openvswitch/vswitch.ovsschema). The plugin plugs a pod's veth into the
// integration bridge with it (Alcor's plug mode), and the mock plays Alcor's host agent with it.
//
// Why the wire protocol rather than Debian's libopenvswitch IDL or ovs-vsctl: the plugin is a
// static binary that must not need OVS's shared libraries, and one transaction over the socket
// costs a fraction of a millisecond where an ovs-vsctl process costs several (DESIGN.md).
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/status.h"
#include "ovsdb/framer.h"

namespace mizarmp::ovsdb {

// Where Debian's openvswitch-switch serves the database.
inline constexpr const char* kDefaultSocket = "/var/run/openvswitch/db.sock";
// The integration bridge of Alcor's agent (alcor-control-agent src/ovs/aca_ovs_l2_programmer.cpp).
inline constexpr const char* kDefaultBridge = "br-int";

// One connection to ovsdb-server. Not thread-safe: one per thread.
class Connection {
 public:
  // UNAVAILABLE naming the socket when nothing answers there (missing, refused, timed out).
  static Result<Connection> Open(const std::string& socket_path, std::chrono::milliseconds timeout);
  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;

  // One "transact" on the Open_vSwitch database: the array of the operations' results.
  // A failed operation ({"error": ...} in the results) is FAILED_PRECONDITION with its error and
  // details; a reply that is not the JSON-RPC answer expected is INTERNAL; no answer within
  // `timeout` (default: the one given to Open) is DEADLINE_EXCEEDED; a broken connection is
  // UNAVAILABLE. ovsdb-server's "echo" requests in between are answered.
  Result<nlohmann::json> Transact(const nlohmann::json& operations,
                                  std::optional<std::chrono::milliseconds> timeout = {});
  // The same, but a failed operation is left in the results as the server put it ({"error":
  // "timed out"} for a "wait" whose rows never matched; a commit failure is an extra element
  // after the operations' results): for callers that tell one failure from another.
  Result<nlohmann::json> TransactRaw(const nlohmann::json& operations,
                                     std::optional<std::chrono::milliseconds> timeout = {});

  // Wakes a Transact blocked in another thread (it fails UNAVAILABLE) and makes every later
  // one fail so: the one method that may be called from another thread, for a waiter that must
  // stop promptly (the mock's agent cancelling a WaitForPort). The descriptor stays open until
  // the Connection is destroyed, so the blocked thread never polls a reused number.
  void Shutdown();

  const std::string& socket_path() const { return socket_path_; }

 private:
  Connection() = default;
  UniqueFd fd_;
  std::string socket_path_;
  std::chrono::milliseconds timeout_{0};
  uint64_t next_id_ = 1;
  Framer framer_;        // bytes read past the last whole message
  bool broken_ = false;  // an earlier I/O or framing error lost the stream
  std::string broken_reason_;

  std::string Where() const;   // "ovsdb-server at SOCKET"
  Status Fail(Status status);  // marks the connection broken, returns `status`
  Status Send(const std::string& text, std::chrono::steady_clock::time_point deadline);
  // The next whole message, reading as needed until `deadline`.
  Result<nlohmann::json> Receive(std::chrono::steady_clock::time_point deadline);
};

// An OVS port as the database holds it (a Port row, its one Interface row, its bridge).
struct PortRow {
  std::string name;
  std::string bridge;      // the bridge whose "ports" hold it; empty if none
  std::optional<int> tag;  // the access VLAN, when set
  std::map<std::string, std::string> external_ids;  // of its Interface
};

// Adds a port named `name` with one interface of that name (the network device of the same name)
// to `bridge`, with `external_ids` on the interface (the keys nova sets: iface-id, attached-mac,
// iface-status). Already on `bridge` is success; on another bridge is FAILED_PRECONDITION; no
// such bridge is NOT_FOUND. One transaction.
Status AddPort(Connection& db, const std::string& bridge, const std::string& name,
               const std::map<std::string, std::string>& external_ids);
// Removes the port named `name` from whichever bridge holds it; absent is success.
Status DeletePort(Connection& db, const std::string& name);
// The port named `name`, or nullopt when there is none.
Result<std::optional<PortRow>> FindPort(Connection& db, const std::string& name);
// Every port on `bridge` but the bridge's own internal one (named as the bridge), as ovs-vsctl
// list-ports shows them, by name (NOT_FOUND if there is no such bridge).
Result<std::vector<PortRow>> ListPorts(Connection& db, const std::string& bridge);
// Whether the database has a bridge named `bridge`.
Result<bool> BridgeExists(Connection& db, const std::string& bridge);
// Sets the port's access VLAN (1..4094, else INVALID_ARGUMENT); NOT_FOUND if no such port.
Status SetTag(Connection& db, const std::string& name, int tag);
// Waits until a port named `name` exists, with an RFC 7047 "wait" operation, so ovsdb-server
// answers as soon as it does: true, or false once `timeout` passed without it.
Result<bool> WaitForPort(Connection& db, const std::string& name,
                         std::chrono::milliseconds timeout);

}  // namespace mizarmp::ovsdb
