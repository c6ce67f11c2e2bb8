#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Builds the libFuzzer targets (tests/fuzz) in build-asan/ (scripts/build.sh asan: clang, ASan +
# UBSan, coverage-instrumented libraries; the test suite's sanitizer tree) and runs each:
#   1. every input saved under tests/fuzz/regressions/<target>/ once (a crasher found earlier
#      must stay fixed),
#   2. a bounded fuzzing run over its corpus: build-asan/fuzz-corpus/<target>/ (what earlier runs
#      found; new inputs go there) plus the committed seeds in tests/fuzz/corpus/<target>/
#      (read only, kept small).
# Any crash, sanitizer report, leak, timeout (-timeout, 10 s per input unless
# MIZARMP_FUZZ_INPUT_TIMEOUT says otherwise) or memory blow-up
# (-rss_limit_mb=2048) fails the target; the reproducer's path is printed (libFuzzer saves it in
# build-asan/fuzz-artifacts/<target>/; a failing regression input is its own reproducer).
# Reproduce one: build-asan/bin/fuzz/<target>_fuzz <file>.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20; MIZARMP_FUZZ_SECONDS also sets it)
# Environment: MIZARMP_FUZZ_TARGETS="cni_env records" builds and runs only those;
# MIZARMP_FUZZ_JOBS (default: the number of CPUs) how many targets fuzz at once (each is one
# single-threaded process). The last line is ctest's summary format, one test per target
# ("100% tests passed, 0 tests failed out of N"), so scripts/test.sh and CI count it; a failed
# build ends with the same line counting the build as one failed test.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$ROOT/build-asan"
SECONDS_PER_TARGET=${1:-${MIZARMP_FUZZ_SECONDS:-20}}
FUZZ_JOBS=${MIZARMP_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
START=$SECONDS

if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || [[ "$SECONDS_PER_TARGET" -lt 1 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]  (a positive number of seconds)" >&2
  exit 2
fi

# ctest's summary line for `failed` of `total` (the percentage rounded as ctest rounds it).
summary_line() {
  local total=$1 failed=$2 percent=0
  if [[ $total -gt 0 ]]; then
    percent=$(( ((total - failed) * 200 + total) / (2 * total) ))
    [[ $failed -gt 0 && $percent -gt 99 ]] && percent=99
  fi
  echo "$percent% tests passed, $failed tests failed out of $total"
}

build() {
  MIZARMP_BUILD_TARGETS="${BUILD_TARGETS[*]}" bash "$ROOT/scripts/build.sh" asan
}

# MIZARMP_FUZZ_TARGETS="cni_env records" builds and runs only those.
BUILD_TARGETS=(mizarmp_fuzzers)
if [[ -n "${MIZARMP_FUZZ_TARGETS:-}" ]]; then
  read -r -a BUILD_TARGETS <<<"$MIZARMP_FUZZ_TARGETS"
  BUILD_TARGETS=("${BUILD_TARGETS[@]/%/_fuzz}")
fi

echo "==== fuzz: build ($BUILD) ===="
if ! build; then
  echo "fuzz: FAILED: the fuzz build"
  summary_line 1 1
  exit 1
fi
echo "fuzz: build took $((SECONDS - START)) s"

# Sanitizer settings of our own, whatever the caller exported (test.sh's ASan pass sets some).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:print_stacktrace=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
FUZZ_FLAGS=(-timeout="${MIZARMP_FUZZ_INPUT_TIMEOUT:-10}" -rss_limit_mb=2048 -detect_leaks=1)

TARGETS=()
if [[ -n "${MIZARMP_FUZZ_TARGETS:-}" ]]; then
  read -r -a TARGETS <<<"$MIZARMP_FUZZ_TARGETS"
else
  for bin in "$BUILD"/bin/fuzz/*_fuzz; do
    [[ -x "$bin" ]] && TARGETS+=("$(basename "$bin" _fuzz)")
  done
fi

# The reproducers libFuzzer saved for this run of `name`.
artifacts_of() {
  find "$BUILD/fuzz-artifacts/$1" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) 2>/dev/null
}

# run_regressions NAME BIN: each saved input once, alone (so every failing one is named).
run_regressions() {
  local name=$1 bin=$2 dir="$ROOT/tests/fuzz/regressions/$1" log input ok=0
  [[ -d "$dir" ]] || return 0
  log="$BUILD/fuzz-logs/$name.regressions.log"
  : >"$log"
  while IFS= read -r -d '' input; do
    if ! "$bin" "${FUZZ_FLAGS[@]}" "$input" >>"$log" 2>&1 </dev/null; then
      echo "fuzz: $name: regression input FAILS: $input"
      echo "      (log: $log)"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz property violated)' "$log" |
        tail -n 3 | sed 's/^/      /'
      ok=1
    fi
  done < <(find "$dir" -type f -print0 | sort -z)
  return $ok
}

# run_fuzzing NAME BIN: the bounded run; prints what it saw; non-zero on any finding.
run_fuzzing() {
  local name=$1 bin=$2 log="$BUILD/fuzz-logs/$1.log" rc execs rate corpus_size
  local corpus="$BUILD/fuzz-corpus/$name" seeds="$ROOT/tests/fuzz/corpus/$name"
  local artifacts="$BUILD/fuzz-artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus")
  [[ -d "$seeds" ]] && dirs+=("$seeds")
  "$bin" "${FUZZ_FLAGS[@]}" -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dirs[@]}" >"$log" 2>&1 </dev/null
  rc=$?
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n1)
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -n1)
  corpus_size=$(find "$corpus" -type f | wc -l)
  echo "fuzz: $name: ${execs:-?} runs, ${rate:-?} exec/s, corpus $corpus_size (+ seeds), exit $rc"
  if [[ $rc -ne 0 ]]; then
    echo "      (log: $log)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz property violated|ALARM)' "$log" |
      tail -n 3 | sed 's/^/      /'
    local found
    found=$(artifacts_of "$name")
    if [[ -n "$found" ]]; then
      echo "      reproducer(s):"
      sed 's/^/        /' <<<"$found"
    fi
    return 1
  fi
  return 0
}

# fuzz_target NAME: the regression inputs and the bounded run of one target; prints its lines
# and returns non-zero on any finding. Runs in a subshell of its own: the target's temp files go
# to a TMPDIR under $SCRATCH removed afterwards, also when the target crashed or timed out and
# so never removed them itself.
fuzz_target() {
  local name=$1 bin="$BUILD/bin/fuzz/$1_fuzz" ok=0
  if [[ ! -x "$bin" ]]; then
    echo "fuzz: $name: no such target ($bin)"
    return 1
  fi
  rm -rf "$BUILD/fuzz-artifacts/$name"
  export TMPDIR="$SCRATCH/$name"
  rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
  run_regressions "$name" "$bin" || ok=1
  run_fuzzing "$name" "$bin" || ok=1
  rm -rf "$TMPDIR"
  return $ok
}

# Up to FUZZ_JOBS targets at once, each printing into its own file; the files are printed in
# the targets' order once all are done, so the output reads the same whatever finished first.
# The targets' temp directories live under SCRATCH, gone when this script ends however it ends.
SCRATCH="$BUILD/fuzz-tmp"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$BUILD/fuzz-logs"
echo "==== fuzz: ${#TARGETS[@]} targets, $SECONDS_PER_TARGET s each, $FUZZ_JOBS at a time ===="
for name in "${TARGETS[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $FUZZ_JOBS ]]; do
    wait -n
  done
  rm -f "$BUILD/fuzz-logs/$name.status"
  (
    if fuzz_target "$name"; then status=passed; else status=FAILED; fi
    echo "$status" >"$BUILD/fuzz-logs/$name.status"
  ) >"$BUILD/fuzz-logs/$name.out" 2>&1 &
done
wait

RESULTS=()
FAILED=0
for name in "${TARGETS[@]}"; do
  cat "$BUILD/fuzz-logs/$name.out"
  status=$(cat "$BUILD/fuzz-logs/$name.status" 2>/dev/null || echo FAILED)
  [[ $status == passed ]] || FAILED=$((FAILED + 1))
  RESULTS+=("$name: $status")
done

echo
echo "==== fuzz: summary ($((SECONDS - START)) s) ===="
for r in "${RESULTS[@]}"; do
  echo "fuzz $r"
done
summary_line "${#TARGETS[@]}" "$FAILED"
[[ $FAILED -eq 0 && ${#TARGETS[@]} -gt 0 ]]
