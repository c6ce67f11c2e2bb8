# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The demo's HA part (MIZARMP_DEMO_HA=1 bash scripts/demo.sh), sourced by demo.sh: two
# mizarmp-addons replicas share their fence state in a 3-member etcd cluster on loopback.
#   1. starts the etcd members (Debian's etcd-server) and waits for a quorum,
#   2. starts replicas r1 and r2 (fenceStore etcd://...), r1 first so it leads,
#   3. fences container A's address through r1: B can no longer ping A,
#   4. kill -9 r1: r2 still lists the fence, takes the lead and keeps it enforced,
#   5. unfences through r2: B pings A again,
#   6. stops r2 and the etcd members.
# Uses demo.sh's ROOT, BIN, WORK, URL, PROJECT, IP_A, IP_B, run, section and mz_podman.

# shellcheck source=etcd_local.sh
source "$ROOT/scripts/etcd_local.sh"

HA_PIDS=() # the replicas started here
HA_LEASE_TTL=3

ha_cleanup() {
  local pid
  for pid in "${HA_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${HA_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  HA_PIDS=()
  mz_etcd_stop
}

ha_start_etcd() {
  # Loopback ports 22379-22384: unusual enough not to meet a real etcd, and below the ephemeral
  # range, so no outgoing connection holds one.
  mz_etcd_start "$WORK/etcd" 22379
  HA_ENDPOINTS=$MZ_ETCD_ENDPOINTS
  run env ETCDCTL_API=3 etcdctl --endpoints "$HA_ENDPOINTS" endpoint status -w table
}

# ha_start_replica NAME: its socket is $WORK/NAME/csi-addons.sock.
ha_start_replica() {
  local name=$1
  mkdir -p "$WORK/$name"
  echo "\$ mizarmp-addons --fence-store etcd://$HA_ENDPOINTS --replica-id $name --lease-ttl-seconds $HA_LEASE_TTL ..."
  "$BIN/mizarmp-addons" --endpoint "unix://$WORK/$name/csi-addons.sock" --mpurl "$URL" \
    --project "$PROJECT" --state-dir "$STATE" --fence-store "etcd://$HA_ENDPOINTS" \
    --replica-id "$name" --lease-ttl-seconds "$HA_LEASE_TTL" --mp-connect-timeout-ms 500 \
    --mp-request-timeout-ms 1000 --reconcile-interval-ms 1000 \
    --log-file "$WORK/$name.log" </dev/null &
  HA_PIDS+=($!)
  eval "HA_PID_$name=$!"
  for _ in $(seq 300); do
    [[ -S "$WORK/$name/csi-addons.sock" ]] && return 0
    sleep 0.1
  done
  echo "demo: replica $name did not open its socket" >&2
  tail -n 20 "$WORK/$name.log"
  return 1
}

# ha_wait_until_leads NAME: until replica NAME's log says it leads (fence/service/fence_service.cc).
ha_wait_until_leads() {
  local name=$1
  for _ in $(seq 300); do
    grep -q "fence: $name leads" "$WORK/$name.log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "demo: replica $name did not take the lead within 30 s" >&2
  tail -n 20 "$WORK/$name.log"
  return 1
}

# ha_fence NAME fence|unfence|list [CIDR]: one FenceController call on replica NAME.
ha_fence() {
  /usr/bin/python3 - "$ROOT" "$WORK/stubs" "$WORK/$1/csi-addons.sock" "$2" "${3:-}" <<'EOF'
import sys
root, stubs_dir, sock, verb, cidr = sys.argv[1:6]
sys.path.insert(0, root + "/tests/python")
import grpc  # noqa: E402
import addons_client  # noqa: E402

stubs = addons_client.generate_stubs(stubs_dir)
pb = stubs.fence_pb2
with grpc.insecure_channel("unix:" + sock) as channel:
    fence = stubs.fence_pb2_grpc.FenceControllerStub(channel)
    if verb == "list":
        listed = fence.ListClusterFence(pb.ListClusterFenceRequest(), timeout=30)
        print("  ListClusterFence: " + (", ".join(c.cidr for c in listed.cidrs) or "(none)"))
    elif verb == "fence":
        fence.FenceClusterNetwork(pb.FenceClusterNetworkRequest(cidrs=[pb.CIDR(cidr=cidr)]),
                                  timeout=60)
        print("  FenceClusterNetwork %s: OK" % cidr)
    else:
        fence.UnfenceClusterNetwork(pb.UnfenceClusterNetworkRequest(cidrs=[pb.CIDR(cidr=cidr)]),
                                    timeout=60)
        print("  UnfenceClusterNetwork %s: OK" % cidr)
EOF
}

# B reaches A (true) or not (false), as expected: $1 = expected "reaches" or "cut off".
ha_expect_b_to_a() {
  if mz_podman exec demo-b ping -c 1 -W 2 "$IP_A" >/dev/null 2>&1; then
    echo "  B -> A: reaches"
    [[ $1 == reaches ]]
  else
    echo "  B -> A: cut off"
    [[ $1 == "cut off" ]]
  fi
}

demo_ha() {
  section "HA: a 3-member etcd cluster on loopback"
  ha_start_etcd

  section "HA: two mizarmp-addons replicas sharing the fence state"
  ha_start_replica r1
  ha_wait_until_leads r1 # before r2 stands, so the kill below is of the leader
  ha_start_replica r2

  section "HA: fence container A ($IP_A/32) through r1"
  ha_fence r1 fence "$IP_A/32"
  ha_expect_b_to_a "cut off" || { echo "demo: FAILED: B still reaches A after the fence"; return 1; }

  section "HA: kill -9 r1; r2 keeps the fence"
  echo "\$ kill -9 $HA_PID_r1"
  kill -KILL "$HA_PID_r1"
  wait "$HA_PID_r1" 2>/dev/null || true
  ha_fence r2 list
  ha_expect_b_to_a "cut off" || { echo "demo: FAILED: A reachable after r1 died"; return 1; }

  section "HA: unfence through r2 (it leads once r1's ${HA_LEASE_TTL} s lease runs out)"
  ha_fence r2 unfence "$IP_A/32"
  ha_expect_b_to_a reaches || { echo "demo: FAILED: B cannot reach A after the unfence"; return 1; }
  grep -h "leads\|steps down\|no longer leads" "$WORK/r1.log" "$WORK/r2.log" | sed 's/^/  /'

  section "HA: stopping r2 and etcd"
  ha_cleanup
  echo "replicas and etcd members stopped"
}
