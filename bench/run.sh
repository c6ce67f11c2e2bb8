#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Builds a Release build of mizarmp and its benchmark drivers, runs every benchmark and writes
# bench/RESULTS.md and its plots (bench/*.png). Needs root (network namespaces), Debian's
# containernetworking-plugins (/usr/lib/cni/ptp, host-local), curl, valgrind, iperf3, sockperf,
# nftables, perf (optional),
# python3 and python3-matplotlib (the plots). On 2026-11-28 (a shared machine, load 4 to 11) the
# whole run took 44 minutes: the soak about 7, the records benchmark about 1, and fencing at scale
# 20 (10,000 to 1,000,000 ports, each size with the index, the whole list below the row limit
# and two replicas on etcd; the million ports alone 11, of which creating them 4 and publishing
# them to etcd 2.5). The mock holds some 6 GiB at a million ports, etcd's members 4.5 GiB.
#
#   sudo bash bench/run.sh
#
# Environment:
#   BENCH_BUILD_DIR  build directory (default: build-bench beside the source tree)
#   BENCH_WORK_DIR   scratch directory (default: a fresh /tmp/mizarmp-bench.XXXX, removed after)
#   BENCH_QUICK=1    a smoke run with few iterations (figures not for RESULTS.md)
#   BENCH_OUT        where to write the report (default: bench/RESULTS.md)
#   BENCH_JOBS       build parallelism (default 2)
#   BENCH_PREVIOUS   the earlier run the report compares with (default: bench/previous.json)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BENCH_BUILD_DIR:-$(dirname "$ROOT")/build-bench}
OUT=${BENCH_OUT:-$ROOT/bench/RESULTS.md}
JOBS=${BENCH_JOBS:-2}
if [[ -n ${BENCH_WORK_DIR:-} ]]; then
  WORK=$BENCH_WORK_DIR
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d /tmp/mizarmp-bench.XXXX)
  trap 'mz_etcd_stop 2>/dev/null; rm -rf "$WORK"' EXIT
fi

die() { echo "bench/run.sh: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root (the benchmarks create network namespaces)"
for tool in cmake ip curl valgrind callgrind_annotate python3 strip readelf ldd nft iperf3 sockperf; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
  die "python3's matplotlib not found (apt-get install python3-matplotlib): the report draws its plots with it"
[[ -x /usr/lib/cni/ptp && -x /usr/lib/cni/host-local ]] ||
  die "/usr/lib/cni/ptp and host-local not found (apt-get install containernetworking-plugins)"

if [[ -n ${BENCH_QUICK:-} ]]; then
  CNI_ARGS=(--iterations 10 --warmup 2 --ready-iterations 4 --burst-rounds 1 --version-iterations 20)
  ADDONS_ARGS=(--seconds 1 --rounds 2 --getclients-calls 5 --fence-rounds 1)
  SOAK_ARGS=(--cycles 100 --sample-every 10 --seconds 10 --sample-seconds 1)
  STORE_ARGS=(--rounds 3 --seconds 1 --failovers 2)
  # A row limit below the larger size, so the refusal of the whole list is exercised too.
  FENCE_SCALE_ARGS=(--sizes 2000,10000 --row-limit 5000 --rounds 3 --many-rounds 2 --idle-seconds 3 --failovers 2)
  RECORDS_ARGS=(--iterations 10 --warmup 1 --ctl-rounds 1 --getclients-calls 5 --gc-rounds 1)
  FENCE_SET_ARGS=(--rounds 1 --seconds 1)
else
  CNI_ARGS=(--iterations 100 --warmup 5 --ready-iterations 20 --burst-rounds 3 --version-iterations 200)
  ADDONS_ARGS=(--seconds 2 --rounds 6 --getclients-calls 30)
  SOAK_ARGS=(--cycles 1000 --sample-every 50 --seconds 300 --sample-seconds 5)
  STORE_ARGS=(--rounds 30 --seconds 2 --failovers 5)
  # 10k to 1M ports (the driver's default sizes) at Alcor's row limit of 100,000.
  FENCE_SCALE_ARGS=()
  RECORDS_ARGS=(--iterations 50 --warmup 3 --ctl-rounds 3 --getclients-calls 20 --gc-rounds 3)
  FENCE_SET_ARGS=(--rounds 7 --seconds 3)
fi

# ------------------------------------------------------------------------------ machine, build
M=$WORK/machine.txt
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "kernel=$(uname -srm)"
  echo "memory=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "compiler=$(c++ --version | head -1)"
  echo "ptp=$(dpkg-query -W -f '${Package} ${Version}' containernetworking-plugins 2>/dev/null || echo unknown)"
  echo "commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  # The report itself (bench/RESULTS.md) is the output, not a measured source.
  echo "dirty=$(git -C "$ROOT" status --porcelain -- bench ':!bench/RESULTS.md' cni common mizarmp-client netns mock-server fence addons cmd records ctl 2>/dev/null | wc -l)"
  echo "fence_log=$(git -C "$ROOT" log --oneline -1 -- fence 2>/dev/null)"
  echo "health_log=$(git -C "$ROOT" log --oneline -1 -- addons/health.cc 2>/dev/null)"
  echo "client_log=$(git -C "$ROOT" log --oneline -1 -- mizarmp-client 2>/dev/null)"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$M"

echo "== build ($BUILD, Release)"
cmake -S "$ROOT/bench" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMIZARMP_WERROR=ON >"$WORK/cmake.log" 2>&1 ||
  { cat "$WORK/cmake.log"; die "cmake configure failed"; }
TARGETS=(mizarmp mizarmp-mock mizarmp-addons mizarmpctl mizarmp-bench-cni mizarmp-bench-records mizarmp-bench-addons mizarmp-bench-soak mizarmp-bench-store
         mizarmp-bench-fence-scale mizarmp-bench-fence-set mizarmp-bench-bare-grpc mizarmp-bench-openssl-init mizarmp-bench-variant-dynamic)
for p in libc libstdcxx nl nl-ssl all; do TARGETS+=("mizarmp-bench-startup-$p"); done
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}" >"$WORK/build.log" 2>&1 ||
  { tail -50 "$WORK/build.log"; die "build failed"; }
BIN=$BUILD/mizarmp/bin
{
  echo "build_type=$(grep -m1 '^CMAKE_BUILD_TYPE' "$BUILD/CMakeCache.txt" | cut -d= -f2)"
  echo "cxx_flags_release=$(grep -m1 '^CMAKE_CXX_FLAGS_RELEASE' "$BUILD/CMakeCache.txt" | cut -d= -f2)"
  echo "compiled_files=$(grep -c 'Building C' "$WORK/build.log" || true)"
  # What the plugin loads: its NEEDED entries, the whole ldd tree, the HTTP stack in it, and
  # whether the "all" start-up probe loads the same (it links the plugin's library target).
  echo "mizarmp_needed=$(readelf -d "$BIN/mizarmp" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo "startup_all_needed=$(readelf -d "$BIN/mizarmp-bench-startup-all" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo "mizarmp_ldd=$(ldd "$BIN/mizarmp" | awk '/=>/ {print $1}' | tr '\n' ' ')"
  echo "startup_all_ldd=$(ldd "$BIN/mizarmp-bench-startup-all" | awk '/=>/ {print $1}' | tr '\n' ' ')"
} >>"$M"

# ------------------------------------------------------------------------------------- run
echo "== CNI benchmarks"
"$BIN/mizarmp-bench-cni" --bin-dir "$BIN" --work "$WORK/cni" --out "$WORK/cni.json" \
  "${CNI_ARGS[@]}" 2>&1 | tee "$WORK/cni.log" || echo "(some CNI benchmark reported a failure; see the report)"

echo "== CNI on a node holding 10,000 attachment records (against one holding 10)"
"$BIN/mizarmp-bench-records" --bin-dir "$BIN" --work "$WORK/records" --out "$WORK/records.json" \
  "${RECORDS_ARGS[@]}" 2>&1 | tee "$WORK/records.log" || echo "(the records benchmark reported a failure; see the report)"

echo "load_after_cni=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$M"
echo "== profiles"
P=$WORK/profile
mkdir -p "$P"
# Instruction counts (callgrind: repeatable on a shared machine) of one ADD and one DEL.
"$BIN/mizarmp-bench-cni" --bin-dir "$BIN" --work "$WORK/cni" --out "$P/callgrind.json" \
  --sections profile --profile-wrap "$(command -v valgrind) --tool=callgrind --callgrind-out-file=$P/callgrind.%c" \
  >"$P/callgrind.log" 2>&1 || true
for c in ADD DEL ADD-https-full ADD-https; do
  [[ -f $P/callgrind.$c ]] && callgrind_annotate --inclusive=yes "$P/callgrind.$c" >"$P/annotate.$c.txt" 2>/dev/null || true
done
# The same for process start-up alone and for the library initialisations, one at a time.
(CNI_COMMAND=VERSION valgrind --tool=callgrind --callgrind-out-file="$P/cg.version" "$BIN/mizarmp" </dev/null >/dev/null 2>"$P/cg.version.log") || true
(CNI_COMMAND=VERSION valgrind --tool=callgrind --callgrind-out-file="$P/cg.version-dynamic" "$BIN/mizarmp-bench-variant-dynamic" </dev/null >/dev/null 2>"$P/cg.version-dynamic.log") || true
for m in none ssl-init ssl-noconf ssl-ctx; do
  valgrind --tool=callgrind --callgrind-out-file="$P/cg.init-$m" "$BIN/mizarmp-bench-openssl-init" "$m" >/dev/null 2>"$P/cg.init-$m.log" || true
done
for p in libc nl nl-ssl all; do
  valgrind --tool=callgrind --callgrind-out-file="$P/cg.startup-$p" "$BIN/mizarmp-bench-startup-$p" >/dev/null 2>"$P/cg.startup-$p.log" || true
done
# perf: hardware counters are often not exposed to VMs; software counters still tell page faults.
if command -v perf >/dev/null; then
  perf stat -e instructions true >"$P/perf-probe.txt" 2>&1 || true
  "$BIN/mizarmp-bench-cni" --bin-dir "$BIN" --work "$WORK/cni" --out "$P/perf.json" --sections profile \
    --profile-wrap "$(command -v perf) stat -x , -o $P/perf.%c -e task-clock,page-faults,context-switches,cpu-migrations" \
    >"$P/perf.log" 2>&1 || true
fi

echo "load_before_addons=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$M"
echo "== mizarmp-addons benchmarks"
mkdir -p "$WORK/addons/perf"
command -v perf >/dev/null && ADDONS_ARGS+=(--perf-dir "$WORK/addons/perf")
"$BIN/mizarmp-bench-addons" --bin-dir "$BIN" --work "$WORK/addons" --out "$WORK/addons.json" \
  "${ADDONS_ARGS[@]}" 2>&1 | tee "$WORK/addons.log" || echo "(some addons benchmark reported a failure; see the report)"

echo "== soak (memory and fds under sustained use)"
"$BIN/mizarmp-bench-soak" --bin-dir "$BIN" --work "$WORK/soak" --out "$WORK/soak.json" \
  "${SOAK_ARGS[@]}" 2>&1 | tee "$WORK/soak.log" || echo "(the soak reported a failure; see the report)"

echo "== fence stores (SQLite vs etcd), failover, and the fence section on etcd"
# shellcheck source=../scripts/etcd_local.sh
source "$ROOT/scripts/etcd_local.sh"
if mz_etcd_start "$WORK/etcd" 23379; then
  "$BIN/mizarmp-bench-store" --bin-dir "$BIN" --etcd "etcd://$MZ_ETCD_ENDPOINTS" --work "$WORK/store" \
    --out "$WORK/store.json" "${STORE_ARGS[@]}" 2>&1 | tee "$WORK/store.log" ||
    echo "(the store benchmark reported a failure; see the report)"
  # The addons' fence section again, on this cluster (a key prefix of its own).
  "$BIN/mizarmp-bench-addons" --bin-dir "$BIN" --work "$WORK/addons-etcd" --out "$WORK/addons-etcd.json" \
    --sections fence --fence-store etcd --etcd "etcd://$MZ_ETCD_ENDPOINTS" 2>&1 | tee "$WORK/addons-etcd.log" ||
    echo "(the fence benchmark on etcd reported a failure; see the report)"
else
  echo "(etcd did not start; the store benchmark did not run)"
fi
mz_etcd_stop

echo "load_before_fence_scale=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$M"
echo "== fencing at scale (the port index vs the whole list, and on etcd, up to a million ports)"
# A fresh etcd cluster of its own, so the store benchmark's history does not weigh on it; its
# members' pids let the driver report etcd's CPU and memory.
FENCE_SCALE_ETCD=()
if mz_etcd_start "$WORK/etcd-scale" 23389; then
  FENCE_SCALE_ETCD=(--etcd "etcd://$MZ_ETCD_ENDPOINTS" --etcd-pids "$(IFS=,; echo "${MZ_ETCD_PIDS[*]}")")
else
  echo "(etcd did not start; fencing at scale runs without its etcd way)"
fi
"$BIN/mizarmp-bench-fence-scale" --bin-dir "$BIN" --work "$WORK/fence-scale" --out "$WORK/fence-scale.json" \
  "${FENCE_SCALE_ARGS[@]}" "${FENCE_SCALE_ETCD[@]}" 2>&1 | tee "$WORK/fence-scale.log" ||
  echo "(the fencing-at-scale benchmark reported a failure; see the report)"
mz_etcd_stop

echo "== the fence set on one node: 65,536 fenced CIDRs, 110 pods"
"$BIN/mizarmp-bench-fence-set" --work "$WORK/fence-set" --out "$WORK/fence-set.json" \
  "${FENCE_SET_ARGS[@]}" 2>&1 | tee "$WORK/fence-set.log" ||
  echo "(the fence set benchmark reported a failure; see the report)"

echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$M"
# The commands as run, for the report.
{
  echo "cmake -S bench -B $BUILD -DCMAKE_BUILD_TYPE=Release -DMIZARMP_WERROR=ON"
  echo "cmake --build $BUILD -j$JOBS --target ${TARGETS[*]}"
  echo "$BIN/mizarmp-bench-cni --bin-dir $BIN --work WORK/cni --out WORK/cni.json ${CNI_ARGS[*]}"
  echo "$BIN/mizarmp-bench-records --bin-dir $BIN --work WORK/records --out WORK/records.json ${RECORDS_ARGS[*]}"
  echo "$BIN/mizarmp-bench-cni ... --sections profile --profile-wrap 'valgrind --tool=callgrind ...'"
  echo "$BIN/mizarmp-bench-addons --bin-dir $BIN --work WORK/addons --out WORK/addons.json ${ADDONS_ARGS[*]}"
  echo "$BIN/mizarmp-bench-soak --bin-dir $BIN --work WORK/soak --out WORK/soak.json ${SOAK_ARGS[*]}"
  echo "$BIN/mizarmp-bench-store --bin-dir $BIN --etcd etcd://127.0.0.1:23379,... --work WORK/store --out WORK/store.json ${STORE_ARGS[*]}"
  echo "$BIN/mizarmp-bench-addons --bin-dir $BIN --work WORK/addons-etcd --out WORK/addons-etcd.json --sections fence --fence-store etcd --etcd etcd://127.0.0.1:23379,..."
  echo "$BIN/mizarmp-bench-fence-set --work WORK/fence-set --out WORK/fence-set.json ${FENCE_SET_ARGS[*]}"
  echo "$BIN/mizarmp-bench-fence-scale --bin-dir $BIN --work WORK/fence-scale --out WORK/fence-scale.json ${FENCE_SCALE_ARGS[*]}${FENCE_SCALE_ETCD:+ --etcd etcd://127.0.0.1:23389,... --etcd-pids ...}"
} >"$WORK/commands.txt"

/usr/bin/python3 "$ROOT/bench/report.py" --work "$WORK" --quick "${BENCH_QUICK:-}" \
  --previous "${BENCH_PREVIOUS:-$ROOT/bench/previous.json}" --plots "$(dirname "$OUT")" >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "== wrote $OUT"
