#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# End to end through a real container runtime: podman's CNI backend runs the mizarmp plugin
# (chained with the reference portmap plugin) against mizarmp-mock acting as the Mizar-MP
# controller and host agent.
#
#   tests/e2e/podman_e2e.sh BIN_DIR
#
# BIN_DIR holds the built mizarmp and mizarmp-mock. Needs root and podman; without them it prints
# why and exits 77 (ctest: skipped), except under CI=true where that is a failure.
#
# What it asserts, as a user would see it:
#   1. a --rm container gets exactly the address and MAC the controller allocated, podman reports
#      that address, the container pings the gateway; after it exits the controller has no port,
#      the state dir no record, the agent no veth, libcni no cached result;
#   2. two named containers running at once get distinct addresses, ping each other and the
#      gateway, a third --rm container pings the first; after `podman rm -f` nothing is left.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=podman_env.sh
source "$HERE/podman_env.sh"

BIN_DIR=${1:-}
if [[ -z "$BIN_DIR" ]]; then
  echo "usage: $0 BIN_DIR" >&2
  exit 2
fi
BIN_DIR=$(cd "$BIN_DIR" && pwd)

PROJECT=3dda2801-d675-4688-a63f-dcda8d327f50
SUBNET=a87e0f87-a2d9-44ef-9194-9a62f178594e
CIDR=10.246.0.0/24
GATEWAY=10.246.0.1
PREFIX=24

PASSED=0
WORK=""
NETNS=""
MOCK_PID=""

log() { echo "e2e: $*"; }

diagnostics() {
  [[ -n "$WORK" && -d "$WORK" ]] || return 0
  local f
  for f in "$WORK"/*.err "$WORK"/mock.log; do
    [[ -s "$f" ]] || continue
    echo "----- $(basename "$f") (last 40 lines) -----"
    tail -n 40 "$f"
  done
}

fail() {
  echo "FAIL: $*"
  diagnostics
  echo "podman e2e: $PASSED passed, 1 failed"
  exit 1
}

pass() {
  PASSED=$((PASSED + 1))
  echo "ok: $*"
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
  if [[ "$2" == "$3" ]]; then
    pass "$1 = $3"
  else
    fail "$1: got '$2', want '$3'"
  fi
}

cleanup() {
  local rc=$?
  mz_podman_cleanup
  if [[ -n "$MOCK_PID" ]]; then
    kill -TERM "$MOCK_PID" 2>/dev/null
    local i
    for ((i = 0; i < 100; i++)); do
      kill -0 "$MOCK_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$MOCK_PID" 2>/dev/null
    wait "$MOCK_PID" 2>/dev/null
  fi
  [[ -n "$NETNS" ]] && ip netns del "$NETNS" 2>/dev/null
  [[ -n "$WORK" ]] && rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- capability -------------------------------------------------------------------------------
reason=$(mz_podman_unavailable_reason)
if [[ -n "$reason" ]]; then
  if [[ "${CI:-}" == "true" ]]; then
    echo "FAIL: the podman end-to-end test is required in CI but cannot run: $reason"
    echo "podman e2e: 0 passed, 1 failed"
    exit 1
  fi
  echo "SKIP: podman end-to-end test: $reason"
  exit 77
fi
for b in mizarmp mizarmp-mock; do
  [[ -x "$BIN_DIR/$b" ]] || fail "$BIN_DIR/$b is not built"
done
for p in portmap; do
  [[ -x "/usr/lib/cni/$p" ]] || fail "reference CNI plugin /usr/lib/cni/$p missing (containernetworking-plugins)"
done

# --- setup ------------------------------------------------------------------------------------
SUFFIX=$(printf '%04x%04x' $(($$ & 0xffff)) $((RANDOM)))
NET=mizarmp
BRIDGE="mzbe$SUFFIX"  # 12 characters, under IFNAMSIZ
WORK=$(mktemp -d /tmp/mizarmp-e2e.XXXXXX)
STATE="$WORK/state"
mkdir -p "$STATE"

# The agent's side (bridge with the gateway, host ends of the veths) lives in a netns of its own,
# so this test touches nothing in the host's namespace and can run beside other tests.
NETNS="mze2e-$SUFFIX"
ip netns add "$NETNS" || fail "ip netns add $NETNS"
ip -n "$NETNS" link set lo up

# --strict: the controller answers as the real v0.1 one does (alcor@5ca01ef0: POST answers UP,
# the only port list is a subnet's, MACs unpadded; mock-server/strict.h).
"$BIN_DIR/mizarmp-mock" --strict --listen 127.0.0.1:0 --port-file "$WORK/mock.port" --agent \
  --bridge "$BRIDGE" --agent-netns "/run/netns/$NETNS" --cidr "$CIDR" --gateway "$GATEWAY" \
  --log-file "$WORK/mock.log" >"$WORK/mock.out" 2>"$WORK/mock.err" &
MOCK_PID=$!
mz_wait_for_file "$WORK/mock.port" 30 || fail "mizarmp-mock did not write its port file"
URL="http://127.0.0.1:$(cat "$WORK/mock.port")"
grep -q "mizarmp-mock listening on $URL" "$WORK/mock.out" ||
  fail "mizarmp-mock stdout does not announce $URL: $(cat "$WORK/mock.out")"
log "mock at $URL, agent bridge $BRIDGE in netns $NETNS"

mz_podman_init "$WORK" "$BIN_DIR" /usr/lib/cni >"$WORK/init.err" 2>&1 ||
  fail "podman setup / busybox image import"

# The network is the project's own conf/mizarmp.conflist (mizarmp chained with portmap and
# bandwidth), pointed
# at this mock and a temp state dir. podman's CNI config dir is private to this test, so the name
# `mizarmp` cannot clash with anything else.
mz_write_conflist "$ROOT/conf/mizarmp.conflist" "$MZ_CNI_CONF_DIR/$NET.conflist" \
  "$URL" "$STATE" e2e-node debug || fail "writing the conflist from conf/mizarmp.conflist"
[[ "$(mz_json 'd["name"]' <"$MZ_CNI_CONF_DIR/$NET.conflist")" == "$NET" ]] ||
  fail "conf/mizarmp.conflist does not name its network $NET"
[[ "$(mz_json '[p["type"] for p in d["plugins"]]' <"$MZ_CNI_CONF_DIR/$NET.conflist" | tr '\n' ' ')" == "mizarmp portmap bandwidth " ]] ||
  fail "conf/mizarmp.conflist does not chain mizarmp, portmap, bandwidth"

# --- helpers over the controller and the host -------------------------------------------------
# v0.1's one port list, an object keyed by port id, as {"ports": [...]}.
ports_json() {
  mz_http GET "$URL/project/$PROJECT/subnet/$SUBNET/ports" |
    mz_python -c 'import json, sys; print(json.dumps({"ports": list(json.load(sys.stdin).values())}))'
}
port_count() { ports_json | mz_json 'len(d["ports"])'; }
port_ips() { ports_json | mz_json '[ip["ip_address"] for p in d["ports"] for ip in p.get("fixed_ips", [])]'; }
# Padded, as the plugin reports it: v0.1 writes each byte without its leading zero.
port_mac_of() { ports_json | mz_json "[':'.join(g.zfill(2) for g in p['mac_address'].split(':')) for p in d['ports'] if any(i['ip_address'] == '$1' for i in p.get('fixed_ips', []))]"; }
# Every file an attachment leaves, but the plugin's outcome log, which outlives attachments.
records() { find "$STATE" -type f ! -name ".cni-outcomes.log*" | sort; }
agent_veths() { ip -n "$NETNS" -o link show type veth; }
cni_cache() { # libcni's result cache is global: look only at this test's containers
  local id
  for id in "${CIDS[@]}"; do
    ls /var/lib/cni/results 2>/dev/null | grep -F "$NET-$id-" || true
  done
}
container_ip() { # NAME: the IPv4 address on eth0 inside the container
  mz_podman exec "$1" ip -o -4 addr show dev eth0 | awk '{print $4}' | cut -d/ -f1
}
inspect() { mz_podman inspect -f "$2" "$1"; }

# Nothing of this test's attachments may remain anywhere a user would look.
assert_clean() {
  local what=$1 sandbox
  expect_eq "$what: ports at the controller" "$(port_count)" 0
  expect_eq "$what: allocated addresses at the controller" \
    "$(mz_http GET "$URL/mock/state" | mz_json 'len(d["allocated"])')" 0
  expect_eq "$what: attachment records in the state dir" "$(records | wc -l)" 0
  expect_eq "$what: veths left by the agent" "$(agent_veths | wc -l)" 0
  expect_eq "$what: libcni cached results for $NET" "$(cni_cache | wc -l)" 0
  expect_eq "$what: podman containers" "$(mz_podman ps -a -q | wc -l)" 0
  for sandbox in "${SANDBOXES[@]}"; do
    [[ ! -e "$sandbox" ]] || fail "$what: container netns $sandbox still exists"
  done
  pass "$what: the containers' network namespaces are gone"
}
SANDBOXES=()
CIDS=()

expect_eq "ports before any container" "$(port_count)" 0

# --- 1. one --rm container ----------------------------------------------------------------------
log "1. one --rm container on $NET"
SYNC="$WORK/sync1"
mkdir -p "$SYNC"
# The container reports what it sees, then waits (bounded) for the go-ahead so the test can
# compare with the controller while the port exists.
timeout 180 "$MZ_PODMAN" run --rm --name "one-$SUFFIX" \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network "$NET" -v "$SYNC:/sync" \
  "$MZ_IMAGE" sh -c "
    ip -o -4 addr show dev eth0 > /sync/addr
    ip -o link show dev eth0 > /sync/link
    ip route show default > /sync/route
    if ping -c 2 -W 3 $GATEWAY > /sync/ping 2>&1; then echo ok > /sync/pingrc; else echo failed > /sync/pingrc; fi
    i=0; while [ ! -e /sync/go ] && [ \$i -lt 600 ]; do sleep 0.2; i=\$((i+1)); done
    echo done" >"$WORK/run1.out" 2>"$WORK/run1.err" &
RUN1=$!
if ! mz_wait_for_file "$SYNC/pingrc" 150; then
  kill "$RUN1" 2>/dev/null
  fail "the --rm container never reported (podman run: $(tail -n 5 "$WORK/run1.err"))"
fi
expect_eq "ports at the controller while it runs" "$(port_count)" 1
MOCK_IP=$(port_ips)
CT_IP=$(awk '{print $4}' "$SYNC/addr" | head -n1)
expect_eq "address on the container's eth0" "$CT_IP" "$MOCK_IP/$PREFIX"
CT_MAC=$(grep -o 'link/ether [0-9a-f:]*' "$SYNC/link" | awk '{print $2}')
expect_eq "MAC of the container's eth0" "$CT_MAC" "$(port_mac_of "$MOCK_IP")"
grep -q "default via $GATEWAY dev eth0" "$SYNC/route" ||
  fail "default route in the container: $(cat "$SYNC/route")"
pass "default route via $GATEWAY"
expect_eq "podman's view of the address" \
  "$(inspect "one-$SUFFIX" "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}")" "$MOCK_IP"
SANDBOXES+=("$(inspect "one-$SUFFIX" '{{.NetworkSettings.SandboxKey}}')")
CIDS+=("$(inspect "one-$SUFFIX" '{{.Id}}')")
expect_eq "records while it runs" "$(records | grep -c '\.json$')" 1
expect_eq "ping from the container to the gateway" "$(cat "$SYNC/pingrc")" ok
touch "$SYNC/go"
wait "$RUN1"
expect_eq "exit code of podman run --rm" "$?" 0
grep -q '^done$' "$WORK/run1.out" || fail "container output: $(cat "$WORK/run1.out")"
assert_clean "after the --rm container exited"

# --- 2. two containers at once --------------------------------------------------------------------
log "2. two named containers at once, pinging each other"
for n in a b; do
  timeout 120 "$MZ_PODMAN" run -d --name "$n-$SUFFIX" \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network "$NET" "$MZ_IMAGE" sleep 600 \
    >"$WORK/run-$n.out" 2>"$WORK/run-$n.err" ||
    fail "podman run -d $n: $(tail -n 5 "$WORK/run-$n.err")"
  SANDBOXES+=("$(inspect "$n-$SUFFIX" '{{.NetworkSettings.SandboxKey}}')")
  CIDS+=("$(inspect "$n-$SUFFIX" '{{.Id}}')")
done
IP_A=$(container_ip "a-$SUFFIX")
IP_B=$(container_ip "b-$SUFFIX")
[[ -n "$IP_A" && -n "$IP_B" && "$IP_A" != "$IP_B" ]] || fail "addresses: a='$IP_A' b='$IP_B'"
pass "distinct addresses $IP_A and $IP_B"
expect_eq "ports at the controller" "$(port_count)" 2
expect_eq "addresses at the controller" "$(port_ips | sort | tr '\n' ' ')" \
  "$(printf '%s\n' "$IP_A" "$IP_B" | sort | tr '\n' ' ')"
for n in a b; do
  ip_var="IP_${n^^}"
  expect_eq "podman's view of $n" \
    "$(inspect "$n-$SUFFIX" "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}")" "${!ip_var}"
  expect_eq "podman's MAC of $n" \
    "$(inspect "$n-$SUFFIX" "{{(index .NetworkSettings.Networks \"$NET\").MacAddress}}")" \
    "$(port_mac_of "${!ip_var}")"
done
expect_eq "records while both run" "$(records | grep -c '\.json$')" 2
mz_podman exec "a-$SUFFIX" ping -c 2 -W 3 "$IP_B" >"$WORK/ping-ab.err" 2>&1 ||
  fail "ping a -> b: $(cat "$WORK/ping-ab.err")"
pass "ping a -> b"
mz_podman exec "b-$SUFFIX" ping -c 2 -W 3 "$IP_A" >"$WORK/ping-ba.err" 2>&1 ||
  fail "ping b -> a: $(cat "$WORK/ping-ba.err")"
pass "ping b -> a"
mz_podman exec "b-$SUFFIX" ping -c 1 -W 3 "$GATEWAY" >"$WORK/ping-bg.err" 2>&1 ||
  fail "ping b -> gateway: $(cat "$WORK/ping-bg.err")"
pass "ping b -> gateway"
timeout 120 "$MZ_PODMAN" run --rm --network "$NET" \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$MZ_IMAGE" ping -c 2 -W 3 "$IP_A" \
  >"$WORK/run-c.out" 2>"$WORK/run-c.err" ||
  fail "a third --rm container pinging a: $(tail -n 5 "$WORK/run-c.out" "$WORK/run-c.err")"
pass "a third --rm container pings a"
expect_eq "ports after the third container left" "$(port_count)" 2
mz_podman rm -f -t 0 "a-$SUFFIX" "b-$SUFFIX" >"$WORK/rm.out" 2>"$WORK/rm.err" ||
  fail "podman rm -f: $(cat "$WORK/rm.err")"
pass "podman rm -f a b"
assert_clean "after podman rm -f"

echo "podman e2e: $PASSED passed, 0 failed"
