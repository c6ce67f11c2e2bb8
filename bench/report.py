#!/usr/bin/env python3
"""Renders bench/RESULTS.md from what bench/run.sh collected in its work directory.

Every figure comes from the JSON the drivers wrote in this run; a figure that was not measured
says so and why. The analysis of each miss is computed from the same run's numbers (start-up
probes, instruction counts, perf samples) and from what the build actually links, so it never
describes a different run, or different code, than the table. PREVIOUS holds the figures of the
run before the product changes listed in "What changed since the previous run"."""
import argparse
import json
import os
import re
import sys

# The previous run (commit 3f957c8, 2026-11-27), for "what changed and what it moved".
PREVIOUS = {
    "commit": "3f957c8",
    "add": 5.5, "ptp_add": 10.6, "del": 23.5, "ptp_del": 27.4,
    "rss_kib": 7280, "version_ms": 1.52, "version_ptp_ms": 3.13, "probe_ratio": 0.96, "list_ratio": 0.79,
    # Server CPU per call (us): mizarmp-addons and the bare gRPC server.
    "rpc_cpu_us": {"Probe": (33.5, 30.3), "ListClusterFence": (49.9, 34.8)},
    "fence_ms": 80.8, "unfence_ms": 84.9, "etcd_fence_ms": 102.9, "etcd_unfence_ms": 98.9,
    "etcd_fence_rest": 1001, "soak_addons_rss_kib": 27452,
    # CPU of mizarmp-addons and of the mock per RPC (fence, unfence), SQLite and etcd.
    "fence_addons_cpu_ms": {"SQLite": (60, 70), "etcd": (70, 80)},
    "fence_mock_cpu_ms": {"SQLite": (60, 60), "etcd": (70, 70)},
}


def readiness_gets(row, variant):
    """GETs of the port per ADD (median): the ADD's REST requests less its POST and subnet GET."""
    n = g(row, variant, "rest_requests_per_add_median")
    return None if n is None else n - 2


def readiness_get_budget(d):
    """GETs a wait of d ms may make: the first, then one per 5 ms or per 1% of the time waited."""
    gets, t = 1, 0.0
    while True:
        t += max(5.0, 0.01 * t)
        if t > d:
            return gets
        gets += 1


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine(work):
    m = {}
    for line in read(os.path.join(work, "machine.txt")).splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            m[k] = v
    return m


def callgrind_total(path):
    for line in read(path).splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    return None


def fmt(x, unit="ms", nd=1):
    if x is None:
        return "n/a"
    if isinstance(x, (int, float)):
        return f"{x:.{nd}f} {unit}".strip()
    return str(x)


def mi(n):
    return "n/a" if n is None else f"{n / 1e6:.1f} M"


def g(d, *keys, default=None):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def sub(a, b):
    return None if a is None or b is None else a - b


def annotate_entries(path):
    """(Ir, percent, function, object) of every entry of a callgrind_annotate --inclusive listing."""
    text = read(path)
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        fn = m.group(3)
        lib = re.search(r"\[([^\]]+)\]\s*$", fn)
        fn = re.sub(r"\s*\[[^\]]+\]\s*$", "", fn)
        fn = fn[4:] if fn.startswith("???:") else re.sub(r"^\S*:(?=[A-Za-z_(?])", "", fn, count=1)
        out.append((int(m.group(1).replace(",", "")), m.group(2), fn,
                    os.path.basename(lib.group(1)) if lib else ""))
    return out


def inclusive(entries, name):
    """Inclusive Ir of the first function called exactly `name` (or starting with `name(`)."""
    for ir, _, fn, _ in entries:
        if fn == name or fn.startswith(name + "("):
            return ir
    return None


def top_functions(entries, n):
    skip = ("0x0", "below main", "libc_start", "_dl_sysdep_start", "_dl_start", "pthread_once",
            "once_proxy", "_Prepare_execution", "CRYPTO_THREAD_run_once", "_start")
    out = []
    for ir, pct, fn, lib in entries:
        if any(fn.startswith(s) or s in fn for s in skip):
            continue
        fn = re.sub(r"\(std::.*", "(...)", fn)
        out.append((f"{ir:,}", pct, fn[:87] + "..." if len(fn) > 90 else fn, lib))
        if len(out) >= n:
            break
    return out


def profile_table(entries, n):
    """The n largest inclusive entries of a callgrind_annotate listing, as a Markdown table."""
    lines = ["  | Ir | % | function | object |", "  | --- | --- | --- | --- |"]
    for ir, pct, fn, lib in top_functions(entries, n):
        lines.append(f"  | {ir} | {pct} | `{fn.replace('|', '/')}` | {lib} |")
    return lines


def perf_rows(path):
    """(percent, dso, symbol) of a `perf report --sort dso,sym --stdio` listing."""
    rows = []
    for line in read(path).splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    return rows


def perf_comm(path):
    rows = []
    for line in read(path).splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S.*?)\s*$", line)
        if m:
            rows.append((m.group(2), float(m.group(1))))
    return rows


def short_sym(sym):
    sym = re.sub(r"nlohmann::json_abi_v[\d_]+::", "nlohmann::", sym)
    sym = re.sub(r"<.*>", "<...>", sym)
    return sym[:80] + "..." if len(sym) > 83 else sym


# ------------------------------------------------------------------------------------- soak
# A process is flat when, comparing the samples of the second half of the run (at or past half
# its length, under load) with those of the first half after warm-up (the first tenth of the
# run), the median RSS grew by at most SOAK_RSS_SLACK of the first half's median or
# SOAK_RSS_FLOOR_KIB, whichever is larger, and the largest open fd count did not grow at all.
# Medians for RSS because RSS under load moves with the requests in flight (a leak lifts the whole
# second half; one busy sample does not); the largest fd count because in-flight connections
# bound it.
SOAK_RSS_SLACK = 0.01
SOAK_RSS_FLOOR_KIB = 256
SOAK_WARMUP = 0.1


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def soak_halves(samples, x_key, proc):
    """`proc`'s samples as (x, rss_kib, fds, hwm_kib), split into the first half after the warm-up and
    the second half: (points, first, second)."""
    pts = [(s[x_key], s[proc]["rss_kib"], s[proc]["fds"], s[proc]["hwm_kib"]) for s in samples
           if min(s.get(proc, {}).get(k, -1) for k in ("rss_kib", "fds", "hwm_kib")) >= 0]
    end = pts[-1][0] if pts else 0
    first = [pt for pt in pts if SOAK_WARMUP * end <= pt[0] < end / 2]
    second = [pt for pt in pts if pt[0] >= end / 2]
    return pts, first, second


def soak_growth_kib(samples, x_key, proc):
    """RSS at the end less RSS after the warm-up (KiB), as soak_verdict states it; None without both halves."""
    _, first, second = soak_halves(samples, x_key, proc)
    return second[-1][1] - first[0][1] if first and second else None


def soak_verdict(samples, x_key, proc):
    """(verdict text, is_flat) of `proc` over `samples` (each with x_key and proc's rss_kib,
    hwm_kib, fds)."""
    pts, first, second = soak_halves(samples, x_key, proc)
    if not pts:
        return "n/a (no samples)", None
    if len(first) < 2 or len(second) < 2:
        return "n/a (too few samples in one half)", None
    warm, half, last = first[0], second[0], second[-1]
    rss1, rss2 = median([pt[1] for pt in first]), median([pt[1] for pt in second])
    fd1, fd2 = median([pt[2] for pt in first]), median([pt[2] for pt in second])
    allowed = max(SOAK_RSS_SLACK * rss1, SOAK_RSS_FLOOR_KIB)
    flat = rss2 - rss1 <= allowed and fd2 <= fd1
    head = "**flat**" if flat else "**grows**"
    return (f"{head}: RSS {warm[1]} KiB after warm-up, {last[1]} KiB at the end ({last[1] - warm[1]:+} KiB); "
            f"median {rss1:.0f} KiB over the first half, {rss2:.0f} KiB over the second ({rss2 - rss1:+.0f} KiB, "
            f"allowed {allowed:.0f}); VmHWM {half[3]} KiB at half-way, {last[3]} KiB at the end "
            f"({last[3] - half[3]:+} KiB); fds {warm[2]} after warm-up, {last[2]} at the end, median {fd1:.0f} over "
            f"the first half and {fd2:.0f} over the second (at most {max(pt[2] for pt in second)})"), flat


def thinned(samples, rows=24):
    """At most about `rows` of `samples`, evenly spaced, the first and the last always kept."""
    step = max(1, -(-len(samples) // rows))
    return [x for i, x in enumerate(samples) if i % step == 0 or i == len(samples) - 1]


def store_lines(store):
    """The "Fence store: SQLite vs etcd" and "Failover" sections of RESULTS.md."""
    o = []
    p = o.append
    cfg = store.get("config", {})
    p("## Fence store: SQLite vs etcd")
    p("")
    p("`bench/store_driver.cc` (`mizarmp-bench-store`): one mizarmp-addons on an SQLite file and one on a 3-member etcd")
    p(f"cluster on loopback (Debian's etcd 3.4.23, started by run.sh), {cfg.get('ports')} ports at mizarmp-mock, both in one")
    p(f"run, alternating round by round ({cfg.get('rounds')} rounds). Each fence and unfence is one RPC over the unix")
    p("socket: stored, then enforced by a pass (the port list and the port updates). ListClusterFence with 1,000 stored")
    p(f"fences: calls/s of {cfg.get('clients')} client threads, {cfg.get('seconds')} s per round, median of the rounds.")
    p("")
    for why in store.get("errors", []):
        p(f"- **error**: {why}")
    stores = store.get("stores", {})
    if stores:
        p("| | SQLite | etcd | etcd / SQLite |")
        p("| --- | --- | --- | --- |")
        for key, label in (("fence_1", "FenceClusterNetwork, 1 CIDR (median)"),
                           ("unfence_1", "UnfenceClusterNetwork, 1 CIDR (median)"),
                           ("fence_100", "FenceClusterNetwork, 100 CIDRs (median)"),
                           ("unfence_100", "UnfenceClusterNetwork, 100 CIDRs (median)")):
            a = g(stores, "sqlite", key, "median_ms")
            b = g(stores, "etcd", key, "median_ms")
            ratio = f"{b / a:.2f}x" if a and b else "—"
            p(f"| {label} | {fmt(a)} | {fmt(b)} | {ratio} |")
        a = g(stores, "sqlite", "list_median_calls_per_s")
        b = g(stores, "etcd", "list_median_calls_per_s")
        ratio = f"{b / a:.2f}x" if a and b else "—"
        p(f"| ListClusterFence, 1,000 fences (calls/s) | {a:,.0f} | {b:,.0f} | {ratio} |" if a and b else
          "| ListClusterFence, 1,000 fences (calls/s) | — | — | — |")
        p("")
        p("What bounds etcd here: every change commits one transaction, which a quorum of members fsyncs before it")
        p("answers (the SQLite file fsyncs once, locally), and a change that does not follow this replica's own last")
        p("read or commit reads the whole prefix first. Every ListClusterFence is a linearizable keys-only probe of")
        p("what changed since this replica's last read or commit (the whole prefix again only when another writer")
        p("changed it): a round trip to the etcd leader to confirm its commit index (ReadIndex) per call, where the")
        p("SQLite store answers repeated reads of an unchanged file from memory.")
        p("")
    fo = store.get("failover", {})
    if fo:
        p("## Failover")
        p("")
        p(f"Two replicas on the etcd store, lease {fo.get('lease_ttl_s')} s (`leaseTtlSeconds`; the default is 15 s); a fence stored")
        p("through the leader, then a port created inside it (only a pass can disable it); `kill -9` of the leader. From")
        p("the kill: until the other replica logs the first pass of its term, and until the new port is down at the mock")
        p(f"(polled every 10 ms). The stated bound is 4/3 of the lease plus the 200 ms store poll: {fo.get('bound_ms')} ms.")
        p("")
        p("| run | to the new leader's first pass | to the new port disabled |")
        p("| --- | --- | --- |")
        for i, (a, b) in enumerate(zip(fo.get("to_first_pass_ms", []), fo.get("to_port_disabled_ms", []))):
            p(f"| {i + 1} | {fmt(a, nd=0)} | {fmt(b, nd=0)} |")
        p(f"| median | {fmt(g(fo, 'first_pass', 'median_ms'), nd=0)} | {fmt(g(fo, 'port_disabled', 'median_ms'), nd=0)} |")
        p("")
    return o


def soak_lines(soak, quick):
    """The "Soak" section of RESULTS.md."""
    o = []
    p = o.append
    cni, srv = soak.get("cni", {}), soak.get("server", {})
    p("## Soak")
    p("")
    p("`bench/soak_driver.cc` (`mizarmp-bench-soak`). **Flat** means: the median RSS of the samples in the second half")
    p(f"of the run is at most {SOAK_RSS_SLACK:.0%} (or {SOAK_RSS_FLOOR_KIB} KiB, whichever is larger) above the median of the")
    p("first half after warm-up, and the median open fd count of the second half is not above the first half's")
    p("(medians, because RSS and fds under load move with the requests and connections in flight, a fence pass")
    p("opening its update connections, and a leak lifts the whole second half); otherwise **grows**, with the figure. Warm-up is")
    p(f"the first {SOAK_WARMUP:.0%} of the run; \"after warm-up\" is the first sample past it. RSS is VmRSS (VmHWM = peak")
    p("so far) from `/proc/PID/status`, fds the entries of `/proc/PID/fd`, read between cycles (CNI) or every")
    p("few seconds under load (server).")
    p("")
    if quick:
        p("> A quick run: too few cycles and seconds for these verdicts to mean anything (warm-up dominates).")
        p("")
    for why in soak.get("errors", []):
        p(f"- **error**: {why}")
    if cni.get("samples"):
        samples = cni["samples"]
        last = samples[-1]["leftover"]
        p(f"### CNI: {cni.get('cycles'):,} ADD/DEL cycles against mizarmp-mock and its host agent")
        p("")
        p("Each cycle: a fresh pod netns, `mizarmp` ADD then DEL exec'd as a runtime execs it, the netns deleted. "
          f"Failures: {cni.get('failures')}" + (f" (first: `{cni.get('first_failure')}`)" if cni.get("failures") else "")
          + ".")
        p("")
        p("| cycle | s | mock RSS KiB | mock HWM KiB | mock fds | mock threads | records | lock files | temp files "
          "| other files | host veths | ports at mock |")
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for smp in thinned(samples):
            m, left = smp["mock"], smp["leftover"]
            p(f"| {smp['cycle']} | {smp['seconds']:.0f} | {m['rss_kib']} | {m['hwm_kib']} | {m['fds']} | "
              f"{m['threads']} | {left['records']} | {left['lock_files']} | {left['temp_files']} | "
              f"{left['other_files']} | {left['host_veths']} | {left['mock_ports']} |")
        p("")
        text, _ = soak_verdict(samples, "cycle", "mock")
        p(f"- mizarmp-mock: {text}.")
        left_total = sum(v for v in last.values() if isinstance(v, int) and v > 0)
        p(f"- Left behind after the last cycle: {', '.join(f'{k} {v}' for k, v in last.items())}: "
          + ("**nothing left behind**." if left_total == 0 else "**something is left behind**."))
        for command, r in sorted(cni.get("plugin", {}).items()):
            rss = r["maxrss_kib"]
            p(f"- The plugin's own peak RSS per {command} (wait4 rusage, {r['n']} runs): min {rss['min']:.0f}, "
              f"median {rss['median']:.0f}, max {rss['max']:.0f} KiB; wall time median "
              f"{fmt(g(r, 'wall', 'median_ms'))}, p99 {fmt(g(r, 'wall', 'p99_ms'))}.")
        p("")
    if srv.get("samples"):
        samples = srv["samples"]
        load_samples = [x for x in samples if x.get("phase") == "load"]
        p(f"### Server: mizarmp-addons under continuous fence traffic ({srv.get('seconds', 0):.0f} s)")
        p("")
        p(f"{srv.get('clients')} client threads (a channel each) against mizarmp-addons, which runs against "
          f"mizarmp-mock with {srv.get('ports'):,} ports; each client loops FenceClusterNetwork, ListClusterFence, "
          f"GetFenceClients, UnfenceClusterNetwork, ListClusterFence over its own {srv.get('cidrs_per_client')} "
          "`/32`s, so the fence state returns to empty every loop. "
          f"{len(load_samples)} samples under load (at most 24 shown, evenly spaced; the verdicts use all); the last "
          "row is 1 s after the clients stopped.")
        p("")
        p("| s | phase | RPCs so far | addons RSS KiB | addons HWM KiB | addons fds | addons threads | mock RSS KiB "
          "| mock fds | fence store bytes |")
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for smp in thinned(load_samples) + [x for x in samples if x.get("phase") != "load"]:
            a, m = smp["addons"], smp["mock"]
            p(f"| {smp['seconds']:.0f} | {smp['phase']} | {smp['rpcs']:,} | {a['rss_kib']} | {a['hwm_kib']} | "
              f"{a['fds']} | {a['threads']} | {m['rss_kib']} | {m['fds']} | {smp['store_bytes']:,} |")
        p("")
        for proc, name in (("addons", "mizarmp-addons"), ("mock", "mizarmp-mock")):
            text, _ = soak_verdict(load_samples, "seconds", proc)
            p(f"- {name}: {text}.")
        if "mock_journal_capacity" in srv:
            p(f"- The mock keeps the newest {srv['mock_journal_capacity']:,} port `PUT`s for the tests "
              "(`--journal-capacity`, `GET /mock/requests`, some 200 bytes each); every fence and unfence adds one "
              "per port it changes, so the journal is full within the warm-up and the mock's verdict is about the "
              "mock's own memory.")
        rpcs = srv.get("rpcs", {})
        total = srv.get("rpcs_total", 0)
        p(f"- RPCs: {total:,} in {srv.get('seconds', 0):.0f} s ({total / max(srv.get('seconds', 1), 1e-9):.0f}/s): "
          + "; ".join(f"{k} {v['ok']:,} ok, errors {json.dumps(v['errors']) if v['errors'] else 'none'}"
                      + (f" (first: {v['first_error']})" if v.get("first_error") else "")
                      for k, v in sorted(rpcs.items())) + ".")
        store = [x["store_bytes"] for x in load_samples]
        if store:
            p(f"- Fence store (SQLite file with its -wal and -shm): {store[0]:,} bytes at the start, "
              f"{store[len(store) // 2]:,} at half-way, {store[-1]:,} at the end.")
        left = srv.get("leftover", {})
        p(f"- Still fenced after the clients stopped: {left.get('fenced_cidrs')} CIDRs listed, "
          f"{left.get('ports_down')} ports down at the mock.")
        p("")
    return o


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", default="")
    a = ap.parse_args()
    w = a.work
    M = machine(w)
    cni = load(os.path.join(w, "cni.json")) or {}
    addons = load(os.path.join(w, "addons.json")) or {}
    soak = load(os.path.join(w, "soak.json")) or {}
    store = load(os.path.join(w, "store.json")) or {}
    # The fence section again on the etcd fence store (run.sh, beside the store benchmark).
    addons_etcd = load(os.path.join(w, "addons-etcd.json")) or {}
    P = os.path.join(w, "profile")
    PERF = os.path.join(w, "addons", "perf")

    lat = cni.get("latency", {})
    ready = g(cni, "ready", "rows", default=[]) or []
    burst = g(cni, "burst", "rounds", default=[]) or []
    fp = cni.get("footprint", {})
    st = fp.get("startup", {})
    kern = cni.get("kernel", {})
    rpc = addons.get("rpc", {})
    gc = addons.get("getclients", {})
    fence = addons.get("fence", {})
    fence_etcd = addons_etcd.get("fence", {})
    fence_stores = [(n, f) for n, f in (("SQLite", fence), ("etcd", fence_etcd)) if f]

    ldd = M.get("mizarmp_ldd", "").split()
    curl_linked = any(x.startswith("libcurl") for x in ldd)
    httplib_linked = any("httplib" in x for x in ldd)
    static_plugin = not M.get("mizarmp_needed", "").split()
    http_stack = ("libcurl" if curl_linked else "cpp-httplib" if httplib_linked
                  else "Boost.Beast over OpenSSL, linked statically" if static_plugin
                  else "Boost.Beast over OpenSSL")

    o = []
    p = o.append
    p("# Benchmarks")
    p("")
    p("**Run them all:** `sudo bash bench/run.sh` (from the repository root; builds a Release build in")
    p("`../build-bench`, runs every benchmark, rewrites this file; about 18 minutes, the soak 7 of them).")
    p("`BENCH_QUICK=1` makes a smoke run; `BENCH_BUILD_DIR`, `BENCH_WORK_DIR`, `BENCH_OUT` move things.")
    p("")
    if a.quick:
        p("> **QUICK RUN** (few iterations): these figures are a smoke test, not results.")
        p("")
    p("## This run")
    p("")
    p("| | |")
    p("| --- | --- |")
    p(f"| date (UTC) | {M.get('date', '?')} |")
    p(f"| machine | {M.get('nproc', '?')} CPUs: {M.get('cpu', '?')}; {M.get('memory', '?')} RAM |")
    p(f"| kernel | {M.get('kernel', '?')} |")
    p(f"| load average (1/5/15 min) | before: {M.get('load_before', '?')}; after the CNI runs: "
      f"{M.get('load_after_cni', '?')}; before the addons runs: {M.get('load_before_addons', '?')}; "
      f"after: {M.get('load_after', '?')} "
      "(the machine is shared with other engineers' builds) |")
    p(f"| source | commit {M.get('commit', '?')} ({M.get('dirty', '?')} uncommitted files under the measured folders) |")
    p(f"| build | CMAKE_BUILD_TYPE={M.get('build_type', '?')} (`{M.get('cxx_flags_release', '')}`), "
      f"`-DMIZARMP_WERROR=ON`, {M.get('compiler', '?')} |")
    p(f"| mizarmp's HTTP client | {http_stack} (`ldd`: {len(ldd)} shared libraries); last mizarmp-client commit: "
      f"{M.get('client_log', '?')} |")
    p(f"| reference plugins | {M.get('ptp', '?')} (`/usr/lib/cni/ptp` + `host-local`) |")
    p(f"| last commit touching fence/ | {M.get('fence_log', '?') or 'none'} |")
    p(f"| last commit touching addons/health.cc | {M.get('health_log', '') or 'none (gRPC default health service)'} |")
    p("")
    p("Commands (as `bench/run.sh` ran them):")
    p("")
    p("```")
    p(read(os.path.join(w, "commands.txt")).rstrip())
    p("```")
    p("")

    # ------------------------------------------------------------------------------ targets
    rows = []  # (figure, target, measured, verdict)

    def verdict(ok):
        return "n/a" if ok is None else ("**met**" if ok else "**not met**")

    add_ratio = lat.get("add_ratio_median")
    del_ratio = lat.get("del_ratio_median")
    later_ratio = lat.get("unplug_later_del_ratio_median")

    def vs_ptp(side, op, ratio):
        return (f"{fmt(g(lat, side, op, 'median_ms'))} / {fmt(g(lat, 'ptp', op, 'median_ms'))} = "
                f"**{fmt(ratio, '', 2)}**")

    rows.append(("1. ADD median over http://, mizarmp / ptp+host-local", "<= 0.6",
                 vs_ptp("mizarmp", "add", add_ratio) + f" (p99 {fmt(lat.get('add_ratio_p99'), '', 2)}); "
                 f"previous run {PREVIOUS['add']} / {PREVIOUS['ptp_add']} ms",
                 verdict(None if add_ratio is None else add_ratio <= 0.6)))
    rows.append(("1. DEL median, mizarmp / ptp+host-local: the mock's agent removes the NIC before the "
                 "controller answers", "<= 0.6",
                 vs_ptp("mizarmp", "del", del_ratio) + f" (p99 {fmt(lat.get('del_ratio_p99'), '', 2)}); "
                 f"previous run {PREVIOUS['del']} / {PREVIOUS['ptp_del']} ms",
                 verdict(None if del_ratio is None else del_ratio <= 0.6)))
    rows.append(("1. DEL median, mizarmp / ptp+host-local: the agent removes the NIC after the controller "
                 "answered (`--agent-unplugs-later`)", "<= 0.6",
                 vs_ptp("agent_unplugs_later", "del", later_ratio),
                 verdict(None if later_ratio is None else later_ratio <= 0.6)))
    for op, name in (("add", "ADD"), ("del", "DEL")):
        ratio = lat.get(f"ovs_plug_{op}_ratio_median")
        rows.append((f"1. {name} median in plug mode (Alcor: the plugin plugs the pod into Open vSwitch), "
                     "mizarmp / ptp+host-local", "reported",
                     vs_ptp("ovs_plug", op, ratio), "reported"))
    for side, label in (("https_ca_file", "the CA from `tls.caFile`"),
                        ("https_system_store", "the system trust store (its hash directory)"),
                        ("https_relay", "through the node's relay (`relaySocket`: mizarmp-addons in node "
                                        "mode, its CA from `mpCaFile`)")):
        ratio = lat.get(side + "_add_ratio_median")
        rows.append((f"2. ADD median over https:// / over http://, {label}", "<= 1.3",
                     f"{fmt(g(lat, side, 'add', 'median_ms'))} / {fmt(g(lat, 'mizarmp', 'add', 'median_ms'))} = "
                     f"**{fmt(ratio, '', 2)}** (p99 {fmt(g(lat, side, 'add', 'p99_ms'))})",
                     verdict(None if ratio is None else ratio <= 1.3)))
    for side, label in (("https_system_bundle", "the whole system bundle (`SSL_CERT_FILE`)"),
                        ("https_full_handshake", "`tls.caFile` and no kept session: a full handshake "
                                                 "(a node's first https call, or the first after a CA rotation)")):
        rows.append((f"2. ADD median over https:// / over http://, {label}", "report",
                     f"{fmt(g(lat, side, 'add', 'median_ms'))} / {fmt(g(lat, 'mizarmp', 'add', 'median_ms'))} = "
                     f"**{fmt(lat.get(side + '_add_ratio_median'), '', 2)}**", "reported"))
    ver_ratio = (g(st, "version_mizarmp", "median_ms") / g(st, "version_ptp", "median_ms")
                 if g(st, "version_mizarmp", "median_ms") and g(st, "version_ptp", "median_ms") else None)
    rows.append(("3. VERSION (process start-up) median, mizarmp / ptp", "<= 1.3",
                 f"{fmt(g(st, 'version_mizarmp', 'median_ms'), 'ms', 2)} / {fmt(g(st, 'version_ptp', 'median_ms'), 'ms', 2)} "
                 f"= **{fmt(ver_ratio, '', 2)}** (fork+exec of /bin/true {fmt(g(st, 'exec_bin_true', 'median_ms'), 'ms', 2)}); "
                 f"previous run mizarmp {PREVIOUS['version_ms']} ms",
                 verdict(None if ver_ratio is None else ver_ratio <= 1.3)))
    rss_sides = [s_ for s_ in ("mizarmp", "agent_unplugs_later", "https_ca_file", "https_system_store",
                               "https_system_bundle", "https_full_handshake", "https_relay")
                 if g(lat, s_, "add_maxrss_kib", "max")]
    rss = max((g(lat, s_, "add_maxrss_kib", "max") for s_ in rss_sides), default=None)
    rows.append(("3. peak RSS of one mizarmp ADD (largest over every http and https side)", "<= 6 MiB (6144 KiB)",
                 f"**{fmt(rss, 'KiB', 0)}**: " + ", ".join(
                     f"{s_} {fmt(g(lat, s_, 'add_maxrss_kib', 'max'), 'KiB', 0)}" for s_ in rss_sides)
                 + f"; ptp {fmt(g(lat, 'ptp', 'add_maxrss_kib', 'max'), 'KiB', 0)}; previous run {PREVIOUS['rss_kib']} KiB",
                 verdict(None if rss is None else rss <= 6144)))
    relay_sides = [s_ for s_ in ("mizarmp", "agent_unplugs_later", "https_relay")
                   if g(lat, s_, "add_maxrss_kib", "max")]
    if "https_relay" in relay_sides:
        relay_rss = max(g(lat, s_, "add_maxrss_kib", "max") for s_ in relay_sides)
        rows.append(("3. peak RSS of one mizarmp ADD on a node with the relay (http, and https through it)",
                     "<= 6 MiB (6144 KiB)",
                     f"**{fmt(relay_rss, 'KiB', 0)}**: " + ", ".join(
                         f"{s_} {fmt(g(lat, s_, 'add_maxrss_kib', 'max'), 'KiB', 0)}" for s_ in relay_sides),
                     verdict(relay_rss <= 6144)))
    r0 = next((r for r in ready if r["ready_delay_ms"] == 0), None)
    base0 = g(r0, "default", "median_ms") if r0 else None
    for r in ready:
        d = r["ready_delay_ms"]
        if d == 0 or base0 is None:
            continue
        over = g(r, "default", "median_ms") - base0 - d
        gets = readiness_gets(r, "default")
        budget = readiness_get_budget(d)
        rows.append((f"4. readiness d = {d} ms: ADD(d) - ADD(0) - d, default poll", "<= 2 ms, GETs <= 1 + d/5",
                     f"**{fmt(over, 'ms', 2)}** (ADD(d) {fmt(g(r, 'default', 'median_ms'))}, ADD(0) {fmt(base0)}); "
                     f"**{fmt(gets, '', 0)} GETs** of the port per ADD (median; budget {budget}); the previous "
                     f"interval (1 ms doubling to 5 ms) {fmt(g(r, 'previous_1ms_doubling', 'median_ms') - g(r0, 'previous_1ms_doubling', 'median_ms') - d, 'ms', 2)} "
                     f"with {fmt(readiness_gets(r, 'previous_1ms_doubling'), '', 0)} GETs",
                     verdict(over <= 2 and gets <= budget)))
    mz_bursts = [b for b in burst if b["plugin"] == "mizarmp"]
    if mz_bursts:
        fails = sum(b["add_failures"] + b["del_failures"] for b in mz_bursts)
        leaks = {}
        for b in mz_bursts:
            for k, v in b["leaks"].items():
                leaks[k] = leaks.get(k, 0) + (v if isinstance(v, int) else 0)
        leaked = sum(v for k, v in leaks.items() if k != "lock_files")
        worst_add = max(b["add_total_ms"] for b in mz_bursts)
        worst_p99 = max(b["add"]["p99_ms"] for b in mz_bursts)
        rows.append((f"burst of {mz_bursts[0]['n']}: failures, leaks", "0 failures, 0 leaks",
                     f"{fails} failures; leaks after {len(mz_bursts)} rounds: "
                     + ", ".join(f"{k} {v}" for k, v in sorted(leaks.items()))
                     + f"; ADD total (worst round) {fmt(worst_add)}, p99 {fmt(worst_p99)}",
                     verdict(fails == 0 and leaked == 0)))
    rows.append(("3. binary size (unstripped / stripped)", "report",
                 f"mizarmp {g(fp, 'mizarmp_binary', 'bytes')} / {g(fp, 'mizarmp_binary', 'stripped_bytes')} B "
                 f"+ {g(fp, 'mizarmp_binary', 'shared_libraries')} shared libraries; ptp "
                 f"{g(fp, 'ptp_binary', 'bytes')} B (Go, libc only)", "reported"))
    dyn = lat.get("mizarmp_dynamic", {})
    rows.append(("3. self-contained (static) plugin vs linked dynamically vs ptp", "report",
                 f"VERSION {fmt(g(st, 'version_mizarmp', 'median_ms'), 'ms', 2)} / "
                 f"{fmt(g(st, 'version_mizarmp_dynamic', 'median_ms'), 'ms', 2)} / "
                 f"{fmt(g(st, 'version_ptp', 'median_ms'), 'ms', 2)}; ADD median "
                 f"{fmt(g(lat, 'mizarmp', 'add', 'median_ms'))} / {fmt(g(dyn, 'add', 'median_ms'))} / "
                 f"{fmt(g(lat, 'ptp', 'add', 'median_ms'))}; ADD peak RSS (max) "
                 f"{fmt(g(fp, 'add_maxrss_kib', 'max'), 'KiB', 0)} / "
                 f"{fmt(g(fp, 'dynamic_add_maxrss_kib', 'max'), 'KiB', 0)} / "
                 f"{fmt(g(fp, 'ptp_add_maxrss_kib', 'max'), 'KiB', 0)}; binary (stripped) "
                 f"{g(fp, 'mizarmp_binary', 'stripped_bytes')} B, no shared library / "
                 f"{g(fp, 'mizarmp_dynamic_binary', 'stripped_bytes')} B + "
                 f"{g(fp, 'mizarmp_dynamic_binary', 'shared_libraries')} shared libraries / "
                 f"{g(fp, 'ptp_binary', 'stripped_bytes')} B", "reported"))
    for method in ("Probe", "ListClusterFence"):
        m = rpc.get(method)
        label = f"{method} calls/s, 8 clients, vs bare gRPC"
        if not m:
            rows.append((label, ">= 0.8", "not run", "n/a"))
            continue
        if not m.get("measured"):
            rows.append((label, ">= 0.8", f"**not measured**: {m.get('why')} (bare server: "
                         f"{g(m, 'bare', 'calls_per_s_median', default=0):.0f} calls/s)", "not measured"))
            continue
        ratio = m.get("ratio_calls_per_s")
        prev = f"; previous run {PREVIOUS['probe_ratio'] if method == 'Probe' else PREVIOUS['list_ratio']}"
        rows.append((label, ">= 0.8",
                     f"{g(m, 'mizarmp-addons', 'calls_per_s_median'):.0f} / {g(m, 'bare', 'calls_per_s_median'):.0f} "
                     f"= **{ratio:.2f}**; p99 {fmt(g(m, 'mizarmp-addons', 'latency', 'p99_ms'), 'ms', 2)} vs "
                     f"{fmt(g(m, 'bare', 'latency', 'p99_ms'), 'ms', 2)}; server CPU per call "
                     f"{fmt(g(m, 'mizarmp-addons', 'server_cpu_us_per_call_median'), 'us', 1)} vs "
                     f"{fmt(g(m, 'bare', 'server_cpu_us_per_call_median'), 'us', 1)}{prev}",
                     verdict(ratio >= 0.8)))
    gc_med = g(gc, "latency", "median_ms")
    gc_node = g(gc, "one_node", "latency", "median_ms")
    if gc.get("measured"):
        rows.append((f"GetFenceClients, {gc.get('records'):,} records / {gc.get('nodes')} nodes", "<= 20 ms",
                     f"**{fmt(gc_med)}** median, p99 {fmt(g(gc, 'latency', 'p99_ms'))} "
                     f"({gc.get('clients_returned')} clients, {gc.get('addresses_returned')} addresses); one node "
                     f"(`hostId`): **{fmt(gc_node)}** median, p99 {fmt(g(gc, 'one_node', 'latency', 'p99_ms'))}",
                     verdict(max(gc_med, gc_node or 0) <= 20)))
    else:
        rows.append(("GetFenceClients, 10,000 records / 100 nodes", "<= 20 ms",
                     f"**not measured**: {gc.get('why', 'not run')}", "not measured"))
    fen = fence.get("fence", {})
    for store_name, f in fence_stores or [("SQLite", fence)]:
        ff, uf = f.get("fence", {}), f.get("unfence", {})
        if ff.get("measured") and uf.get("measured"):
            rows.append((f"5. FenceClusterNetwork / Unfence, {f.get('cidrs'):,} CIDRs / {f.get('ports'):,} ports, "
                         f"{store_name} store", "<= 150 ms each",
                         f"fence **{fmt(ff.get('ms'))}**, {ff.get('rest_requests')} REST calls, "
                         f"{ff.get('ports_down_after')} ports down, {ff.get('ports_wrong')} wrong; "
                         f"unfence **{fmt(uf.get('ms'))}**, {uf.get('rest_requests')} REST calls, "
                         f"{uf.get('ports_down_after')} left down",
                         verdict(ff["ms"] <= 150 and uf["ms"] <= 150)))
        else:
            why = ff.get("why") or uf.get("why") or f.get("why") or "not run"
            rows.append((f"5. FenceClusterNetwork / Unfence, 1,000 CIDRs / 10,000 ports, {store_name} store",
                         "<= 150 ms each", f"**not measured**: {why}", "not measured"))

    soak_rows = []
    if g(soak, "cni", "samples"):
        soak_rows.append((f"{g(soak, 'cni', 'cycles'):,} ADD/DEL cycles", "mizarmp-mock", soak["cni"]["samples"], "cycle"))
    if g(soak, "server", "samples"):
        load_samples = [x for x in soak["server"]["samples"] if x.get("phase") == "load"]
        for proc, name in (("addons", "mizarmp-addons"), ("mock", "mizarmp-mock")):
            soak_rows.append((f"{soak['server']['seconds']:.0f} s of fence traffic", name, load_samples, "seconds"))
    for what, name, samples, x_key in soak_rows:
        proc = "addons" if name == "mizarmp-addons" else "mock"
        text, flat = soak_verdict(samples, x_key, proc)
        rows.append((f"soak, {what}: {name} RSS and fds", "flat (see Soak)", text,
                     verdict(flat)))

    p("## Figures against their targets")
    p("")
    p("| figure | target | measured (this run) | |")
    p("| --- | --- | --- | --- |")
    for r in rows:
        p("| " + " | ".join(str(x) for x in r) + " |")
    p("")

    # ---------------------------------------------------------------------- what changed
    ver = g(st, "version_mizarmp", "median_ms")
    ver_ptp = g(st, "version_ptp", "median_ms")
    mz_add = g(lat, "mizarmp", "add", "median_ms")
    pt_add = g(lat, "ptp", "add", "median_ms")
    mz_del = g(lat, "mizarmp", "del", "median_ms")
    pt_del = g(lat, "ptp", "del", "median_ms")
    r0 = next((r for r in ready if r["ready_delay_ms"] == 0), None)
    # The same plugin's ADD with ports ready at once is measured twice in a run (latency, and
    # readiness at d = 0): when the two medians disagree, one section ran on a busier machine.
    r0_med = g(r0, "default", "median_ms") if r0 else None
    contended = ""
    if mz_add and r0_med and abs(mz_add - r0_med) > 0.2 * min(mz_add, r0_med):
        contended = (f"**Note:** the same mizarmp ADD (ports ready at once) measured {fmt(mz_add)} median in the latency "
                     f"section and {fmt(r0_med)} at d = 0 in the readiness section of this run: one of the two ran on a "
                     "busier machine (other engineers' builds share these 2 CPUs; load figures above). The ratio "
                     "to ptp is from interleaved samples, so both sides saw the same machine, but the absolute "
                     "latency-section figures (and the start-up/work split below, which uses them) are "
                     "inflated accordingly.")
    ann_add = annotate_entries(os.path.join(P, "annotate.ADD.txt"))

    p("## What changed since the previous run")
    p("")
    p(f"The previous run (commit {PREVIOUS['commit']}) measured the same harness before these product changes:")
    p("")
    stores_now = dict(fence_stores)

    def fence_pair(store):
        f = stores_now.get(store, {})
        return f"{fmt(f.get('fence', {}).get('ms'))} / {fmt(f.get('unfence', {}).get('ms'))}"

    etcd_now = stores_now.get("etcd", {}).get("fence", {})

    def cpu_now(store, proc):
        f = stores_now.get(store, {})
        return " / ".join(fmt(f.get(rpc, {}).get(f"{proc}_cpu_ms"), "ms", 0) for rpc in ("fence", "unfence"))

    def cpu_change(proc):
        return "; ".join(f"{store} {before[0]} / {before[1]} ms -> {cpu_now(store, proc)}"
                         for store, before in PREVIOUS[f"fence_{proc}_cpu_ms"].items())

    def rpc_cpu_change(method):
        m = rpc.get(method, {})
        before = PREVIOUS["rpc_cpu_us"][method]
        return (f"{method} {before[0]} -> {fmt(g(m, 'mizarmp-addons', 'server_cpu_us_per_call_median'), 'us', 1)} "
                f"(bare {before[1]} -> {fmt(g(m, 'bare', 'server_cpu_us_per_call_median'), 'us', 1)})")
    p("- **mizarmp-addons turns abseil's debug deadlock detector off at start** (the product, "
      "`cmd/mizarmp-addons/main.cc`, DESIGN.md). Debian builds abseil without `NDEBUG`, so every lock inside "
      "gRPC (`absl::Mutex`) kept a process-wide lock-order graph behind one spin lock; abseil's release builds "
      "skip it. By callgrind, 200 ListClusterFence calls, each on a new connection, cost the server 12% fewer "
      "instructions (627k -> 551k per call) and its start 8% fewer. The bare gRPC server runs gRPC as Debian "
      f"builds it, the detector on. Server CPU per call: {rpc_cpu_change('Probe')}, "
      f"{rpc_cpu_change('ListClusterFence')}. mizarmp-addons' CPU per fence / unfence RPC: {cpu_change('addons')}; "
      f"fence / unfence, SQLite {PREVIOUS['fence_ms']} / {PREVIOUS['unfence_ms']} ms -> {fence_pair('SQLite')}, "
      f"etcd {PREVIOUS['etcd_fence_ms']} / {PREVIOUS['etcd_unfence_ms']} ms -> {fence_pair('etcd')} (REST calls "
      f"of the etcd fence {PREVIOUS['etcd_fence_rest']} -> {etcd_now.get('rest_requests', 'n/a')}).")
    p("  - The fence figures move with the machine, not with this change: by hand after this run, the previous "
      "binaries and these alternating, a fence on SQLite took 92.0, 105.7, 108.1 ms (previous) and 93.5, 104.6, "
      "117.5 ms (these), mizarmp-addons' CPU 80-90 ms and 80-100 ms; the mock's CPU moved alike.")
    soak_load = [x for x in g(soak, "server", "samples", default=[]) or [] if x.get("phase") == "load"]
    addons_end = soak_load[-1]["addons"]["rss_kib"] if soak_load else None
    p(f"- The fence soak's mizarmp-addons RSS at the end: {PREVIOUS['soak_addons_rss_kib']} KiB -> "
      f"{fmt(addons_end, 'KiB', 0)}.")
    p("- The plugin and the mock are the previous run's code: the plugin's figures below (ADD, DEL, https, "
      "readiness, VERSION, peak RSS) and the mock's CPU move with the machine.")
    if pt_add and PREVIOUS["ptp_add"]:
        p(f"- The machine: ptp's ADD, which none of these changes touch, took {pt_add / PREVIOUS['ptp_add']:.1f}x "
          "its previous time in this run, so absolute times of the two runs do not compare; the ratios do.")
    p(f"- ADD median {PREVIOUS['add']} -> {fmt(mz_add)} (ptp {PREVIOUS['ptp_add']} -> {fmt(pt_add)}), DEL "
      f"{PREVIOUS['del']} -> {fmt(mz_del)} (ptp {PREVIOUS['ptp_del']} -> {fmt(pt_del)}), VERSION "
      f"{PREVIOUS['version_ms']} -> {fmt(ver, 'ms', 2)} (ptp {PREVIOUS['version_ptp_ms']} -> {fmt(ver_ptp, 'ms', 2)}), "
      f"ADD peak RSS {PREVIOUS['rss_kib']} -> {fmt(rss, 'KiB', 0)}.")
    p("")

    # ------------------------------------------------------------------------------ details
    p("## How it is measured")
    p("")
    p("- `bench/cni_driver.cc` (`mizarmp-bench-cni`) execs each plugin as a runtime does: fork/execve with")
    p("  only `CNI_COMMAND`, `CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME`, `CNI_PATH`, `PATH` in the")
    p("  environment, the network config on stdin, stdout and stderr read to EOF, the child reaped with")
    p("  `wait4` (its rusage gives the peak RSS and CPU). Time = fork to reaped. Pod netns are created")
    p("  before and deleted after each timed call, outside the timed window.")
    p("- mizarmp runs against `mizarmp-mock` (as built, TCP_NODELAY on) with its host agent in a separate")
    p("  \"host\" netns: each ADD includes the agent creating the veth, moving it into the pod and bridging")
    p("  the host end. ptp runs inside a netns of its own (setns in the child before execve) so it never")
    p("  touches the machine's namespace; it does the same netns work: one veth, an address, routes, with")
    p("  host-local IPAM.")
    p("- Every comparison is interleaved: per iteration the sides run in turn, the order alternating")
    p("  (mizarmp, ptp / ptp, mizarmp), warm-up iterations dropped. Percentiles are nearest-rank; p99 of")
    p("  100 samples is the second-largest.")
    p("- `bench/addons_driver.cc` (`mizarmp-bench-addons`): 8 client threads, each with its own channel")
    p("  and connection (local subchannel pool), calling for a fixed time; rounds rotate mizarmp-addons,")
    p("  `mizarmp-bench-bare-grpc` (a default `grpc::ServerBuilder` sync server whose handlers return an")
    p("  empty response) and the bare server with gRPC's default health service. Clients and servers share")
    p("  the same 2 CPUs. ListClusterFence runs against an empty fence store (the bare server answers an")
    p("  empty list).")
    p("- Profiles: `valgrind --tool=callgrind` for the plugin (instruction counts, repeatable on a shared")
    p("  machine; perf's hardware counters are not available on this VM), `perf record -a -e cpu-clock -g`")
    p("  for the servers, reported for the server's pid.")
    p("- A method that answers UNIMPLEMENTED is reported as *not measured*, never as a figure.")
    p("")

    p("### 1-3. ADD and DEL latency (ports ready at once), http:// and https://")
    p("")
    p("Eleven sides in turn, the order rotating per iteration. mizarmp sides run against mizarmp-mock with its")
    p("host agent; the https:// sides against a second mock serving TLS with a throwaway P-256 CA, the CA")
    p("given as `tls.caFile`, or made one of the system's in a mount namespace where `/etc/ssl/certs` is a copy")
    p("of the machine's with the CA added as Debian's tools add one (a hash link, a line in the bundle), or")
    p("as `SSL_CERT_FILE` pointing at that whole bundle. Those three resume the TLS session the plugin keeps in")
    p("its state dir (as a node's plugin does after its first https call); the last side has its kept sessions")
    p("removed before every ADD and DEL (outside the timed window), so each makes a full handshake. The")
    p("relay side has `relaySocket` set to the socket of a mizarmp-addons in node mode (`--relay-socket`,")
    p("`--mpurl` the TLS mock, `--mp-ca-file` the CA) started once for the section, as a node runs it: its")
    p("requests go over that process's kept TLS connections, and the plugin process sets no TLS up. The two")
    p("plug-mode sides run on an Alcor node: Open vSwitch in its userspace datapath in a namespace of its own,")
    p("the mock as Alcor's controller and its OVS agent there (it places no NIC, tags `tap<id>` on `br-int`,")
    p("then reports the port ACTIVE), and the plugin there making the veth and the OVS port itself; one with")
    p("`plug: ovs` and `dialect: alcor` configured, one with both `auto` (the bridge looked up and the")
    p("controller's generation asked on each ADD).")
    p("")
    p("| side | ADD median | ADD p90 | ADD p99 | DEL median | DEL p90 | DEL p99 | ADD CPU (user+sys) median | ADD peak RSS max | n |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    side_labels = {
        "mizarmp": "mizarmp, http://",
        "ptp": "ptp + host-local",
        "mizarmp_dynamic": "mizarmp linked dynamically (bench variant), http://",
        "agent_unplugs_later": "mizarmp, http://, agent removes the NIC after the answer",
        "https_ca_file": "mizarmp, https://, `tls.caFile`",
        "https_system_store": "mizarmp, https://, system trust store (hash directory)",
        "https_system_bundle": "mizarmp, https://, whole system bundle (`SSL_CERT_FILE`)",
        "https_full_handshake": "mizarmp, https://, `tls.caFile`, no kept TLS session (full handshakes)",
        "https_relay": "mizarmp, https://, through the node's relay (`relaySocket`)",
        "ovs_plug": "mizarmp, plug mode on Open vSwitch (Alcor), `plug: ovs`",
        "ovs_plug_auto": "mizarmp, plug mode on Open vSwitch (Alcor), `plug: auto`",
    }
    for key in lat.get("sides", []):
        s = lat.get(key)
        p(f"| {side_labels.get(key, key)} | {fmt(g(s, 'add', 'median_ms'), 'ms', 2)} | {fmt(g(s, 'add', 'p90_ms'), 'ms', 2)} | "
          f"{fmt(g(s, 'add', 'p99_ms'), 'ms', 2)} | {fmt(g(s, 'del', 'median_ms'), 'ms', 2)} | "
          f"{fmt(g(s, 'del', 'p90_ms'), 'ms', 2)} | {fmt(g(s, 'del', 'p99_ms'), 'ms', 2)} | "
          f"{fmt(g(s, 'add_cpu', 'median_ms'), 'ms', 2)} | {fmt(g(s, 'add_maxrss_kib', 'max'), 'KiB', 0)} | {g(s, 'add', 'n')} |")
    p("")
    p(f"Failures: {lat.get('failures', 'n/a')}. Ports left at the mock afterwards: {lat.get('mock_ports_left', 'n/a')}; "
      f"removals the later agent still had queued at the end: {lat.get('unplug_later_backlog_at_end', 'n/a')}.")
    p("")
    if contended:
        p(contended)
        p("")

    ovsdb = cni.get("ovsdb")
    if ovsdb:
        p("Plug mode's database work, the plugin's way (RFC 7047 over ovsdb-server's socket, one connection per")
        p("change as ADD and DEL each open one) against `ovs-vsctl --no-wait` (a process per change), in turn per")
        p("iteration, median (p99):")
        p("")
        p("| change | ovsdb library | ovs-vsctl |")
        p("| --- | --- | --- |")
        for op, name in (("add", "add a port"), ("del", "remove it")):
            p(f"| {name} | {fmt(g(ovsdb, 'library_' + op, 'median_ms'), 'ms', 2)} ({fmt(g(ovsdb, 'library_' + op, 'p99_ms'), 'ms', 2)}) | "
              f"{fmt(g(ovsdb, 'vsctl_' + op, 'median_ms'), 'ms', 2)} ({fmt(g(ovsdb, 'vsctl_' + op, 'p99_ms'), 'ms', 2)}) |")
        p("")

    p("### 4. Readiness latency")
    p("")
    p("The mock makes each port ready d ms after its creation (`--ready-delay-ms`); its agent places the NIC")
    p("in the pod, then the port reports ready. Three poll settings of the plugin, interleaved: the default (no")
    p("`poll` key: every 5 ms, 1% of the time already waited later, and at once when the NIC arrives), the")
    p("previous default's interval (`\"poll\": {\"initialMs\": 1, \"maxMs\": 5}`, the NIC watch on as well), and a")
    p("fixed 1 s poll like the upstream plugin. Overhead = ADD(d) - ADD(0) - d of the medians; GETs of the port")
    p("per ADD from the mock's request counter (the ADD's requests less its POST and subnet GET).")
    p("")
    p("| d | default: median / p99 | overhead | GETs (budget) | 1 ms doubling: median | overhead | GETs | fixed 1 s: median | GETs |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in ready:
        d = r["ready_delay_ms"]
        cells = [f"{fmt(g(r, 'default', 'median_ms'))} / {fmt(g(r, 'default', 'p99_ms'))}"]
        for v in ("default", "previous_1ms_doubling"):
            zero = g(r0, v, "median_ms") if r0 else None
            over = g(r, v, "median_ms") - zero - d if zero is not None and g(r, v, "median_ms") is not None else None
            if v != "default":
                cells.append(fmt(g(r, v, "median_ms")))
            cells.append(fmt(over, "ms", 2))
            cells.append(f"{fmt(readiness_gets(r, v), '', 0)}" + (f" ({readiness_get_budget(d)})" if v == "default" else ""))
        cells.append(fmt(g(r, "fixed_1s", "median_ms")))
        cells.append(fmt(readiness_gets(r, "fixed_1s"), "", 0))
        p(f"| {d} ms | " + " | ".join(cells) + " |")
    p("")

    p("### 3. Burst")
    p("")
    p("All ADDs released at once (one thread each, fork/exec in parallel on 2 CPUs), then all DELs.")
    p("Leaks are looked for as a user would: ports at the mock (`/mock/state`), attachment records and")
    p("lock files in the state dir, veths in the agent's host netns, any interface left in a pod netns;")
    p("for ptp: host-local reservations and veths in its netns.")
    p("")
    p("| plugin | round | ADD total | ADD median / p99 | failed | DEL total | DEL median / p99 | failed | TCP listen overflows | left behind |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for b in burst:
        p(f"| {b['plugin']} | {b['round']} | {fmt(b['add_total_ms'])} | {fmt(b['add']['median_ms'])} / "
          f"{fmt(b['add']['p99_ms'])} | {b['add_failures']} | {fmt(b['del_total_ms'])} | "
          f"{fmt(b['del']['median_ms'])} / {fmt(b['del']['p99_ms'])} | {b['del_failures']} | "
          f"{b.get('tcp_listen_overflows', 'n/a')} | "
          + ", ".join(f"{k} {v}" for k, v in sorted(b["leaks"].items())) + " |")
    p("")
    tails = [(b, op) for b in burst for op in ("add", "del") if b[op]["p99_ms"] > 1000]
    if tails:
        desc = "; ".join(f"{b['plugin']} round {b['round']} {op.upper()} p99 {fmt(b[op]['p99_ms'])} "
                         f"(median {fmt(b[op]['median_ms'])}, listen overflows {b.get('tcp_listen_overflows', 'n/a')})"
                         for b, op in tails)
        p(f"Tail over 1 s: {desc}. A ~1 s step over a median of a few hundred ms is the size of TCP's initial SYN "
          "retransmission timeout (a dropped SYN shows as `TcpExt ListenOverflows`); the mock's accept queue is "
          "SOMAXCONN since d37507b, so an overflow now means its accept thread was starved (see the load above).")
        p("")

    p("### 4. Footprint and start-up")
    p("")
    p("| program (exec'd in turn, same run) | median | p99 | peak RSS |")
    p("| --- | --- | --- | --- |")
    labels = [
        ("exec_bin_true", "`/bin/true` (fork+exec floor)"),
        ("version_ptp", "ptp VERSION (Go binary, links libc only)"),
        ("version_mizarmp", "**mizarmp VERSION**"),
        ("version_mizarmp_dynamic", "mizarmp VERSION, linked dynamically (bench variant: the same plugin on Debian's shared libraries)"),
        ("startup_libc", "empty `main()`: libc"),
        ("startup_libstdcxx", "empty `main()`: + libstdc++"),
        ("startup_nl", "empty `main()`: + libnl-3, libnl-route-3"),
        ("startup_nl-ssl", "empty `main()`: + libssl, libcrypto"),
        ("startup_all", "empty `main()` linked dynamically against the plugin's library target (`mizarmp_cni`)"),
        ("init_none", "OpenSSL probe: nothing (libssl + libcrypto loaded)"),
        ("init_ssl-init", "OpenSSL probe: `OPENSSL_init_ssl` with the error strings (cpp-httplib's load-time init)"),
        ("init_ssl-noconf", "OpenSSL probe: the same without reading `openssl.cnf`"),
        ("init_ssl-ctx", "OpenSSL probe: init + a TLS client `SSL_CTX` with the system CA paths (https://)"),
    ]
    for key, label in labels:
        s = st.get(key)
        if s:
            p(f"| {label} | {fmt(s['median_ms'], 'ms', 2)} | {fmt(s['p99_ms'], 'ms', 2)} | {fmt(s.get('maxrss_kib'), 'KiB', 0)} |")
    p("")
    p("| binary | bytes | stripped | shared libraries (ldd) |")
    p("| --- | --- | --- | --- |")
    for key, label in (("mizarmp_binary", "mizarmp (Release)"),
                       ("mizarmp_dynamic_binary", "mizarmp linked dynamically (bench variant)"),
                       ("ptp_binary", "ptp"), ("host_local_binary", "host-local")):
        b = fp.get(key)
        if b:
            p(f"| {label} | {b['bytes']} | {b['stripped_bytes']} | {b['shared_libraries']} |")
    p("")
    p(f"mizarmp's shared libraries (`ldd`): {' '.join(ldd) or 'n/a'}.")
    p("")

    p("### 5. mizarmp-addons")
    p("")
    if rpc:
        p("Three servers in turn: mizarmp-addons, the bare server, and the bare server with gRPC's default")
        p("health service switched on (`grpc::EnableDefaultHealthCheckService(true)`, what the server (now addons/server.cc) used")
        p("before it served its own sync health service). Server CPU per call = the server process's")
        p("utime+stime (`/proc/PID/stat`) over the round / calls.")
        p("")
        p("| method | server | calls/s (median of rounds) | each round | latency median / p99 | server CPU per call | errors |")
        p("| --- | --- | --- | --- | --- | --- | --- |")
        for method in ("Probe", "ListClusterFence"):
            m = rpc.get(method, {})
            for srv in ("mizarmp-addons", "bare", "bare+health"):
                s = m.get(srv)
                if not s:
                    continue
                rounds_ = ", ".join(f"{x:.0f}" for x in s.get("calls_per_s_rounds", []))
                p(f"| {method} | {srv} | {s['calls_per_s_median']:.0f} | {rounds_} | "
                  f"{fmt(g(s, 'latency', 'median_ms'), 'ms', 3)} / {fmt(g(s, 'latency', 'p99_ms'), 'ms', 3)} | "
                  f"{fmt(s.get('server_cpu_us_per_call_median'), 'us', 1)} | "
                  f"{json.dumps(s.get('errors', {}))} |")
        p("")
        p(f"Mizar-MP requests the addons server made during the RPC runs: {rpc.get('mock_requests_during_rpc')} "
          "(Probe's controller check is cached for 1 s).")
        p("")
    if gc.get("measured"):
        p(f"GetFenceClients: {gc.get('records'):,} records written with `cni::RecordStore::Write` "
          f"(in {fmt(gc.get('write_records_s'), 's', 1)}), node i % {gc.get('nodes')}, one address each; "
          f"{g(gc, 'latency', 'n')} calls of each kind, interleaved, after 3 warm-up pairs:")
        p("")
        p("| request | median | p90 | p99 | clients | addresses |")
        p("| --- | --- | --- | --- | --- | --- |")
        p(f"| whole cluster | {fmt(gc_med)} | {fmt(g(gc, 'latency', 'p90_ms'))} | {fmt(g(gc, 'latency', 'p99_ms'))} | "
          f"{gc.get('clients_returned')} | {gc.get('addresses_returned')} |")
        p(f"| `hostId` = {g(gc, 'one_node', 'host_id')} | {fmt(gc_node)} | {fmt(g(gc, 'one_node', 'latency', 'p90_ms'))} | "
          f"{fmt(g(gc, 'one_node', 'latency', 'p99_ms'))} | {g(gc, 'one_node', 'clients_returned')} | "
          f"{g(gc, 'one_node', 'addresses_returned')} |")
        p("")
    elif gc:
        p(f"- GetFenceClients: **not measured** — {gc.get('why')}.")
    if fen.get("measured"):
        p(f"FenceClusterNetwork: {fence.get('ports'):,} ports bulk-created at the mock (in "
          f"{fmt(fence.get('create_ports_s'), 's', 1)}), one `/32` CIDR for every "
          f"{max(1, fence.get('ports', 1) // max(1, fence.get('cidrs', 1)))}th port; mizarmp-addons' reconcile loop "
          "pushed out (1 h) so the REST calls counted are the RPC's own; its port updates go out over "
          f"`updateConnections` ({g(addons, 'config', 'update_connections') or 'default: 8'}) kept-alive "
          "connections. Afterwards the port list is checked: exactly the ports inside a fenced CIDR must be "
          "`admin_state_up=false`. On etcd (the 3-member cluster of the store benchmark, a prefix of its own) "
          "the replica first wins the election (a fence of an address no port has), so the figures do not "
          "include it.")
        p("")
        p(f"Each row: the median of {fence.get('rounds', 1)} fence/unfence pairs (time range over the pairs in "
          "brackets); REST calls, ports down and ListClusterFence from the last pair; wrong: the worst pair.")
        p("")
        p("| store | RPC | time | REST calls | per REST call | CPU mizarmp-addons | CPU mock | ports down after | wrong | ListClusterFence after |")
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for store_name, f in fence_stores:
            for name, r in (("FenceClusterNetwork", f.get("fence", {})), ("UnfenceClusterNetwork", f.get("unfence", {}))):
                if r.get("measured"):
                    per = r["ms"] / r["rest_requests"] if r.get("rest_requests") else None
                    span = r.get("ms_rounds") or [r["ms"]]
                    p(f"| {store_name} | {name} | {fmt(r['ms'])} ({fmt(min(span))}–{fmt(max(span))}) | "
                      f"{r.get('rest_requests')} | {fmt(per, 'ms', 3)} | "
                      f"{fmt(r.get('addons_cpu_ms'), 'ms', 0)} | {fmt(r.get('mock_cpu_ms'), 'ms', 0)} | "
                      f"{r.get('ports_down_after')} | {r.get('ports_wrong')} | {r.get('list_cluster_fence_cidrs', '')} |")
                else:
                    p(f"| {store_name} | {name} | not measured: {r.get('why') or f.get('why') or 'not run'} | | | | | | | |")
        p("")
        p("CPU: user + system time of each process during the RPC (/proc/PID/stat), so the figure holds on a "
          "shared machine too. On etcd too the REST calls are the RPC's own: the leader's loop passes again only "
          "for a change its last pass did not account for.")
        p("")
    elif fence:
        p(f"- FenceClusterNetwork: **not measured** — {fen.get('why', 'not run')}.")
        p("")

    if soak:
        o.extend(soak_lines(soak, a.quick))
    if store:
        o.extend(store_lines(store))

    # ------------------------------------------------------------------------------ misses
    p("## What bounds each miss, and what would move it")
    p("")
    cg_add = callgrind_total(os.path.join(P, "callgrind.ADD"))
    cg_del = callgrind_total(os.path.join(P, "callgrind.DEL"))
    cg_https = callgrind_total(os.path.join(P, "callgrind.ADD-https"))
    ann_https = annotate_entries(os.path.join(P, "annotate.ADD-https.txt"))
    cg_ver = callgrind_total(os.path.join(P, "cg.version"))
    perf_probe = read(os.path.join(P, "perf-probe.txt"))
    perf_hw = "not supported" not in perf_probe and perf_probe != ""
    p(f"Profiles: `valgrind --tool=callgrind` (instruction counts; repeatable on a shared machine). "
      f"`perf stat -e instructions` {'works' if perf_hw else 'reports the hardware counters as not supported on this VM'}, "
      "so for the plugin perf gives software counters only (below); the servers are sampled with `perf record -e cpu-clock`.")
    p("")

    def sv(key):
        return g(st, key, "median_ms")

    def kib(key):
        return g(st, key, "maxrss_kib")

    run_ir = inclusive(ann_add, "mizarmp::cni::Run")
    main_ir = inclusive(ann_add, "main")
    kdel = g(kern, "ip_veth_del", "median_ms")
    kq = g(kern, "ip_link_show", "median_ms")
    teardown = sub(kdel, kq)
    later_del = g(lat, "agent_unplugs_later", "del", "median_ms")

    if add_ratio is not None and add_ratio > 0.6 and ver and ver_ptp:
        p("### 1. ADD over http://: start-up and the network work")
        p("")
        p(f"- Split each median ADD into start-up (its VERSION median) and the rest: mizarmp {fmt(ver)} + "
          f"{fmt(mz_add - ver)}, ptp {fmt(ver_ptp)} + {fmt(pt_add - ver_ptp)}. 0.6x of ptp's ADD is "
          f"{fmt(0.6 * pt_add)}.")
        if cg_add:
            p(f"- Instructions (callgrind) of one ADD: {mi(cg_add)}, of which under `main` {mi(main_ir)} and the "
              f"plugin's `cni::Run` {mi(run_ir)}. Top of the ADD profile (inclusive):")
            p("")
            o.extend(profile_table(ann_add, 18))
            p("")
    if del_ratio is not None and del_ratio > 0.6:
        p("### 1. DEL: the kernel's veth teardown inside the controller's answer")
        p("")
        p(f"- DEL median mizarmp {fmt(mz_del)} vs ptp {fmt(pt_del)}. The plugin's DEL is start-up, its lock and "
          "record, and one `DELETE`; the mock answers that `DELETE` only after its agent has deleted the veth "
          "pair, as ptp's DEL deletes its own.")
        if teardown is not None:
            p(f"- The kernel alone, in the same run: `ip link del` of a veth pair across two netns {fmt(kdel)} median "
              f"against {fmt(kq)} for `ip link show` (the same exec and netlink set-up): the teardown is "
              f"~{fmt(teardown)} (`unregister_netdevice` waits for RCU grace periods), "
              + ("more than" if teardown > 0.6 * pt_del else "most of") + f" 0.6x of ptp's DEL ({fmt(0.6 * pt_del)}).")
        if later_del is not None:
            p(f"- Against an agent that removes the NIC after the controller answered, the same plugin's DEL takes "
              f"{fmt(later_del)} ({fmt(later_ratio, '', 2)}x ptp): what is left is the plugin's own work. Which of the "
              "two a deployment sees is its controller's choice; the plugin waits for the `DELETE`'s answer either "
              "way, since answering DEL before the controller has the port gone would give up its leak-free "
              "guarantee.")
        if cg_del:
            p(f"- Instructions of one DEL: {mi(cg_del)}.")
        p("")
    https_misses = [(side, label) for side, label in
                    (("https_ca_file", "`tls.caFile`"), ("https_system_store", "the system trust store"))
                    if (lat.get(side + "_add_ratio_median") or 0) > 1.3]
    if https_misses:
        p("### 2. ADD over https://")
        p("")
        for side, label in https_misses:
            p(f"- With {label}: {fmt(g(lat, side, 'add', 'median_ms'))} against {fmt(mz_add)} over http://, TLS "
              f"adds {fmt(g(lat, side, 'add', 'median_ms') - mz_add)} (CPU "
              f"{fmt(g(lat, side, 'add_cpu', 'median_ms'), 'ms', 2)} against "
              f"{fmt(g(lat, 'mizarmp', 'add_cpu', 'median_ms'), 'ms', 2)}; peak RSS "
              f"{fmt(g(lat, side, 'add_maxrss_kib', 'max'), 'KiB', 0)} against "
              f"{fmt(g(lat, 'mizarmp', 'add_maxrss_kib', 'max'), 'KiB', 0)}), with the session resumed.")
        cg_full = callgrind_total(os.path.join(P, "callgrind.ADD-https-full"))
        if cg_https and cg_add:
            parts = {name: inclusive(ann_https, name) for name in
                     ("SSL_CTX_new_ex", "ssl_load_ciphers", "ERR_load_strings_const", "SSL_do_handshake",
                      "ssl_derive", "EVP_PKEY_keygen")}
            p(f"- Instructions (callgrind) of one ADD over https:// that resumes: {mi(cg_https)} ({mi(cg_full)} "
              f"with a full handshake) against {mi(cg_add)} over http://. Of the difference: `SSL_CTX_new` "
              f"{mi(parts['SSL_CTX_new_ex'])} (of which `ssl_load_ciphers` {mi(parts['ssl_load_ciphers'])}: "
              "OpenSSL 3 fetches every cipher and digest the TLS code knows from its provider, and the first "
              "fetch of each kind constructs every algorithm the provider offers), OpenSSL's error strings "
              f"{mi(parts['ERR_load_strings_const'])} (loaded by libcrypto whenever a thread first touches its "
              f"error queue), the resumed handshake {mi(parts['SSL_do_handshake'])} (the ECDHE key share "
              f"{mi(parts['EVP_PKEY_keygen'])} and its derivation {mi(parts['ssl_derive'])}, the key schedule); "
              "the kept session holds no certificate, so reading it decodes no key. Top of its profile (inclusive):")
            p("")
            o.extend(profile_table(ann_https, 14))
            p("")
        p("- What bounds it: every plugin process is new, so it pays OpenSSL 3's set-up (`SSL_CTX_new`'s "
          "provider construction, the error strings) and the pages it touches before its first byte of TLS; "
          "with the certificate work gone (the resumed session), that set-up is most of what is left, and "
          "it alone is several times the http:// ADD's own instructions. A filtering provider that offers "
          "libssl only the ciphers and digests TLS uses (tried: OpenSSL's own test suite builds one) cut a "
          "handshake's instructions by about a tenth, too little for the complexity. What moves it is no "
          "TLS in the plugin process: the node's relay (`relaySocket`, README \"The node's relay\"), a "
          "long-lived mizarmp-addons that keeps the controller connections and that the plugin reaches over "
          "a unix socket, as Cilium's and Antrea's plugins hand their work to their node agent.")
        relay_ratio = lat.get("https_relay_add_ratio_median")
        if relay_ratio is not None:
            p(f"- Through the relay, in the same run: {fmt(g(lat, 'https_relay', 'add', 'median_ms'))} against "
              f"{fmt(mz_add)} over http:// (**{fmt(relay_ratio, '', 2)}**; CPU "
              f"{fmt(g(lat, 'https_relay', 'add_cpu', 'median_ms'), 'ms', 2)}, peak RSS "
              f"{fmt(g(lat, 'https_relay', 'add_maxrss_kib', 'max'), 'KiB', 0)}): the plugin's part of an https "
              "ADD is then an http ADD over a unix socket, and the TLS is the relay's, on a connection it keeps. "
              "A node without the relay (or a plugin whose relay fails) gets the figures above.")
        p("")
    if ver_ratio is not None and ver_ratio > 1.3:
        p("### 3. VERSION")
        p("")
        p(f"- mizarmp {fmt(ver, 'ms', 2)}, ptp {fmt(ver_ptp, 'ms', 2)}, fork+exec of /bin/true "
          f"{fmt(sv('exec_bin_true'), 'ms', 2)}; instructions {mi(cg_ver)}.")
        p("")
    if rss is not None and rss > 6144:
        p("### 3. Peak RSS")
        p("")
        p(f"- The largest ADD peaked at {fmt(rss, 'KiB', 0)}; VERSION peaks at {fmt(kib('version_mizarmp'), 'KiB', 0)}; "
          "the rest is the plugin's heap and the pages its run touches.")
        if g(lat, "https_relay", "add_maxrss_kib", "max"):
            p(f"- The largest are the https sides without the relay: OpenSSL's set-up and the pages it touches "
              f"(see 2.). Through the node's relay an https ADD peaked at "
              f"{fmt(g(lat, 'https_relay', 'add_maxrss_kib', 'max'), 'KiB', 0)}, as over http:// "
              f"({fmt(g(lat, 'mizarmp', 'add_maxrss_kib', 'max'), 'KiB', 0)}): no TLS runs in the process.")
        p("- A peak RSS counts the executable's pages the process maps, and this kernel maps a file's page cache "
          "a folio at a time, however the file's folios fell when it was written: by hand on 2026-11-27, one "
          "plugin binary's VERSION peaked at 2324 KiB (68 page faults) and, run from a byte-identical `cp` of it, "
          "at 2848 KiB (57 page faults: fewer, larger folios). A few hundred KiB between runs, or between two "
          "builds of nearly the same code (this run's VERSION against the previous run's), say nothing about "
          "the code.")
        p("")
    miss_ready = []
    for r in ready:
        d = r["ready_delay_ms"]
        if d == 0 or base0 is None:
            continue
        over = g(r, "default", "median_ms") - base0 - d
        if over > 2 or readiness_gets(r, "default") > readiness_get_budget(d):
            miss_ready.append((d, over, readiness_gets(r, "default")))
    if miss_ready:
        p("### 4. Readiness")
        p("")
        for d, over, gets in miss_ready:
            p(f"- d = {d} ms: {fmt(over, 'ms', 2)} over ADD(0) + d with {fmt(gets, '', 0)} GETs (budget "
              f"{readiness_get_budget(d)}). Between the NIC's arrival and the controller's answer saying ready "
              "lie the agent's last steps (bridging the host end, bringing it up) and one GET round trip; a GET "
              "that lands before them waits for the 1, 2, 4 ms re-polls.")
        p("")
    perf_lines = []
    for c in ("ADD", "DEL"):
        txt = read(os.path.join(P, f"perf.{c}"))
        vals = {}
        for line in txt.splitlines():
            parts = line.split(",")
            if len(parts) >= 3 and parts[0] and not line.startswith("#"):
                vals[parts[2]] = parts[0]
        if vals:
            perf_lines.append(f"{c}: " + ", ".join(f"{k} {v}" for k, v in vals.items()))
    if perf_lines:
        p("perf stat (software counters) of one mizarmp " + "; ".join(perf_lines) + ".")
        p("")

    # --------------------------------------------------------------------------- addons misses
    def by_library(rows_):
        """The server's samples grouped by library, as shares of the server's samples."""
        groups = {}
        for pc, dso, sym in rows_:
            if dso.startswith("[kernel"):
                k = "kernel"
            elif dso.startswith("libsqlite3"):
                k = "SQLite"
            elif re.match(r"lib(grpc|gpr|upb|address_sorting|re2|cares)", dso):
                k = "gRPC core and C++"
            elif dso.startswith("libabsl"):
                k = "absl"
            elif dso.startswith("libprotobuf"):
                k = "protobuf"
            elif dso.startswith("libc.so") or dso.startswith("ld-linux") or dso == "[vdso]":
                k = "libc, ld.so, vdso"
            elif dso == "mizarmp-addons" or dso.startswith("mizarmp-bench"):
                k = "the server's own code"
            elif dso.startswith("libstdc++"):
                k = "libstdc++"
            else:
                k = "other"
            groups[k] = groups.get(k, 0.0) + pc
        total = sum(groups.values())
        return sorted(((k, 100 * v / total) for k, v in groups.items()), key=lambda kv: -kv[1]), total

    for method in ("Probe", "ListClusterFence"):
        m = rpc.get(method, {})
        if not m.get("measured"):
            continue
        ratio = m.get("ratio_calls_per_s", 1)
        a_cpu = g(m, "mizarmp-addons", "server_cpu_us_per_call_median")
        b_cpu = g(m, "bare", "server_cpu_us_per_call_median")
        h_cpu = g(m, "bare+health", "server_cpu_us_per_call_median")
        p(f"### {method} ({'misses' if ratio < 0.8 else 'meets'} its target: {ratio:.2f})")
        p("")
        p(f"- Calls/s on 2 shared CPUs swing between rounds (the 'each round' column), so the steadier figure is "
          f"the server's CPU per call: mizarmp-addons {fmt(a_cpu, 'us', 1)}, bare {fmt(b_cpu, 'us', 1)}, bare with "
          f"gRPC's default health service {fmt(h_cpu, 'us', 1)}. Clients and server share the 2 CPUs, so the "
          f"server's extra CPU per call ({fmt(sub(a_cpu, b_cpu), 'us', 1)}) is taken from the calls.")
        cm = {srv: perf_comm(os.path.join(PERF, f"perf.{srv}.{method}.data.comm.txt"))
              for srv in ("mizarmp-addons", "bare", "bare+health")}
        if any(cm.values()):
            p("- `perf record -a -e cpu-clock -g` during the last round of each server, the server's threads as a "
              "share of all samples: " + "; ".join(f"{k}: {', '.join(f'{c} {pc:.2f}%' for c, pc in v[:4]) or 'n/a'}"
                                                   for k, v in cm.items()) + ".")
        libs = {}
        for srv in ("mizarmp-addons", "bare"):
            libs[srv] = by_library(perf_rows(os.path.join(PERF, f"perf.{srv}.{method}.data.sym.txt")))
        if libs["mizarmp-addons"][0]:
            p("- The server's samples by library: " + "; ".join(
                f"{srv}: " + ", ".join(f"{k} {v:.0f}%" for k, v in lib[0][:6]) for srv, lib in libs.items() if lib[0])
              + ".")
        rows_ = perf_rows(os.path.join(PERF, f"perf.mizarmp-addons.{method}.data.sym.txt"))
        if rows_:
            p("- mizarmp-addons' top symbols: " + "; ".join(
                f"{pc:.2f}% {short_sym(sym)} ({dso})" for pc, dso, sym in rows_[:6]) + " (shares of all samples).")
        sqlite = dict(libs["mizarmp-addons"][0]).get("SQLite", 0.0)
        if method == "ListClusterFence" and ratio < 0.8 and sqlite >= 5:
            p(f"- What bounds it: SQLite is still {sqlite:.0f}% of the server's samples although repeated snapshots "
              "are served from memory: each call steps `PRAGMA data_version` under the store's one mutex (to see "
              "another connection's commits), so the 8 clients' calls are serialised on it.")
            p("- What would move it (fence/ owners): check `data_version` at most once per short interval, or "
              "only in the reconcile loop when a single server owns the file (a lock file would make that "
              "explicit), leaving the list call the bare handler plus building the response.")
        elif ratio < 0.8:
            p("- What would move it: the server's CPU per call above the bare server's, where the libraries and "
              "symbols above put it.")
        elif method == "Probe":
            p(f"- Probe meets its target (previous run {PREVIOUS['probe_ratio']}): mizarmp-addons serves its own sync "
              "health service and runs no gRPC callback `nexting_thread`s (their share above); its CPU per call "
              "is within " + (f"{100 * (a_cpu / b_cpu - 1):.0f}%" if a_cpu and b_cpu else "n/a")
              + " of the bare server's.")
        p("")

    if gc.get("measured") and max(gc_med or 0, gc_node or 0) > 20:
        rows_ = perf_rows(os.path.join(PERF, "perf.GetFenceClients.data.sym.txt"))
        total = sum(r[0] for r in rows_)
        cat = {"JSON parsing (nlohmann)": 0.0, "kernel": 0.0,
               "malloc/free": 0.0, "record decoding and the rest of mizarmp-addons": 0.0, "other": 0.0}
        for pc, dso, sym in rows_:
            if "nlohmann" in sym:
                cat["JSON parsing (nlohmann)"] += pc
            elif dso.startswith("[kernel"):
                cat["kernel"] += pc
            elif re.search(r"malloc|free|_int_|cfree|operator new|operator delete", sym):
                cat["malloc/free"] += pc
            elif dso == "mizarmp-addons":
                cat["record decoding and the rest of mizarmp-addons"] += pc
            else:
                cat["other"] += pc
        per_rec = gc_med * 1000 / gc["records"] if gc_med else None
        p("### GetFenceClients: building the answer")
        p("")
        p(f"- {fmt(gc_med)} for {gc['records']:,} records = {fmt(per_rec, 'us', 1)} per record (narrowed to one "
          f"node: {fmt(gc_node)}). The records are cached (records/cache.h), so a call stats each network "
          "directory and then walks every cached record: parses each pod address into a CIDR, groups by host "
          "and merges each node's list; the `hostId` filter skips other nodes' records but still visits them. "
          f"Server CPU per call: {fmt(gc.get('server_cpu_ms_per_call'), 'ms', 1)} ({gc.get('profiled_calls')} "
          "calls profiled back to back).")
        if total:
            p("- `perf record -e cpu-clock` of mizarmp-addons during those calls, its samples by kind: "
              + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in cat.items() if v) + ". Top symbols: "
              + "; ".join(f"{pc:.2f}% {short_sym(sym)} ({dso})" for pc, dso, sym in rows_[:6]) + ".")
        p("- What would move it (fence/ owners): keep the merged CIDR list per node beside the cached records "
          "(recomputed only for a directory that changed), and index the records by host id, so an unchanged "
          "cluster costs one `stat` per network plus copying 100 short lists into the response.")
        p("")
    for store_name, f in fence_stores:
        ff, uf = f.get("fence", {}), f.get("unfence", {})
        if not (ff.get("measured") and uf.get("measured")) or max(ff["ms"], uf["ms"]) <= 150:
            continue
        p(f"### FenceClusterNetwork / Unfence on {store_name} (misses 150 ms)")
        p("")
        p(f"- fence {fmt(ff.get('ms'))}, unfence {fmt(uf.get('ms'))} for {f.get('cidrs'):,} CIDRs over "
          f"{f.get('ports'):,} ports: {ff.get('rest_requests')} REST calls = one port list plus one `PUT` "
          f"(admin_state_up) per fenced port, the `PUT`s spread over the `updateConnections` connections.")
        try:
            cores = int(M.get("nproc", "2"))
        except ValueError:
            cores = 2
        for name, r in (("fence", ff), ("unfence", uf)):
            cpu = (r.get("addons_cpu_ms") or 0) + (r.get("mock_cpu_ms") or 0)
            if cpu:
                floor = cpu / cores
                bound = ("so it is bound by CPU, not by round trips." if floor >= 0.85 * r.get("ms", 0) else
                         f"so CPU explains {fmt(floor, 'ms', 0)} of its {fmt(r.get('ms'), 'ms', 0)}; the rest "
                         "is waiting on round trips.")
                p(f"- {name}: mizarmp-addons used {fmt(r.get('addons_cpu_ms'), 'ms', 0)} of CPU and the mock "
                  f"{fmt(r.get('mock_cpu_ms'), 'ms', 0)}: on {cores} cores the RPC cannot take less than "
                  f"{fmt(floor, 'ms', 0)} however many connections carry the updates, {bound}")
        p("- Where that CPU goes: the port list, which asks only for the members the fence reads "
          "(`?fields=`: ~180 bytes of JSON per port, 1.8 MB rather than 5 MB whole), and the `PUT`s. The mock "
          "cuts each selection from its ready documents; mizarmp-client reads the list with simdjson, whose "
          "events fill each port's members with no tree (some 14 ms of the list's CPU); then one `PUT` per "
          "fenced port, each a round trip with an HTTP request and answer, and a port document, on both sides.")
        sqlite = dict(fence_stores).get("SQLite", {})
        if store_name == "etcd" and sqlite.get("fence", {}).get("measured"):
            p(f"- The same RPCs on the SQLite store took {fmt(sqlite['fence'].get('ms'))} and "
              f"{fmt(sqlite.get('unfence', {}).get('ms'))}: the rest is the store. A fence changes it three "
              "times (the fence itself, the held ports before the first update, what the pass completed after "
              "the last), an unfence twice (it holds no new ports), each a transaction that a quorum of the three members, which share these cores "
              "and one disk, fsyncs before it answers, and each rewriting every shard it touches (a fence of "
              "1,000 CIDRs touches all 64). The fence (or the lift) is stored while the port list is read, so "
              "only the held ports and the completion are on the RPC's time. It reads the store twice (the fence "
              "limit's check, the pass's plan, the latter also while the list is read), each a linearizable "
              "keys-only probe when nothing but this replica changed the prefix; the changes start from the state "
              "the last read or commit left, and the gauges after the pass are counted from what it read and wrote.")
            p("- What would move it: on the Mizar-MP side a bulk update (one call for the 1,000 `PUT`s whose CPU is "
              "above). Not the held ports written in the fence's own transaction: they come from the port list, so "
              "that transaction would wait for the list, as the held ports' own transaction does now.")
        else:
            p("- What would move it: on the controller side, a bulk update. The `PUT`s already overlap, so more "
              "connections would not help on these cores.")
        p("")
    print("\n".join(o))


if __name__ == "__main__":
    sys.exit(main())
