// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The in-process mizarmp-mock the integration tests run against, created and started in one
// step. Header-only: only tests that link mizarmp_mock include it.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "mock-server/mock.h"

namespace mizarmp::testing {

// Creates a mock with `options` and starts it into *out; a fatal failure of the calling test when
// either step fails, so call it under ASSERT_NO_FATAL_FAILURE.
inline void StartMock(const mock::Options& options, std::unique_ptr<mock::MockServer>* out) {
  auto created = mock::MockServer::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  *out = std::move(*created);
  const Status started = (*out)->Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
}

}  // namespace mizarmp::testing
