# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# What the package tests (package_test.sh, booted_test.sh) share: their verdict lines, the skip
# that CI turns into a failure, and how they stop a process they started. A test sets TEST_NAME
# ("package test") before it sources this, and keeps its count in PASSED.

PASSED=0

pass() {
  PASSED=$((PASSED + 1))
  echo "ok: $*"
}

# cannot_run REASON: a skip outside CI (exit 77, which ctest reports as skipped), a failure in it.
cannot_run() {
  if [[ "${CI:-}" == "true" ]]; then
    echo "FAIL: the $TEST_NAME is required in CI but cannot run: $1"
    echo "$TEST_NAME: 0 passed, 1 failed"
    exit 1
  fi
  echo "SKIP: $TEST_NAME: $1"
  exit 77
}

# stop_process PID: SIGTERM, then SIGKILL after 10 s; its exit code in STOPPED_RC.
# shellcheck disable=SC2034 # read by the scripts that source this
STOPPED_RC=""
stop_process() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # shellcheck disable=SC2034 # read by the scripts that source this
  STOPPED_RC=$?
}
