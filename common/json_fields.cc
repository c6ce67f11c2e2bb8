// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/json_fields.h"

#include <limits>

namespace mizarmp {

using nlohmann::json;

namespace {

// "ips[2]": built piece by piece, as "[" + to_string + "]" trips GCC 12's -Wrestrict at -O3.
std::string ElementPath(const std::string& array, size_t index) {
  std::string path = array;
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

}  // namespace

Status JsonField::WrongType(std::string_view wanted) const {
  return errors_->WrongType(path_, wanted, value_->type_name());
}

Result<std::string> JsonField::String() const {
  if (!value_->is_string()) return WrongType("a string");
  return value_->get<std::string>();
}

Result<bool> JsonField::Bool() const {
  if (!value_->is_boolean()) return WrongType("a boolean");
  return value_->get<bool>();
}

Result<int64_t> JsonField::Int(int64_t min, int64_t max, std::string_view unit) const {
  if (!value_->is_number_integer()) return WrongType("an integer");
  constexpr auto kLargest = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  // An unsigned value past int64_t's range is above any max, not a wrapped negative number.
  const int64_t n = value_->is_number_unsigned() && value_->get<uint64_t>() > kLargest
                        ? std::numeric_limits<int64_t>::max()
                        : value_->get<int64_t>();
  if (n >= min && n <= max) return n;
  std::string range = std::to_string(min);
  range += "..";
  range += std::to_string(max);
  if (!unit.empty()) {
    range += ' ';
    range += unit;
  }
  return errors_->OutOfRange(path_, value_->dump(), range);
}

Result<std::vector<std::string>> JsonField::Strings() const {
  if (!value_->is_array()) return WrongType("an array of strings");
  std::vector<std::string> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    MZ_ASSIGN_OR_RETURN(std::string s,
                        JsonField((*value_)[i], *errors_, ElementPath(path_, i)).String());
    out.push_back(std::move(s));
  }
  return out;
}

Result<JsonFields> JsonField::Object() const {
  if (!value_->is_object()) return WrongType("an object");
  return JsonFields(*value_, *errors_, path_);
}

Result<std::vector<JsonFields>> JsonField::Objects() const {
  if (!value_->is_array()) return WrongType("an array");
  std::vector<JsonFields> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    MZ_ASSIGN_OR_RETURN(JsonFields element,
                        JsonField((*value_)[i], *errors_, ElementPath(path_, i)).Object());
    out.push_back(std::move(element));
  }
  return out;
}

std::string JsonFields::PathOf(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  std::string path = path_;
  path += '.';
  path += key;
  return path;
}

std::optional<JsonField> JsonFields::Find(const char* key) const {
  const auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return std::nullopt;
  return JsonField(*it, *errors_, PathOf(key));
}

Status JsonFields::String(const char* key, std::string* out) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(*out, field->String());
  return Status::Ok();
}

Status JsonFields::Bool(const char* key, bool* out) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(*out, field->Bool());
  return Status::Ok();
}

Status JsonFields::Strings(const char* key, std::vector<std::string>* out) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return Status::Ok();
  MZ_ASSIGN_OR_RETURN(*out, field->Strings());
  return Status::Ok();
}

Result<std::optional<JsonFields>> JsonFields::Object(const char* key) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return std::optional<JsonFields>();
  MZ_ASSIGN_OR_RETURN(JsonFields members, field->Object());
  return std::optional<JsonFields>(std::move(members));
}

Result<std::vector<JsonFields>> JsonFields::Objects(const char* key) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return std::vector<JsonFields>();
  return field->Objects();
}

Status JsonFields::RequiredString(const char* key, std::string* out) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return errors_->Missing(PathOf(key));
  MZ_ASSIGN_OR_RETURN(std::string value, field->String());
  if (value.empty()) return errors_->Empty(PathOf(key));
  *out = std::move(value);
  return Status::Ok();
}

Result<int64_t> JsonFields::RequiredInt(const char* key, int64_t min, int64_t max) const {
  const std::optional<JsonField> field = Find(key);
  if (!field) return errors_->Missing(PathOf(key));
  return field->Int(min, max);
}

}  // namespace mizarmp
