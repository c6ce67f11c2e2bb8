// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/journal.h"

#include <utility>

namespace mizarmp::mock {

void UpdateJournal::Record(PortUpdate update) {
  MutexLock lk(mu_);
  update.seq = next_seq_++;
  entries_.push_back(std::move(update));
  if (entries_.size() > capacity_) entries_.pop_front();
}

nlohmann::json UpdateJournal::ToJson() const {
  nlohmann::json updates = nlohmann::json::array();
  MutexLock lk(mu_);
  for (const PortUpdate& u : entries_) {
    nlohmann::json entry = {
        {"seq", u.seq}, {"port", u.port}, {"user_agent", u.user_agent}, {"status", u.status}};
    if (u.admin_state_up.has_value()) entry["admin_state_up"] = *u.admin_state_up;
    updates.push_back(std::move(entry));
  }
  return nlohmann::json{{"updates", std::move(updates)}};
}

void UpdateJournal::Clear() {
  MutexLock lk(mu_);
  entries_.clear();
  next_seq_ = 1;
}

}  // namespace mizarmp::mock
