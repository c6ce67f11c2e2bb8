#!/usr/bin/env python3
"""Renders bench/RESULTS.md from what bench/run.sh collected in its work directory.

Every figure comes from the JSON the drivers wrote in this run; a figure that was not measured
says so and why. The analysis of each miss is computed from the same run's numbers (start-up
probes, instruction counts), so it never describes a different run than the table."""
import argparse
import json
import os
import re
import sys


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


def top_functions(path, n=14):
    """The first n inclusive entries of a callgrind_annotate listing, paths shortened."""
    text = read(path)
    if "file:function" not in text:
        return []
    body = text.split("file:function", 1)[1].splitlines()[2:]
    out = []
    for line in body:
        if not line.strip():
            break
        m = re.match(r"\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(.*)", line)
        if not m:
            continue
        fn = m.group(3)
        lib = re.search(r"\[([^\]]+)\]\s*$", fn)
        fn = re.sub(r"\s*\[[^\]]+\]\s*$", "", fn)
        fn = re.sub(r"^\S*:(?=[A-Za-z_(?])", "", fn, count=1) if not fn.startswith("???") else fn[4:]
        fn = re.sub(r"\(std::.*", "(...)", fn)
        if len(fn) > 90:
            fn = fn[:87] + "..."
        out.append((m.group(1), m.group(2), fn, os.path.basename(lib.group(1)) if lib else ""))
        if len(out) >= n:
            break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", default="")
    a = ap.parse_args()
    w = a.work
    M = machine(w)
    cni = load(os.path.join(w, "cni.json")) or {}
    addons = load(os.path.join(w, "addons.json")) or {}
    P = os.path.join(w, "profile")

    lat = cni.get("latency", {})
    ready = g(cni, "ready", "rows", default=[]) or []
    burst = g(cni, "burst", "rounds", default=[]) or []
    fp = cni.get("footprint", {})
    st = fp.get("startup", {})
    rpc = addons.get("rpc", {})
    gc = addons.get("getclients", {})
    fence = addons.get("fence", {})

    o = []
    p = o.append
    p("# Benchmarks")
    p("")
    p("**Run them all:** `sudo bash bench/run.sh` (from the repository root; builds a Release build in")
    p("`../build-bench`, runs every benchmark, rewrites this file; about 5 minutes).")
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
    p(f"| build | CMAKE_BUILD_TYPE={M.get('build_type', '?')} (`{M.get('cxx_flags_release', '')}`), {M.get('compiler', '?')} |")
    p(f"| reference plugins | {M.get('ptp', '?')} (`/usr/lib/cni/ptp` + `host-local`) |")
    p(f"| last commit touching fence/ | {M.get('fence_log', '?') or 'none'} |")
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
    rows.append(("1. ADD median, mizarmp / ptp+host-local", "<= 0.5",
                 f"{fmt(g(lat, 'mizarmp', 'add', 'median_ms'))} / {fmt(g(lat, 'ptp', 'add', 'median_ms'))} = "
                 f"**{fmt(add_ratio, '', 2)}** (p99 {fmt(g(lat, 'mizarmp', 'add', 'p99_ms'))} / "
                 f"{fmt(g(lat, 'ptp', 'add', 'p99_ms'))} = {fmt(lat.get('add_ratio_p99'), '', 2)})",
                 verdict(None if add_ratio is None else add_ratio <= 0.5)))
    rows.append(("1. DEL median, mizarmp / ptp+host-local", "<= 0.5",
                 f"{fmt(g(lat, 'mizarmp', 'del', 'median_ms'))} / {fmt(g(lat, 'ptp', 'del', 'median_ms'))} = "
                 f"**{fmt(del_ratio, '', 2)}** (p99 {fmt(g(lat, 'mizarmp', 'del', 'p99_ms'))} / "
                 f"{fmt(g(lat, 'ptp', 'del', 'p99_ms'))} = {fmt(lat.get('del_ratio_p99'), '', 2)})",
                 verdict(None if del_ratio is None else del_ratio <= 0.5)))
    for r in ready:
        d = r["ready_delay_ms"]
        med = g(r, "adaptive", "median_ms")
        rows.append((f"2. readiness d = {d} ms: ADD median", f"<= d + 5 = {d + 5} ms",
                     f"**{fmt(med)}** (p99 {fmt(g(r, 'adaptive', 'p99_ms'))}); fixed 1 s poll: "
                     f"{fmt(g(r, 'fixed_1s', 'median_ms'))}",
                     verdict(None if med is None else med <= d + 5)))
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
        rows.append((f"3. burst of {mz_bursts[0]['n']}: failures, leaks", "0 failures, 0 leaks",
                     f"{fails} failures; leaks after {len(mz_bursts)} rounds: "
                     + ", ".join(f"{k} {v}" for k, v in sorted(leaks.items()))
                     + f"; ADD total (worst round) {fmt(worst_add)}, p99 {fmt(worst_p99)}",
                     verdict(fails == 0 and leaked == 0)))
    rss = g(fp, "add_maxrss_kib", "max")
    rows.append(("4. peak RSS of one mizarmp ADD", "<= 8 MiB (8192 KiB)",
                 f"**{fmt(rss, 'KiB', 0)}** max over the latency runs (median {fmt(g(fp, 'add_maxrss_kib', 'median'), 'KiB', 0)}); "
                 f"ptp {fmt(g(fp, 'ptp_add_maxrss_kib', 'max'), 'KiB', 0)}",
                 verdict(None if rss is None else rss <= 8192)))
    rows.append(("4. binary size (unstripped / stripped)", "report",
                 f"mizarmp {g(fp, 'mizarmp_binary', 'bytes')} / {g(fp, 'mizarmp_binary', 'stripped_bytes')} B "
                 f"+ {g(fp, 'mizarmp_binary', 'shared_libraries')} shared libraries; ptp "
                 f"{g(fp, 'ptp_binary', 'bytes')} B (Go, libc only)", "reported"))
    rows.append(("4. VERSION (process start-up)", "report",
                 f"mizarmp {fmt(g(st, 'version_mizarmp', 'median_ms'), 'ms', 2)} median "
                 f"(p99 {fmt(g(st, 'version_mizarmp', 'p99_ms'), 'ms', 2)}); ptp "
                 f"{fmt(g(st, 'version_ptp', 'median_ms'), 'ms', 2)}; fork+exec of /bin/true "
                 f"{fmt(g(st, 'exec_bin_true', 'median_ms'), 'ms', 2)}", "reported"))
    for method in ("Probe", "ListClusterFence"):
        m = rpc.get(method)
        if not m:
            rows.append((f"5. {method} calls/s, 8 clients, vs bare gRPC", ">= 0.8", "not run", "n/a"))
            continue
        if not m.get("measured"):
            rows.append((f"5. {method} calls/s, 8 clients, vs bare gRPC", ">= 0.8",
                         f"**not measured**: {m.get('why')} (bare server: "
                         f"{g(m, 'bare', 'calls_per_s_median', default=0):.0f} calls/s)", "not measured"))
            continue
        ratio = m.get("ratio_calls_per_s")
        rows.append((f"5. {method} calls/s, 8 clients, vs bare gRPC", ">= 0.8",
                     f"{g(m, 'mizarmp-addons', 'calls_per_s_median'):.0f} / {g(m, 'bare', 'calls_per_s_median'):.0f} "
                     f"= **{ratio:.2f}**; p99 {fmt(g(m, 'mizarmp-addons', 'latency', 'p99_ms'), 'ms', 2)} vs "
                     f"{fmt(g(m, 'bare', 'latency', 'p99_ms'), 'ms', 2)}",
                     verdict(ratio >= 0.8)))
    if gc.get("measured"):
        med = g(gc, "latency", "median_ms")
        rows.append((f"5. GetFenceClients, {gc.get('records')} records / {gc.get('nodes')} nodes", "<= 20 ms",
                     f"**{fmt(med)}** median, p99 {fmt(g(gc, 'latency', 'p99_ms'))}; "
                     f"{gc.get('clients_returned')} clients, {gc.get('addresses_returned')} addresses",
                     verdict(med <= 20)))
    else:
        rows.append(("5. GetFenceClients, 10,000 records / 100 nodes", "<= 20 ms",
                     f"**not measured**: {gc.get('why', 'not run')}", "not measured"))
    if fence.get("measured"):
        rows.append((f"5. FenceClusterNetwork, {fence.get('cidrs')} CIDRs / {fence.get('ports')} ports", "report",
                     f"{fmt(fence.get('fence_ms'))}, {fence.get('rest_requests')} REST calls, "
                     f"{fence.get('ports_down_after')} ports down, {fence.get('ports_wrongly_fenced_or_missed')} wrong",
                     "reported"))
    else:
        rows.append(("5. FenceClusterNetwork, 1,000 CIDRs / 10,000 ports", "report",
                     f"**not measured**: {fence.get('why', 'not run')}", "not measured"))

    p("## Figures against their targets")
    p("")
    p("| figure | target | measured (this run) | |")
    p("| --- | --- | --- | --- |")
    for r in rows:
        p("| " + " | ".join(r) + " |")
    p("")

    # ------------------------------------------------------------------------------ details
    p("## How it is measured")
    p("")
    p("- `bench/cni_driver.cc` (`mizarmp-bench-cni`) execs each plugin as a runtime does: fork/execve with")
    p("  only `CNI_COMMAND`, `CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME`, `CNI_PATH`, `PATH` in the")
    p("  environment, the network config on stdin, stdout and stderr read to EOF, the child reaped with")
    p("  `wait4` (its rusage gives the peak RSS and CPU). Time = fork to reaped. Pod netns are created")
    p("  before and deleted after each timed call, outside the timed window.")
    p("- mizarmp runs against `mizarmp-mock` with its host agent in a separate \"host\" netns: each ADD")
    p("  includes the agent creating the veth, moving it into the pod and bridging the host end. ptp runs")
    p("  inside a netns of its own (setns in the child before execve) so it never touches the machine's")
    p("  namespace; it does the same netns work: one veth, an address, routes, with host-local IPAM.")
    p("- Every comparison is interleaved: per iteration the sides run in a rotating order")
    p("  (mizarmp, ptp, mizarmp against the stock mock / then shifted by one), warm-up iterations dropped.")
    p("  Percentiles are nearest-rank; p99 of 100 samples is the second-largest.")
    p("- **The mock's Nagle stall.** Debian's cpp-httplib (a compiled library) leaves Nagle on and sends a")
    p("  response's headers and body in two `send()`s; the plugin's libcurl delays its ACK, so every")
    p("  response body waits ~40 ms (strace of the plugin: headers arrive, then a 42 ms `poll` before")
    p("  the body). That is the test double's behaviour, not the plugin's, so the plugin's figures are")
    p("  taken against the same `mizarmp-mock` binary with `bench/nodelay_shim.c` in `LD_PRELOAD`")
    p("  (TCP_NODELAY on accepted sockets). The stock mock is measured in the same run beside it:")
    p(f"  ADD median {fmt(g(lat, 'mizarmp_stock_mock', 'add', 'median_ms'))}, DEL "
      f"{fmt(g(lat, 'mizarmp_stock_mock', 'del', 'median_ms'))}. Fix for the mock's owners: "
      "`server.set_tcp_nodelay(true)` in `mock-server/mock.cc`.")
    p("- `bench/addons_driver.cc` (`mizarmp-bench-addons`): 8 client threads, each with its own channel")
    p("  and connection (local subchannel pool), calling for a fixed time; rounds alternate")
    p("  mizarmp-addons and `mizarmp-bench-bare-grpc` (a default `grpc::ServerBuilder` server whose")
    p("  handlers return an empty response). Clients and servers share the same 2 CPUs.")
    p("- A method that answers UNIMPLEMENTED is reported as *not measured*, never as a figure.")
    p("")

    p("### 1. ADD and DEL latency (ports ready at once)")
    p("")
    p("| side | ADD median | ADD p90 | ADD p99 | DEL median | DEL p90 | DEL p99 | ADD CPU (user+sys) median | n |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, label in (("mizarmp", "mizarmp (mock with TCP_NODELAY)"), ("ptp", "ptp + host-local"),
                       ("mizarmp_stock_mock", "mizarmp (stock mock)")):
        s = lat.get(key)
        if not s:
            continue
        p(f"| {label} | {fmt(g(s, 'add', 'median_ms'), 'ms', 2)} | {fmt(g(s, 'add', 'p90_ms'), 'ms', 2)} | "
          f"{fmt(g(s, 'add', 'p99_ms'), 'ms', 2)} | {fmt(g(s, 'del', 'median_ms'), 'ms', 2)} | "
          f"{fmt(g(s, 'del', 'p90_ms'), 'ms', 2)} | {fmt(g(s, 'del', 'p99_ms'), 'ms', 2)} | "
          f"{fmt(g(s, 'add_cpu', 'median_ms'), 'ms', 2)} | {g(s, 'add', 'n')} |")
    p("")
    p(f"Failures: {lat.get('failures', 'n/a')}. Ports left at the mock afterwards: {lat.get('mock_ports_left', 'n/a')}.")
    p("")

    p("### 2. Readiness latency")
    p("")
    p("The mock makes each port ready d ms after its creation (`--ready-delay-ms`). Three poll")
    p("settings of the plugin, interleaved: the default (1 ms doubling to a 50 ms cap), a 5 ms cap")
    p("(`\"poll\": {\"initialMs\": 1, \"maxMs\": 5}`), and a fixed 1 s poll like the upstream plugin")
    p("(`\"poll\": {\"initialMs\": 1000, \"maxMs\": 1000}`). REST requests per ADD from the mock's counter.")
    p("")
    p("| d | default: median / p99 | requests | 5 ms cap: median / p99 | requests | fixed 1 s: median / p99 | requests | target |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in ready:
        cells = []
        for v in ("adaptive", "cap_5ms", "fixed_1s"):
            cells.append(f"{fmt(g(r, v, 'median_ms'))} / {fmt(g(r, v, 'p99_ms'))}")
            cells.append(f"{g(r, v, 'rest_requests_per_add_median', default='n/a')}")
        p(f"| {r['ready_delay_ms']} ms | " + " | ".join(cells) + f" | <= {r['ready_delay_ms'] + 5} ms |")
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
        p(f"The burst has no time target, but it has a tail: {desc}. A tail of ~1 s over a median of a few hundred ms "
          "is the size of TCP's initial SYN retransmission timeout: when `TcpExt ListenOverflows` rises in the "
          "round, the mock's listening socket dropped a SYN, and cpp-httplib listens with a backlog of 5 "
          "(`CPPHTTPLIB_LISTEN_BACKLOG`), so 50 plugins connecting at once while the accept thread is starved "
          "(load above) can overflow it. That is the test double again (fix: a larger backlog in mock-server/); "
          "a real controller behind a normal backlog would not show it. In quiet runs the mizarmp rounds' p99 "
          "stayed at 0.3-0.45 s, as ptp's.")
        p("")
    p("### 4. Footprint and start-up")
    p("")
    p("| program (exec'd in turn, same run) | median | p99 | peak RSS |")
    p("| --- | --- | --- | --- |")
    labels = [
        ("exec_bin_true", "`/bin/true` (fork+exec floor)"),
        ("version_ptp", "ptp VERSION (Go binary, links libc only)"),
        ("version_mizarmp", "**mizarmp VERSION**"),
        ("version_mizarmp_static_cxx", "mizarmp VERSION, bench variant linked `-static-libstdc++ -static-libgcc`"),
        ("startup_libc", "empty `main()`: libc"),
        ("startup_libstdcxx", "empty `main()`: + libstdc++"),
        ("startup_nl", "empty `main()`: + libnl-3, libnl-route-3"),
        ("startup_nl-crypto", "empty `main()`: + libcrypto"),
        ("startup_nl-ssl", "empty `main()`: + libssl"),
        ("startup_all", "empty `main()`: + libcurl (= mizarmp's libraries)"),
        ("init_none", "init probe: nothing (libcurl + libcrypto loaded)"),
        ("init_evp-sha1", "init probe: one SHA-1 through `EVP_Digest`"),
        ("init_curl", "init probe: `curl_global_init`"),
        ("init_evp-sha1+curl", "init probe: both (what ADD/DEL do)"),
        ("init_noconf+curl", "init probe: OpenSSL without config file, then curl"),
    ]
    for key, label in labels:
        s = st.get(key)
        if s:
            p(f"| {label} | {fmt(s['median_ms'], 'ms', 2)} | {fmt(s['p99_ms'], 'ms', 2)} | {fmt(s.get('maxrss_kib'), 'KiB', 0)} |")
    p("")
    p("| binary | bytes | stripped | shared libraries (ldd) |")
    p("| --- | --- | --- | --- |")
    for key, label in (("mizarmp_binary", "mizarmp (Release)"),
                       ("mizarmp_static_cxx_binary", "mizarmp, static libstdc++ (bench variant)"),
                       ("ptp_binary", "ptp"), ("host_local_binary", "host-local")):
        b = fp.get(key)
        if b:
            p(f"| {label} | {b['bytes']} | {b['stripped_bytes']} | {b['shared_libraries']} |")
    p("")

    p("### 5. mizarmp-addons")
    p("")
    if rpc:
        p("Three servers in turn: mizarmp-addons, the bare server, and the bare server with gRPC's default")
        p("health service switched on (`grpc::EnableDefaultHealthCheckService(true)`, as fence/server.cc did before "
          "it served its own sync health service, fence/health.h).")
        p("Server CPU per call = the server process's utime+stime (`/proc/PID/stat`) over the round / calls.")
        p("")
        p("| method | server | calls/s (median of rounds) | each round | latency median / p99 | server CPU per call | errors |")
        p("| --- | --- | --- | --- | --- | --- | --- |")
        for method in ("Probe", "ListClusterFence"):
            m = rpc.get(method, {})
            for srv in ("mizarmp-addons", "bare", "bare+health"):
                s = m.get(srv)
                if not s:
                    continue
                rounds = ", ".join(f"{x:.0f}" for x in s.get("calls_per_s_rounds", []))
                p(f"| {method} | {srv} | {s['calls_per_s_median']:.0f} | {rounds} | "
                  f"{fmt(g(s, 'latency', 'median_ms'), 'ms', 3)} / {fmt(g(s, 'latency', 'p99_ms'), 'ms', 3)} | "
                  f"{fmt(s.get('server_cpu_us_per_call_median'), 'us', 1)} | "
                  f"{json.dumps(s.get('errors', {}))} |")
        p("")
        p(f"Mizar-MP requests the addons server made during the RPC runs: {rpc.get('mock_requests_during_rpc')} "
          "(Probe's controller check is cached for 1 s).")
        p("")
    for name, sec in (("GetFenceClients", gc), ("FenceClusterNetwork", fence)):
        if sec and not sec.get("measured"):
            p(f"- {name}: **not measured** — {sec.get('why')}. The harness is in place "
              "(`mizarmp-bench-addons --sections getclients,fence`) and runs against the FenceController as soon "
              "as `mizarmp-addons` registers it.")
    p("")

    # ------------------------------------------------------------------------------ misses
    p("## What bounds each miss, and what would move it")
    p("")
    cg_add = callgrind_total(os.path.join(P, "callgrind.ADD"))
    cg_del = callgrind_total(os.path.join(P, "callgrind.DEL"))
    cg_ver = callgrind_total(os.path.join(P, "cg.version"))
    cg_ver_sc = callgrind_total(os.path.join(P, "cg.version-static-cxx"))
    init = {m: callgrind_total(os.path.join(P, f"cg.init-{m}")) for m in
            ("none", "evp-sha1", "curl", "evp-sha1+curl", "noconf+curl")}
    su = {m: callgrind_total(os.path.join(P, f"cg.startup-{m}")) for m in ("libc", "nl-ssl", "all")}
    perf_probe = read(os.path.join(P, "perf-probe.txt"))
    perf_hw = "not supported" not in perf_probe and perf_probe != ""
    p(f"Profiles: `valgrind --tool=callgrind` (instruction counts; repeatable on a shared machine). "
      f"`perf stat -e instructions` {'works' if perf_hw else 'reports the hardware counters as not supported on this VM'}, "
      "so perf is used only for software counters (below).")
    p("")

    def sv(key):
        return g(st, key, "median_ms")

    ver = sv("version_mizarmp")
    ver_ptp = sv("version_ptp")
    mz_add = g(lat, "mizarmp", "add", "median_ms")
    pt_add = g(lat, "ptp", "add", "median_ms")
    mz_del = g(lat, "mizarmp", "del", "median_ms")
    pt_del = g(lat, "ptp", "del", "median_ms")
    libcurl_ms = (sv("startup_all") - sv("startup_nl-ssl")) if sv("startup_all") and sv("startup_nl-ssl") else None
    libcurl_kib = (g(st, "startup_all", "maxrss_kib") - g(st, "startup_nl-ssl", "maxrss_kib")) \
        if g(st, "startup_all", "maxrss_kib") and g(st, "startup_nl-ssl", "maxrss_kib") else None
    evp_ms = (sv("init_evp-sha1+curl") - sv("init_curl")) if sv("init_evp-sha1+curl") and sv("init_curl") else None
    sc_ms = (ver - sv("version_mizarmp_static_cxx")) if ver and sv("version_mizarmp_static_cxx") else None

    if add_ratio is not None and add_ratio > 0.5 and ver and ver_ptp:
        p("### ADD: process start-up, not the network work")
        p("")
        p(f"- Split each median ADD into start-up (its VERSION median) and the rest: mizarmp "
          f"{fmt(ver)} + {fmt(mz_add - ver)}, ptp {fmt(ver_ptp)} + {fmt(pt_add - ver_ptp)}. The work after start-up "
          f"(REST calls, the agent creating and moving the veth, netlink in the pod, the record) is "
          f"{(mz_add - ver) / (pt_add - ver_ptp):.2f}x of ptp's veth+IPAM work; the gap is start-up, "
          f"{ver / ver_ptp:.1f}x ptp's.")
        if cg_add and cg_ver:
            p(f"- Instructions (callgrind) of one ADD: {mi(cg_add)}; of VERSION: {mi(cg_ver)}, almost all in the "
              f"dynamic loader (`_dl_relocate_object`/`_dl_lookup_symbol_x`) relocating {g(fp, 'mizarmp_binary', 'shared_libraries')} "
              "shared libraries. Top of the ADD profile (inclusive):")
            p("")
            p("  | Ir | % | function | object |")
            p("  | --- | --- | --- | --- |")
            for ir, pct, fn, lib in top_functions(os.path.join(P, "annotate.ADD.txt"), 26):
                if any(s in fn for s in ("0x0", "below main", "libc_start", "_dl_sysdep_start", "_dl_start",
                                         "pthread_once", "once_proxy", "_Prepare_execution", "CRYPTO_THREAD_run_once")):
                    continue
                p(f"  | {ir} | {pct} | `{fn.replace('|', '/')}` | {lib} |")
            p("")
        if libcurl_ms is not None:
            p(f"- 7 libraries are linked directly; libcurl (Debian's, built with every protocol) brings in almost all of the "
              f"other {(g(fp, 'mizarmp_binary', 'shared_libraries') or 0) - 7}: GnuTLS, Kerberos, LDAP, SASL, RTMP, SSH2, nghttp2, "
              f"idn2, psl, brotli, zstd... An empty program linked against mizarmp's libraries starts in "
              f"{fmt(sv('startup_all'), 'ms', 2)}; without libcurl (libnl + OpenSSL only) in {fmt(sv('startup_nl-ssl'), 'ms', 2)}: "
              f"**libcurl's tree costs {fmt(libcurl_ms, 'ms', 1)} of every invocation**"
              + (f" ({mi(su['all'] - su['nl-ssl'])} instructions)" if su.get('all') and su.get('nl-ssl') else "") + ".")
        if evp_ms is not None:
            p(f"- Library initialisation before the first request: `UuidV5` (port id) hashes through `EVP_Digest`, "
              f"which makes OpenSSL 3 initialise its default library context and fetch SHA-1 from its provider; "
              f"`curl_global_init` then initialises libssl (and reads `openssl.cnf`: the no-config probe is cheaper). "
              f"Instructions above the baseline: EVP SHA-1 alone {mi((init['evp-sha1'] or 0) - (init['none'] or 0))}, "
              f"curl alone {mi((init['curl'] or 0) - (init['none'] or 0))}, both {mi((init['evp-sha1+curl'] or 0) - (init['none'] or 0))}"
              f"; time: both {fmt(sv('init_evp-sha1+curl') - sv('init_none'), 'ms', 2)}, curl alone "
              f"{fmt(sv('init_curl') - sv('init_none'), 'ms', 2)}.")
        p("- What would move it (proposals for cni/, common/ and mizarmp-client/ owners; nothing changed there):")
        p(f"  1. *Small and safe:* compute the UUIDv5 SHA-1 without EVP (a self-contained SHA-1 of RFC 3174 in "
          f"common/uuid.cc): saves ~{fmt(evp_ms, 'ms', 1)} per ADD/DEL and the provider fetch "
          f"({mi((init['evp-sha1+curl'] or 0) - (init['curl'] or 0))} instructions).")
        p(f"  2. *Build choice:* `-static-libstdc++ -static-libgcc` for the plugin: VERSION "
          f"{fmt(ver, 'ms', 2)} -> {fmt(sv('version_mizarmp_static_cxx'), 'ms', 2)} ({fmt(sc_ms, 'ms', 1)}), "
          f"{mi(cg_ver)} -> {mi(cg_ver_sc)} instructions, peak RSS -"
          f"{(g(st, 'version_mizarmp', 'maxrss_kib') or 0) - (g(st, 'version_mizarmp_static_cxx', 'maxrss_kib') or 0):.0f} KiB; "
          f"binary {g(fp, 'mizarmp_static_cxx_binary', 'bytes')} B.")
        p(f"  3. *The big one, not small:* drop libcurl from the plugin. A one-shot process making 3-4 keep-alive "
          f"HTTP/1.1 requests to one host needs a small client on a socket (plus OpenSSL's `SSL_*` for https, which "
          f"is already linked); that removes {fmt(libcurl_ms, 'ms', 1)} and ~{fmt(libcurl_kib, 'KiB', 0)} of RSS. "
          f"With 1-3: ADD ~{fmt(mz_add - (libcurl_ms or 0) - (evp_ms or 0) - (sc_ms or 0))} vs ptp {fmt(pt_add)} "
          f"(ratio ~{(mz_add - (libcurl_ms or 0) - (evp_ms or 0) - (sc_ms or 0)) / pt_add:.2f}).")
        est = mz_add - (libcurl_ms or 0) - (evp_ms or 0) - (sc_ms or 0)
        p(f"  4. Even then 0.5x ({fmt(0.5 * pt_add)}) stays out of reach: the fork+exec floor is "
          f"{fmt(g(st, 'exec_bin_true', 'median_ms'), 'ms', 2)}, and the plugin's ADD also holds 3-4 controller round "
          f"trips and the agent's veth work; ptp's {fmt(pt_add)} includes exec'ing host-local. The 0.5x target would "
          f"need the estimate above ({fmt(est)}) to shrink by another {fmt(est - 0.5 * pt_add)}.")
        p("")
    if del_ratio is not None and del_ratio > 0.5:
        p("### DEL: the kernel's veth teardown, which both sides wait for")
        p("")
        kern = cni.get("kernel", {})
        kdel = g(kern, "ip_veth_del", "median_ms")
        kq = g(kern, "ip_link_show", "median_ms")
        kadd = g(kern, "ip_veth_add", "median_ms")
        p(f"- DEL median mizarmp {fmt(mz_del)} vs ptp {fmt(pt_del)}; minus start-up: {fmt(mz_del - (ver or 0))} vs "
          f"{fmt(pt_del - (ver_ptp or 0))}. An strace of a mizarmp DEL shows the `DELETE` request answered only "
          "after the mock's agent has deleted the host veth; ptp's DEL deletes its veth itself.")
        if kdel and kq:
            p(f"- The kernel alone, measured in the same run: `ip link del` of a veth pair across two netns takes "
              f"{fmt(kdel)} median against {fmt(kq)} for an `ip link show` (same exec and netlink set-up), so the "
              f"teardown itself is ~{fmt(kdel - kq)} (`unregister_netdevice` waits for RCU grace periods); creating "
              f"the pair costs ~{fmt((kadd or kq) - kq, 'ms', 2)} over the query. 0.5x of ptp's DEL "
              f"({fmt(0.5 * pt_del)}) is below the teardown alone.")
        if cg_del:
            p(f"- Instructions of one DEL: {mi(cg_del)}, of which start-up as for ADD.")
        p("- What would move it: the start-up items above (each ms counts the same for DEL); the rest is the "
          "controller's: one that acknowledges the DELETE before its agent has finished the teardown would make "
          "DEL about start-up + one round trip; the mock answers after it. The plugin cannot stop waiting for "
          "the DELETE answer without giving up its leak-free guarantee.")
        p("")
    for r in ready:
        d = r["ready_delay_ms"]
        med = g(r, "adaptive", "median_ms")
        if med is None or med <= d + 5:
            continue
        if d == ready[0]["ready_delay_ms"] or d == 0:
            pass
    miss_ready = [r for r in ready if g(r, "adaptive", "median_ms") and g(r, "adaptive", "median_ms") > r["ready_delay_ms"] + 5]
    if miss_ready:
        base = g(ready[0], "adaptive", "median_ms") if ready else None
        p("### Readiness: the ADD's own floor plus the poll's granularity")
        p("")
        p(f"- Even at d = 0 an ADD takes {fmt(base)} (start-up, REST, the agent's veth, netlink): the d + 5 ms target "
          "requires the whole ADD outside the wait to fit in 5 ms, which start-up alone exceeds "
          f"(VERSION {fmt(ver)}).")
        for r in ready:
            d = r["ready_delay_ms"]
            if d == 0:
                continue
            a_ = g(r, "adaptive", "median_ms")
            c_ = g(r, "cap_5ms", "median_ms")
            p(f"- d = {d} ms: default poll {fmt(a_)} = d + {fmt(a_ - d)}, {fmt(a_ - d - base)} later than d plus the "
              f"d = 0 ADD ({g(r, 'adaptive', 'rest_requests_per_add_median')} "
              f"requests per ADD); with a 5 ms cap {fmt(c_)} = d + {fmt(c_ - d)} "
              f"({g(r, 'cap_5ms', 'rest_requests_per_add_median')} requests); fixed 1 s poll {fmt(g(r, 'fixed_1s', 'median_ms'))}.")
        p("- What would move it: the poll cap is a config knob (`poll.maxMs`); a 5 ms cap removes most of the "
          "lateness beyond the ADD floor at the price of more GETs (table above). Closer than that needs the "
          "controller to push readiness (a watch or long-poll GET), then the floor is the ADD's own cost (see ADD).")
        p("")
    if rss is not None and rss > 8192:
        p("### Peak RSS")
        p("")
        p(f"- An empty program with mizarmp's libraries already peaks at {fmt(g(st, 'startup_all', 'maxrss_kib'), 'KiB', 0)}; "
          f"without libcurl's tree at {fmt(g(st, 'startup_nl-ssl', 'maxrss_kib'), 'KiB', 0)}. mizarmp's VERSION peaks at "
          f"{fmt(g(st, 'version_mizarmp', 'maxrss_kib'), 'KiB', 0)}, ADD at {fmt(rss, 'KiB', 0)}: the rest is OpenSSL's "
          "initialised tables (provider, config, error strings) and the heap. ptp: "
          f"{fmt(g(fp, 'ptp_add_maxrss_kib', 'max'), 'KiB', 0)}.")
        p(f"- What would move it: dropping libcurl (~{fmt(libcurl_kib, 'KiB', 0)}), static libstdc++ "
          f"(~{(g(st, 'version_mizarmp', 'maxrss_kib') or 0) - (g(st, 'version_mizarmp_static_cxx', 'maxrss_kib') or 0):.0f} KiB), "
          "and not initialising OpenSSL for http:// URLs (proposal 1 above removes the EVP provider fetch).")
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
    pr = rpc.get("Probe", {})
    if pr.get("measured"):
        verdict_txt = "misses" if pr.get("ratio_calls_per_s", 1) < 0.8 else "meets"
        p(f"### Probe ({verdict_txt} its target in this run): where mizarmp-addons' extra CPU goes")
        p("")
        a_cpu = g(pr, "mizarmp-addons", "server_cpu_us_per_call_median")
        b_cpu = g(pr, "bare", "server_cpu_us_per_call_median")
        h_cpu = g(pr, "bare+health", "server_cpu_us_per_call_median")
        p(f"- Calls/s on 2 shared CPUs swing by tens of percent between rounds (the table's 'each round'), so the "
          f"steadier figure is CPU per call: mizarmp-addons {fmt(a_cpu, 'us', 1)}, bare {fmt(b_cpu, 'us', 1)}, bare with "
          f"the default health service {fmt(h_cpu, 'us', 1)}.")
        comm = {}
        for srv in ("mizarmp-addons", "bare", "bare+health"):
            rows_ = []
            for line in read(os.path.join(w, "addons", "perf", f"perf.{srv}.Probe.data.comm.txt")).splitlines():
                mm = re.match(r"\s*([\d.]+)%\s+(\S.*?)\s*$", line)
                if mm:
                    rows_.append(f"{mm.group(2)} {mm.group(1)}%")
            comm[srv] = rows_
        if any(comm.values()):
            p("- `perf record -a -e cpu-clock -g` during the last Probe round of each server (hardware counters are not "
              "available here; cpu-clock sampling is), the server's threads as a share of all samples: "
              + "; ".join(f"{k}: {', '.join(v[:4]) or 'n/a'}" for k, v in comm.items()) + ".")
        p("- The `nexting_thread`s are gRPC's \"callback alternative\" completion-queue threads "
          "(`grpc_core::Clamp(gpr_cpu_num_cores() / 2, 2u, 16u)` of them, polling with a timeout). In this gRPC "
          "they appear exactly when the default health service (built on the callback API) is switched on: the "
          "bare server grows them too, and its CPU per call moves towards mizarmp-addons' (table above). "
          "Under load they take a large share of the server's CPU although no health call is made; on 2 CPUs "
          "shared with the 8 clients that CPU is taken from the calls.")
        p("- What would move it (fence/ owners): serve `grpc.health.v1.Health` with a small sync implementation "
          "(Check from the same serving flag; Watch as a sync server-streaming call) instead of "
          "`EnableDefaultHealthCheckService(true)`, so no callback CQ and no nexting threads exist in a sync "
          "server. Probe itself does little (its Mizar-MP check is cached for 1 s).")
        p("")
    print("\n".join(o))


if __name__ == "__main__":
    sys.exit(main())
