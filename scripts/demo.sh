#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The one-box demo (README's main command): two podman containers on a Mizar-MP network.
#
#   1. installs the Debian packages and builds build/ (skipped quickly when already done),
#   2. starts mizarmp-mock as the Mizar-MP controller and host agent (bridge mzdemo0 holding the
#      gateway, in this host's network namespace),
#   3. writes the CNI network `mizarmp` from conf/mizarmp.conflist (mizarmp, then the reference
#      portmap and bandwidth plugins), pointed at the mock,
#   4. podman (CNI backend, isolated storage) runs containers A and B; both get their NIC and
#      address through the mizarmp plugin, and they ping each other over the Mizar-MP network,
#   5. shows the ports at the controller (curl), the plugin's attachment records and what
#      `mizarmpctl attachments` makes of them,
#   6. starts mizarmp-addons (CSI-Addons server) on a unix socket and asks it Identity
#      GetIdentity / GetCapabilities / Probe and FenceController GetFenceClients from Python
#      (stubs generated from proto/),
#   7. with MIZARMP_DEMO_HA=1 only: two mizarmp-addons replicas sharing their fence state in a
#      3-member etcd cluster on loopback; a fence through one survives its kill -9, the other
#      lifts it (scripts/demo_ha.sh),
#   8. removes the containers and shows that no port, record or veth is left,
#   9. stops the servers. Everything it created is removed on any exit.
#
# MIZARMP_DEMO_DIALECT=alcor plays it on Alcor instead (scripts/demo_alcor.sh): Open vSwitch
# started and stopped by the demo, the plugin plugs the pods into br-int itself, container A is
# on a dead node, and a fence of it holds through the surviving node's agent; an unfence
# restores it.
#
# Needs root. Takes well under a minute once build/ is up to date (the HA part adds ~15 s).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/e2e/podman_env.sh
source "$ROOT/tests/e2e/podman_env.sh"
# shellcheck source=demo_ha.sh
source "$ROOT/scripts/demo_ha.sh"
# shellcheck source=demo_alcor.sh
source "$ROOT/scripts/demo_alcor.sh"

# MIZARMP_DEMO_BIN_DIR: use binaries built elsewhere and skip the package check and the build.
BIN=${MIZARMP_DEMO_BIN_DIR:-$ROOT/build/bin}
PROJECT=3dda2801-d675-4688-a63f-dcda8d327f50
NETWORK=mizarmp
BRIDGE=${MIZARMP_DEMO_BRIDGE:-mzdemo0}
CIDR=${MIZARMP_DEMO_CIDR:-10.240.0.0/24}
GATEWAY=${CIDR%.*}.1
DIALECT=${MIZARMP_DEMO_DIALECT:-v0.1}
case $DIALECT in
  v0.1 | alcor) ;;
  *) echo "demo: MIZARMP_DEMO_DIALECT=$DIALECT: want v0.1 or alcor" >&2; exit 2 ;;
esac
WORK=""
MOCK_PID=""
ADDONS_PID=""
SUCCESS=0

section() {
  echo
  echo "================ $* ================"
}
run() { # prints a command (the isolated podman wrapper shown as "podman"), then runs it
  local shown="$*"
  echo "\$ ${shown/#mz_podman/podman}"
  "$@"
}

stop_pid() { # PID: SIGTERM, wait up to 10 s, then SIGKILL
  local pid=$1
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  if [[ $SUCCESS -ne 1 ]]; then
    section "cleaning up after a failure (exit $rc)"
    [[ -n "$WORK" && -s "$WORK/mock.log" ]] && { echo "-- mock log (last 20 lines):"; tail -n 20 "$WORK/mock.log"; }
  fi
  mz_podman_cleanup
  ha_cleanup
  alcor_stop_node_agent
  stop_pid "$ADDONS_PID"
  if [[ -n "$MOCK_PID" ]] && kill -0 "$MOCK_PID" 2>/dev/null; then
    kill -TERM "$MOCK_PID"
    for _ in $(seq 100); do kill -0 "$MOCK_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$MOCK_PID" 2>/dev/null
  fi
  alcor_stop_ovs
  [[ -n "$WORK" ]] && rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

show_ports() {
  mz_http GET "$URL/project/$PROJECT/ports" >"$WORK/ports.json"
  mz_python - "$WORK/ports.json" <<'EOF'
import json, sys
ports = json.load(open(sys.argv[1]))["ports"]
print("%d port(s) at the controller" % len(ports))
for p in ports:
    ips = ",".join(i["ip_address"] for i in p.get("fixed_ips", []))
    print("  %s  %-15s %s  status=%s  host=%s" % (p["id"], ips, p.get("mac_address", ""),
                                               p.get("status"), p.get("binding:host_id")))
EOF
}
bridge_ports() { ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1; }

# each_named WHAT EXPR COMMAND...: one line per item that EXPR (mz_json) names in COMMAND's JSON;
# a line naming WHAT instead when COMMAND fails or prints something else, never nothing.
each_named() {
  local what=$1 expr=$2 doc
  shift 2
  doc=$("$@") || { echo "$what (could not be read)"; return; }
  mz_json "$expr" <<<"$doc" || echo "$what (not the JSON expected)"
}

# One line per thing the demo created and did not remove, each named: ports at the controller,
# the plugin's attachment records (read by mizarmpctl, the one reader of records/; the plugin's
# outcome log and the lock files it sweeps later are not records) and the pods' plumbing.
list_leftovers() {
  each_named "the controller's port list" \
    '["port %s (%s) at the controller" % (p["id"], ",".join(i["ip_address"]
      for i in p.get("fixed_ips", []))) for p in d["ports"]]' \
    mz_http GET "$URL/project/$PROJECT/ports"
  local conflist
  for conflist in "$MZ_CNI_CONF_DIR"/*.conflist; do
    each_named "the attachment records (mizarmpctl attachments)" \
      '["attachment record %s/%s:%s (port %s)" % (r["network"], r["containerId"], r["ifname"],
        r["portId"]) for r in d]' \
      "$BIN/mizarmpctl" attachments -o json --conflist "$conflist"
  done
  if [[ $DIALECT == alcor ]]; then
    alcor_leftovers
  else
    bridge_ports | sed "s/^/veth /; s/\$/ on $BRIDGE/"
  fi
}

section "preparing: packages and build"
if [[ $(id -u) -ne 0 ]]; then
  echo "demo: must run as root (podman's CNI backend, network namespaces, the agent's veths)" >&2
  exit 1
fi
if [[ -z "${MIZARMP_DEMO_BIN_DIR:-}" ]]; then
  bash "$ROOT/scripts/install-deps.sh" </dev/null
  mkdir -p "$ROOT/build"
  echo "building mizarmp, mizarmp-mock, mizarmp-addons, mizarmpctl into build/ (log: build/demo-build.log)"
  MIZARMP_BUILD_TARGETS="mizarmp mizarmp-mock mizarmp-addons mizarmpctl" \
    bash "$ROOT/scripts/build.sh" normal </dev/null >"$ROOT/build/demo-build.log" 2>&1 || {
    tail -n 40 "$ROOT/build/demo-build.log"
    echo "demo: build failed (full log: build/demo-build.log)" >&2
    exit 1
  }
fi
for b in mizarmp mizarmp-mock mizarmp-addons mizarmpctl; do
  [[ -x "$BIN/$b" ]] || { echo "demo: $BIN/$b is missing" >&2; exit 1; }
done
echo "binaries: $BIN/{mizarmp,mizarmp-mock,mizarmp-addons,mizarmpctl}"
if [[ $DIALECT == v0.1 ]] && ip link show "$BRIDGE" >/dev/null 2>&1; then
  echo "demo: a link named $BRIDGE already exists (another demo running?)" >&2
  exit 1
fi

WORK=$(mktemp -d /tmp/mizarmp-demo.XXXXXX)
STATE="$WORK/state"
mkdir -p "$STATE"

if [[ $DIALECT == alcor ]]; then
  section "Open vSwitch in its userspace datapath, bridge $ALCOR_BRIDGE"
  alcor_start_ovs
  section "starting the mock as Alcor's controller and its host agent on Open vSwitch"
  # shellcheck disable=SC2046 # the flags are words
  "$BIN/mizarmp-mock" --listen 127.0.0.1:0 --port-file "$WORK/mock.port" $(alcor_mock_flags) \
    --cidr "$CIDR" --gateway "$GATEWAY" --log-file "$WORK/mock.log" >"$WORK/mock.out" 2>&1 &
else
  section "starting the Mizar-MP mock (controller + host agent)"
  "$BIN/mizarmp-mock" --listen 127.0.0.1:0 --port-file "$WORK/mock.port" --agent \
    --bridge "$BRIDGE" --cidr "$CIDR" --gateway "$GATEWAY" --log-file "$WORK/mock.log" \
    >"$WORK/mock.out" 2>&1 &
fi
MOCK_PID=$!
mz_wait_for_file "$WORK/mock.port" 30 || { echo "demo: the mock did not start"; exit 1; }
URL="http://127.0.0.1:$(cat "$WORK/mock.port")"
cat "$WORK/mock.out"
[[ $DIALECT == v0.1 ]] && echo "subnet $CIDR, gateway $GATEWAY on bridge $BRIDGE"

section "the CNI network (from conf/mizarmp.conflist)"
mz_podman_init "$WORK" "$BIN" /usr/lib/cni
mz_write_conflist "$ROOT/conf/mizarmp.conflist" "$MZ_CNI_CONF_DIR/$NETWORK.conflist" "$URL" "$STATE" demo-node
[[ $DIALECT == alcor ]] && alcor_configure "$MZ_CNI_CONF_DIR/$NETWORK.conflist"
cat "$MZ_CNI_CONF_DIR/$NETWORK.conflist"
echo "podman: $MZ_PODMAN (runc, cgroupfs, CNI backend, storage under $MZ_PODMAN_DIR)"

# The network container $1 joins: on Alcor, A's is the dead node's.
network_of() { if [[ $DIALECT == alcor ]]; then alcor_network_of "$1"; else echo "$NETWORK"; fi; }
for c in a b; do
  section "container ${c^^}: podman run -d on the network $(network_of $c)"
  run mz_podman run -d --name "demo-$c" --network "$(network_of $c)" "$MZ_IMAGE" sleep 600
  run mz_podman exec "demo-$c" ip -o -4 addr show dev eth0
done
IP_A=$(mz_podman exec demo-a ip -o -4 addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
IP_B=$(mz_podman exec demo-b ip -o -4 addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)

section "A and B ping each other over the Mizar-MP network"
run mz_podman exec demo-a ping -c 3 -W 3 "$IP_B"
run mz_podman exec demo-b ping -c 3 -W 3 "$IP_A"
if [[ $DIALECT == v0.1 ]]; then
  run mz_podman exec demo-b ping -c 1 -W 3 "$GATEWAY"
  section "the host reaches A through the gateway bridge"
  run ping -c 1 -W 3 "$IP_A"
else
  section "the pods on $ALCOR_BRIDGE, as the plugin plugged them and the agent tagged them"
  alcor_show_ovs
fi

section "ports at the controller"
echo "\$ curl -s $URL/project/$PROJECT/ports"
curl -sS --fail --max-time 10 "$URL/project/$PROJECT/ports" | mz_python -m json.tool
echo
show_ports
echo
echo "attachment records in $STATE:"
find "$STATE" -name '*.json' -printf '  %P\n'
echo
[[ $DIALECT == v0.1 ]] && echo "host ends of the agent's veths on $BRIDGE: $(bridge_ports | tr '\n' ' ')"
echo
echo "what an operator sees on the node (the records joined with the ports and the pods):"
run "$BIN/mizarmpctl" attachments --conflist "$MZ_CNI_CONF_DIR/$NETWORK.conflist"
run "$BIN/mizarmpctl" stale --conflist "$MZ_CNI_CONF_DIR/$NETWORK.conflist"
run "$BIN/mizarmpctl" gc --dry-run --conflist "$MZ_CNI_CONF_DIR/$NETWORK.conflist"

section "CSI-Addons server (mizarmp-addons)"
ADDONS_SOCK="$WORK/addons/csi-addons.sock"
ADDONS_FLAGS=()
if [[ $DIALECT == alcor ]]; then
  alcor_make_pki
  read -ra ADDONS_FLAGS <<<"$(alcor_addons_flags)"
fi
echo "\$ mizarmp-addons --endpoint unix://$ADDONS_SOCK --mpurl $URL --state-dir $STATE ${ADDONS_FLAGS[*]} ..."
"$BIN/mizarmp-addons" --endpoint "unix://$ADDONS_SOCK" --mpurl "$URL" --project "$PROJECT" \
  --state-dir "$STATE" --fence-store "$WORK/addons/fence.db" --host-id demo-node \
  "${ADDONS_FLAGS[@]}" --log-file "$WORK/addons.log" </dev/null &
ADDONS_PID=$!
for _ in $(seq 300); do
  [[ -S "$ADDONS_SOCK" ]] && break
  if ! kill -0 "$ADDONS_PID" 2>/dev/null; then
    echo "demo: mizarmp-addons exited"
    tail -n 20 "$WORK/addons.log"
    exit 1
  fi
  sleep 0.1
done
[[ -S "$ADDONS_SOCK" ]] || { echo "demo: mizarmp-addons did not open $ADDONS_SOCK"; exit 1; }
echo "listening on unix://$ADDONS_SOCK"
echo
echo "Identity and GetFenceClients over gRPC from Python (Debian's python3-grpcio; stubs generated from proto/):"
/usr/bin/python3 - "$ROOT" "$WORK/stubs" "$ADDONS_SOCK" <<'EOF'
import sys
root, stubs_dir, sock = sys.argv[1:4]
sys.path.insert(0, root + "/tests/python")
import grpc  # noqa: E402
import addons_client  # noqa: E402

stubs = addons_client.generate_stubs(stubs_dir)
pb, rpc = stubs.identity_pb2, stubs.identity_pb2_grpc
with grpc.insecure_channel("unix:" + sock) as channel:
    identity = rpc.IdentityStub(channel)
    info = identity.GetIdentity(pb.GetIdentityRequest(), timeout=10)
    print("  GetIdentity:     name=%s version=%s" % (info.name, info.vendor_version))
    for key in sorted(info.manifest):
        print("                   manifest %s=%s" % (key, info.manifest[key]))
    caps = identity.GetCapabilities(pb.GetCapabilitiesRequest(), timeout=10)
    names = []
    for cap in caps.capabilities:
        kind = cap.WhichOneof("type")
        value = getattr(cap, kind)
        names.append("%s:%s" % (kind, type(value).Type.Name(value.type)))
    print("  GetCapabilities: " + ", ".join(names))
    probe = identity.Probe(pb.ProbeRequest(), timeout=10)
    # Unset means ready, as the CSI spec says.
    ready = probe.ready.value if probe.HasField("ready") else True
    print("  Probe:           ready=%s" % ready)
    if not ready:
        sys.exit("Probe did not report ready")
    # FenceController: the clients a fence would act on (this node's pods, from the plugin's
    # attachment records).
    fence = stubs.fence_pb2_grpc.FenceControllerStub(channel)
    clients = fence.GetFenceClients(stubs.fence_pb2.GetFenceClientsRequest(), timeout=10)
    for client in clients.clients:
        print("  GetFenceClients: %s: %s" % (client.id,
                                             ", ".join(c.cidr for c in client.addresses)))
EOF
echo
echo "the same server as an operator asks it (mizarmpctl):"
ADDONS_ENDPOINT="unix://$ADDONS_SOCK"
run "$BIN/mizarmpctl" probe --endpoint "$ADDONS_ENDPOINT"
run "$BIN/mizarmpctl" fence-clients --endpoint "$ADDONS_ENDPOINT"
run "$BIN/mizarmpctl" fences --endpoint "$ADDONS_ENDPOINT"
run "$BIN/mizarmpctl" fence --endpoint "$ADDONS_ENDPOINT" --dry-run "$IP_A/32"
[[ $DIALECT == alcor ]] && alcor_fence_demo
stop_pid "$ADDONS_PID"
ADDONS_PID=""
echo "mizarmp-addons stopped"

if [[ ${MIZARMP_DEMO_HA:-0} == 1 ]]; then
  demo_ha
fi

section "removing the containers"
run mz_podman rm -f -t 0 demo-a demo-b
run mz_podman ps -a

section "nothing left"
show_ports
leftovers=$(list_leftovers)
if [[ -n "$leftovers" ]]; then
  echo "demo: FAILED: the check \"nothing left\" found $(wc -l <<<"$leftovers") leftover(s):"
  sed 's/^/  /' <<<"$leftovers"
  exit 1
fi
echo "no port at the controller, no attachment record, no veth or OVS port"

section "stopping the mock"
kill -TERM "$MOCK_PID"
wait "$MOCK_PID" || true
MOCK_PID=""
if [[ $DIALECT == alcor ]]; then
  alcor_stop_ovs
  if ip link show "$ALCOR_BRIDGE" >/dev/null 2>&1; then
    echo "demo: FAILED: $ALCOR_BRIDGE still exists after Open vSwitch stopped"
    exit 1
  fi
  echo "mock and Open vSwitch stopped; $ALCOR_BRIDGE removed"
elif ip link show "$BRIDGE" >/dev/null 2>&1; then
  echo "demo: FAILED: bridge $BRIDGE still exists after the mock stopped"
  exit 1
else
  echo "mock stopped; bridge $BRIDGE removed"
fi
SUCCESS=1
echo
echo "demo: OK"
