// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cni/errors.h"

#include <nlohmann/json.hpp>

namespace mizarmp::cni {

namespace {

CniError Make(int code, std::string msg, std::string details = {}) {
  CniError e;
  e.code = code;
  e.msg = std::move(msg);
  e.details = std::move(details);
  return e;
}

}  // namespace

int CodeFor(const Status& status, Stage stage) {
  const Code code = status.code();
  if (stage == Stage::kStatus) {
    // STATUS feeds NetworkReady: a config we cannot parse is still a config error; anything
    // that stops ADD from working (controller, state dir) is "not available".
    return code == Code::kInvalidArgument ? kInvalidConfig : kNotAvailable;
  }
  switch (code) {
    case Code::kUnavailable:
    case Code::kDeadlineExceeded:
    case Code::kCancelled:
    case Code::kAborted:
    case Code::kResourceExhausted:
      return kTryAgainLater;
    default:
      break;
  }
  switch (stage) {
    case Stage::kEnv:
      return kInvalidEnv;
    case Stage::kDecode:
      return kDecodeFailure;
    case Stage::kConfig:
      return kInvalidConfig;
    case Stage::kVersion:
      return kIncompatibleVersion;
    case Stage::kStateDir:
      return kIoFailure;
    case Stage::kSubnet:
      // The configured subnet is unknown, or the controller refuses our credentials: the
      // network configuration is wrong.
      if (code == Code::kNotFound || code == Code::kUnauthenticated ||
          code == Code::kPermissionDenied || code == Code::kInvalidArgument) {
        return kInvalidConfig;
      }
      return kControllerBadAnswer;
    case Stage::kController:
      if (code == Code::kUnauthenticated || code == Code::kPermissionDenied) return kInvalidConfig;
      if (code == Code::kInvalidArgument || code == Code::kFailedPrecondition ||
          code == Code::kAlreadyExists || code == Code::kNotFound) {
        return kControllerRefused;
      }
      return kControllerBadAnswer;
    case Stage::kPortWait:
      if (code == Code::kFailedPrecondition || code == Code::kNotFound) return kPortFailed;
      if (code == Code::kUnauthenticated || code == Code::kPermissionDenied) return kInvalidConfig;
      return kControllerBadAnswer;
    case Stage::kNetns:
      // CNI_NETNS names something that is not (or no longer) a network namespace.
      if (code == Code::kNotFound || code == Code::kInvalidArgument) return kInvalidEnv;
      return kInterfaceSetupFailed;
    case Stage::kStatus:
      break;
  }
  return kInternalError;
}

bool IsTryAgainLater(const Status& status, Stage stage) {
  return CodeFor(status, stage) == kTryAgainLater;
}

CniError FromStatus(const Status& status, Stage stage) {
  const std::string code_name(CodeName(status.code()));
  return Make(CodeFor(status, stage), status.message().empty() ? code_name : status.message(),
              code_name);
}

CniError IncompatibleVersion(std::string msg) { return Make(kIncompatibleVersion, std::move(msg)); }

CniError ContainerUnknown(std::string msg, std::string details) {
  return Make(kContainerUnknown, std::move(msg), std::move(details));
}

CniError InvalidConfig(std::string msg) { return Make(kInvalidConfig, std::move(msg)); }

CniError TryAgainLater(std::string msg) { return Make(kTryAgainLater, std::move(msg)); }

CniError NotAvailable(std::string msg) { return Make(kNotAvailable, std::move(msg)); }

CniError AttachmentExists(std::string msg, std::string details) {
  return Make(kAttachmentExists, std::move(msg), std::move(details));
}

CniError CheckMismatch(std::string msg, std::string details) {
  return Make(kCheckMismatch, std::move(msg), std::move(details));
}

CniError CniError::WithContext(std::string_view context) const {
  CniError e = *this;
  e.msg = std::string(context) + ": " + msg;
  return e;
}

CniError CniError::WithNote(std::string_view note) const {
  CniError e = *this;
  e.details.append("; ").append(note);
  return e;
}

std::string ErrorJson(const CniError& error, std::string_view cni_version) {
  nlohmann::json j = nlohmann::json::object();
  j["cniVersion"] = std::string(cni_version);
  j["code"] = error.code;
  j["msg"] = error.msg;
  j["details"] = error.details;
  // Replace invalid UTF-8 (a hostile env value echoed in a message) instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mizarmp::cni
