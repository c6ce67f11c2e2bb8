// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// ParsePortList for the static plugin: nlohmann's SAX parser (see port_list_reader.h).
#include "mizarmp-client/port_list_reader.h"

namespace mizarmp::client {

std::optional<PortListDocument> ParsePortList(std::string_view body) {
  return ParsePortListWithNlohmann(body);
}

}  // namespace mizarmp::client
