// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/registered_nodes.h"

#include "common/log.h"

namespace mizarmp::fence {

Result<RegisteredNodes::Nodes> RegisteredNodes::Current(client::Client& mp) {
  MutexLock lock(mu_);
  if (unsupported_) return nodes_;
  if (nodes_ && Clock::now() < listed_at_ + refresh_) return nodes_;
  auto listed = mp.ListNodes();
  if (listed.ok()) {
    nodes_ = std::make_shared<const std::vector<client::Node>>(std::move(listed).value());
    listed_at_ = Clock::now();
    return nodes_;
  }
  if (listed.status().code() == Code::kUnimplemented) {
    MZ_LOG(kWarn) << "fence: " << listed.status().message()
                  << "; a node whose agent never published is not covered";
    unsupported_ = true;
    nodes_ = std::make_shared<const std::vector<client::Node>>();
    return nodes_;
  }
  if (!nodes_) return listed.status();
  MZ_LOG(kWarn) << "fence: listing the nodes again failed; passes keep the list of "
                << nodes_->size() << " node(s): " << listed.status().message();
  return nodes_;
}

}  // namespace mizarmp::fence
