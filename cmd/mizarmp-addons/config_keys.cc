// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "cmd/mizarmp-addons/config_keys.h"

#include <charconv>
#include <utility>

#include "common/strings.h"

namespace mizarmp::cmd {

std::string Kebab(std::string_view camel) {
  std::string out;
  for (char ch : camel) {
    if (ch >= 'A' && ch <= 'Z') {
      out += '-';
      out += static_cast<char>(ch - 'A' + 'a');
    } else {
      out += ch;
    }
  }
  return out;
}

std::string Default(std::string_view value) { return " (default " + std::string(value) + ")"; }

JsonField KeyValue(const json& value, const std::string& where) {
  static constexpr FieldErrors kKeys{Code::kInvalidArgument, nullptr};
  return JsonField(value, kKeys, where);
}

Key TextKey(std::string json_key, std::string value_name, std::string help, TextSetter set) {
  JsonApply from_json = [set](const json& v, const std::string& where, ServerConfig& c) -> Status {
    MZ_ASSIGN_OR_RETURN(const std::string text, KeyValue(v, where).String());
    return set(text, where, c);
  };
  FlagApply from_flag = [set](std::string_view text, const std::string& where, ServerConfig& c) {
    return set(std::string(text), where, c);
  };
  std::string flag = Kebab(json_key);
  return Key{std::move(json_key), std::move(flag),      std::move(value_name),
             std::move(help),     std::move(from_json), std::move(from_flag)};
}

Key StringKey(std::string json_key, std::string value_name, std::string help, StringField field) {
  ServerConfig defaults;
  if (!field(defaults).empty()) help += Default(field(defaults));
  return TextKey(std::move(json_key), std::move(value_name), std::move(help),
                 [field](const std::string& s, const std::string&, ServerConfig& c) {
                   field(c) = s;
                   return Status::Ok();
                 });
}

Key SwitchKey(std::string json_key, std::string help, BoolField field) {
  JsonApply from_json = [field](const json& v, const std::string& where,
                                ServerConfig& c) -> Status {
    MZ_ASSIGN_OR_RETURN(field(c), KeyValue(v, where).Bool());
    return Status::Ok();
  };
  FlagApply from_flag = [field](std::string_view text, const std::string& where,
                                ServerConfig& c) -> Status {
    if (text == "true" || text == "1") {
      field(c) = true;
    } else if (text == "false" || text == "0") {
      field(c) = false;
    } else {
      return InvalidArgumentError(where + ": want true or false, got " + Quoted(text));
    }
    return Status::Ok();
  };
  std::string flag = Kebab(json_key);
  return Key{std::move(json_key), std::move(flag),      "",
             std::move(help),     std::move(from_json), std::move(from_flag)};
}

FlagApply IntegerFlag(JsonApply from_json) {
  return [from_json = std::move(from_json)](std::string_view text, const std::string& where,
                                            ServerConfig& c) -> Status {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
      return InvalidArgumentError(where + ": " + Quoted(text) + " is not an integer");
    }
    return from_json(json(n), where, c);
  };
}

Key MillisKey(std::string json_key, std::string help, int64_t max, MillisField field) {
  return DurationKey(std::move(json_key), std::move(help), max, field);
}

Key CountKey(std::string json_key, std::string value_name, std::string help, int min, int max,
             int& (*field)(ServerConfig&)) {
  ServerConfig defaults;
  help += " (" + std::to_string(min) + ".." + std::to_string(max) + "; default " +
          std::to_string(field(defaults)) + ")";
  JsonApply from_json = [field, min, max](const json& v, const std::string& where,
                                          ServerConfig& c) -> Status {
    MZ_ASSIGN_OR_RETURN(const int64_t n, KeyValue(v, where).Int(min, max));
    field(c) = static_cast<int>(n);
    return Status::Ok();
  };
  FlagApply from_flag = IntegerFlag(from_json);
  std::string flag = Kebab(json_key);
  return Key{std::move(json_key), std::move(flag),      std::move(value_name),
             std::move(help),     std::move(from_json), std::move(from_flag)};
}

}  // namespace mizarmp::cmd
