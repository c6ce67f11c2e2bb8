// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's journal of port updates (private to mock-server/): every PUT of a port, in the
// order answered, with the admin_state_up it asked for, who sent it (User-Agent) and the HTTP
// status. Tests read it through GET /mock/requests to prove, for example, that no port was
// flipped back and forth by two fence-server replicas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/mutex.h"

namespace mizarmp::mock {

struct PortUpdate {
  uint64_t seq = 0;  // 1, 2, ... in the order recorded; starts again at 1 after Clear()
  std::string port;
  std::optional<bool> admin_state_up;  // what the request asked for; unset when it did not
  std::string user_agent;              // "" without the header
  int status = 0;  // the HTTP status answered; 0 when the connection was closed without one
};

class UpdateJournal {
 public:
  // Keeps the newest `capacity` entries (none for 0); older ones are dropped as new ones come in.
  explicit UpdateJournal(size_t capacity) : capacity_(capacity) {}

  // Appends `update` with the next sequence number. Thread-safe.
  void Record(PortUpdate update);
  // {"updates":[{"seq":1,"port":"..","admin_state_up":false,"user_agent":"..","status":200},
  // ...]} oldest first; admin_state_up is left out where the request did not set it.
  nlohmann::json ToJson() const;
  // Drops every entry; numbering starts again at 1.
  void Clear();

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::deque<PortUpdate> entries_ MZ_GUARDED_BY(mu_);
  uint64_t next_seq_ MZ_GUARDED_BY(mu_) = 1;
};

}  // namespace mizarmp::mock
