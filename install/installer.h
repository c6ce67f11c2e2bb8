// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What mizarmp-install does on a node (the init container of the installer DaemonSet): puts the
// CNI plugins into the host's plugin directory and the network configuration into its config
// directory. Every file is written beside its destination and renamed over it, so a runtime
// that is executing the old plugin or reading the old configuration at that moment goes on with
// the old file, the next one sees the new one, and none ever sees a partial file. (Writing into
// a binary that is being executed fails with ETXTBSY; renaming over it replaces only the
// directory entry.)
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace mizarmp::install {

// The conflist file name: "10-" sorts it before most other networks' files, and runtimes that
// take the first file of the directory (containerd, CRI-O) take this one.
inline constexpr const char* kDefaultConfName = "10-mizarmp.conflist";
// Temp files of an install killed half-way are removed by the next install once they are this
// old; a younger one may belong to an install running right now (a DaemonSet rollout).
inline constexpr std::chrono::minutes kStaleTempAge{10};

struct InstallOptions {
  std::string from_dir;           // every regular file in it is installed
  std::string bin_dir;            // the host's CNI plugin directory
  std::string conflist_template;  // a conflist with a plugin of type "mizarmp"
  std::string conf_dir;           // the host's CNI config directory
  std::string conf_name = kDefaultConfName;
  std::string host_id;  // set as every mizarmp plugin's "hostId"; empty: the template's stays
};

// The template with "hostId" of every plugin of type "mizarmp" set to `host_id` (unless empty),
// each such plugin then checked by the plugin's own configuration parser. INVALID_ARGUMENT naming
// the key (`plugins[1].mpurl: ...`) when the text is not a conflist the plugin would accept, has
// no mizarmp plugin, or `host_id` holds a control character.
Result<std::string> RenderConflist(std::string_view template_text, const std::string& host_id);

// Copies every regular file of `from_dir` into `bin_dir` as above, mode 0755, and removes temp
// files of earlier installs older than kStaleTempAge. Returns the names installed, sorted.
// FAILED_PRECONDITION when `from_dir` holds no regular file.
Result<std::vector<std::string>> InstallBinaries(const std::string& from_dir,
                                                 const std::string& bin_dir);

// RenderConflist first (nothing is written when the template is wrong), then the binaries, then
// the conflist: a configuration that names a plugin not yet installed would fail every ADD.
// Errors name the file.
Status Install(const InstallOptions& options);

}  // namespace mizarmp::install
