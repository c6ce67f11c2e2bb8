// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "ctl/node.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cni/config.h"
#include "cni/plugin.h"
#include "common/fileutil.h"
#include "common/strings.h"
#include "netns/netns.h"

namespace mizarmp::ctl {
namespace {

using json = nlohmann::json;

// The mizarmp plugin of a conflist, or a single-plugin config, with the list's name and
// cniVersion copied in as libcni does.
Result<json> MizarmpPlugin(const json& doc) {
  if (!doc.contains("plugins")) {
    if (doc.value("type", "") == "mizarmp") return doc;
    return InvalidArgumentError("type: not a mizarmp configuration and not a conflist");
  }
  if (!doc["plugins"].is_array()) return InvalidArgumentError("plugins: not an array");
  for (const json& plugin : doc["plugins"]) {
    if (!plugin.is_object() || plugin.value("type", "") != "mizarmp") continue;
    json conf = plugin;
    conf["name"] = doc.value("name", json());
    conf["cniVersion"] = doc.value("cniVersion", json("0.1.0"));
    return conf;
  }
  return InvalidArgumentError("plugins: no plugin of type \"mizarmp\"");
}

// The port of `record` at Mizar-MP, written into `view`.
void JoinPort(client::Client* mizarmp, const Status& client_error, AttachmentView& view) {
  if (mizarmp == nullptr) {
    view.port_status = "unknown";
    view.port_error = client_error.message();
    return;
  }
  auto port = mizarmp->GetPort(view.record.port_id);
  if (port.ok()) {
    view.port_status = port->status.empty() ? "(no status)" : port->status;
    view.admin_state_up = port->admin_state_up;
  } else if (port.status().IsNotFound()) {
    view.port_status = "missing";
  } else {
    view.port_status = "unknown";
    view.port_error = port.status().message();
  }
}

// The interface of `record` in its namespace, written into `view`.
void JoinInterface(AttachmentView& view) {
  const records::Record& r = view.record;
  view.netns_present = !r.netns.empty() && netns::Netns::Open(r.netns).ok();
  if (!view.netns_present) return;
  auto state = netns::InspectInterface(r.netns, r.ifname);
  if (!state.ok()) {
    view.interface = state.status().IsNotFound() ? "missing" : "unknown";
  } else if (!r.mac.empty() && AsciiLower(r.mac) != state->link.mac) {
    view.interface = "mac differs";
  } else {
    view.interface = state->link.up ? "up" : "down";
  }
}

}  // namespace

Result<NodeSource> ReadNodeSource(const std::string& conflist_path) {
  auto named = [&](const Status& s) { return s.WithContext(conflist_path); };
  auto text = ReadFile(conflist_path);
  if (!text.ok()) return named(text.status());
  auto doc = cni::DecodeJson(*text);
  if (!doc.ok()) return named(doc.status());
  auto plugin = MizarmpPlugin(*doc);
  if (!plugin.ok()) return named(plugin.status());
  auto conf = cni::ParseNetConf(*plugin);
  if (!conf.ok()) return named(conf.status());
  NodeSource source;
  source.conflist = conflist_path;
  source.plugin_conf = plugin->dump();
  source.network = conf->name;
  source.state_dir = conf->state_dir;
  source.mizarmp = cni::ClientConfigFor(*conf);
  return source;
}

Result<std::vector<AttachmentView>> ListAttachments(const NodeSource& source) {
  auto listed = records::RecordStore(source.state_dir).List(source.network);
  if (!listed.ok()) return listed.status().WithContext("reading the records");
  auto created = client::Client::Create(source.mizarmp);
  client::Client* mizarmp = created.ok() ? created->get() : nullptr;
  const Status client_error = created.ok() ? Status::Ok() : created.status();
  std::vector<AttachmentView> views;
  for (records::Record& record : *listed) {
    AttachmentView view;
    view.record = std::move(record);
    JoinPort(mizarmp, client_error, view);
    JoinInterface(view);
    views.push_back(std::move(view));
  }
  return views;
}

std::vector<Removal> RemoveStale(const NodeSource& source,
                                 const std::vector<AttachmentView>& views) {
  std::vector<Removal> out;
  for (const AttachmentView& view : views) {
    if (!view.stale()) continue;
    const records::Record& r = view.record;
    const std::map<std::string, std::string> env = {{"CNI_COMMAND", "DEL"},
                                                    {"CNI_CONTAINERID", r.container_id},
                                                    {"CNI_IFNAME", r.ifname},
                                                    {"CNI_NETNS", r.netns},
                                                    {"CNI_PATH", "/opt/cni/bin"}};
    std::string answer;
    const int code = cni::Run(env, source.plugin_conf, &answer);
    Status status = code == 0 ? Status::Ok()
                              : UnavailableError("the plugin's DEL failed: " + LogEscaped(answer));
    out.push_back(Removal{r, std::move(status)});
  }
  return out;
}

}  // namespace mizarmp::ctl
