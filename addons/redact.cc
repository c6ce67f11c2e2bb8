#include "addons/redact.h"

namespace mizarmp::addons {

std::string RedactUrl(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t host_start = scheme + 3;
  const size_t host_end = url.find_first_of("/?#", host_start);
  const std::string_view authority =
      url.substr(host_start, host_end == std::string_view::npos ? std::string_view::npos
                                                                : host_end - host_start);
  const size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host_start)) + "***" + std::string(url.substr(host_start + at));
}

}  // namespace mizarmp::addons
