// URLs as mizarmp-addons shows them in logs, error messages and the Identity manifest. It would
// fit common/ as well; it lives here because only the addons server and its services use it.
#pragma once

#include <string>
#include <string_view>

namespace mizarmp::addons {

// `url` with any userinfo ("user:password@") replaced by "***@"; anything else is unchanged.
std::string RedactUrl(std::string_view url);

}  // namespace mizarmp::addons
