// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// One error model for every mizarmp library.
//
// Codes are numerically identical to the gRPC canonical codes, so the CSI-Addons server maps a
// Status to a grpc::Status by a cast; the CNI plugin maps them once, in cni/errors.cc, to CNI
// error codes. Libraries never throw across their boundary: they return Status or Result<T>.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/strings.h"

namespace mizarmp {

enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }

  // What a failure means, asked by predicate rather than by comparing codes.
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsAlreadyExists() const { return code_ == Code::kAlreadyExists; }
  bool IsCancelled() const { return code_ == Code::kCancelled; }
  bool IsDeadlineExceeded() const { return code_ == Code::kDeadlineExceeded; }
  // The peer could not be reached or did not answer in time: the same request may succeed
  // later (UNAVAILABLE, DEADLINE_EXCEEDED).
  bool IsTransient() const {
    return code_ == Code::kUnavailable || code_ == Code::kDeadlineExceeded;
  }
  const std::string& message() const { return message_; }

  // "CODE_NAME: message", for logs and test failure output.
  std::string ToString() const;

  // The same code with "context: " put in front of the message.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) {
  return {Code::kFailedPrecondition, std::move(m)};
}
inline Status UnavailableError(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) {
  return {Code::kDeadlineExceeded, std::move(m)};
}
inline Status InternalError(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status AbortedError(std::string m) { return {Code::kAborted, std::move(m)}; }
inline Status CancelledError(std::string m) { return {Code::kCancelled, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) {
  return {Code::kPermissionDenied, std::move(m)};
}
inline Status UnauthenticatedError(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
inline Status DataLossError(std::string m) { return {Code::kDataLoss, std::move(m)}; }

// A dependency's failure (`cause`, e.g. from Mizar-MP) as this program reports it: UNAVAILABLE
// when the cause is transient, so a client retries, UNKNOWN otherwise; the message is `message`.
Status DependencyError(const Status& cause, std::string message);

// errno as a Status: "what: strerror(err)", with a code chosen from the errno.
Status ErrnoError(std::string_view what, int err);

// A value or the Status saying why there is none. Never holds an OK status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace mizarmp

#define MZ_CONCAT_INNER_(a, b) a##b
#define MZ_CONCAT_(a, b) MZ_CONCAT_INNER_(a, b)

#define MZ_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::mizarmp::Status mz_status_ = (expr);   \
    if (!mz_status_.ok()) return mz_status_; \
  } while (0)

#define MZ_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// MZ_ASSIGN_OR_RETURN(auto x, FunctionReturningResult());
#define MZ_ASSIGN_OR_RETURN(lhs, expr) \
  MZ_ASSIGN_OR_RETURN_IMPL_(MZ_CONCAT_(mz_result_, __LINE__), lhs, expr)
