// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/link_cutter.h"

#include <map>
#include <optional>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"
#include "netns/netns.h"

namespace mizarmp::fence {
namespace {

// The state file is ours, but may be damaged: at most this many lines are read from it, each a
// name of at most 15 bytes (IFNAMSIZ - 1), then for a pod's link a tab and its namespace's path
// (absolute, at most PATH_MAX bytes).
constexpr size_t kMaxCutLinks = 65536;
constexpr size_t kMaxLinkName = 15;
constexpr size_t kMaxNetnsPath = 4096;

bool Printable(const std::string& s) {
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// A line of the state file, or nullopt when it is not one this cutter writes.
std::optional<CutLink> ParseLine(const std::string& line) {
  const size_t tab = line.find('\t');
  CutLink link{tab == std::string::npos ? "" : line.substr(tab + 1), line.substr(0, tab)};
  const bool named = !link.name.empty() && link.name.size() <= kMaxLinkName && Printable(link.name);
  const bool placed = tab == std::string::npos ||
                      (link.netns.size() <= kMaxNetnsPath && link.netns.rfind('/', 0) == 0 &&
                       Printable(link.netns));
  if (!named || !placed) return std::nullopt;
  return link;
}

std::string Describe(const std::string& netns, const std::string& name) {
  return netns.empty() ? name : name + " in " + netns;
}

}  // namespace

Result<std::set<CutLink>> LinkCutter::Cut() {
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
    for (const std::string& line : Split(*text, '\n')) {
      if (line.empty()) continue;
      const std::optional<CutLink> link = ParseLine(line);
      if (!link || cut_.size() >= kMaxCutLinks) {
        MZ_LOG(kWarn) << "cut links " << state_file_ << ": skipping " << LogEscaped(line);
        continue;
      }
      cut_.insert(*link);
    }
  }
  loaded_ = true;
  return Status::Ok();
}

Status LinkCutter::Save() const {
  std::string text;
  for (const CutLink& l : cut_) text += l.name + (l.netns.empty() ? "" : "\t" + l.netns) + "\n";
  return WriteFileAtomic(state_file_, text, 0600);
}

Status LinkCutter::Apply(const std::set<CutLink>& links) {
  MZ_RETURN_IF_ERROR(Load());
  // By namespace: one netlink socket each.
  std::map<std::string, std::set<std::string>> cut_now, restore;
  for (const CutLink& l : links) {
    if (!cut_.contains(l)) cut_now[l.netns].insert(l.name);
  }
  for (const CutLink& l : cut_) {
    if (!links.contains(l)) restore[l.netns].insert(l.name);
  }
  if (cut_now.empty() && restore.empty()) return Status::Ok();
  Status first;
  for (const auto& [netns, names] : cut_now) {
    if (Status s = SetLinks(netns, names, /*up=*/false); !s.ok() && first.ok()) first = s;
  }
  for (const auto& [netns, names] : restore) {
    if (Status s = SetLinks(netns, names, /*up=*/true); !s.ok() && first.ok()) first = s;
  }
  if (Status s = Save(); !s.ok() && first.ok()) first = s.WithContext("keeping the cut links");
  return first;
}

Status LinkCutter::SetLinks(const std::string& netns, const std::set<std::string>& names,
                            bool up) {
  auto ns = netns.empty() ? netns::Netns::Current() : netns::Netns::Open(netns);
  if (!ns.ok() && ns.status().IsNotFound()) {
    // The pod is gone, its links with it: nothing to cut, nothing left to restore.
    for (const std::string& name : names) cut_.erase(CutLink{netns, name});
    return Status::Ok();
  }
  auto nl = ns.ok() ? netns::Netlink::OpenIn(*ns) : Result<netns::Netlink>(ns.status());
  if (!nl.ok()) return nl.status().WithContext("opening the links of " + Describe(netns, "a pod"));
  Status first;
  for (const std::string& name : names) {
    const std::string what = Describe(netns, name);
    if (!up) {
      auto link = nl->GetLink(name);
      if (!link.ok() || !link->up) continue;  // gone, or down for another reason: not ours
    }
    Status s = nl->SetUp(name, up);
    const bool gone = up && s.IsNotFound();  // a link to restore that is gone is forgotten
    if (!s.ok() && !gone) {
      if (first.ok()) first = s.WithContext((up ? "restoring link " : "cutting fenced link ") + what);
      continue;
    }
    if (s.ok()) {
      MZ_LOG(kInfo) << "fence: " << (up ? "restored" : "cut") << " link " << what
                    << (up ? " (no fence covers its pod)" : " (its pod is fenced)");
    }
    if (up) {
      cut_.erase(CutLink{netns, name});
    } else {
      cut_.insert(CutLink{netns, name});
    }
  }
  return first;
}

}  // namespace mizarmp::fence
