#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Flakiness under load: repeats the tests labelled "concurrency" (servers, the mock, racing
# plugin processes, etcd clusters) ROUNDS times from an existing build while a CPU hog keeps
# every core busy, then reports each round's result and every test that failed, with its count.
#
#   scripts/stress.sh [ROUNDS] [BUILD_DIR]      (defaults: 20, build/)
#
# The hog is one `yes > /dev/null` per core at normal priority, so the tests compete for CPU as
# they do when CI runs two at a time beside a build. STRESS_LABEL selects another label,
# STRESS_JOBS ctest's parallelism (default 2, as CI), STRESS_HOGS the number of hogs (default:
# the number of cores). Each round's ctest log is kept under BUILD_DIR/stress/. Exits non-zero
# when any round had a failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${1:-20}
BUILD_DIR=$(cd "${2:-$ROOT/build}" && pwd) || exit 2
LABEL=${STRESS_LABEL:-concurrency}
JOBS=${STRESS_JOBS:-2}
HOGS=${STRESS_HOGS:-$(nproc)}
LOGS="$BUILD_DIR/stress"
mkdir -p "$LOGS"

hogs=()
stop_hogs() {
  [[ ${#hogs[@]} -gt 0 ]] && kill "${hogs[@]}" 2>/dev/null
  wait "${hogs[@]}" 2>/dev/null
  hogs=()
}
trap stop_hogs EXIT
for ((i = 0; i < HOGS; i++)); do
  yes >/dev/null &
  hogs+=($!)
done

declare -A failures=()
failed_rounds=0
start=$SECONDS
for ((round = 1; round <= ROUNDS; round++)); do
  log="$LOGS/round-$round.log"
  round_start=$SECONDS
  (cd "$BUILD_DIR" && ctest -L "$LABEL" -j"$JOBS" --output-on-failure) </dev/null >"$log" 2>&1
  summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n1)
  echo "round $round/$ROUNDS ($((SECONDS - round_start)) s): ${summary:-no ctest summary}"
  # The names ctest lists under "The following tests FAILED:" (not its skipped ones).
  failed_here=$(awk '/^The following tests FAILED:/ {f = 1; next}
                     f && /^[[:space:]]+[0-9]+ - / {print $3; next}
                     f {f = 0}' "$log")
  if [[ -n $failed_here || -z $summary ]]; then
    failed_rounds=$((failed_rounds + 1))
    for t in $failed_here; do
      failures[$t]=$((${failures[$t]:-0} + 1))
      echo "  failed: $t (log: $log)"
    done
  fi
done
stop_hogs

echo
echo "stress: $ROUNDS round(s) of label '$LABEL' with $HOGS CPU hog(s) in $((SECONDS - start)) s:" \
     "$failed_rounds round(s) with a failure"
for t in "${!failures[@]}"; do
  echo "  $t failed ${failures[$t]} time(s)"
done
[[ $failed_rounds -eq 0 ]]
