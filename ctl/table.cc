// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "ctl/table.h"

#include <algorithm>

#include "common/strings.h"

namespace mizarmp::ctl {
namespace {

// A cell as printed: as it is, or quoted and escaped when it holds a control character or
// bytes that are not UTF-8.
std::string Printable(const std::string& cell) {
  const bool plain = IsValidUtf8(cell) && std::none_of(cell.begin(), cell.end(), [](char c) {
                       return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                     });
  return plain ? cell : LogEscaped(cell);
}

}  // namespace

std::string Table(const Row& header, const std::vector<Row>& rows) {
  std::vector<Row> lines;
  lines.push_back(header);
  for (const Row& row : rows) {
    Row escaped(header.size());
    for (size_t i = 0; i < row.size() && i < header.size(); ++i) escaped[i] = Printable(row[i]);
    lines.push_back(std::move(escaped));
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const Row& line : lines) {
    for (size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], line[i].size());
  }
  std::string out;
  for (const Row& line : lines) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      text += line[i];
      if (i + 1 < line.size()) text += std::string(widths[i] - line[i].size() + 2, ' ');
    }
    out += text + "\n";
  }
  return out;
}

}  // namespace mizarmp::ctl
