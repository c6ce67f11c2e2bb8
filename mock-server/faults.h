// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's fault-injection knobs at run time (private to mock-server/): the Faults document of
// POST /mock/faults and the counters that requests consume.
#pragma once

#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "common/status.h"
#include "mock-server/mock.h"

namespace mizarmp::mock {

// The Faults document, every field present, snake_case as in mock.h.
nlohmann::json FaultsToJson(const Faults& faults);
// Parses a Faults document; absent fields are 0/false. INVALID_ARGUMENT naming the field for an
// unknown one or a value of the wrong type or range.
Result<Faults> FaultsFromJson(const nlohmann::json& j);

// The faults in force, shared by every request thread.
class FaultInjector {
 public:
  explicit FaultInjector(const Faults& initial) : faults_(initial) {}

  // Replaces every fault (and every counter) at once.
  void Set(const Faults& faults);
  Faults Get() const;

  // What happens to the connection of a REST request before it is handled: dropped (one
  // close_connections consumed), or else delayed delay_ms.
  struct ConnectionFault {
    bool drop = false;
    int delay_ms = 0;
  };
  ConnectionFault OnRequest();

  // Whether a counted fault ("the next N ...", e.g. &Faults::fail_creates) fires for this
  // request; when it does, one is consumed.
  bool Take(int Faults::*counter);

 private:
  mutable Mutex mu_;
  Faults faults_ MZ_GUARDED_BY(mu_);
};

}  // namespace mizarmp::mock
