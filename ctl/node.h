// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What `mizarmpctl` shows and does on a node: the plugin's attachment records joined with the
// port each names at Mizar-MP and the interface in the pod's namespace, and the removal of
// attachments whose pod is gone.
//
// Everything comes from the conflist the runtime hands the plugin: the mizarmp plugin's network
// name, state dir and Mizar-MP settings (URL, project, TLS, token file) are read with the plugin's
// own parser, so the tool sees exactly what the plugin sees.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "mizarmp-client/client.h"
#include "records/records.h"

namespace mizarmp::ctl {

inline constexpr const char* kDefaultConflist = "/etc/cni/net.d/10-mizarmp.conflist";

struct NodeSource {
  std::string conflist;     // the file it was read from
  std::string plugin_conf;  // the mizarmp plugin's configuration as the runtime passes it
  std::string network;      // the conflist's name
  std::string state_dir;
  client::ClientConfig mizarmp;
};

// The conflist's mizarmp plugin. INVALID_ARGUMENT naming the file and the key when it is not a
// conflist (or single-plugin config) the plugin would accept.
Result<NodeSource> ReadNodeSource(const std::string& conflist_path);

struct AttachmentView {
  records::Record record;
  // Mizar-MP's view: the port's status as the controller spells it ("ACTIVE"), "missing" when
  // Mizar-MP has no such port, "unknown" when it could not be asked (see port_error).
  std::string port_status;
  std::optional<bool> admin_state_up;  // absent unless the port was read
  std::string port_error;
  bool netns_present = false;  // the pod's namespace still exists
  // The interface in it: "up", "down", "missing", "mac differs" (from the record's), or "" when
  // the namespace is gone.
  std::string interface;
  // The pod is gone but its attachment is not: the runtime never ran DEL (a crash, a lost node
  // agent). What `mizarmpctl gc` removes.
  bool stale() const { return !netns_present; }
};

// Every record of the conflist's network, joined as above, in the records' order. Mizar-MP
// being unreachable is not an error: each view says "unknown" with the reason.
Result<std::vector<AttachmentView>> ListAttachments(const NodeSource& source);

struct Removal {
  records::Record record;
  Status status;  // of the plugin's DEL for it
};

// Runs the plugin's own DEL (in this process, with the attachment's lock, exactly as a runtime's
// DEL) for every stale attachment: its port is deleted at Mizar-MP and its record removed. A DEL
// that fails is reported, the others still run.
std::vector<Removal> RemoveStale(const NodeSource& source,
                                 const std::vector<AttachmentView>& views);

}  // namespace mizarmp::ctl
