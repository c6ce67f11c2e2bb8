// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The strict modes of the mock (private to mock-server/): the REST surface of each real
// controller generation as its code behaves, not as the seed's README describes it.
//
//   v0.1  futurewei-cloud/alcor@5ca01ef0, src/com/futurewei/alcor/controller/
//         (web/PortController.java, web/SubnetController.java, web/util/RestPreconditions.java,
//         web/util/ControllerUtil.java, model/PortState.java)
//   Alcor futurewei-cloud/alcor@21f11b5c, services/port_manager, services/subnet_manager,
//         services/api_gateway, web/ (entity/port/PortEntity.java,
//         json/filter/JacksonJsonFilter.java), lib/.../db/ignite/IgniteClientDbCache.java
//
// The controller keeps each port's document as the real one stores it (v0.1: its Redis record;
// Alcor: its PortEntity) and answers from it. The model (model.h) still allocates the addresses
// and MACs and plays the host agent, so the plugin's netns tests run against these modes too.
// Each rule below names where it comes from; what the mock does differently says so.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "mock-server/mock.h"
#include "mock-server/model.h"

namespace mizarmp::mock {

// One answer of a strict route.
struct StrictReply {
  int status = 200;
  nlohmann::json body;
  bool empty_body = false;  // Alcor's DELETE and 401 answer nothing at all
};

// A Spring Boot error body, as both generations answer an exception:
// {"timestamp", "status", "error", "message", "path"}.
StrictReply SpringError(int status, const std::string& message, const std::string& path);

class StrictController {
 public:
  StrictController(const Options& options, Model& model);

  // POST /project/{p}/ports ({"port":{...}}), and Alcor's POST .../ports/bulk ({"ports":[...]}).
  StrictReply Create(const std::string& project, const nlohmann::json& body, bool bulk,
                     const Faults& faults, const std::string& path);
  // v0.1's POST /project/{p}/portgroup ({"portStates":[...]}).
  StrictReply CreateGroup(const std::string& path);
  StrictReply Get(const std::string& id, const std::multimap<std::string, std::string>& query,
                  const std::string& path);
  // Alcor's GET /project/{p}/ports?k=v&fields=f (the project is not a filter).
  StrictReply List(const std::multimap<std::string, std::string>& query, const std::string& path);
  // v0.1's GET /project/{p}/subnet/{s}/ports.
  StrictReply ListOfSubnet(const std::string& project, const std::string& subnet);
  StrictReply Update(const std::string& project, const std::string& id, const nlohmann::json& body,
                     const std::string& path);
  StrictReply Delete(const std::string& project, const std::string& id, const std::string& path);
  StrictReply GetSubnet(const std::string& id) const;
  // Alcor's node manager, GET /nodes: every node a port has been bound to.
  StrictReply Nodes() const;

  size_t leaked_addresses() const;  // addresses an overwriting POST left allocated (Alcor)
  void Clear();                     // /mock/reset

 private:
  bool alcor() const { return options_.dialect == Dialect::kAlcor; }
  StrictReply CreateV01(const std::string& project, const nlohmann::json& body,
                        const Faults& faults, const std::string& path);
  // One Alcor port of a create request into *stored; an error reply, or status 0.
  StrictReply CreateAlcor(const std::string& project, const nlohmann::json& item,
                          const Faults& faults, const std::string& path, nlohmann::json* stored);
  StrictReply UpdateV01(const std::string& project, const std::string& id,
                        const nlohmann::json& body, const std::string& path);
  StrictReply UpdateAlcor(const std::string& id, const nlohmann::json& body,
                          const std::string& path);
  // Creates the port in the model (addresses, MAC, the agent's work): the model's view of
  // `port` with the model's own project and network, as the real controllers do not check
  // them against the model's one subnet.
  Result<nlohmann::json> Allocate(const nlohmann::json& port, const Faults& faults);
  // Drops the port from the model (its veth, and its addresses unless `leak`) and the store.
  void Forget(const std::string& id, bool leak) MZ_REQUIRES(mu_);
  // The stored document with what only the model knows (Alcor's status) filled in.
  nlohmann::json Current(const std::string& id, nlohmann::json document);

  const Options options_;
  Model& model_;
  mutable Mutex mu_;
  std::map<std::string, nlohmann::json> documents_ MZ_GUARDED_BY(mu_);  // by port id
  std::vector<std::string> order_ MZ_GUARDED_BY(mu_);  // port ids in creation order
  size_t leaked_ MZ_GUARDED_BY(mu_) = 0;
  std::set<std::string> nodes_ MZ_GUARDED_BY(mu_);  // Alcor: the node manager's nodes
};

}  // namespace mizarmp::mock
