// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/faults.h"

#include <map>
#include <string>
#include <vector>

#include "mock-server/dump.h"

namespace mizarmp::mock {

using nlohmann::json;

json FaultsToJson(const Faults& f) {
  return json{{"fail_creates", f.fail_creates},
              {"fail_deletes", f.fail_deletes},
              {"fail_gets", f.fail_gets},
              {"never_ready", f.never_ready},
              {"fail_ready", f.fail_ready},
              {"delay_ms", f.delay_ms},
              {"close_connections", f.close_connections},
              {"truncate_json", f.truncate_json},
              {"reject_creates", f.reject_creates},
              {"malformed_ports", f.malformed_ports},
              {"update_no_content", f.update_no_content},
              {"reject_updates", f.reject_updates},
              {"ignore_fields", f.ignore_fields},
              {"lose_create_answers", f.lose_create_answers}};
}

namespace {

// The largest count or delay a fault takes, so every value fits an int.
constexpr int64_t kMaxFaultValue = 1000000000;

// "a, b, c": every fault name, for the error that names an unknown one.
std::string KnownFaults() {
  std::vector<std::string> names;
  const json all = FaultsToJson(Faults{});
  for (const auto& [name, value] : all.items()) names.push_back(name);
  return Joined(names, ", ");
}

}  // namespace

Result<Faults> FaultsFromJson(const json& j) {
  if (!j.is_object()) {
    return InvalidArgumentError(std::string("faults document must be a JSON object, got ") +
                                j.type_name());
  }
  Faults f;
  const std::map<std::string, int*> ints = {{"fail_creates", &f.fail_creates},
                                            {"fail_deletes", &f.fail_deletes},
                                            {"fail_gets", &f.fail_gets},
                                            {"delay_ms", &f.delay_ms},
                                            {"close_connections", &f.close_connections},
                                            {"truncate_json", &f.truncate_json},
                                            {"reject_creates", &f.reject_creates},
                                            {"malformed_ports", &f.malformed_ports},
                                            {"reject_updates", &f.reject_updates},
                                            {"lose_create_answers", &f.lose_create_answers}};
  const std::map<std::string, bool*> bools = {{"never_ready", &f.never_ready},
                                              {"fail_ready", &f.fail_ready},
                                              {"update_no_content", &f.update_no_content},
                                              {"ignore_fields", &f.ignore_fields}};
  for (const auto& [key, value] : j.items()) {
    if (auto it = ints.find(key); it != ints.end()) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() > kMaxFaultValue) {
        return InvalidArgumentError("fault \"" + key + "\" must be a non-negative integer, got " +
                                    Dump(value));
      }
      *it->second = static_cast<int>(value.get<int64_t>());
    } else if (auto bt = bools.find(key); bt != bools.end()) {
      if (!value.is_boolean()) {
        return InvalidArgumentError("fault \"" + key + "\" must be a boolean, got " + Dump(value));
      }
      *bt->second = value.get<bool>();
    } else {
      return InvalidArgumentError("unknown fault \"" + key + "\" (known: " + KnownFaults() + ")");
    }
  }
  return f;
}

void FaultInjector::Set(const Faults& faults) {
  MutexLock lk(mu_);
  faults_ = faults;
}

Faults FaultInjector::Get() const {
  MutexLock lk(mu_);
  return faults_;
}

FaultInjector::ConnectionFault FaultInjector::OnRequest() {
  MutexLock lk(mu_);
  if (faults_.close_connections > 0) {
    --faults_.close_connections;
    return {.drop = true};
  }
  return {.delay_ms = faults_.delay_ms};
}

bool FaultInjector::Take(int Faults::*counter) {
  MutexLock lk(mu_);
  int& left = faults_.*counter;
  if (left <= 0) return false;
  --left;
  return true;
}

}  // namespace mizarmp::mock
