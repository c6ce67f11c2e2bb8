// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The nodes Mizar-MP knows (Alcor's node manager: client::Client::ListNodes), so that a pass
// through the port index also covers a node whose agent never published: its ports are in no
// index entry and under no lease, yet Alcor admits a port only on a registered node.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

class RegisteredNodes {
 public:
  // Lists again once the last list is `refresh` old: nodes join rarely, and a new one is
  // covered within `refresh` plus a pass.
  explicit RegisteredNodes(std::chrono::seconds refresh) : refresh_(refresh) {}

  // The nodes as of at most `refresh` ago, listed through `mp` when older: the same object
  // until listed again. A controller without a node manager (UNIMPLEMENTED: v0.1) has none, and
  // is asked once. A failed list keeps the last one it replaces (logged); the error only when
  // there is none yet, so that no pass counts as complete without knowing every node.
  using Nodes = std::shared_ptr<const std::vector<client::Node>>;
  Result<Nodes> Current(client::Client& mp) MZ_EXCLUDES(mu_);

 private:
  using Clock = std::chrono::steady_clock;
  const std::chrono::seconds refresh_;
  Mutex mu_;
  Nodes nodes_ MZ_GUARDED_BY(mu_);  // none until listed
  Clock::time_point listed_at_ MZ_GUARDED_BY(mu_);
  bool unsupported_ MZ_GUARDED_BY(mu_) = false;
};

}  // namespace mizarmp::fence
