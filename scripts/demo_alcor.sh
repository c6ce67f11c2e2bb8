# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The one-box demo on Alcor (MIZARMP_DEMO_DIALECT=alcor), sourced by scripts/demo.sh:
#   - Open vSwitch in its userspace datapath (ovsdb-server and ovs-vswitchd run by the demo from
#     its own directory, bridge br-int with datapath_type=netdev),
#   - the mock plays Alcor's controller (--strict --dialect alcor) and Alcor's host agent on OVS:
#     it places no NIC, waits for tap<port id> on br-int, tags it with its VPC's VLAN and only
#     then reports the port ACTIVE,
#   - the plugin plugs each pod in itself (plug mode, found out from the controller),
#   - a fence cuts container A off and an unfence restores it,
#   - afterwards no OVS port, no veth and no port at the controller is left, and OVS is stopped.
# The real agent does not act on admin_state_up=false (DESIGN.md, "Plug mode"); the mock here
# is asked to (--agent-enforces-admin-state), so the fence's effect can be shown.

ALCOR_VPC=9192a4d4-ffff-4ece-b3f0-8d36e3d88038
ALCOR_BRIDGE=br-int
ALCOR_OVS_DIR=""

alcor_ovs_vsctl() { ovs-vsctl --db="unix:$ALCOR_OVS_DIR/db.sock" --timeout=10 "$@"; }

alcor_start_ovs() {
  if ip link show "$ALCOR_BRIDGE" >/dev/null 2>&1 || ip link show ovs-netdev >/dev/null 2>&1; then
    echo "demo: $ALCOR_BRIDGE or ovs-netdev already exists (Open vSwitch running here?)" >&2
    return 1
  fi
  ALCOR_OVS_DIR="$WORK/ovs"
  mkdir -p "$ALCOR_OVS_DIR"
  chmod 0700 "$ALCOR_OVS_DIR"
  local d=$ALCOR_OVS_DIR
  run ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  run ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" --pidfile="$d/ovsdb-server.pid" \
    --unixctl="$d/ovsdb-server.ctl" --log-file="$d/ovsdb-server.log" --detach
  run alcor_ovs_vsctl --no-wait init
  run ovs-vswitchd "unix:$d/db.sock" --pidfile="$d/ovs-vswitchd.pid" \
    --unixctl="$d/ovs-vswitchd.ctl" --log-file="$d/ovs-vswitchd.log" --detach
  run alcor_ovs_vsctl add-br "$ALCOR_BRIDGE" -- set bridge "$ALCOR_BRIDGE" datapath_type=netdev
}

# Stops ovs-vswitchd (removing its datapath and devices) and ovsdb-server; quiet when not started.
alcor_stop_ovs() {
  [[ -n "$ALCOR_OVS_DIR" && -d "$ALCOR_OVS_DIR" ]] || return 0
  local d=$ALCOR_OVS_DIR
  [[ -S "$d/ovs-vswitchd.ctl" ]] && ovs-appctl -t "$d/ovs-vswitchd.ctl" exit --cleanup 2>/dev/null
  [[ -S "$d/ovsdb-server.ctl" ]] && ovs-appctl -t "$d/ovsdb-server.ctl" exit 2>/dev/null
  ALCOR_OVS_DIR=""
  return 0
}

# The mock's flags for Alcor's controller and its agent on this OVS.
alcor_mock_flags() {
  echo --strict --dialect alcor --agent-ovsdb "$ALCOR_OVS_DIR/db.sock" \
    --agent-enforces-admin-state --bridge "$ALCOR_BRIDGE"
}

# CONFLIST: the mizarmp plugin on Alcor: network_id is the VPC, and OVS is the demo's.
alcor_configure() {
  mz_python - "$1" "$ALCOR_VPC" "$ALCOR_OVS_DIR/db.sock" "$ALCOR_BRIDGE" <<'PYEOF'
import json, sys
path, vpc, sock, bridge = sys.argv[1:5]
with open(path) as f:
    conf = json.load(f)
plugin = next(p for p in conf["plugins"] if p.get("type") == "mizarmp")
plugin.update({"networkId": vpc, "ovsdbSocket": sock, "ovsBridge": bridge})
with open(path, "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
PYEOF
}

alcor_show_ovs() {
  echo "\$ ovs-vsctl show"
  alcor_ovs_vsctl show | sed 's/^/  /'
  echo "ports on $ALCOR_BRIDGE with the VLAN tag the agent set and the port they stand for:"
  local port
  for port in $(alcor_ovs_vsctl list-ports "$ALCOR_BRIDGE"); do
    printf '  %s  tag=%s  iface-id=%s\n' "$port" "$(alcor_ovs_vsctl get port "$port" tag)" \
      "$(alcor_ovs_vsctl get interface "$port" external_ids:iface-id)"
  done
}

# The fence through the running mizarmp-addons with mizarmpctl, as an operator would ask it
# ($ADDONS_ENDPOINT is its unix socket), and the audit trail it leaves.
alcor_fence_demo() {
  section "fence container A ($IP_A/32): the agent takes its OVS port down, B cannot reach it"
  run "$BIN/mizarmpctl" fence --endpoint "$ADDONS_ENDPOINT" "$IP_A/32"
  ha_expect_b_to_a "cut off" || { echo "demo: FAILED: B still reaches A after the fence"; return 1; }
  section "unfence container A: B reaches it again"
  run "$BIN/mizarmpctl" unfence --endpoint "$ADDONS_ENDPOINT" "$IP_A/32"
  ha_expect_b_to_a reaches || { echo "demo: FAILED: B cannot reach A after the unfence"; return 1; }
  section "the audit trail: who fenced what, and the ports each pass changed"
  run "$BIN/mizarmpctl" audit --endpoint "$ADDONS_ENDPOINT" --limit 20
}

# The OVS ports and tap veths left, one a line, each named.
alcor_leftovers() {
  alcor_ovs_vsctl list-ports "$ALCOR_BRIDGE" | sed "s/^/OVS port /; s/\$/ on $ALCOR_BRIDGE/" ||
    echo "the OVS ports on $ALCOR_BRIDGE (ovs-vsctl failed)"
  ip -o link show type veth | awk -F': ' '$2 ~ /^tap/ {print "veth " $2}' | cut -d@ -f1
}
