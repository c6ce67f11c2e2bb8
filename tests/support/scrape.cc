// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "tests/support/scrape.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "common/fileutil.h"
#include "tests/support/process.h"

namespace mizarmp::testing {
namespace {

// The number after "(port " on the first line of `log` holding `what`, 0 when there is none.
int PortAfter(const std::string& log, const std::string& what) {
  for (const std::string& line : LinesWith(log, what)) {
    const size_t at = line.find("(port ");
    if (at != std::string::npos) return std::atoi(line.c_str() + at + 6);
  }
  return 0;
}

}  // namespace

std::vector<std::string> LinesWith(const std::string& log, const std::string& needle) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = log.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = log.substr(start, end - start);
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

std::string LogAt(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : "(no log)";
}

int PortFromLog(const std::string& log_path, const std::string& what) {
  for (int i = 0; i < 200; ++i) {
    if (const int port = PortAfter(LogAt(log_path), what); port > 0) return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

Scrape ParseScrape(const std::string& text) {
  Scrape out;
  for (const std::string& line : LinesWith(text, "")) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

Scrape ScrapeMetrics(int port) {
  std::string out;
  const int rc =
      Shell("curl -sS --fail --max-time 10 http://127.0.0.1:" + std::to_string(port) + "/metrics",
            &out);
  EXPECT_EQ(rc, 0) << out;
  return ParseScrape(out);
}

}  // namespace mizarmp::testing
