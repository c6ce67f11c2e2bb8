// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Helpers shared by the libFuzzer targets in this folder (see README.md here).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"

namespace mizarmp::fuzz {

// The input as text (any bytes, NULs included).
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Parses without exceptions: a discarded value when the text is not JSON.
inline nlohmann::json ParseJson(std::string_view text) {
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

// Stops the process with a message when a property the target checks does not hold; libFuzzer
// reports the abort as a crash and saves the input.
inline void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
  }
}

namespace internal {

// The scratch directories still there. Allocated once and never freed, so that it outlives
// every static destructor that might still make a ScratchDir go.
inline std::vector<std::string>& LiveScratchDirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

inline void RemoveLiveScratchDirs() {
  std::error_code ec;
  for (const std::string& dir : LiveScratchDirs()) std::filesystem::remove_all(dir, ec);
  LiveScratchDirs().clear();
}

}  // namespace internal

// A private directory under $TMPDIR (or /tmp) for the whole run, removed at exit. The targets
// make theirs once and never destroy it (libFuzzer ends the process with exit()), so an atexit
// handler removes it; a crash or timeout ends the process with _Exit() and skips that handler,
// which is why scripts/fuzz.sh points TMPDIR into a directory of its own and removes that.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mizarmp-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = templ;
    static const bool removal_registered = std::atexit(internal::RemoveLiveScratchDirs) == 0;
    Require(removal_registered, "harness could not register the scratch directory's removal");
    internal::LiveScratchDirs().push_back(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    std::vector<std::string>& live = internal::LiveScratchDirs();
    for (auto it = live.begin(); it != live.end(); ++it) {
      if (*it == path_) {
        live.erase(it);
        break;
      }
    }
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(std::string_view name) const { return path_ + "/" + std::string(name); }

  // Empties the directory (keeps the directory itself), so each input starts from nothing.
  void Clear() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
      std::filesystem::remove_all(entry.path(), ec);
    }
  }

 private:
  std::string path_;
};

// Writes `bytes` to `path` (truncating); aborts on failure, which is the harness's fault.
inline void WriteFileOrDie(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  Require(out.good(), "harness could not write its scratch file");
}

// Targets test parsers, not logging: lines would only slow the fuzzer down.
inline void QuietLogs() { log::SetLevel(log::Level::kOff); }

}  // namespace mizarmp::fuzz
