// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Mizar-MP resources as the plugin and the addons server see them, independent of the wire
// dialect (v0.1 controller or the later Alcor port manager).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace mizarmp::client {

// The seed's one-box defaults.
inline constexpr const char* kDefaultProjectId = "3dda2801-d675-4688-a63f-dcda8d327f50";
inline constexpr const char* kDefaultVpcId = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038";
inline constexpr const char* kDefaultSubnetId = "a87e0f87-a2d9-44ef-9194-9a62f178594e";

enum class Dialect {
  kAuto,   // accept either on the wire; pick per call where the two differ (bulk create)
  kV01,    // ready "UP"; unknown port -> 200 {"port":null}; bulk as POST ports {"ports":[...]}
  kAlcor,  // ready "ACTIVE"; unknown port -> 404; bulk as POST ports/bulk
};

// "auto", "v0.1", "alcor": the config files' spelling.
const char* DialectName(Dialect dialect);
// The dialect a config file names (also "v01" for v0.1); INVALID_ARGUMENT for another name.
Result<Dialect> ParseDialect(std::string_view name);

struct FixedIp {
  std::string subnet_id;
  std::string ip_address;
  bool operator==(const FixedIp&) const = default;
};

// What the plugin asks for. Serialised with both "network_ns" and "veth_namespace" (the seed
// uses one for single and the other for bulk create) so either controller generation finds it.
struct PortSpec {
  std::string project_id;
  std::string id;    // client-chosen (the plugin's name-based UUID)
  std::string name;  // "k8s_<id>"
  std::string description;
  std::string network_id;  // v0.1 carries the subnet id here
  std::string veth_name;   // the interface name inside the pod (CNI_IFNAME)
  std::string network_ns;  // the pod's netns path (CNI_NETNS)
  std::string host_id;     // binding:host_id
  std::string vnic_type = "normal";
  bool admin_state_up = true;
  bool fast_path = true;
  std::vector<FixedIp> fixed_ips;  // optional: requested addresses
};

enum class PortState { kPending, kReady, kFailed };

struct Port {
  std::string id;
  std::string project_id;
  std::string name;
  std::string description;
  std::string network_id;
  std::string status;  // as the controller spelled it
  std::string mac_address;
  std::string host_id;  // binding:host_id
  std::string veth_name;
  std::string network_ns;
  // "network:router_interface" and the like for the ports the network itself owns (Alcor's
  // subnet and route managers make them), which a fence never touches.
  std::string device_owner;
  bool admin_state_up = true;
  std::vector<FixedIp> fixed_ips;

  // Whether the network owns the port (device_owner "network:..."): not a workload's.
  bool network_owned() const { return device_owner.starts_with("network:"); }
  // UP / ACTIVE (any case) -> ready; failed / ERROR -> failed; anything else -> pending.
  PortState state() const;
  bool operator==(const Port&) const = default;
};

// A port list as read from the controller: the ports that parsed, and one line per entry that
// did not ("ports[3]: port.fixed_ips is not an array").
struct PortList {
  std::vector<Port> ports;
  std::vector<std::string> unreadable;
  bool operator==(const PortList&) const = default;
};

struct Subnet {
  std::string id;
  std::string project_id;
  std::string network_id;
  std::string cidr;        // "10.240.0.0/16"
  std::string gateway_ip;  // may be empty: no default route then
  int ip_version = 4;
};

// A node Alcor's node manager knows. Its ports name it in binding:host_id by one of the two
// (NodeProcessor matches node_name; FetchNodeRequest looks up node_id).
struct Node {
  std::string id;
  std::string name;
  friend bool operator==(const Node&, const Node&) = default;
};

// JSON <-> structs. FromJson accepts both dialects and fails with INTERNAL naming the field
// for a document that has the wrong shape ("port.fixed_ips[0].ip_address is not a string").
nlohmann::json PortSpecToJson(const PortSpec& spec);
Result<Port> PortFromJson(const nlohmann::json& j);
nlohmann::json PortToJson(const Port& port);
Result<Subnet> SubnetFromJson(const nlohmann::json& j);
// The nodes of Alcor's GET /nodes answer, {"nodeInfos":[{"node_id","node_name",...}]}
// (web/entity/node/NodesWebJson.java, NodeInfo.java); null or no "nodeInfos" is none. `j` is an
// object; INTERNAL naming the field of a malformed answer.
Result<std::vector<Node>> NodesFromJson(const nlohmann::json& j);
nlohmann::json SubnetToJson(const Subnet& subnet);

}  // namespace mizarmp::client
