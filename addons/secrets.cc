#include "addons/secrets.h"

#include "common/strings.h"

namespace mizarmp::addons {

Status CheckSecrets(const google::protobuf::Map<std::string, std::string>& got,
                    const std::map<std::string, std::string>& expected) {
  for (const auto& [key, want] : expected) {
    auto it = got.find(key);
    if (it == got.end()) {
      return UnauthenticatedError("secrets: " + Quoted(key) + " is missing");
    }
    if (!ConstantTimeEqual(it->second, want)) {
      return UnauthenticatedError("secrets: " + Quoted(key) + " does not match");
    }
  }
  return Status::Ok();
}

}  // namespace mizarmp::addons
