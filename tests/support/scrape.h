// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// What a test reads of a running mizarmp-addons: its log's lines and the listeners it logged, and
// a scrape of its Prometheus metrics.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mizarmp::testing {

// The lines of `log` holding `needle`.
std::vector<std::string> LinesWith(const std::string& log, const std::string& needle);

// The log at `path`, or a note that there is none yet.
std::string LogAt(const std::string& path);

// The port a server logged (at `log_path`) for a listener, on the first line holding `what`
// ("... (port N)"), once it has; 0 after 10 s.
int PortFromLog(const std::string& log_path, const std::string& what);

// One scrape: "name{label="v",...}" (labels sorted by name, as prometheus-cpp writes them) ->
// value. Comment lines are skipped.
using Scrape = std::map<std::string, double>;
Scrape ParseScrape(const std::string& text);
// GET /metrics at 127.0.0.1:`port`; a failed request fails the test (and gives no series).
Scrape ScrapeMetrics(int port);

}  // namespace mizarmp::testing
