// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Reading the fields of a JSON document (a tree of nlohmann's) with errors that name the field
// (field_errors.h): the plugin's network configuration and a CNI result, an attachment record,
// a controller's subnet and the server's configuration all read through these, so the same
// mistake is caught and worded the same way in each. A member that is absent and one that is
// null both mean "not given".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/field_errors.h"
#include "common/status.h"

namespace mizarmp {

class JsonFields;

// One value of a document and where it is ("dns.search[2]"). Refers to the value and the
// errors, which must outlive it.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, const FieldErrors& errors, std::string path)
      : value_(&value), errors_(&errors), path_(std::move(path)) {}

  Result<std::string> String() const;
  Result<bool> Bool() const;
  // An integer in min..max; `unit` ("ms") follows the range in the error.
  Result<int64_t> Int(int64_t min, int64_t max, std::string_view unit = {}) const;
  // An array of strings.
  Result<std::vector<std::string>> Strings() const;
  // An object, to read by member.
  Result<JsonFields> Object() const;
  // An array of objects, each to read by member ("ips[0]", "ips[1]", ...).
  Result<std::vector<JsonFields>> Objects() const;

  // "<field> is not <wanted> (got <this value's type>)".
  Status WrongType(std::string_view wanted) const;

  const nlohmann::json& value() const { return *value_; }

 private:
  const nlohmann::json* value_;
  const FieldErrors* errors_;
  std::string path_;
};

// The members of one JSON object. Refers to the object and the errors, which must outlive it.
class JsonFields {
 public:
  // `object` is at `path` in its document: "" for the top level, "dns", "ips[2]". It must be
  // a JSON object (JsonField::Object() checks that).
  JsonFields(const nlohmann::json& object, const FieldErrors& errors, std::string path = {})
      : object_(&object), errors_(&errors), path_(std::move(path)) {}

  // The member `key`; nullopt when it is not given.
  std::optional<JsonField> Find(const char* key) const;

  // Optional members: one that is not given leaves *out as it is.
  Status String(const char* key, std::string* out) const;
  Status Bool(const char* key, bool* out) const;
  template <typename Integer>
  Status Int(const char* key, Integer min, Integer max, Integer* out) const;
  Status Strings(const char* key, std::vector<std::string>* out) const;
  // An object member; nullopt when it is not given.
  Result<std::optional<JsonFields>> Object(const char* key) const;
  // An array of objects; none when it is not given.
  Result<std::vector<JsonFields>> Objects(const char* key) const;

  // Required members: one that is not given is missing, a string "" is empty.
  Status RequiredString(const char* key, std::string* out) const;
  Result<int64_t> RequiredInt(const char* key, int64_t min, int64_t max) const;

  // Where member `key` is: "dns.search", or "search" at the top level.
  std::string PathOf(std::string_view key) const;
  // "<member> <what>", for a check of the caller's own.
  Status Invalid(std::string_view key, std::string_view what) const {
    return errors_->Invalid(PathOf(key), what);
  }
  const nlohmann::json& object() const { return *object_; }

 private:
  const nlohmann::json* object_;
  const FieldErrors* errors_;
  std::string path_;
};

template <typename Integer>
Status JsonFields::Int(const char* key, Integer min, Integer max, Integer* out) const {
  static_assert(std::is_signed_v<Integer> && sizeof(Integer) <= sizeof(int64_t));
  const std::optional<JsonField> field = Find(key);
  if (!field) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(const int64_t n, field->Int(min, max));
  *out = static_cast<Integer>(n);
  return Status::Ok();
}

}  // namespace mizarmp
