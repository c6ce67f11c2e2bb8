#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The README's main command as a user runs it, against the build's binaries:
#   demo_test.sh BIN_DIR plain|ha|alcor|planted-record
# plain, ha and alcor run scripts/demo.sh (MIZARMP_DEMO_HA=1, MIZARMP_DEMO_DIALECT=alcor) and
# pass when it ends "demo: OK" and nothing it made is left on the machine: no temp dir, no
# process, no bridge, veth or OVS datapath. planted-record runs the plain demo with a plugin
# whose DEL leaves its attachment record behind, and passes only when the demo fails naming
# both containers' records, and still leaves nothing else behind.
# Needs root and podman: exits 77 (skipped) without them, fails instead under CI=true.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(cd "$1" && pwd)
CASE=$2
# shellcheck source=../e2e/podman_env.sh
source "$ROOT/tests/e2e/podman_env.sh"

reason=$(mz_podman_unavailable_reason)
if [[ -n "$reason" ]]; then
  if [[ "${CI:-}" == true ]]; then
    echo "demo_test: FAILED: $reason (CI=true: this test must run)"
    exit 1
  fi
  echo "demo_test: skipped: $reason"
  exit 77
fi

FAILURES=0
fail() { echo "demo_test: FAILED: $*"; FAILURES=$((FAILURES + 1)); }

# What the demo makes lives under /tmp/mizarmp-demo.*: its temp dir, and every process it starts
# (mock, servers, etcd, Open vSwitch, conmon) names that dir on its command line.
demo_dirs() { find /tmp -maxdepth 1 -name 'mizarmp-demo.*' | sort; }
demo_processes() { pgrep -af '/tmp/mizarmp-demo\.' | grep -v "^$$ " || true; }

# planted-record: the real plugin behind a wrapper that puts the attachment record back after
# every DEL, as a plugin that forgot to remove it would leave it.
plant_record_keeping_plugin() {
  local dir=$1 b
  for b in mizarmp-mock mizarmp-addons mizarmpctl; do ln -s "$BIN/$b" "$dir/$b"; done
  cat >"$dir/mizarmp" <<WRAPPER
#!/usr/bin/env bash
conf=\$(cat)
record=""
if [[ \$CNI_COMMAND == DEL ]]; then
  state=\$(python3 -c 'import json, sys; c = json.load(sys.stdin); print(c["stateDir"] + "/" + c["name"])' <<<"\$conf")
  record="\$state/\$CNI_CONTAINERID:\$CNI_IFNAME.json"
  [[ -f \$record ]] && cp -p "\$record" "\$record.kept" || record=""
fi
rc=0
"$BIN/mizarmp" <<<"\$conf" || rc=\$?
[[ -n \$record ]] && mv "\$record.kept" "\$record"
exit \$rc
WRAPPER
  chmod 0755 "$dir/mizarmp"
}

dirs_before=$(demo_dirs)
[[ -z "$(demo_processes)" ]] || { echo "demo_test: a demo is already running:"; demo_processes; exit 1; }

log=$(mktemp /tmp/mizarmp-demo-test-log.XXXXXX)
WRAPPED=""
trap 'rm -rf "$log" ${WRAPPED:+"$WRAPPED"}' EXIT
env_args=(MIZARMP_DEMO_BIN_DIR="$BIN")
case $CASE in
  plain) ;;
  ha) env_args+=(MIZARMP_DEMO_HA=1) ;;
  alcor) env_args+=(MIZARMP_DEMO_DIALECT=alcor) ;;
  planted-record)
    WRAPPED=$(mktemp -d /tmp/mizarmp-demo-test.XXXXXX)
    plant_record_keeping_plugin "$WRAPPED"
    env_args=(MIZARMP_DEMO_BIN_DIR="$WRAPPED")
    ;;
  *) echo "usage: $0 BIN_DIR plain|ha|alcor|planted-record" >&2; exit 2 ;;
esac

rc=0
env "${env_args[@]}" bash "$ROOT/scripts/demo.sh" </dev/null 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
echo
echo "==== demo_test ($CASE): the demo exited $rc; checking what it left"

if [[ $CASE == planted-record ]]; then
  [[ $rc -ne 0 ]] || fail "the demo passed with an attachment record left behind"
  # Both containers' records are kept, and they are all that is left: the ports, veths and
  # pods went as usual.
  grep -q '^demo: FAILED: the check "nothing left" found 2 leftover(s):$' "$log" ||
    fail "the demo did not report two leftovers from its check \"nothing left\""
  named=$(grep -cE '^  attachment record mizarmp/[0-9a-f]+:eth0 \(port [0-9a-f-]+\)$' "$log" || true)
  [[ $named -eq 2 ]] || fail "the demo named $named attachment records left behind, not 2"
else
  [[ $rc -eq 0 ]] || fail "the demo exited $rc"
  [[ "$(tail -n1 "$log")" == "demo: OK" ]] || fail "the demo's last line is not \"demo: OK\""
fi

[[ "$(demo_dirs)" == "$dirs_before" ]] ||
  fail "temp dirs left: $(comm -13 <(echo "$dirs_before") <(demo_dirs) | tr '\n' ' ')"
left=$(demo_processes)
[[ -z "$left" ]] || fail "processes left: $left"
for link in mzdemo0 br-int ovs-netdev; do
  ! ip link show "$link" >/dev/null 2>&1 || fail "link $link left"
done
taps=$(ip -o link show type veth | awk -F': ' '$2 ~ /^tap/ {print $2}')
[[ -z "$taps" ]] || fail "tap veths left: $taps"
# The Alcor demo's node agent enforces its fence set in this host's namespace too.
! nft list table inet mizarmp_fence >/dev/null 2>&1 || fail "nftables table inet mizarmp_fence left"

if [[ $FAILURES -ne 0 ]]; then
  exit 1
fi
echo "demo_test ($CASE): passed"
