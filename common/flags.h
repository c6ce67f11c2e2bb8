// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A program's command-line options as one table: each entry names its flag once, says what
// value it takes and how to apply it, and carries its help line. Parsing and --help are both
// generated from the table, so the two cannot drift.
//
// Accepted forms: "--name VALUE" and "--name=VALUE" for valued flags; "--name", "--name=true"
// and "--name=false" for switches. A later flag overrides an earlier one. Anything else (an
// unknown flag, a missing value, a positional argument) is INVALID_ARGUMENT naming it, in one
// wording for every program: `flag --name: ...` or `argument "x": expected a --flag`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace mizarmp {

struct Flag {
  std::string name;        // without the leading "--", kebab-case
  std::string value_name;  // what the value is ("PATH", "MS"); empty: a switch
  std::string help;        // one line, what it does and its default
  // Applies the value ("true"/"false" for a switch). An error's message should say why the
  // value is wrong; Parse() puts "flag --name: " in front of it.
  std::function<Status(std::string_view value)> apply;
};

class FlagTable {
 public:
  FlagTable& Add(Flag flag);

  // Helpers for the common kinds of values.
  FlagTable& String(std::string name, std::string value_name, std::string help, std::string* out);
  FlagTable& Int(std::string name, std::string value_name, std::string help, int64_t min,
                 int64_t max, std::function<void(int64_t)> set);
  FlagTable& Int(std::string name, std::string value_name, std::string help, int min, int max,
                 int* out);
  FlagTable& Switch(std::string name, std::string help, bool* out);

  // A flag of the command line with the value it was given ("true" for a bare switch).
  struct Given {
    const Flag* flag;
    std::string value;
  };
  // Splits `args` (argv without argv[0]) into flags and values without applying any, so a
  // caller can check them all first or apply some (a config file) before the others.
  Result<std::vector<Given>> Split(const std::vector<std::string>& args) const;

  // Splits `args` and applies them in order; the first error stops it. "--help" or "-h"
  // anywhere sets *help (when given) and nothing is applied.
  Status Parse(const std::vector<std::string>& args, bool* help = nullptr) const;

  // One line per flag, "  --name VALUE   help", aligned, in the order they were added.
  std::string Help() const;

  const Flag* Find(std::string_view name) const;
  const std::vector<Flag>& flags() const { return flags_; }

 private:
  std::vector<Flag> flags_;
};

// The name of the flag `arg` spells ("--name" or "--name=value" -> "name"); "" for anything else.
std::string_view FlagName(std::string_view arg);

// A whole decimal number in [min, max]; otherwise INVALID_ARGUMENT
// `"text" is not an integer in MIN..MAX`.
Result<int64_t> ParseInt(std::string_view text, int64_t min, int64_t max);
// "true"/"false" (also "1"/"0"); INVALID_ARGUMENT otherwise.
Result<bool> ParseBool(std::string_view text);

}  // namespace mizarmp
