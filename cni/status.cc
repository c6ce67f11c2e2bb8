// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// STATUS: can the plugin serve ADD now? Its state directory must be writable and the controller
// must answer for the configured subnet; anything else is code 50 (the runtime then reports the
// network as not ready).
#include <unistd.h>

#include <cerrno>

#include "cni/command.h"

namespace mizarmp::cni {

namespace {

StepError CheckStateDir(const std::string& dir) {
  if (Status s = MakeDirs(dir, 0700); !s.ok()) {
    return NotAvailable("state directory " + dir + " cannot be created: " + s.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    Status s = ErrnoError("access " + dir, errno);
    return NotAvailable("state directory " + dir + " is not writable: " + s.message());
  }
  return std::nullopt;
}

StepError CheckController(Invocation& inv) {
  auto controller = inv.Controller();
  if (!controller.ok()) return FromStatus(controller.status(), Stage::kConfig);
  auto subnet = (*controller)->GetSubnet(inv.conf().subnet);
  if (!subnet.ok()) {
    return FromStatus(subnet.status(), Stage::kStatus)
        .WithContext("Mizar-MP controller at " + inv.conf().mpurl + " is not usable");
  }
  return std::nullopt;
}

}  // namespace

Outcome CmdStatus(Invocation& inv) {
  if (StepError e = CheckStateDir(inv.conf().state_dir)) return Fail(std::move(*e));
  if (StepError e = CheckController(inv)) return Fail(std::move(*e));
  return Ok();
}

}  // namespace mizarmp::cni
