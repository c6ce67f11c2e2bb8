// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/link_cutter.h"

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"
#include "netns/netns.h"

namespace mizarmp::fence {
namespace {

// The state file is ours, but may be damaged: at most this many names of at most 15 bytes
// (IFNAMSIZ - 1) each are read from it.
constexpr size_t kMaxCutLinks = 65536;
constexpr size_t kMaxLinkName = 15;

}  // namespace

Result<std::set<std::string>> LinkCutter::Cut() {
  MZ_RETURN_IF_ERROR(Load());
  return cut_;
}

Status LinkCutter::Load() {
  if (loaded_) return Status::Ok();
  auto text = ReadFile(state_file_);
  if (!text.ok() && !text.status().IsNotFound()) {
    return text.status().WithContext("reading the cut links");
  }
  if (text.ok()) {
    for (const std::string& name : Split(*text, '\n')) {
      if (name.empty()) continue;
      if (name.size() > kMaxLinkName || cut_.size() >= kMaxCutLinks) {
        MZ_LOG(kWarn) << "cut links " << state_file_ << ": skipping \"" << LogEscaped(name) << "\"";
        continue;
      }
      cut_.insert(name);
    }
  }
  loaded_ = true;
  return Status::Ok();
}

Status LinkCutter::Save() const {
  std::string text;
  for (const std::string& name : cut_) text += name + "\n";
  return WriteFileAtomic(state_file_, text, 0600);
}

Status LinkCutter::Apply(const std::set<std::string>& links) {
  MZ_RETURN_IF_ERROR(Load());
  std::set<std::string> cut_now;
  std::set<std::string> restore;
  for (const std::string& l : links) {
    if (!cut_.contains(l)) cut_now.insert(l);
  }
  for (const std::string& l : cut_) {
    if (!links.contains(l)) restore.insert(l);
  }
  if (cut_now.empty() && restore.empty()) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(netns::Netns self, netns::Netns::Current());
  MZ_ASSIGN_OR_RETURN(netns::Netlink nl, netns::Netlink::OpenIn(self));
  Status first;
  for (const std::string& l : cut_now) {
    auto link = nl.GetLink(l);
    if (!link.ok() || !link->up) continue;  // gone, or down for another reason: not ours
    if (Status s = nl.SetUp(l, false); !s.ok()) {
      if (first.ok()) first = s.WithContext("cutting fenced link " + l);
      continue;
    }
    MZ_LOG(kInfo) << "fence: cut link " << l << " (its port is fenced)";
    cut_.insert(l);
  }
  for (const std::string& l : restore) {
    Status s = nl.SetUp(l, true);
    if (!s.ok() && !s.IsNotFound()) {
      if (first.ok()) first = s.WithContext("restoring link " + l);
      continue;
    }
    if (s.ok()) {
      MZ_LOG(kInfo) << "fence: restored link " << l << " (no fence holds its port)";
    }
    cut_.erase(l);
  }
  if (Status s = Save(); !s.ok() && first.ok()) first = s.WithContext("keeping the cut links");
  return first;
}

}  // namespace mizarmp::fence
