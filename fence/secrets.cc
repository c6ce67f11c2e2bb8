#include "fence/secrets.h"

namespace mizarmp::fence {

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

Status CheckSecrets(const google::protobuf::Map<std::string, std::string>& got,
                    const std::map<std::string, std::string>& expected) {
  for (const auto& [key, want] : expected) {
    auto it = got.find(key);
    if (it == got.end()) {
      return UnauthenticatedError("secrets: \"" + key + "\" is missing");
    }
    if (!ConstantTimeEqual(it->second, want)) {
      return UnauthenticatedError("secrets: \"" + key + "\" does not match");
    }
  }
  return Status::Ok();
}

}  // namespace mizarmp::fence
