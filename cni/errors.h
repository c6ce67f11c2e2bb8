// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// CNI errors: the error type the plugin prints, the CNI error codes, the one mapping from a
// mizarmp::Status to a CNI code (by the stage of the command the Status came from), and the
// constructors of the errors commands report without a Status. Every CniError the plugin prints
// is built here.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp::cni {

// Codes 1-99 are the CNI spec's; 100+ are this plugin's (listed in the README).
enum ErrorCode : int {
  kIncompatibleVersion = 1,
  kUnsupportedField = 2,
  kContainerUnknown = 3,
  kInvalidEnv = 4,
  kIoFailure = 5,
  kDecodeFailure = 6,
  kInvalidConfig = 7,
  kTryAgainLater = 11,
  kNotAvailable = 50,
  kAttachmentExists = 100,      // ADD for an attachment that already has a complete record
  kCheckMismatch = 101,         // CHECK found the attachment differs from what ADD made
  kPortFailed = 102,            // the controller reported the port failed, or it vanished
  kControllerRefused = 103,     // the controller refused the request (4xx)
  kControllerBadAnswer = 104,   // the controller's answer made no sense
  kInterfaceSetupFailed = 105,  // configuring the interface in the pod namespace failed
  kInternalError = 199,
};

struct CniError {
  int code = kInternalError;
  std::string msg;
  std::string details;

  // The same error with "context: " put in front of msg.
  CniError WithContext(std::string_view context) const;
  // The same error with "; note" appended to details (what the command did after the failure).
  CniError WithNote(std::string_view note) const;
};

// Where in a command a Status came from; decides what its code means to the runtime.
enum class Stage {
  kEnv,         // CNI_* environment
  kDecode,      // stdin JSON syntax
  kConfig,      // network configuration content (and client setup from it)
  kVersion,     // version negotiation
  kStateDir,    // attachment records, locks
  kController,  // REST calls about ports
  kSubnet,      // REST calls about the configured subnet
  kPortWait,    // waiting for the port to become ready
  kNetns,       // netlink in the pod namespace
  kStatus,      // STATUS: anything that makes the plugin unable to serve ADD
};

// The only Status -> CNI code mapping. `msg` is the Status message; details carry the code name.
int CodeFor(const Status& status, Stage stage);
CniError FromStatus(const Status& status, Stage stage);
// Whether `status` at `stage` maps to code 11: the same call may work later.
bool IsTryAgainLater(const Status& status, Stage stage);

// The errors a command reports by what it found rather than from a Status. Each names its code
// here, so no command writes a number.

// Code 1: the command needs a newer cniVersion than the configuration's.
CniError IncompatibleVersion(std::string msg);
// Code 3: there is no (complete) attachment for the container and interface.
CniError ContainerUnknown(std::string msg, std::string details);
// Code 7: the configuration is wrong in a way its parser does not check (prevResult, GC keys).
CniError InvalidConfig(std::string msg);
// Code 11: some of the work failed in a way a later call may finish (GC).
CniError TryAgainLater(std::string msg);
// Code 50: STATUS: the plugin cannot serve ADD now.
CniError NotAvailable(std::string msg);
// Code 100: ADD for an attachment that already has a record.
CniError AttachmentExists(std::string msg, std::string details = {});
// Code 101: CHECK found the attachment differs from what ADD made.
CniError CheckMismatch(std::string msg, std::string details);

// {"cniVersion":..,"code":..,"msg":..,"details":..}, the shape libcni decodes.
std::string ErrorJson(const CniError& error, std::string_view cni_version);

}  // namespace mizarmp::cni
