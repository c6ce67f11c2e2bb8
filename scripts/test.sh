#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The project's test command (README; CI runs it through .ci/run):
#   1. installs the Debian packages (scripts/install-deps.sh; nothing to do when all are there),
#   2. builds build/ (warnings are errors) and runs the whole ctest suite,
#   3. builds build-asan/ (clang, AddressSanitizer + UBSan) and runs the whole suite again with
#      leak detection on and every sanitizer report fatal,
#   4. builds build-tsan/ (ThreadSanitizer) with only the tests labelled "concurrency"
#      (servers, the mock, racing plugin processes) and the programs they start, and runs those
#      tests with every race report fatal,
#   5. runs every libFuzzer target (built with build-asan/) for a bounded time over its seed
#      corpus and its saved regression inputs (scripts/fuzz.sh; one test per target).
# Each sanitizer tree is built while the pass before it runs its tests, and the fuzzers run while
# the TSan tests do, at idle CPU and I/O priority: the tests wait on servers, timers and
# containers for about half their time, and the background job takes only what they leave, never
# a core they want. Its output is printed when it is done. The summary tables each phase's time.
# Exits non-zero if any step or any test fails. The summary section names each failed test with
# the end of its output, then each run's own ctest summary line; the very last line is the same
# ctest-style line summed over all runs ("100% tests passed, 0 tests failed out of N"). A failed
# step (install, build) also ends with such a line, counting the step as one failed test, so the
# output always ends in a test count.
#
# Environment: CTEST_JOBS (default 2), CTEST_TIMEOUT (default per-test timeout, 600 s, for tests
# that set none), MIZARMP_TEST_SKIP_ASAN=1, MIZARMP_TEST_SKIP_TSAN=1 and MIZARMP_TEST_SKIP_FUZZ=1
# skip those passes (for quick local runs), MIZARMP_FUZZ_SECONDS the fuzzing time per target
# (default 20).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

JOBS=${CTEST_JOBS:-2}
TIMEOUT=${CTEST_TIMEOUT:-600}
START=$SECONDS
SUMMARIES=()
TOTAL_TESTS=0
TOTAL_FAILED=0
TOTAL_SKIPPED=0

# The phases so far, each "NAME START_SECONDS": section starts one, print_phases tables them.
PHASES=()
section() {
  echo
  echo "==== $* ($((SECONDS - START)) s) ===="
  PHASES+=("$SECONDS $*")
}

# The time each phase took (to the next one's start, the last to now), and the whole run.
print_phases() {
  local i start name next
  echo "phase                                   seconds"
  for i in "${!PHASES[@]}"; do
    start=${PHASES[$i]%% *}
    name=${PHASES[$i]#* }
    [[ $name == summary ]] && continue
    next=$SECONDS
    [[ $((i + 1)) -lt ${#PHASES[@]} ]] && next=${PHASES[$((i + 1))]%% *}
    printf '%-40s%7d\n' "$name" $((next - start))
  done
  printf '%-40s%7d\n' "total" $((SECONDS - START))
}

# The last line of every run: ctest's own summary format, summed over the passes that ran.
# Skipped tests count as passed and a failed step (build, ctest itself) as one failed test, as
# in ctest; the percentage is rounded as ctest rounds it (never 100% with a failure).
final_summary() {
  local total=$TOTAL_TESTS failed=$TOTAL_FAILED percent=0
  if [[ $total -gt 0 ]]; then
    percent=$(( ((total - failed) * 200 + total) / (2 * total) ))
    [[ $failed -gt 0 && $percent -gt 99 ]] && percent=99
  fi
  echo "$percent% tests passed, $failed tests failed out of $total"
}

die() {
  echo
  echo "test.sh: FAILED: $*"
  SUMMARIES+=("$*: FAILED")
  TOTAL_TESTS=$((TOTAL_TESTS + 1))
  TOTAL_FAILED=$((TOTAL_FAILED + 1))
  section "summary"
  local s
  for s in "${SUMMARIES[@]}"; do
    echo "$s"
  done
  print_phases
  final_summary
  exit 1
}

# run_ctest NAME BUILD_DIR [CTEST_ARGS...]: runs the suite (or the part the arguments select),
# records its summary line and counts.
run_ctest() {
  local name=$1 dir=$2 log="$2/ctest-output.log"
  shift 2
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j"$JOBS" --timeout "$TIMEOUT" "$@") \
    </dev/null 2>&1 | tee "$log"
  record_counts "$name" "$log" "${PIPESTATUS[0]}"
}

# The fuzz pass: scripts/fuzz.sh (its targets are built with build-asan/), counted like a ctest
# run. It runs beside the TSan tests (start_idle), on the CPU they leave.
FUZZ_LOG="$ROOT/build-asan/fuzz-output.log"
# At idle priority an input can wait seconds for a CPU while two tests hold both, so the time an
# input may take before it counts as a hang is a minute rather than fuzz.sh's 10 s.
start_fuzz() {
  start_idle fuzz "$FUZZ_LOG" env MIZARMP_FUZZ_INPUT_TIMEOUT=60 \
    bash "$ROOT/scripts/fuzz.sh" "${MIZARMP_FUZZ_SECONDS:-20}"
}
finish_fuzz() {
  local rc=0
  finish_idle || rc=$?
  record_counts fuzz "$FUZZ_LOG" "$rc"
}

# The logs of the passes whose failed tests the summary recalls (record_counts adds them).
FAILED_LOGS=()

# recall_failures LOG: each test LOG's ctest lists as failed, with the last lines of its output.
# CI shows only the tail of a run, so a failure's cause is repeated where it is seen.
recall_failures() {
  local log=$1 name
  while IFS= read -r name; do
    echo "---- failed: $name (the last 40 lines of its output, from $log) ----"
    # --output-on-failure prints a test's output after its result line, up to the next
    # "Start N:" or result line.
    awk -v name="$name" '
      $0 ~ /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / { inside = (index($0, ": " name " ") > 0); next }
      $0 ~ /^ +Start +[0-9]+: / || /^[0-9]+% tests passed/ { inside = 0; next }
      inside' "$log" | tail -n 40
  done < <(sed -n '/^The following tests FAILED:/,$p' "$log" |
    sed -nE 's/^[[:space:]]+[0-9]+ - (.*) \([^)]*\)$/\1/p')
}

# record_counts NAME LOG RC: adds the last ctest-style summary line of LOG to the totals.
record_counts() {
  local name=$1 log=$2 rc=$3
  local line total failed skipped
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n1)
  if [[ -z "$line" ]]; then
    SUMMARIES+=("$name: ctest printed no summary (exit $rc)")
    TOTAL_TESTS=$((TOTAL_TESTS + 1))
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    return 1
  fi
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  failed=$(sed -E 's/.*, ([0-9]+) tests? failed.*/\1/' <<<"$line")
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$log" || true)
  if [[ $skipped -gt 0 ]]; then line+=" ($skipped skipped)"; fi
  SUMMARIES+=("$name: $line")
  TOTAL_TESTS=$((TOTAL_TESTS + total))
  TOTAL_FAILED=$((TOTAL_FAILED + failed))
  TOTAL_SKIPPED=$((TOTAL_SKIPPED + skipped))
  [[ $failed -gt 0 ]] && FAILED_LOGS+=("$log")
  if [[ $rc -ne 0 && $failed -eq 0 ]]; then
    # ctest failed for another reason (e.g. a test binary could not be listed): count it.
    TOTAL_TESTS=$((TOTAL_TESTS + 1))
    TOTAL_FAILED=$((TOTAL_FAILED + 1))
    SUMMARIES+=("$name: ctest exited $rc")
  fi
  return "$rc"
}

# The job running in the background at idle priority (start_idle): its name and its output.
IDLE_PID=
IDLE_NAME=
IDLE_LOG=
trap '[[ -n $IDLE_PID ]] && kill -- "-$IDLE_PID" 2>/dev/null' EXIT

# Runs a command at idle priority: SCHED_IDLE gets a CPU only when nothing else wants it, and
# the idle I/O class the disk likewise (nice 19 where the scheduler class is refused).
IDLE=(nice -n 19)
if chrt --idle 0 true 2>/dev/null && ionice -c 3 true 2>/dev/null; then
  IDLE=(chrt --idle 0 ionice -c 3)
fi

# start_idle NAME LOG COMMAND...: COMMAND in the background at idle priority, in a process group
# of its own (so an early exit stops all of it), its output to LOG.
start_idle() {
  IDLE_NAME=$1
  IDLE_LOG=$2
  shift 2
  mkdir -p "$(dirname "$IDLE_LOG")"
  setsid --wait "${IDLE[@]}" "$@" </dev/null >"$IDLE_LOG" 2>&1 &
  IDLE_PID=$!
  echo "$IDLE_NAME started in the background at idle priority; its output follows when it is done"
}

# finish_idle: waits for the job start_idle began and prints its output; returns its exit code.
finish_idle() {
  section "$IDLE_NAME, finishing"
  local rc=0
  wait "$IDLE_PID" || rc=$?
  IDLE_PID=
  cat "$IDLE_LOG"
  return "$rc"
}

start_build() {
  start_idle "build ($1)" "$ROOT/build-$1/build-output.log" bash "$ROOT/scripts/build.sh" "$1"
}
finish_build() { finish_idle || die "$IDLE_NAME"; }

section "install dependencies"
bash "$ROOT/scripts/install-deps.sh" </dev/null || die "scripts/install-deps.sh"

section "build (normal)"
bash "$ROOT/scripts/build.sh" normal </dev/null || die "normal build"

WANT_ASAN=$([[ "${MIZARMP_TEST_SKIP_ASAN:-}" == 1 ]] || echo 1)
WANT_TSAN=$([[ "${MIZARMP_TEST_SKIP_TSAN:-}" == 1 ]] || echo 1)
WANT_FUZZ=$([[ "${MIZARMP_TEST_SKIP_FUZZ:-}" == 1 ]] || echo 1)

section "tests (normal)"
if [[ -n $WANT_ASAN ]]; then start_build asan; elif [[ -n $WANT_TSAN ]]; then start_build tsan; fi
run_ctest normal "$ROOT/build"
NORMAL_RC=$?

ASAN_RC=0
if [[ -n $WANT_ASAN ]]; then
  finish_build

  section "tests (asan)"
  [[ -n $WANT_TSAN ]] && start_build tsan
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:print_stacktrace=1:strict_string_checks=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  if [[ -f "$ROOT/scripts/lsan.supp" ]]; then
    export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0"
  fi
  run_ctest asan "$ROOT/build-asan"
  ASAN_RC=$?
fi

TSAN_RC=0
if [[ -n $WANT_TSAN ]]; then
  finish_build

  section "tests (tsan)"
  [[ -n $WANT_FUZZ ]] && start_fuzz
  # Debian's gRPC, protobuf, abseil and OpenSSL are not built with ThreadSanitizer: their own
  # accesses are not checked (ignore_noninstrumented_modules), and tsan.supp names the few
  # hand-overs inside gRPC that TSan sees only half of; nothing of ours is suppressed.
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$ROOT/scripts/tsan.supp" \
    run_ctest tsan "$ROOT/build-tsan" -L concurrency
  TSAN_RC=$?
fi

FUZZ_RC=0
if [[ -n $WANT_FUZZ ]]; then
  [[ -n $WANT_TSAN ]] || start_fuzz  # no TSan pass to run beside: it has the CPU to itself
  finish_fuzz
  FUZZ_RC=$?
fi

section "summary"
for log in "${FAILED_LOGS[@]}"; do recall_failures "$log"; done
for s in "${SUMMARIES[@]}"; do
  echo "$s"
done
print_phases
[[ $TOTAL_SKIPPED -gt 0 ]] && echo "$TOTAL_SKIPPED test(s) skipped (counted as passed, as ctest does)"
final_summary
[[ $NORMAL_RC -eq 0 && $ASAN_RC -eq 0 && $TSAN_RC -eq 0 && $FUZZ_RC -eq 0 && $TOTAL_FAILED -eq 0 ]]
