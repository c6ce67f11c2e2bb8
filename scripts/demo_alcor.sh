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
#   - container A is on node-1, whose node agent is dead (none runs: its own network,
#     mizarmp-node-1, with that host id); container B is on demo-node, whose agent
#     (mizarmp-addons in node mode) publishes to the controller's port index over TLS,
#   - a fence of A answers once demo-node's agent enforces it: B is cut off from A in B's own
#     namespace, although Alcor's agent ignores admin_state_up=false (DESIGN.md, "Plug mode")
#     and nothing runs on node-1; an unfence restores it,
#   - afterwards no OVS port, no veth and no port at the controller is left, and OVS is stopped.

ALCOR_VPC=9192a4d4-ffff-4ece-b3f0-8d36e3d88038
ALCOR_BRIDGE=br-int
ALCOR_OVS_DIR=""
ALCOR_DEAD_NODE=node-1
ALCOR_DEAD_NETWORK=mizarmp-node-1
ALCOR_AGENT_PID=""

alcor_ovs_vsctl() { ovs-vsctl --db="unix:$ALCOR_OVS_DIR/db.sock" --timeout=10 "$@"; }

alcor_start_ovs() {
  if ip link show "$ALCOR_BRIDGE" >/dev/null 2>&1 || ip link show ovs-netdev >/dev/null 2>&1; then
    echo "demo: $ALCOR_BRIDGE or ovs-netdev already exists (Open vSwitch running here?)" >&2
    return 1
  fi
  if nft list table inet mizarmp_fence >/dev/null 2>&1; then
    echo "demo: this host already enforces a fence set (table inet mizarmp_fence)" >&2
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
ALCOR_DEAD_NODE=node-1
ALCOR_DEAD_NETWORK=mizarmp-node-1
ALCOR_AGENT_PID=""
  return 0
}

# The mock's flags for Alcor's controller and its agent on this OVS.
alcor_mock_flags() {
  echo --strict --dialect alcor --agent-ovsdb "$ALCOR_OVS_DIR/db.sock" --bridge "$ALCOR_BRIDGE"
}

# CONFLIST: the mizarmp plugin on Alcor: network_id is the VPC, and OVS is the demo's. Then
# the same network as node-1 sees it, under its own name, host id and state dir.
alcor_configure() {
  mz_python - "$1" "$ALCOR_VPC" "$ALCOR_OVS_DIR/db.sock" "$ALCOR_BRIDGE" \
    "$MZ_CNI_CONF_DIR/$ALCOR_DEAD_NETWORK.conflist" "$ALCOR_DEAD_NETWORK" "$ALCOR_DEAD_NODE" \
    "$WORK/state-$ALCOR_DEAD_NODE" <<'PYEOF'
import json, sys
path, vpc, sock, bridge, dead_path, dead_network, dead_node, dead_state = sys.argv[1:9]
with open(path) as f:
    conf = json.load(f)
plugin = next(p for p in conf["plugins"] if p.get("type") == "mizarmp")


def write(where):
    with open(where, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")


plugin.update({"networkId": vpc, "ovsdbSocket": sock, "ovsBridge": bridge})
write(path)
conf["name"] = dead_network
plugin.update({"hostId": dead_node, "stateDir": dead_state})
write(dead_path)
PYEOF
}

# The network container $1 joins: A is on the dead node-1, B on demo-node.
alcor_network_of() { [[ $1 == a ]] && echo "$ALCOR_DEAD_NETWORK" || echo "$NETWORK"; }

# A throwaway CA, the controller's certificate for 127.0.0.1 and demo-node's client certificate,
# named as a kubelet's (the controller accepts a node's publications only from it).
alcor_make_pki() {
  local d="$WORK/pki" key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  local sign="openssl x509 -req -CA ca.crt -CAkey ca.key -CAcreateserial -days 1"
  mkdir -m 0700 "$d"
  (
    cd "$d"
    # shellcheck disable=SC2086 # the options are words
    openssl req -x509 $key -keyout ca.key -out ca.crt -days 1 -subj /CN=mizarmp-demo-ca &&
      openssl req $key -keyout server.key -out server.csr -subj /CN=mizarmp-controller &&
      $sign -in server.csr -out server.crt \
        -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n') &&
      openssl req $key -keyout node.key -out node.csr -subj /O=system:nodes/CN=system:node:demo-node &&
      $sign -in node.csr -out node.crt -extfile <(printf 'extendedKeyUsage=clientAuth\n')
  ) >"$WORK/pki.log" 2>&1 || { cat "$WORK/pki.log"; return 1; }
}

# The controller's flags on Alcor: the port index, and a TLS listener for the node agents.
alcor_addons_flags() {
  echo --port-index --publication-endpoint tcp://127.0.0.1:0 --tls-cert-file "$WORK/pki/server.crt" \
    --tls-key-file "$WORK/pki/server.key" --tls-client-ca-file "$WORK/pki/ca.crt"
}

# demo-node's agent: mizarmp-addons in node mode, publishing this node's records to the
# controller (the port it bound, from its log) and enforcing the fence set here and in B.
alcor_start_node_agent() {
  local port
  port=$(sed -n 's/.*and on tcp:\/\/127\.0\.0\.1:0 (bound port \([0-9]*\)).*/\1/p' "$WORK/addons.log")
  [[ -n "$port" ]] || { echo "demo: the controller did not say its publication port"; return 1; }
  echo "\$ mizarmp-addons --mode node --host-id demo-node --publish-to tcp://127.0.0.1:$port ..."
  "$BIN/mizarmp-addons" --mode node --endpoint "unix://$WORK/agent/addons.sock" \
    --key-store-dir "$WORK/agent/keys" --state-dir "$STATE" --host-id demo-node \
    --publish-to "tcp://127.0.0.1:$port" --publish-ca-file "$WORK/pki/ca.crt" \
    --publish-cert-file "$WORK/pki/node.crt" --publish-key-file "$WORK/pki/node.key" \
    --log-file "$WORK/agent.log" </dev/null &
  ALCOR_AGENT_PID=$!
  for _ in $(seq 300); do
    grep -q "this node enforces" "$WORK/agent.log" 2>/dev/null && return 0
    kill -0 "$ALCOR_AGENT_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "demo: demo-node's agent did not start enforcing"
  tail -n 20 "$WORK/agent.log"
  return 1
}

# Stops demo-node's agent. A fence still standing (the demo failed halfway) leaves its table in
# this host's namespace: it goes too, as the demo refused to start beside one.
alcor_stop_node_agent() {
  stop_pid "$ALCOR_AGENT_PID"
  ALCOR_AGENT_PID=""
  nft delete table inet mizarmp_fence 2>/dev/null || true
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
  section "demo-node's agent publishes to the controller; node-1 (container A's) has none"
  alcor_start_node_agent
  section "fence container A ($IP_A/32): OK once demo-node enforces it, B is cut off from A"
  run "$BIN/mizarmpctl" fence --endpoint "$ADDONS_ENDPOINT" "$IP_A/32"
  ha_expect_b_to_a "cut off" || { echo "demo: FAILED: B still reaches A after the fence"; return 1; }
  run "$BIN/mizarmpctl" nodes --endpoint "$ADDONS_ENDPOINT"
  local netns_b
  netns_b=$(mz_podman inspect -f '{{.NetworkSettings.SandboxKey}}' demo-b)
  echo "in B's own namespace (demo-node's agent put it there; OVS's datapath skips this host's):"
  run nsenter --net="$netns_b" nft list table inet mizarmp_fence
  section "unfence container A: B reaches it again"
  run "$BIN/mizarmpctl" unfence --endpoint "$ADDONS_ENDPOINT" "$IP_A/32"
  ha_expect_b_to_a reaches || { echo "demo: FAILED: B cannot reach A after the unfence"; return 1; }
  alcor_stop_node_agent
  section "the audit trail: who fenced what, and the ports each pass changed"
  run "$BIN/mizarmpctl" audit --endpoint "$ADDONS_ENDPOINT" --limit 20
}

# The OVS ports and tap veths left, one a line, each named.
alcor_leftovers() {
  alcor_ovs_vsctl list-ports "$ALCOR_BRIDGE" | sed "s/^/OVS port /; s/\$/ on $ALCOR_BRIDGE/" ||
    echo "the OVS ports on $ALCOR_BRIDGE (ovs-vsctl failed)"
  ip -o link show type veth | awk -F': ' '$2 ~ /^tap/ {print "veth " $2}' | cut -d@ -f1
}
