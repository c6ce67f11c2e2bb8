// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's own cut of fenced pods' data plane, where Mizar-MP's agent makes none: Alcor's host
// agent does not act on admin_state_up=false (DESIGN.md, "Plug mode"), and a v0.1 port update
// never reaches a host, so on a live fenced node a fenced pod would keep its traffic. The node
// agent sets a link of each of its pods inside a fence down, before it acknowledges the fence
// set, and up again once no fence covers the pod:
//   - plug mode: the pod veth's host end (the record's `ovs.port`, tap<id>), which the plugin made;
//   - agent mode: the pod's own interface (the record's ifname) in the pod's network namespace
//     (the record's netns), since Mizar-MP's agent made the host side.
//
// A fence never touches what it was not asked to: only a link this cutter set down is ever set
// up again, and a link already down when its pod was fenced is left as it is. What it cut is
// kept in a 0600 file, so an agent restarted while a fence stood restores the link after the
// unfence all the same. A namespace that is gone takes its links with it: they are forgotten.
#pragma once

#include <set>
#include <string>

#include "common/status.h"

namespace mizarmp::fence {

// A link: its name in the network namespace at `netns` (a bind-mounted netns file or
// /proc/PID/ns/net, as the runtime gave the plugin), or in the agent's own when `netns` is empty.
struct CutLink {
  std::string netns;
  std::string name;
  friend auto operator<=>(const CutLink&, const CutLink&) = default;
};

class LinkCutter {
 public:
  // `state_file`: where the cut links are kept (absolute).
  explicit LinkCutter(std::string state_file) : state_file_(std::move(state_file)) {}

  // Makes `links` the cut ones: each one newly listed is set down, each one cut before and no
  // longer listed is set up again. A link or namespace that is gone is forgotten. Errors name
  // the link; what succeeded is kept.
  Status Apply(const std::set<CutLink>& links);

  // The links this cutter holds down (read from the state file on first use).
  Result<std::set<CutLink>> Cut();

 private:
  Status Load();
  Status Save() const;
  // Cuts (`up` false) or restores `names` in the namespace at `netns`; updates cut_.
  Status SetLinks(const std::string& netns, const std::set<std::string>& names, bool up);

  const std::string state_file_;
  bool loaded_ = false;
  std::set<CutLink> cut_;
};

}  // namespace mizarmp::fence
