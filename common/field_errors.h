// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The errors of a document's fields, worded one way for every kind of document: "<field> is
// missing", "<field> is not a string (got number)", "<field> is 70000, want 68..65535". Each
// kind names its fields its own way (`config key "mtu"`, `record field "ips[0]"`,
// `port.fixed_ips[0].ip_address`) and chooses the code: a configuration the user wrote is
// INVALID_ARGUMENT, a controller's answer INTERNAL. No JSON library here: the port list's
// streaming reader words its errors with it too (json_fields.h reads nlohmann's trees).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace mizarmp {

class FieldErrors {
 public:
  // How a field's path ("dns.search[0]") is shown in a message; nullptr: as it is.
  using Namer = std::string (*)(std::string_view path);

  constexpr FieldErrors(Code code, Namer namer) : code_(code), namer_(namer) {}

  // "<field> is missing": a required field that is absent or null.
  Status Missing(std::string_view path) const;
  // "<field> is empty": a required string that is "".
  Status Empty(std::string_view path) const;
  // "<field> is not <wanted> (got <got>)": `wanted` as "a string", `got` as a type's name.
  Status WrongType(std::string_view path, std::string_view wanted, std::string_view got) const;
  // "<field> is <value>, want <range>".
  Status OutOfRange(std::string_view path, std::string_view value, std::string_view range) const;
  // "<field> <what>", for a check of the document's own: Invalid("state", "is \"x\", want ...").
  Status Invalid(std::string_view path, std::string_view what) const;

 private:
  Code code_;
  Namer namer_;
};

}  // namespace mizarmp
