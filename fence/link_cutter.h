// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's own cut of fenced pods' data plane, where Mizar-MP's agent makes none: Alcor's host
// agent does not act on admin_state_up=false (DESIGN.md, "Plug mode"), so on an Alcor node a
// fenced port would keep its traffic. In plug mode the plugin made the pod's veth, and its host
// end (the record's `ovs.port`, tap<id>) is what the node agent sets down while a fence holds
// the port, and up again once none does.
//
// A fence never touches what it was not asked to: only a link this cutter set down is ever set
// up again, and a link already down when its port was fenced is left as it is. What it cut is
// kept in a 0600 file, so an agent restarted while a fence stood restores the link after the
// unfence all the same.
#pragma once

#include <set>
#include <string>

#include "common/status.h"

namespace mizarmp::fence {

class LinkCutter {
 public:
  // `state_file`: where the cut links are kept (absolute).
  explicit LinkCutter(std::string state_file) : state_file_(std::move(state_file)) {}

  // Makes `links` (host link names in this network namespace) the cut ones: each one newly
  // listed is set down, each one cut before and no longer listed is set up again. A link that is
  // gone is forgotten. Errors name the link; what succeeded is kept.
  Status Apply(const std::set<std::string>& links);

  // The links this cutter holds down (read from the state file on first use).
  Result<std::set<std::string>> Cut();

 private:
  Status Load();
  Status Save() const;

  const std::string state_file_;
  bool loaded_ = false;
  std::set<std::string> cut_;
};

}  // namespace mizarmp::fence
