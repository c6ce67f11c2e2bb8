// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/field_errors.h"

namespace mizarmp {

Status FieldErrors::Invalid(std::string_view path, std::string_view what) const {
  std::string message = namer_ != nullptr ? namer_(path) : std::string(path);
  message += ' ';
  message += what;
  return Status(code_, std::move(message));
}

Status FieldErrors::Missing(std::string_view path) const { return Invalid(path, "is missing"); }

Status FieldErrors::Empty(std::string_view path) const { return Invalid(path, "is empty"); }

Status FieldErrors::WrongType(std::string_view path, std::string_view wanted,
                              std::string_view got) const {
  return Invalid(path, "is not " + std::string(wanted) + " (got " + std::string(got) + ")");
}

Status FieldErrors::OutOfRange(std::string_view path, std::string_view value,
                               std::string_view range) const {
  return Invalid(path, "is " + std::string(value) + ", want " + std::string(range));
}

}  // namespace mizarmp
