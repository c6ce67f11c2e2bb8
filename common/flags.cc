// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "common/flags.h"

#include <algorithm>
#include <charconv>

namespace mizarmp {

Result<int64_t> ParseInt(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return InvalidArgumentError(Quoted(text) + " is not an integer in " + std::to_string(min) +
                                ".." + std::to_string(max));
  }
  return value;
}

std::string_view FlagName(std::string_view arg) {
  if (!arg.starts_with("--") || arg.size() == 2) return {};
  arg.remove_prefix(2);
  return arg.substr(0, arg.find('='));
}

Result<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return InvalidArgumentError(Quoted(text) + " is not true or false");
}

FlagTable& FlagTable::Add(Flag flag) {
  flags_.push_back(std::move(flag));
  return *this;
}

FlagTable& FlagTable::String(std::string name, std::string value_name, std::string help,
                             std::string* out) {
  return Add({std::move(name), std::move(value_name), std::move(help), [out](std::string_view v) {
                *out = std::string(v);
                return Status::Ok();
              }});
}

FlagTable& FlagTable::Int(std::string name, std::string value_name, std::string help, int64_t min,
                          int64_t max, std::function<void(int64_t)> set) {
  return Add({std::move(name), std::move(value_name), std::move(help),
              [min, max, set = std::move(set)](std::string_view v) -> Status {
                MZ_ASSIGN_OR_RETURN(const int64_t n, ParseInt(v, min, max));
                set(n);
                return Status::Ok();
              }});
}

FlagTable& FlagTable::Int(std::string name, std::string value_name, std::string help, int min,
                          int max, int* out) {
  return Int(std::move(name), std::move(value_name), std::move(help), min, max,
             [out](int64_t n) { *out = static_cast<int>(n); });
}

FlagTable& FlagTable::Switch(std::string name, std::string help, bool* out) {
  return Add({std::move(name), "", std::move(help), [out](std::string_view v) -> Status {
                MZ_ASSIGN_OR_RETURN(*out, ParseBool(v));
                return Status::Ok();
              }});
}

const Flag* FlagTable::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Result<std::vector<FlagTable::Given>> FlagTable::Split(const std::vector<std::string>& args) const {
  std::vector<Given> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::string name(FlagName(arg));
    if (name.empty())
      return InvalidArgumentError("argument " + Quoted(arg) + ": expected a --flag");
    const Flag* flag = Find(name);
    if (flag == nullptr)
      return InvalidArgumentError("flag --" + name + ": unknown flag (see --help)");
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      given.push_back({flag, arg.substr(eq + 1)});
    } else if (flag->value_name.empty()) {
      given.push_back({flag, "true"});
    } else if (i + 1 < args.size()) {
      given.push_back({flag, args[++i]});
    } else {
      return InvalidArgumentError("flag --" + name + ": needs a value (" + flag->value_name + ")");
    }
  }
  return given;
}

Status FlagTable::Parse(const std::vector<std::string>& args, bool* help) const {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      if (help != nullptr) *help = true;
      return Status::Ok();
    }
  }
  MZ_ASSIGN_OR_RETURN(const std::vector<Given> given, Split(args));
  for (const Given& g : given) {
    if (Status s = g.flag->apply(g.value); !s.ok()) return s.WithContext("flag --" + g.flag->name);
  }
  return Status::Ok();
}

std::string FlagTable::Help() const {
  std::vector<std::string> lefts;
  size_t width = 0;
  for (const Flag& f : flags_) {
    std::string left = "  --" + f.name;
    if (!f.value_name.empty()) left += " " + f.value_name;
    width = std::max(width, left.size());
    lefts.push_back(std::move(left));
  }
  std::string out;
  for (size_t i = 0; i < flags_.size(); ++i) {
    out += lefts[i];
    out.append(width + 2 - lefts[i].size(), ' ');
    out += flags_[i].help;
    out += '\n';
  }
  return out;
}

}  // namespace mizarmp
