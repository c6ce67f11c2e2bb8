// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// mizarmpctl's human-readable output: columns padded to their widest cell, two spaces apart,
// the header in capitals first (`-o json` prints JSON instead, for scripts).
#pragma once

#include <string>
#include <vector>

namespace mizarmp::ctl {

using Row = std::vector<std::string>;

// The table, one line per row after the header, each line ending in '\n'. A row with fewer
// cells than the header leaves the rest empty. A cell holding a control character or bytes that
// are not UTF-8 is printed quoted and escaped, so a hostile record cannot forge lines.
std::string Table(const Row& header, const std::vector<Row>& rows);

}  // namespace mizarmp::ctl
