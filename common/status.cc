// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/status.h"

#include <cerrno>
#include <cstring>

namespace mizarmp {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kCancelled:
      return "CANCELLED";
    case Code::kUnknown:
      return "UNKNOWN";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kAlreadyExists:
      return "ALREADY_EXISTS";
    case Code::kPermissionDenied:
      return "PERMISSION_DENIED";
    case Code::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case Code::kAborted:
      return "ABORTED";
    case Code::kOutOfRange:
      return "OUT_OF_RANGE";
    case Code::kUnimplemented:
      return "UNIMPLEMENTED";
    case Code::kInternal:
      return "INTERNAL";
    case Code::kUnavailable:
      return "UNAVAILABLE";
    case Code::kDataLoss:
      return "DATA_LOSS";
    case Code::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

Status DependencyError(const Status& cause, std::string message) {
  return Status(cause.IsTransient() ? Code::kUnavailable : Code::kUnknown, std::move(message));
}

Status ErrnoError(std::string_view what, int err) {
  Code code = Code::kInternal;
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ESRCH:
    case ENXIO:
      code = Code::kNotFound;
      break;
    case EEXIST:
      code = Code::kAlreadyExists;
      break;
    case EACCES:
    case EPERM:
      code = Code::kPermissionDenied;
      break;
    case EINVAL:
    case ERANGE:
    case ENAMETOOLONG:
      code = Code::kInvalidArgument;
      break;
    case EAGAIN:
    case EBUSY:
    case ETIMEDOUT:
    case ECONNREFUSED:
    case ECONNRESET:
      code = Code::kUnavailable;
      break;
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      code = Code::kResourceExhausted;
      break;
    default:
      break;
  }
  std::string m(what);
  m += ": ";
  m += std::strerror(err);
  return Status(code, std::move(m));
}

}  // namespace mizarmp
