// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The kinds of key mizarmp-addons' configuration is made of (cmd/mizarmp-addons/config.h): one
// entry each of the table that the file's reader, the flags and --help are all generated from,
// built by the kind of value it takes (text, switch, duration, count).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "cmd/mizarmp-addons/config.h"
#include "common/json_fields.h"
#include "common/status.h"

namespace mizarmp::cmd {

using nlohmann::json;

// How a key takes a value. `where` names the source for errors: `config key "mode"` or
// `flag --mode`.
using JsonApply =
    std::function<Status(const json& value, const std::string& where, ServerConfig& c)>;
using FlagApply =
    std::function<Status(std::string_view text, const std::string& where, ServerConfig& c)>;

// One configuration key: the entry of the table everything else is generated from.
struct Key {
  std::string json_key;    // camelCase
  std::string flag;        // kebab-case; empty: config file only
  std::string value_name;  // empty: a switch
  std::string help;
  JsonApply from_json;
  FlagApply from_flag;
};

// Where a key's value lives in the composed configuration.
using StringField = std::string& (*)(ServerConfig&);
using BoolField = bool& (*)(ServerConfig&);
using MillisField = std::chrono::milliseconds& (*)(ServerConfig&);
using TextSetter =
    std::function<Status(const std::string& value, const std::string& where, ServerConfig& c)>;

// "tlsClientCaFile" -> "tls-client-ca-file".
std::string Kebab(std::string_view camel);

// " (default VALUE)", for a key's help.
std::string Default(std::string_view value);

// A key's value as the reader sees it. `where` already names the key as its source does, so the
// errors use it as it is: `config key "mode" is not a string (got number)`.
JsonField KeyValue(const json& value, const std::string& where);

// A key whose value is a string, in the file and on the command line alike.
Key TextKey(std::string json_key, std::string value_name, std::string help, TextSetter set);

// A string stored as given; --help shows the default when there is one.
Key StringKey(std::string json_key, std::string value_name, std::string help, StringField field);

// true/false in the file; a switch on the command line (no value, or =true/=false/=1/=0).
Key SwitchKey(std::string json_key, std::string help, BoolField field);

// A flag's text as an integer, then applied as the same number in the file would be.
FlagApply IntegerFlag(JsonApply from_json);

// A duration in milliseconds, 1..max (DurationKey).
Key MillisKey(std::string json_key, std::string help, int64_t max, MillisField field);

// A whole number in min..max; --help shows the default and the range.
Key CountKey(std::string json_key, std::string value_name, std::string help, int min, int max,
             int& (*field)(ServerConfig&));

// The unit a duration key is given in: its name in messages and its flag's value name.
template <typename Duration>
struct UnitOf;
template <>
struct UnitOf<std::chrono::milliseconds> {
  static constexpr const char* kName = "ms";
  static constexpr const char* kValue = "MS";
};
template <>
struct UnitOf<std::chrono::seconds> {
  static constexpr const char* kName = "s";
  static constexpr const char* kValue = "SECONDS";
};

// A duration in whole units (milliseconds or seconds) in 1..max; --help shows the default.
template <typename Duration>
Key DurationKey(std::string json_key, std::string help, int64_t max,
                Duration& (*field)(ServerConfig&)) {
  using Unit = UnitOf<Duration>;
  ServerConfig defaults;
  help += Default(std::to_string(field(defaults).count()));
  JsonApply from_json = [field, max](const json& v, const std::string& where,
                                     ServerConfig& c) -> Status {
    MZ_ASSIGN_OR_RETURN(const int64_t n, KeyValue(v, where).Int(1, max, Unit::kName));
    field(c) = Duration(n);
    return Status::Ok();
  };
  FlagApply from_flag = IntegerFlag(from_json);
  std::string flag = Kebab(json_key);
  return Key{std::move(json_key), std::move(flag),      Unit::kValue,
             std::move(help),     std::move(from_json), std::move(from_flag)};
}

}  // namespace mizarmp::cmd
