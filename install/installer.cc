// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "install/installer.h"

#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cni/config.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::install {
namespace {

using json = nlohmann::json;

// Binaries are executed by the runtime (root) and may be listed by anyone; the configuration
// holds no secret (the plugin reads its token from tokenFile), and runtimes read it as root.
constexpr mode_t kBinaryMode = 0755;
constexpr mode_t kConfMode = 0644;

Status CheckHostId(const std::string& host_id) {
  for (unsigned char c : host_id) {
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgumentError("host id " + LogEscaped(host_id) + " holds a control character");
    }
  }
  return Status::Ok();
}

// Sets hostId of plugin `index` and checks it as the runtime would hand it to the plugin: with
// the list's name and cniVersion (libcni copies both into every plugin's configuration).
Status PreparePlugin(json& plugin, size_t index, const json& list, const std::string& host_id) {
  const std::string where = "plugins[" + std::to_string(index) + "]";
  if (!host_id.empty()) plugin["hostId"] = host_id;
  json as_run = plugin;
  as_run["name"] = list["name"];
  as_run["cniVersion"] = list.value("cniVersion", json("0.1.0"));
  auto parsed = cni::ParseNetConf(as_run);
  if (!parsed.ok()) return parsed.status().WithContext(where);
  return Status::Ok();
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Whether `entry` is a temp file WriteFileAtomic made for one of `names` (".NAME.tmp.PID.N").
bool IsTempOf(const std::string& entry, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
    return entry.rfind("." + name + ".tmp.", 0) == 0;
  });
}

// Removes temp files an install killed half-way left for `names`, once older than kStaleTempAge.
void RemoveStaleTemps(const std::string& dir, const std::vector<std::string>& names) {
  auto entries = ListDir(dir);
  if (!entries.ok()) return;
  const auto now = std::chrono::system_clock::now();
  for (const std::string& entry : *entries) {
    if (!IsTempOf(entry, names)) continue;
    const std::string path = dir + "/" + entry;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto modified = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (now - modified < kStaleTempAge) continue;
    if (Status s = RemoveFileDurable(path); s.ok()) {
      MZ_LOG(kInfo) << "removed " << path << ", left by an install that did not finish";
    } else {
      MZ_LOG(kWarn) << "could not remove " << path << ": " << s.message();
    }
  }
}

}  // namespace

Result<std::string> RenderConflist(std::string_view template_text, const std::string& host_id) {
  MZ_RETURN_IF_ERROR(CheckHostId(host_id));
  MZ_ASSIGN_OR_RETURN(json list, cni::DecodeJson(template_text));
  if (!list.contains("name") || !list["name"].is_string()) {
    return InvalidArgumentError("name: a conflist needs the network's name, a string");
  }
  MZ_RETURN_IF_ERROR(cni::ValidateNetworkName(list["name"].get<std::string>()).WithContext("name"));
  if (!list.contains("plugins") || !list["plugins"].is_array() || list["plugins"].empty()) {
    return InvalidArgumentError("plugins: a conflist needs a non-empty array of plugins");
  }
  size_t ours = 0;
  json& plugins = list["plugins"];
  for (size_t i = 0; i < plugins.size(); ++i) {
    json& plugin = plugins[i];
    if (!plugin.is_object() || !plugin.contains("type") || !plugin["type"].is_string()) {
      return InvalidArgumentError("plugins[" + std::to_string(i) +
                                  "].type: every plugin needs a type, a string");
    }
    if (plugin["type"] != "mizarmp") continue;
    MZ_RETURN_IF_ERROR(PreparePlugin(plugin, i, list, host_id));
    ++ours;
  }
  if (ours == 0) return InvalidArgumentError("plugins: no plugin of type \"mizarmp\"");
  return list.dump(2) + "\n";
}

Result<std::vector<std::string>> InstallBinaries(const std::string& from_dir,
                                                 const std::string& bin_dir) {
  auto entries = ListDir(from_dir);
  if (!entries.ok()) return entries.status().WithContext("listing " + from_dir);
  std::vector<std::string> names;
  for (const std::string& entry : *entries) {
    if (entry.front() != '.' && IsRegularFile(from_dir + "/" + entry)) names.push_back(entry);
  }
  if (names.empty()) return FailedPreconditionError(from_dir + " holds no plugin to install");
  std::sort(names.begin(), names.end());
  RemoveStaleTemps(bin_dir, names);
  for (const std::string& name : names) {
    auto binary = ReadFile(from_dir + "/" + name);
    if (!binary.ok()) return binary.status().WithContext("reading " + from_dir + "/" + name);
    const std::string target = bin_dir + "/" + name;
    MZ_RETURN_IF_ERROR(
        WriteFileAtomic(target, *binary, kBinaryMode).WithContext("installing " + target));
    MZ_LOG(kInfo) << "installed " << target << " (" << binary->size() << " bytes)";
  }
  return names;
}

Status Install(const InstallOptions& options) {
  auto conflist_template = ReadFile(options.conflist_template);
  if (!conflist_template.ok()) {
    return conflist_template.status().WithContext("reading the conflist template");
  }
  auto conflist = RenderConflist(*conflist_template, options.host_id);
  if (!conflist.ok()) return conflist.status().WithContext(options.conflist_template);
  MZ_RETURN_IF_ERROR(InstallBinaries(options.from_dir, options.bin_dir).status());
  const std::string target = options.conf_dir + "/" + options.conf_name;
  MZ_RETURN_IF_ERROR(
      WriteFileAtomic(target, *conflist, kConfMode).WithContext("writing " + target));
  MZ_LOG(kInfo) << "wrote " << target
                << (options.host_id.empty() ? "" : " for host " + options.host_id);
  return Status::Ok();
}

}  // namespace mizarmp::install
