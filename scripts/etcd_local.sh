# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# A 3-member etcd cluster on loopback (Debian's etcd-server), for the HA demo and the benchmarks;
# sourced. The tests use their own C++ fixture (tests/support/etcd_cluster.h).
#   mz_etcd_start DIR BASE_PORT   members m0..m2, client ports BASE, BASE+2, BASE+4 (peers +1),
#                                 BASE below the kernel's ephemeral range (32768 and up here),
#                                 where an outgoing connection can hold a port the member needs;
#                                 data and logs under DIR; sets MZ_ETCD_ENDPOINTS
#                                 ("127.0.0.1:BASE,...") and waits for a healthy cluster
#   mz_etcd_stop                  kills (SIGKILL) and reaps every member it started

MZ_ETCD_PIDS=()
MZ_ETCD_ENDPOINTS=""

mz_etcd_start() {
  local dir=$1 base=$2 cluster="" endpoints="" i port
  for i in 0 1 2; do
    port=$((base + 2 * i))
    if ss -Hltn "sport = :$port or sport = :$((port + 1))" | grep -q .; then
      echo "etcd: port $port or $((port + 1)) is taken" >&2
      return 1
    fi
    cluster+="${cluster:+,}m$i=http://127.0.0.1:$((port + 1))"
    endpoints+="${endpoints:+,}127.0.0.1:$port"
  done
  mkdir -p "$dir"
  for i in 0 1 2; do
    port=$((base + 2 * i))
    etcd --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
      --listen-peer-urls "http://127.0.0.1:$((port + 1))" \
      --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
      --initial-cluster "$cluster" --initial-cluster-token "mizarmp-$$-$base" \
      --initial-cluster-state new >"$dir/m$i.log" 2>&1 &
    MZ_ETCD_PIDS+=($!)
  done
  MZ_ETCD_ENDPOINTS=$endpoints
  for _ in $(seq 300); do
    if ETCDCTL_API=3 etcdctl --endpoints "$endpoints" --command-timeout=1s endpoint health \
      >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "etcd: the cluster did not become healthy (logs in $dir); the end of each member's log:" >&2
  for i in 0 1 2; do tail -n 5 "$dir/m$i.log" | sed "s/^/  m$i: /" >&2; done
  return 1
}

mz_etcd_stop() {
  local pid
  for pid in "${MZ_ETCD_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${MZ_ETCD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  MZ_ETCD_PIDS=()
}
