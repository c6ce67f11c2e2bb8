#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""Renders bench/RESULTS.md from what bench/run.sh collected in its work directory.

Every figure comes from the JSON the drivers wrote in this run; a figure that was not measured
says so and why. The analysis of each miss is computed from the same run's numbers (start-up
probes, instruction counts, perf samples) and from what the build actually links, so it never
describes a different run, or different code, than the table.

What the report says about an earlier run comes from a data file (--previous, by default
bench/previous.json beside this script): that run's commit and figures, and the changes made
since as text into which this run's figures are filled. Updating the comparison after a new
full run is an edit of that file, not of this code.

Each section of the report is one function that takes the loaded run and returns its Markdown
(ending in a blank line, or "" when it has nothing to say); main() puts them in order."""
import argparse
import json
import os
import re
import sys

import plot

DEFAULT_PREVIOUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "previous.json")

# The targets the figures are judged against.
RATIO_TO_PTP_TARGET = 0.6
HTTPS_TO_HTTP_TARGET = 1.3
VERSION_TO_PTP_TARGET = 1.3
PEAK_RSS_TARGET_KIB = 6144
READINESS_OVERHEAD_TARGET_MS = 2
RPC_RATIO_TARGET = 0.8
GETCLIENTS_TARGET_MS = 20
FENCE_TARGET_MS = 150
# Issue 35: fence of one /32 and mizarmp-addons' peak RSS at the largest size within this factor
# of the smallest (a million ports against 10,000 in a full run).
FENCE_SCALE_RATIO_TARGET = 1.5
# Issue 35 target 7 names no bound; this report holds ADD and DEL (medians) on a node with 10,000
# attachment records to within this factor of the same on a node with 10.
RECORDS_RATIO_TARGET = 1.5

# Every latency side whose ADD peak RSS the RSS target covers, in the order the report names them.
ADD_RSS_SIDES = ("mizarmp", "agent_unplugs_later", "https_ca_file", "https_system_store",
                 "https_system_bundle", "https_full_handshake", "https_relay")
# The sides a node that runs the relay uses: http, and https through the relay.
RELAY_NODE_SIDES = ("mizarmp", "agent_unplugs_later", "https_relay")
# The prefix of each RPC's figures in the previous run's file.
RPC_FIGURE_PREFIX = {"Probe": "probe", "ListClusterFence": "list"}


# ------------------------------------------------------------------------------------ inputs
def load_json(path):
    """The JSON object in `path`; {} when the file is missing or unreadable (its driver did not run)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def read_machine(work):
    """machine.txt's key=value lines (what run.sh recorded about the machine, build and source)."""
    m = {}
    for line in read_text(os.path.join(work, "machine.txt")).splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            m[k] = v
    return m


def g(d, *keys, default=None):
    """d[k1][k2]...; `default` when a level is missing or not an object."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def sub(a, b):
    return None if a is None or b is None else a - b


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


# ------------------------------------------------------------------------------------- units
def fmt(x, unit="ms", nd=1):
    if x is None:
        return "n/a"
    if isinstance(x, (int, float)):
        return f"{x:.{nd}f} {unit}".strip()
    return str(x)


def ms(x, nd=1):
    return fmt(x, "ms", nd)


def kib(x):
    return fmt(x, "KiB", 0)


def us(x):
    return fmt(x, "us", 1)


def num(x, nd=2):
    """A unitless figure (a ratio, a count)."""
    return fmt(x, "", nd)


def mi(n):
    """An instruction count in millions."""
    return "n/a" if n is None else f"{n / 1e6:.1f} M"


# ------------------------------------------------------------------------------------ tables
def table_row(cells):
    return "|" + "|".join(f" {c} " for c in cells) + "|"


def table(header, rows, indent=""):
    """A Markdown table: the header (an empty title as `| |`), its rule and one line per row, each
    line after `indent`."""
    head = "|" + "|".join(f" {t} " if t else " " for t in header) + "|"
    lines = [head, table_row(["---"] * len(header))] + [table_row(r) for r in rows]
    return [indent + line for line in lines]


def block(lines):
    """A section's lines as its Markdown; a section ends in a blank line, so blocks join with "\\n"."""
    if not lines:
        return ""
    if lines[-1] != "":
        lines = lines + [""]
    return "\n".join(lines)


def join_blocks(blocks):
    return "\n".join(b for b in blocks if b)


def not_measured(why):
    return f"**not measured**: {why}"


def verdict(ok):
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def at_most(x, limit):
    return None if x is None else x <= limit


# -------------------------------------------------------------------------------- profiles
def callgrind_total(path):
    for line in read_text(path).splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    return None


def annotate_entries(path):
    """(Ir, percent, function, object) of every entry of a callgrind_annotate --inclusive listing."""
    out = []
    for line in read_text(path).splitlines():
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
    """The n largest inclusive entries of a callgrind_annotate listing, as a table in a list item."""
    rows = [(ir, pct, f"`{fn.replace('|', '/')}`", lib) for ir, pct, fn, lib in top_functions(entries, n)]
    return table(["Ir", "%", "function", "object"], rows, indent="  ")


def perf_rows(path):
    """(percent, dso, symbol) of a `perf report --sort dso,sym --stdio` listing."""
    rows = []
    for line in read_text(path).splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3)))
    return rows


def perf_comm(path):
    """(thread name, percent) of a `perf report --sort comm --stdio` listing."""
    rows = []
    for line in read_text(path).splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S.*?)\s*$", line)
        if m:
            rows.append((m.group(2), float(m.group(1))))
    return rows


def short_sym(sym):
    sym = re.sub(r"nlohmann::json_abi_v[\d_]+::", "nlohmann::", sym)
    sym = re.sub(r"<.*>", "<...>", sym)
    return sym[:80] + "..." if len(sym) > 83 else sym


def library_of(dso):
    """The group a server's perf sample is counted in, by the object it was in."""
    if dso.startswith("[kernel"):
        return "kernel"
    if dso.startswith("libsqlite3"):
        return "SQLite"
    if re.match(r"lib(grpc|gpr|upb|address_sorting|re2|cares)", dso):
        return "gRPC core and C++"
    if dso.startswith("libabsl"):
        return "absl"
    if dso.startswith("libprotobuf"):
        return "protobuf"
    if dso.startswith("libc.so") or dso.startswith("ld-linux") or dso == "[vdso]":
        return "libc, ld.so, vdso"
    if dso == "mizarmp-addons" or dso.startswith("mizarmp-bench"):
        return "the server's own code"
    if dso.startswith("libstdc++"):
        return "libstdc++"
    return "other"


def shares_by_library(rows):
    """The server's samples grouped by library, as percent of the server's samples, largest first."""
    groups = {}
    for pc, dso, _ in rows:
        k = library_of(dso)
        groups[k] = groups.get(k, 0.0) + pc
    total = sum(groups.values())
    return sorted(((k, 100 * v / total) for k, v in groups.items()), key=lambda kv: -kv[1])


def kind_of_getclients_sample(dso, sym):
    if "nlohmann" in sym:
        return "JSON parsing (nlohmann)"
    if dso.startswith("[kernel"):
        return "kernel"
    if re.search(r"malloc|free|_int_|cfree|operator new|operator delete", sym):
        return "malloc/free"
    if dso == "mizarmp-addons":
        return "record decoding and the rest of mizarmp-addons"
    return "other"


# ------------------------------------------------------------------------------------- soak
# A process is flat when, comparing the samples of the second half of the run (at or past half
# its length, under load) with those of the first half after warm-up (the first tenth of the
# run), the median RSS grew by at most SOAK_RSS_SLACK of the first half's median or
# SOAK_RSS_FLOOR_KIB, whichever is larger, and the median open fd count did not grow at all.
# Medians because RSS and fds under load move with the requests and connections in flight (a
# leak lifts the whole second half; one busy sample does not).
SOAK_RSS_SLACK = 0.01
SOAK_RSS_FLOOR_KIB = 256
SOAK_WARMUP = 0.1


def soak_halves(samples, x_key, proc):
    """`proc`'s samples as (x, rss_kib, fds, hwm_kib), split into the first half after the warm-up and
    the second half: (points, first, second)."""
    pts = [(s[x_key], s[proc]["rss_kib"], s[proc]["fds"], s[proc]["hwm_kib"]) for s in samples
           if min(s.get(proc, {}).get(k, -1) for k in ("rss_kib", "fds", "hwm_kib")) >= 0]
    end = pts[-1][0] if pts else 0
    first = [pt for pt in pts if SOAK_WARMUP * end <= pt[0] < end / 2]
    second = [pt for pt in pts if pt[0] >= end / 2]
    return pts, first, second


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


# ----------------------------------------------------------------------------- readiness
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


# ------------------------------------------------------------------------- the earlier run
class Previous:
    """The earlier run this one is compared with, from its data file: its commit, its figures
    (`figures`, named as comparable_figures names this run's), the sentence that introduces what
    changed since (`intro`) and the changes (`changes`: each a `text`, optional `details` below
    it, and optional `needs`, figures of this run without which the change is left out). The
    texts name figures as {previous[NAME]}, {now[NAME]} (formatted with its unit) and
    {times[NAME]} (this run's over the previous, one decimal), and the commit as {commit}."""

    def __init__(self, path):
        self.path = path
        data = load_json(path)
        self.found = bool(data)
        self.commit = data.get("commit", "?")
        self.figures = data.get("figures", {})
        self.intro = data.get("intro", "")
        self.changes = data.get("changes", [])

    def note(self, template, *names):
        """`template` filled with the previous run's figures `names`; "" when one is missing."""
        values = [self.figures.get(name) for name in names]
        return "" if not self.found or None in values else template.format(*values)


class FigureNames(dict):
    """A dict whose missing names render as n/a (and are reported), so a typo in the data file
    costs one figure, not the report at the end of an 18-minute run."""

    def __init__(self, values, what):
        super().__init__(values)
        self.what = what

    def __missing__(self, name):
        print(f"report.py: {self.what} has no figure {name!r}", file=sys.stderr)
        return "n/a"


# ------------------------------------------------------------------------------------ the run
class Run:
    """What one run of bench/run.sh left in its work directory, and the figures several
    sections share."""

    def __init__(self, work, quick, previous, plots_dir=""):
        self.work = work
        # Where the plots are drawn (beside the report, which links them by name); "": none.
        self.plots_dir = plots_dir
        self.quick = quick
        self.previous = previous
        self.machine = read_machine(work)
        self.cni = load_json(os.path.join(work, "cni.json"))
        self.addons = load_json(os.path.join(work, "addons.json"))
        self.soak = load_json(os.path.join(work, "soak.json"))
        self.store = load_json(os.path.join(work, "store.json"))
        self.fence_scale = load_json(os.path.join(work, "fence-scale.json"))
        self.fence_set = load_json(os.path.join(work, "fence-set.json"))
        self.records = load_json(os.path.join(work, "records.json"))
        # The addons' fence section again on the etcd fence store (run.sh, beside the store benchmark).
        addons_etcd = load_json(os.path.join(work, "addons-etcd.json"))
        self.latency = self.cni.get("latency", {})
        self.ready = g(self.cni, "ready", "rows", default=[]) or []
        self.burst = g(self.cni, "burst", "rounds", default=[]) or []
        self.footprint = self.cni.get("footprint", {})
        self.startup = self.footprint.get("startup", {})
        self.kernel = self.cni.get("kernel", {})
        self.rpc = self.addons.get("rpc", {})
        self.getclients = self.addons.get("getclients", {})
        self.fence = self.addons.get("fence", {})
        self.fence_stores = [(name, f) for name, f in (("SQLite", self.fence), ("etcd", addons_etcd.get("fence", {})))
                             if f]
        self.ldd = self.machine.get("mizarmp_ldd", "").split()

    def profile_path(self, name):
        return os.path.join(self.work, "profile", name)

    def perf_path(self, name):
        return os.path.join(self.work, "addons", "perf", name)

    def side(self, name, *keys):
        """A figure of one side of the latency comparison."""
        return g(self.latency, name, *keys)

    def startup_ms(self, program):
        return g(self.startup, program, "median_ms")

    def startup_rss(self, program):
        return g(self.startup, program, "maxrss_kib")

    def ready_at_zero(self):
        return next((r for r in self.ready if r["ready_delay_ms"] == 0), None)

    def version_ratio(self):
        mz, ptp = self.startup_ms("version_mizarmp"), self.startup_ms("version_ptp")
        return mz / ptp if mz and ptp else None

    def add_rss(self, sides):
        """(side, ADD peak RSS) of the `sides` that measured one."""
        return [(s, self.side(s, "add_maxrss_kib", "max")) for s in sides if self.side(s, "add_maxrss_kib", "max")]

    def peak_add_rss(self):
        return max((rss for _, rss in self.add_rss(ADD_RSS_SIDES)), default=None)

    def soak_load_samples(self):
        return [x for x in g(self.soak, "server", "samples", default=[]) or [] if x.get("phase") == "load"]

    def fence_store(self, name):
        return dict(self.fence_stores).get(name, {})

    def cores(self):
        try:
            return int(self.machine.get("nproc", "2"))
        except ValueError:
            return 2


def readiness_overhead(run, row, variant):
    """ADD(d) - ADD(0) - d of `variant`'s medians; None without both."""
    zero = g(run.ready_at_zero(), variant, "median_ms")
    at_d = g(row, variant, "median_ms")
    return None if zero is None or at_d is None else at_d - zero - row["ready_delay_ms"]


def readiness_checks(run):
    """(row, d, overhead, GETs, GET budget) of the default poll at every d > 0, when ADD(0) was measured."""
    if g(run.ready_at_zero(), "default", "median_ms") is None:
        return []
    return [(r, r["ready_delay_ms"], readiness_overhead(run, r, "default"), readiness_gets(r, "default"),
             readiness_get_budget(r["ready_delay_ms"])) for r in run.ready if r["ready_delay_ms"] != 0]


def readiness_met(over, gets, budget):
    return None if over is None or gets is None else over <= READINESS_OVERHEAD_TARGET_MS and gets <= budget


# -------------------------------------------------------------------- header and this run
def header_section(run):
    lines = ["# Benchmarks",
             "",
             "**Run them all:** `sudo bash bench/run.sh` (from the repository root; builds a Release build in",
             "`../build-bench`, runs every benchmark, rewrites this file; about 25 minutes besides fencing at scale, the soak 7 of them).",
             "`BENCH_QUICK=1` makes a smoke run; `BENCH_BUILD_DIR`, `BENCH_WORK_DIR`, `BENCH_OUT` move things;",
             "`BENCH_PREVIOUS` names the earlier run this one is compared with (default `bench/previous.json`).",
             ""]
    minutes = fence_scale_minutes(run)
    if minutes is not None:
        lines.insert(len(lines) - 1, f"Fencing at scale (up to {max(r['ports'] for r in scale_rows(run)):,} ports) "
                                     f"took {minutes:.1f} minutes of this run.")
    if run.quick:
        lines += ["> **QUICK RUN** (few iterations): these figures are a smoke test, not results.", ""]
    return block(lines)


def http_stack(m):
    static = not m.get("mizarmp_needed", "").split()
    return "Boost.Beast over OpenSSL" + (", linked statically" if static else "")


def this_run_section(run):
    m = run.machine
    rows = [
        ("date (UTC)", m.get("date", "?")),
        ("machine", f"{m.get('nproc', '?')} CPUs: {m.get('cpu', '?')}; {m.get('memory', '?')} RAM"),
        ("kernel", m.get("kernel", "?")),
        ("load average (1/5/15 min)",
         f"before: {m.get('load_before', '?')}; after the CNI runs: {m.get('load_after_cni', '?')}; before the "
         f"addons runs: {m.get('load_before_addons', '?')}; after: {m.get('load_after', '?')} "
         "(the machine is shared with other engineers' builds)"),
        ("source", f"commit {m.get('commit', '?')} ({m.get('dirty', '?')} uncommitted files under the measured folders)"),
        ("build", f"CMAKE_BUILD_TYPE={m.get('build_type', '?')} (`{m.get('cxx_flags_release', '')}`), "
                  f"`-DMIZARMP_WERROR=ON`, {m.get('compiler', '?')}"),
        ("mizarmp's HTTP client", f"{http_stack(m)} (`ldd`: {len(run.ldd)} shared libraries); last mizarmp-client "
                                  f"commit: {m.get('client_log', '?')}"),
        ("reference plugins", f"{m.get('ptp', '?')} (`/usr/lib/cni/ptp` + `host-local`)"),
        ("last commit touching fence/", m.get("fence_log", "?") or "none"),
        ("last commit touching addons/health.cc", m.get("health_log", "?") or "none"),
    ]
    lines = ["## This run", ""] + table(["", ""], rows) + ["", "Commands (as `bench/run.sh` ran them):", "", "```",
                                                          read_text(os.path.join(run.work, "commands.txt")).rstrip(),
                                                          "```", ""]
    return block(lines)


# ---------------------------------------------------------------------------------- targets
def unmeasured_row(figure, target, why):
    return (figure, target, not_measured(why), "not measured")


def ratio_to_ptp(run, side, op, ratio):
    return f"{ms(run.side(side, op, 'median_ms'))} / {ms(run.side('ptp', op, 'median_ms'))} = **{num(ratio)}**"


def https_ratio(run, side):
    return f"{ms(run.side(side, 'add', 'median_ms'))} / {ms(run.side('mizarmp', 'add', 'median_ms'))}"


def latency_target_rows(run):
    lat, prev = run.latency, run.previous
    if not lat:
        return [unmeasured_row("1-2. ADD and DEL medians, mizarmp / ptp+host-local, http:// and https://",
                               f"<= {RATIO_TO_PTP_TARGET}, <= {HTTPS_TO_HTTP_TARGET}", "no latency results in cni.json")]
    add_ratio = lat.get("add_ratio_median")
    del_ratio = lat.get("del_ratio_median")
    later_ratio = lat.get("unplug_later_del_ratio_median")
    rows = [
        ("1. ADD median over http://, mizarmp / ptp+host-local", "<= 0.6",
         ratio_to_ptp(run, "mizarmp", "add", add_ratio) + f" (p99 {num(lat.get('add_ratio_p99'))})"
         + prev.note("; previous run {} / {} ms", "add_ms", "ptp_add_ms"),
         verdict(at_most(add_ratio, RATIO_TO_PTP_TARGET))),
        ("1. DEL median, mizarmp / ptp+host-local: the mock's agent removes the NIC before the controller answers",
         "<= 0.6",
         ratio_to_ptp(run, "mizarmp", "del", del_ratio) + f" (p99 {num(lat.get('del_ratio_p99'))})"
         + prev.note("; previous run {} / {} ms", "del_ms", "ptp_del_ms"),
         verdict(at_most(del_ratio, RATIO_TO_PTP_TARGET))),
        ("1. DEL median, mizarmp / ptp+host-local: the agent removes the NIC after the controller answered "
         "(`--agent-unplugs-later`)", "<= 0.6",
         ratio_to_ptp(run, "agent_unplugs_later", "del", later_ratio),
         verdict(at_most(later_ratio, RATIO_TO_PTP_TARGET))),
    ]
    for op, name in (("add", "ADD"), ("del", "DEL")):
        rows.append((f"1. {name} median in plug mode (Alcor: the plugin plugs the pod into Open vSwitch), "
                     "mizarmp / ptp+host-local", "reported",
                     ratio_to_ptp(run, "ovs_plug", op, lat.get(f"ovs_plug_{op}_ratio_median")), "reported"))
    for side, label in (("https_ca_file", "the CA from `tls.caFile`"),
                        ("https_system_store", "the system trust store (its hash directory)"),
                        ("https_relay", "through the node's relay (`relaySocket`: mizarmp-addons in node "
                                        "mode, its CA from `mpCaFile`)")):
        ratio = lat.get(side + "_add_ratio_median")
        rows.append((f"2. ADD median over https:// / over http://, {label}", "<= 1.3",
                     f"{https_ratio(run, side)} = **{num(ratio)}** (p99 {ms(run.side(side, 'add', 'p99_ms'))})",
                     verdict(at_most(ratio, HTTPS_TO_HTTP_TARGET))))
    for side, label in (("https_system_bundle", "the whole system bundle (`SSL_CERT_FILE`)"),
                        ("https_full_handshake", "`tls.caFile` and no kept session: a full handshake "
                                                 "(a node's first https call, or the first after a CA rotation)")):
        rows.append((f"2. ADD median over https:// / over http://, {label}", "report",
                     f"{https_ratio(run, side)} = **{num(lat.get(side + '_add_ratio_median'))}**", "reported"))
    return rows


def version_target_rows(run):
    if not run.startup:
        return [unmeasured_row("3. VERSION (process start-up) median, mizarmp / ptp", "<= 1.3",
                               "no start-up results in cni.json")]
    ratio = run.version_ratio()
    return [("3. VERSION (process start-up) median, mizarmp / ptp", "<= 1.3",
             f"{ms(run.startup_ms('version_mizarmp'), 2)} / {ms(run.startup_ms('version_ptp'), 2)} "
             f"= **{num(ratio)}** (fork+exec of /bin/true {ms(run.startup_ms('exec_bin_true'), 2)})"
             + run.previous.note("; previous run mizarmp {} ms", "version_ms"),
             verdict(at_most(ratio, VERSION_TO_PTP_TARGET)))]


def peak_rss_target_rows(run):
    figure = "3. peak RSS of one mizarmp ADD (largest over every http and https side)"
    target = "<= 6 MiB (6144 KiB)"
    measured = run.add_rss(ADD_RSS_SIDES)
    if not measured:
        return [unmeasured_row(figure, target, "no ADD peak RSS in cni.json")]
    rss = run.peak_add_rss()
    rows = [(figure, target,
             f"**{kib(rss)}**: " + ", ".join(f"{s} {kib(v)}" for s, v in measured)
             + f"; ptp {kib(run.side('ptp', 'add_maxrss_kib', 'max'))}"
             + run.previous.note("; previous run {} KiB", "add_peak_rss_kib"),
             verdict(rss <= PEAK_RSS_TARGET_KIB))]
    relay_node = run.add_rss(RELAY_NODE_SIDES)
    if "https_relay" in dict(relay_node):
        relay_rss = max(v for _, v in relay_node)
        rows.append(("3. peak RSS of one mizarmp ADD on a node with the relay (http, and https through it)", target,
                     f"**{kib(relay_rss)}**: " + ", ".join(f"{s} {kib(v)}" for s, v in relay_node),
                     verdict(relay_rss <= PEAK_RSS_TARGET_KIB)))
    return rows


def readiness_target_rows(run):
    checks = readiness_checks(run)
    if not checks:
        return [unmeasured_row("4. readiness: ADD(d) - ADD(0) - d, default poll", "<= 2 ms, GETs <= 1 + d/5",
                               "no readiness results (with d = 0) in cni.json")]
    base0 = g(run.ready_at_zero(), "default", "median_ms")
    rows = []
    for r, d, over, gets, budget in checks:
        rows.append((f"4. readiness d = {d} ms: ADD(d) - ADD(0) - d, default poll", "<= 2 ms, GETs <= 1 + d/5",
                     f"**{ms(over, 2)}** (ADD(d) {ms(g(r, 'default', 'median_ms'))}, ADD(0) {ms(base0)}); "
                     f"**{num(gets, 0)} GETs** of the port per ADD (median; budget {budget}); the previous "
                     f"interval (1 ms doubling to 5 ms) {ms(readiness_overhead(run, r, 'previous_1ms_doubling'), 2)} "
                     f"with {num(readiness_gets(r, 'previous_1ms_doubling'), 0)} GETs",
                     verdict(readiness_met(over, gets, budget))))
    return rows


def burst_target_rows(run):
    rounds = [b for b in run.burst if b["plugin"] == "mizarmp"]
    if not rounds:
        return [unmeasured_row("burst: failures, leaks", "0 failures, 0 leaks", "no burst results in cni.json")]
    fails = sum(b["add_failures"] + b["del_failures"] for b in rounds)
    leaks = {}
    for b in rounds:
        for k, v in b["leaks"].items():
            leaks[k] = leaks.get(k, 0) + (v if isinstance(v, int) else 0)
    # Lock files stay by design (one per container, reused); anything else is a leak.
    leaked = sum(v for k, v in leaks.items() if k != "lock_files")
    return [(f"burst of {rounds[0]['n']}: failures, leaks", "0 failures, 0 leaks",
             f"{fails} failures; leaks after {len(rounds)} rounds: "
             + ", ".join(f"{k} {v}" for k, v in sorted(leaks.items()))
             + f"; ADD total (worst round) {ms(max(b['add_total_ms'] for b in rounds))}, "
             f"p99 {ms(max(b['add']['p99_ms'] for b in rounds))}",
             verdict(fails == 0 and leaked == 0))]


def footprint_target_rows(run):
    fp = run.footprint
    if not fp:
        return [unmeasured_row("3. binary size, static vs dynamic plugin", "report", "no footprint results in cni.json")]
    dyn = run.latency.get("mizarmp_dynamic", {})
    return [
        ("3. binary size (unstripped / stripped)", "report",
         f"mizarmp {g(fp, 'mizarmp_binary', 'bytes')} / {g(fp, 'mizarmp_binary', 'stripped_bytes')} B "
         f"+ {g(fp, 'mizarmp_binary', 'shared_libraries')} shared libraries; ptp "
         f"{g(fp, 'ptp_binary', 'bytes')} B (Go, libc only)", "reported"),
        ("3. self-contained (static) plugin vs linked dynamically vs ptp", "report",
         f"VERSION {ms(run.startup_ms('version_mizarmp'), 2)} / {ms(run.startup_ms('version_mizarmp_dynamic'), 2)} / "
         f"{ms(run.startup_ms('version_ptp'), 2)}; ADD median "
         f"{ms(run.side('mizarmp', 'add', 'median_ms'))} / {ms(g(dyn, 'add', 'median_ms'))} / "
         f"{ms(run.side('ptp', 'add', 'median_ms'))}; ADD peak RSS (max) "
         f"{kib(g(fp, 'add_maxrss_kib', 'max'))} / {kib(g(fp, 'dynamic_add_maxrss_kib', 'max'))} / "
         f"{kib(g(fp, 'ptp_add_maxrss_kib', 'max'))}; binary (stripped) "
         f"{g(fp, 'mizarmp_binary', 'stripped_bytes')} B, no shared library / "
         f"{g(fp, 'mizarmp_dynamic_binary', 'stripped_bytes')} B + "
         f"{g(fp, 'mizarmp_dynamic_binary', 'shared_libraries')} shared libraries / "
         f"{g(fp, 'ptp_binary', 'stripped_bytes')} B", "reported"),
    ]


def rpc_target_rows(run):
    rows = []
    for method in ("Probe", "ListClusterFence"):
        m = run.rpc.get(method)
        label = f"{method} calls/s, 8 clients, vs bare gRPC"
        if not m:
            rows.append(unmeasured_row(label, ">= 0.8", "not run"))
        elif not m.get("measured"):
            rows.append(unmeasured_row(label, ">= 0.8", f"{m.get('why')} (bare server: "
                                       f"{g(m, 'bare', 'calls_per_s_median', default=0):.0f} calls/s)"))
        else:
            ratio = m["ratio_calls_per_s"]
            rows.append((label, ">= 0.8",
                         f"{g(m, 'mizarmp-addons', 'calls_per_s_median'):.0f} / {g(m, 'bare', 'calls_per_s_median'):.0f} "
                         f"= **{ratio:.2f}**; p99 {ms(g(m, 'mizarmp-addons', 'latency', 'p99_ms'), 2)} vs "
                         f"{ms(g(m, 'bare', 'latency', 'p99_ms'), 2)}; server CPU per call "
                         f"{us(g(m, 'mizarmp-addons', 'server_cpu_us_per_call_median'))} vs "
                         f"{us(g(m, 'bare', 'server_cpu_us_per_call_median'))}"
                         + run.previous.note("; previous run {}", RPC_FIGURE_PREFIX[method] + "_ratio"),
                         verdict(ratio >= RPC_RATIO_TARGET)))
    return rows


def getclients_target_rows(run):
    gc = run.getclients
    if not gc.get("measured"):
        return [unmeasured_row("GetFenceClients, 10,000 records / 100 nodes", "<= 20 ms", gc.get("why", "not run"))]
    whole = g(gc, "latency", "median_ms")
    one_node = g(gc, "one_node", "latency", "median_ms")
    return [(f"GetFenceClients, {gc.get('records'):,} records / {gc.get('nodes')} nodes", "<= 20 ms",
             f"**{ms(whole)}** median, p99 {ms(g(gc, 'latency', 'p99_ms'))} "
             f"({gc.get('clients_returned')} clients, {gc.get('addresses_returned')} addresses); one node "
             f"(`hostId`): **{ms(one_node)}** median, p99 {ms(g(gc, 'one_node', 'latency', 'p99_ms'))}",
             verdict(max(whole, one_node or 0) <= GETCLIENTS_TARGET_MS))]


def fence_measured(f):
    return g(f, "fence", "measured") and g(f, "unfence", "measured")


def fence_target_rows(run):
    rows = []
    for store_name, f in run.fence_stores or [("SQLite", run.fence)]:
        ff, uf = f.get("fence", {}), f.get("unfence", {})
        if fence_measured(f):
            rows.append((f"5. FenceClusterNetwork / Unfence, {f.get('cidrs'):,} CIDRs / {f.get('ports'):,} ports, "
                         f"{store_name} store", "<= 150 ms each",
                         f"fence **{ms(ff.get('ms'))}**, {ff.get('rest_requests')} REST calls, "
                         f"{ff.get('ports_down_after')} ports down, {ff.get('ports_wrong')} wrong; "
                         f"unfence **{ms(uf.get('ms'))}**, {uf.get('rest_requests')} REST calls, "
                         f"{uf.get('ports_down_after')} left down",
                         verdict(ff["ms"] <= FENCE_TARGET_MS and uf["ms"] <= FENCE_TARGET_MS)))
        else:
            why = ff.get("why") or uf.get("why") or f.get("why") or "not run"
            rows.append(unmeasured_row(f"5. FenceClusterNetwork / Unfence, 1,000 CIDRs / 10,000 ports, {store_name} "
                                       "store", "<= 150 ms each", why))
    return rows


def soak_target_rows(run):
    cases = []
    if g(run.soak, "cni", "samples"):
        cases.append((f"{g(run.soak, 'cni', 'cycles'):,} ADD/DEL cycles", "mizarmp-mock", "mock",
                      run.soak["cni"]["samples"], "cycle"))
    if g(run.soak, "server", "samples"):
        load = run.soak_load_samples()
        what = f"{run.soak['server']['seconds']:.0f} s of fence traffic"
        cases += [(what, "mizarmp-addons", "addons", load, "seconds"), (what, "mizarmp-mock", "mock", load, "seconds")]
    if not cases:
        return [unmeasured_row("soak: RSS and fds", "flat (see Soak)", "no soak samples (soak.json)")]
    rows = []
    for what, name, proc, samples, x_key in cases:
        text, flat = soak_verdict(samples, x_key, proc)
        rows.append((f"soak, {what}: {name} RSS and fds", "flat (see Soak)", text, verdict(flat)))
    return rows


def targets_section(run):
    rows = (latency_target_rows(run) + version_target_rows(run) + peak_rss_target_rows(run)
            + readiness_target_rows(run) + burst_target_rows(run) + footprint_target_rows(run)
            + rpc_target_rows(run) + getclients_target_rows(run) + fence_target_rows(run) + soak_target_rows(run)
            + fence_scale_target_rows(run) + records_target_rows(run))
    return block(["## Figures against their targets", ""]
                 + table(["figure", "target", "measured (this run)", ""], rows) + [""])


# ----------------------------------------------------------------------------- what changed
def comparable_figures(run):
    """This run's figures an earlier run's file may name: name -> (value, value as the report writes it)."""
    def rpc_cpu(method, server):
        return g(run.rpc, method, server, "server_cpu_us_per_call_median")

    def rpc_ratio(method):
        return g(run.rpc, method, "ratio_calls_per_s")

    def fence(store, rpc, figure):
        return g(run.fence_store(store), rpc, figure)

    soak_load = run.soak_load_samples()
    figures = {
        "add_ms": (run.side("mizarmp", "add", "median_ms"), ms),
        "ptp_add_ms": (run.side("ptp", "add", "median_ms"), ms),
        "del_ms": (run.side("mizarmp", "del", "median_ms"), ms),
        "ptp_del_ms": (run.side("ptp", "del", "median_ms"), ms),
        "version_ms": (run.startup_ms("version_mizarmp"), lambda x: ms(x, 2)),
        "ptp_version_ms": (run.startup_ms("version_ptp"), lambda x: ms(x, 2)),
        "add_peak_rss_kib": (run.peak_add_rss(), kib),
        "soak_addons_end_rss_kib": (soak_load[-1]["addons"]["rss_kib"] if soak_load else None, kib),
    }
    for method, prefix in RPC_FIGURE_PREFIX.items():
        figures[f"{prefix}_ratio"] = (rpc_ratio(method), num)
        figures[f"{prefix}_server_cpu_us"] = (rpc_cpu(method, "mizarmp-addons"), us)
        figures[f"{prefix}_bare_server_cpu_us"] = (rpc_cpu(method, "bare"), us)
    for store in ("SQLite", "etcd"):
        for rpc in ("fence", "unfence"):
            figures[f"{store.lower()}_{rpc}_ms"] = (fence(store, rpc, "ms"), ms)
            figures[f"{store.lower()}_{rpc}_addons_cpu_ms"] = (fence(store, rpc, "addons_cpu_ms"), lambda x: ms(x, 0))
            figures[f"{store.lower()}_{rpc}_rest_requests"] = (fence(store, rpc, "rest_requests"), lambda x: fmt(x, "", 0))
    return figures


def change_filler(run):
    """(fill, figures): fill(text) puts the two runs' figures into a text of the previous run's
    file; figures are this run's, as comparable_figures gives them."""
    prev = run.previous
    figures = comparable_figures(run)
    now = {name: show(value) for name, (value, show) in figures.items()}
    times = {name: f"{value / prev.figures[name]:.1f}" for name, (value, _) in figures.items()
             if value is not None and isinstance(prev.figures.get(name), (int, float)) and prev.figures[name]}
    names = FigureNames({"commit": prev.commit,
                         "previous": FigureNames(prev.figures, f"{prev.path} (figures)"),
                         "now": FigureNames(now, "this run"),
                         "times": FigureNames(times, "this run over the previous")}, prev.path)

    def fill(text):
        try:
            return text.format_map(names)
        except (ValueError, IndexError, AttributeError) as e:
            print(f"report.py: {prev.path}: cannot fill {text[:60]!r}: {e}", file=sys.stderr)
            return text
    return fill, figures


def what_changed_section(run):
    prev = run.previous
    lines = ["## What changed since the previous run", ""]
    if not prev.found:
        return block(lines + [f"No earlier run to compare with: {prev.path} was not found or not readable.", ""])
    fill, figures = change_filler(run)
    lines += [fill(prev.intro), ""]
    for change in prev.changes:
        if any(g(figures, name, default=(None,))[0] is None for name in change.get("needs", [])):
            continue
        lines.append("- " + fill(change["text"]))
        lines += ["  - " + fill(detail) for detail in change.get("details", [])]
    return block(lines + [""])


# ------------------------------------------------------------------------- how it is measured
def how_measured_section(run):
    return block([
        "## How it is measured",
        "",
        "- `bench/cni_driver.cc` (`mizarmp-bench-cni`) execs each plugin as a runtime does: fork/execve with",
        "  only `CNI_COMMAND`, `CNI_CONTAINERID`, `CNI_NETNS`, `CNI_IFNAME`, `CNI_PATH`, `PATH` in the",
        "  environment, the network config on stdin, stdout and stderr read to EOF, the child reaped with",
        "  `wait4` (its rusage gives the peak RSS and CPU). Time = fork to reaped. Pod netns are created",
        "  before and deleted after each timed call, outside the timed window.",
        "- mizarmp runs against `mizarmp-mock` (as built, TCP_NODELAY on) with its host agent in a separate",
        "  \"host\" netns: each ADD includes the agent creating the veth, moving it into the pod and bridging",
        "  the host end. ptp runs inside a netns of its own (setns in the child before execve) so it never",
        "  touches the machine's namespace; it does the same netns work: one veth, an address, routes, with",
        "  host-local IPAM.",
        "- Every comparison is interleaved: per iteration the sides run in turn, the order alternating",
        "  (mizarmp, ptp / ptp, mizarmp), warm-up iterations dropped. Percentiles are nearest-rank; p99 of",
        "  100 samples is the second-largest.",
        "- `bench/addons_driver.cc` (`mizarmp-bench-addons`): 8 client threads, each with its own channel",
        "  and connection (local subchannel pool), calling for a fixed time; rounds rotate mizarmp-addons,",
        "  `mizarmp-bench-bare-grpc` (a default `grpc::ServerBuilder` sync server whose handlers return an",
        "  empty response) and the bare server with gRPC's default health service. Clients and servers share",
        "  the same 2 CPUs. ListClusterFence runs against an empty fence store (the bare server answers an",
        "  empty list).",
        "- Profiles: `valgrind --tool=callgrind` for the plugin (instruction counts, repeatable on a shared",
        "  machine; perf's hardware counters are not available on this VM), `perf record -a -e cpu-clock -g`",
        "  for the servers, reported for the server's pid.",
        "- A method that answers UNIMPLEMENTED is reported as *not measured*, never as a figure.",
        "",
    ])


# ---------------------------------------------------------------------------------- latency
LATENCY_SIDE_LABELS = {
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

LATENCY_METHOD = [
    "Eleven sides in turn, the order rotating per iteration. mizarmp sides run against mizarmp-mock with its",
    "host agent; the https:// sides against a second mock serving TLS with a throwaway P-256 CA, the CA",
    "given as `tls.caFile`, or made one of the system's in a mount namespace where `/etc/ssl/certs` is a copy",
    "of the machine's with the CA added as Debian's tools add one (a hash link, a line in the bundle), or",
    "as `SSL_CERT_FILE` pointing at that whole bundle. Those three resume the TLS session the plugin keeps in",
    "its state dir (as a node's plugin does after its first https call); the last side has its kept sessions",
    "removed before every ADD and DEL (outside the timed window), so each makes a full handshake. The",
    "relay side has `relaySocket` set to the socket of a mizarmp-addons in node mode (`--relay-socket`,",
    "`--mpurl` the TLS mock, `--mp-ca-file` the CA) started once for the section, as a node runs it: its",
    "requests go over that process's kept TLS connections, and the plugin process sets no TLS up. The two",
    "plug-mode sides run on an Alcor node: Open vSwitch in its userspace datapath in a namespace of its own,",
    "the mock as Alcor's controller and its OVS agent there (it places no NIC, tags `tap<id>` on `br-int`,",
    "then reports the port ACTIVE), and the plugin there making the veth and the OVS port itself; one with",
    "`plug: ovs` and `dialect: alcor` configured, one with both `auto` (the bridge looked up and the",
    "controller's generation asked on each ADD).",
]


def contended_note(run):
    """A note when the two measurements of the same ADD in this run disagree by more than a fifth."""
    # The same plugin's ADD with ports ready at once is measured twice in a run (latency, and
    # readiness at d = 0): when the two medians disagree, one section ran on a busier machine.
    mz_add = run.side("mizarmp", "add", "median_ms")
    r0_med = g(run.ready_at_zero(), "default", "median_ms")
    if not (mz_add and r0_med and abs(mz_add - r0_med) > 0.2 * min(mz_add, r0_med)):
        return []
    return [f"**Note:** the same mizarmp ADD (ports ready at once) measured {ms(mz_add)} median in the latency "
            f"section and {ms(r0_med)} at d = 0 in the readiness section of this run: one of the two ran on a "
            "busier machine (other engineers' builds share these 2 CPUs; load figures above). The ratio "
            "to ptp is from interleaved samples, so both sides saw the same machine, but the absolute "
            "latency-section figures (and the start-up/work split below, which uses them) are "
            "inflated accordingly.", ""]


def ovsdb_lines(run):
    ovsdb = run.cni.get("ovsdb")
    if not ovsdb:
        return []

    def cell(which, op):
        return f"{ms(g(ovsdb, f'{which}_{op}', 'median_ms'), 2)} ({ms(g(ovsdb, f'{which}_{op}', 'p99_ms'), 2)})"
    rows = [(name, cell("library", op), cell("vsctl", op)) for op, name in (("add", "add a port"), ("del", "remove it"))]
    return (["Plug mode's database work, the plugin's way (RFC 7047 over ovsdb-server's socket, one connection per",
             "change as ADD and DEL each open one) against `ovs-vsctl --no-wait` (a process per change), in turn per",
             "iteration, median (p99):", ""]
            + table(["change", "ovsdb library", "ovs-vsctl"], rows) + [""])


def latency_section(run):
    lat = run.latency
    lines = ["### ADD and DEL latency (ports ready at once), http:// and https://", ""]
    if not lat:
        return block(lines + [not_measured("no latency results in cni.json") + ".", ""])
    rows = []
    for key in lat.get("sides", []):
        s = lat.get(key)
        rows.append((LATENCY_SIDE_LABELS.get(key, key), ms(g(s, "add", "median_ms"), 2), ms(g(s, "add", "p90_ms"), 2),
                     ms(g(s, "add", "p99_ms"), 2), ms(g(s, "del", "median_ms"), 2), ms(g(s, "del", "p90_ms"), 2),
                     ms(g(s, "del", "p99_ms"), 2), ms(g(s, "add_cpu", "median_ms"), 2),
                     kib(g(s, "add_maxrss_kib", "max")), g(s, "add", "n")))
    lines += LATENCY_METHOD + [""]
    lines += table(["side", "ADD median", "ADD p90", "ADD p99", "DEL median", "DEL p90", "DEL p99",
                    "ADD CPU (user+sys) median", "ADD peak RSS max", "n"], rows)
    lines += ["",
              f"Failures: {lat.get('failures', 'n/a')}. Ports left at the mock afterwards: "
              f"{lat.get('mock_ports_left', 'n/a')}; removals the later agent still had queued at the end: "
              f"{lat.get('unplug_later_backlog_at_end', 'n/a')}.",
              ""]
    return block(lines + contended_note(run) + ovsdb_lines(run))


# -------------------------------------------------------------------------------- readiness
def readiness_section(run):
    lines = ["### Readiness latency",
             "",
             "The mock makes each port ready d ms after its creation (`--ready-delay-ms`); its agent places the NIC",
             "in the pod, then the port reports ready. Three poll settings of the plugin, interleaved: the default (no",
             "`poll` key: every 5 ms, 1% of the time already waited later, and at once when the NIC arrives), the",
             "previous default's interval (`\"poll\": {\"initialMs\": 1, \"maxMs\": 5}`, the NIC watch on as well), and a",
             "fixed 1 s poll like the upstream plugin. Overhead = ADD(d) - ADD(0) - d of the medians; GETs of the port",
             "per ADD from the mock's request counter (the ADD's requests less its POST and subnet GET).",
             ""]
    if not run.ready:
        return block(lines + [not_measured("no readiness results in cni.json") + ".", ""])
    rows = []
    for r in run.ready:
        d = r["ready_delay_ms"]
        rows.append((f"{d} ms",
                     f"{ms(g(r, 'default', 'median_ms'))} / {ms(g(r, 'default', 'p99_ms'))}",
                     ms(readiness_overhead(run, r, "default"), 2),
                     f"{num(readiness_gets(r, 'default'), 0)} ({readiness_get_budget(d)})",
                     ms(g(r, "previous_1ms_doubling", "median_ms")),
                     ms(readiness_overhead(run, r, "previous_1ms_doubling"), 2),
                     num(readiness_gets(r, "previous_1ms_doubling"), 0),
                     ms(g(r, "fixed_1s", "median_ms")),
                     num(readiness_gets(r, "fixed_1s"), 0)))
    return block(lines + table(["d", "default: median / p99", "overhead", "GETs (budget)", "1 ms doubling: median",
                                "overhead", "GETs", "fixed 1 s: median", "GETs"], rows) + [""])


# ------------------------------------------------------------------------------------ burst
def burst_tail_lines(run):
    """What a tail over 1 s in a burst round is, when there is one."""
    tails = [(b, op) for b in run.burst for op in ("add", "del") if b[op]["p99_ms"] > 1000]
    if not tails:
        return []
    desc = "; ".join(f"{b['plugin']} round {b['round']} {op.upper()} p99 {ms(b[op]['p99_ms'])} "
                     f"(median {ms(b[op]['median_ms'])}, listen overflows {b['tcp_listen_overflows']})"
                     for b, op in tails)
    return [f"Tail over 1 s: {desc}. A ~1 s step over a median of a few hundred ms is the size of TCP's initial SYN "
            "retransmission timeout (a dropped SYN shows as `TcpExt ListenOverflows`); the mock's accept queue is "
            "SOMAXCONN since d37507b, so an overflow now means its accept thread was starved (see the load above).", ""]


def burst_section(run):
    lines = ["### Burst",
             "",
             "All ADDs released at once (one thread each, fork/exec in parallel on 2 CPUs), then all DELs.",
             "Leaks are looked for as a user would: ports at the mock (`/mock/state`), attachment records and",
             "lock files in the state dir, veths in the agent's host netns, any interface left in a pod netns;",
             "for ptp: host-local reservations and veths in its netns.",
             ""]
    if not run.burst:
        return block(lines + [not_measured("no burst results in cni.json") + ".", ""])
    rows = [(b["plugin"], b["round"], ms(b["add_total_ms"]), f"{ms(b['add']['median_ms'])} / {ms(b['add']['p99_ms'])}",
             b["add_failures"], ms(b["del_total_ms"]), f"{ms(b['del']['median_ms'])} / {ms(b['del']['p99_ms'])}",
             b["del_failures"], b["tcp_listen_overflows"], ", ".join(f"{k} {v}" for k, v in sorted(b["leaks"].items())))
            for b in run.burst]
    lines += table(["plugin", "round", "ADD total", "ADD median / p99", "failed", "DEL total", "DEL median / p99",
                    "failed", "TCP listen overflows", "left behind"], rows) + [""]
    return block(lines + burst_tail_lines(run))


# -------------------------------------------------------------------------------- footprint
STARTUP_LABELS = [
    ("exec_bin_true", "`/bin/true` (fork+exec floor)"),
    ("version_ptp", "ptp VERSION (Go binary, links libc only)"),
    ("version_mizarmp", "**mizarmp VERSION**"),
    ("version_mizarmp_dynamic", "mizarmp VERSION, linked dynamically (bench variant: the same plugin on Debian's "
                                "shared libraries)"),
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

BINARY_LABELS = [
    ("mizarmp_binary", "mizarmp (Release)"),
    ("mizarmp_dynamic_binary", "mizarmp linked dynamically (bench variant)"),
    ("ptp_binary", "ptp"),
    ("host_local_binary", "host-local"),
]


def footprint_section(run):
    lines = ["### Footprint and start-up", ""]
    if not run.footprint:
        return block(lines + [not_measured("no footprint results in cni.json") + ".", ""])
    startup_rows = [(label, ms(s["median_ms"], 2), ms(s["p99_ms"], 2), kib(s.get("maxrss_kib")))
                    for key, label in STARTUP_LABELS if (s := run.startup.get(key))]
    binary_rows = [(label, b["bytes"], b["stripped_bytes"], b["shared_libraries"])
                   for key, label in BINARY_LABELS if (b := run.footprint.get(key))]
    lines += table(["program (exec'd in turn, same run)", "median", "p99", "peak RSS"], startup_rows) + [""]
    lines += table(["binary", "bytes", "stripped", "shared libraries (ldd)"], binary_rows) + [""]
    lines += [f"mizarmp's shared libraries (`ldd`): {' '.join(run.ldd) or 'n/a'}.", ""]
    return block(lines)


# ----------------------------------------------------------------------------------- addons
def rpc_lines(run):
    rpc = run.rpc
    if not rpc:
        return []
    rows = []
    for method in ("Probe", "ListClusterFence"):
        m = rpc.get(method, {})
        for server in ("mizarmp-addons", "bare", "bare+health"):
            s = m.get(server)
            if s:
                rows.append((method, server, f"{s['calls_per_s_median']:.0f}",
                             ", ".join(f"{x:.0f}" for x in s.get("calls_per_s_rounds", [])),
                             f"{ms(g(s, 'latency', 'median_ms'), 3)} / {ms(g(s, 'latency', 'p99_ms'), 3)}",
                             us(s.get("server_cpu_us_per_call_median")), json.dumps(s.get("errors", {}))))
    return (["Three servers in turn: mizarmp-addons, the bare server, and the bare server with gRPC's default",
             "health service switched on (`grpc::EnableDefaultHealthCheckService(true)`, what the server (now addons/server.cc) used",
             "before it served its own sync health service). Server CPU per call = the server process's",
             "utime+stime (`/proc/PID/stat`) over the round / calls.",
             ""]
            + table(["method", "server", "calls/s (median of rounds)", "each round", "latency median / p99",
                     "server CPU per call", "errors"], rows)
            + ["",
               f"Mizar-MP requests the addons server made during the RPC runs: {rpc.get('mock_requests_during_rpc')} "
               "(Probe's controller check is cached for 1 s).",
               ""])


def getclients_lines(run):
    gc = run.getclients
    if not gc:
        return []
    if not gc.get("measured"):
        return [f"- GetFenceClients: **not measured** — {gc.get('why')}.", ""]
    one = gc.get("one_node", {})
    rows = [("whole cluster", ms(g(gc, "latency", "median_ms")), ms(g(gc, "latency", "p90_ms")),
             ms(g(gc, "latency", "p99_ms")), gc.get("clients_returned"), gc.get("addresses_returned")),
            (f"`hostId` = {one.get('host_id')}", ms(g(one, "latency", "median_ms")), ms(g(one, "latency", "p90_ms")),
             ms(g(one, "latency", "p99_ms")), one.get("clients_returned"), one.get("addresses_returned"))]
    return ([f"GetFenceClients: {gc.get('records'):,} records written with `cni::RecordStore::Write` "
             f"(in {fmt(gc.get('write_records_s'), 's', 1)}), node i % {gc.get('nodes')}, one address each; "
             f"{g(gc, 'latency', 'n')} calls of each kind, interleaved, after 3 warm-up pairs:", ""]
            + table(["request", "median", "p90", "p99", "clients", "addresses"], rows) + [""])


def fence_rpc_row(store_name, name, f, r):
    if not r.get("measured"):
        return [store_name, name, f"not measured: {r.get('why') or f.get('why') or 'not run'}"] + [""] * 7
    per = r["ms"] / r["rest_requests"] if r.get("rest_requests") else None
    span = r["ms_rounds"]
    return [store_name, name, f"{ms(r['ms'])} ({ms(min(span))}–{ms(max(span))})", r.get("rest_requests"),
            ms(per, 3), ms(r.get("addons_cpu_ms"), 0), ms(r.get("mock_cpu_ms"), 0), r.get("ports_down_after"),
            r.get("ports_wrong"), r.get("list_cluster_fence_cidrs", "")]


def fence_lines(run):
    fence = run.fence
    if not fence:
        return []
    if not g(fence, "fence", "measured"):
        return [f"- FenceClusterNetwork: **not measured** — {g(fence, 'fence', 'why', default='not run')}.", ""]
    rows = [fence_rpc_row(store_name, name, f, f.get(rpc, {}))
            for store_name, f in run.fence_stores
            for rpc, name in (("fence", "FenceClusterNetwork"), ("unfence", "UnfenceClusterNetwork"))]
    return ([f"FenceClusterNetwork: {fence.get('ports'):,} ports bulk-created at the mock (in "
             f"{fmt(fence.get('create_ports_s'), 's', 1)}), one `/32` CIDR for every "
             f"{max(1, fence.get('ports', 1) // max(1, fence.get('cidrs', 1)))}th port; mizarmp-addons' reconcile loop "
             "pushed out (1 h) so the REST calls counted are the RPC's own; its port updates go out over "
             f"`updateConnections` ({g(run.addons, 'config', 'update_connections') or 'default: 8'}) kept-alive "
             "connections. Afterwards the port list is checked: exactly the ports inside a fenced CIDR must be "
             "`admin_state_up=false`. On etcd (the 3-member cluster of the store benchmark, a prefix of its own) "
             "the replica first wins the election (a fence of an address no port has), so the figures do not "
             "include it.",
             "",
             f"Each row: the median of {fence['rounds']} fence/unfence pairs (time range over the pairs in "
             "brackets); REST calls, ports down and ListClusterFence from the last pair; wrong: the worst pair.",
             ""]
            + table(["store", "RPC", "time", "REST calls", "per REST call", "CPU mizarmp-addons", "CPU mock",
                     "ports down after", "wrong", "ListClusterFence after"], rows)
            + ["",
               "CPU: user + system time of each process during the RPC (/proc/PID/stat), so the figure holds on a "
               "shared machine too. On etcd too the REST calls are the RPC's own: the leader's loop passes again only "
               "for a change its last pass did not account for.",
               ""])


def addons_section(run):
    lines = ["### mizarmp-addons", ""]
    if not run.addons:
        return block(lines + [not_measured("no addons.json in the work directory") + ".", ""])
    return block(lines + rpc_lines(run) + getclients_lines(run) + fence_lines(run))


# ------------------------------------------------------------------------------------- soak
def error_lines(results):
    """A driver's recorded errors as a list, followed by a blank line when there are any."""
    errors = [f"- **error**: {why}" for why in results.get("errors", [])]
    return errors + [""] if errors else []


def soak_cni_lines(run):
    cni = run.soak.get("cni", {})
    samples = cni.get("samples")
    if not samples:
        return []
    last = samples[-1]["leftover"]
    rows = []
    for smp in thinned(samples):
        m, left = smp["mock"], smp["leftover"]
        rows.append((smp["cycle"], f"{smp['seconds']:.0f}", m["rss_kib"], m["hwm_kib"], m["fds"], m["threads"],
                     left["records"], left["lock_files"], left["temp_files"], left["other_files"],
                     left["host_veths"], left["mock_ports"]))
    lines = [f"### CNI: {cni.get('cycles'):,} ADD/DEL cycles against mizarmp-mock and its host agent",
             "",
             "Each cycle: a fresh pod netns, `mizarmp` ADD then DEL exec'd as a runtime execs it, the netns deleted. "
             f"Failures: {cni.get('failures')}" + (f" (first: `{cni.get('first_failure')}`)" if cni.get("failures") else "")
             + ".",
             ""]
    lines += table(["cycle", "s", "mock RSS KiB", "mock HWM KiB", "mock fds", "mock threads", "records",
                    "lock files", "temp files", "other files", "host veths", "ports at mock"], rows) + [""]
    text, _ = soak_verdict(samples, "cycle", "mock")
    left_total = sum(v for v in last.values() if isinstance(v, int) and v > 0)
    lines += [f"- mizarmp-mock: {text}.",
              f"- Left behind after the last cycle: {', '.join(f'{k} {v}' for k, v in last.items())}: "
              + ("**nothing left behind**." if left_total == 0 else "**something is left behind**.")]
    for command, r in sorted(cni.get("plugin", {}).items()):
        rss = r["maxrss_kib"]
        lines.append(f"- The plugin's own peak RSS per {command} (wait4 rusage, {r['n']} runs): min {rss['min']:.0f}, "
                     f"median {rss['median']:.0f}, max {rss['max']:.0f} KiB; wall time median "
                     f"{ms(g(r, 'wall', 'median_ms'))}, p99 {ms(g(r, 'wall', 'p99_ms'))}.")
    return lines + [""]


def soak_rpc_counts(rpcs):
    return "; ".join(f"{k} {v['ok']:,} ok, errors {json.dumps(v['errors']) if v['errors'] else 'none'}"
                     + (f" (first: {v['first_error']})" if v.get("first_error") else "")
                     for k, v in sorted(rpcs.items()))


def soak_server_lines(run):
    srv = run.soak.get("server", {})
    samples = srv.get("samples")
    if not samples:
        return []
    load_samples = run.soak_load_samples()
    rows = []
    for smp in thinned(load_samples) + [x for x in samples if x.get("phase") != "load"]:
        a, m = smp["addons"], smp["mock"]
        rows.append((f"{smp['seconds']:.0f}", smp["phase"], f"{smp['rpcs']:,}", a["rss_kib"], a["hwm_kib"], a["fds"],
                     a["threads"], m["rss_kib"], m["fds"], f"{smp['store_bytes']:,}"))
    lines = [f"### Server: mizarmp-addons under continuous fence traffic ({srv.get('seconds', 0):.0f} s)",
             "",
             f"{srv.get('clients')} client threads (a channel each) against mizarmp-addons, which runs against "
             f"mizarmp-mock with {srv.get('ports'):,} ports; each client loops FenceClusterNetwork, ListClusterFence, "
             f"GetFenceClients, UnfenceClusterNetwork, ListClusterFence over its own {srv.get('cidrs_per_client')} "
             "`/32`s, so the fence state returns to empty every loop. "
             f"{len(load_samples)} samples under load (at most 24 shown, evenly spaced; the verdicts use all); the last "
             "row is 1 s after the clients stopped.",
             ""]
    lines += table(["s", "phase", "RPCs so far", "addons RSS KiB", "addons HWM KiB", "addons fds", "addons threads",
                    "mock RSS KiB", "mock fds", "fence store bytes"], rows) + [""]
    for proc, name in (("addons", "mizarmp-addons"), ("mock", "mizarmp-mock")):
        text, _ = soak_verdict(load_samples, "seconds", proc)
        lines.append(f"- {name}: {text}.")
    lines.append(f"- The mock keeps the newest {srv['mock_journal_capacity']:,} port `PUT`s for the tests "
                 "(`--journal-capacity`, `GET /mock/requests`, some 200 bytes each); every fence and unfence adds one "
                 "per port it changes, so the journal is full within the warm-up and the mock's verdict is about the "
                 "mock's own memory.")
    total = srv.get("rpcs_total", 0)
    lines.append(f"- RPCs: {total:,} in {srv.get('seconds', 0):.0f} s "
                 f"({total / max(srv.get('seconds', 1), 1e-9):.0f}/s): {soak_rpc_counts(srv.get('rpcs', {}))}.")
    store = [x["store_bytes"] for x in load_samples]
    if store:
        lines.append(f"- Fence store (SQLite file with its -wal and -shm): {store[0]:,} bytes at the start, "
                     f"{store[len(store) // 2]:,} at half-way, {store[-1]:,} at the end.")
    left = srv.get("leftover", {})
    lines.append(f"- Still fenced after the clients stopped: {left.get('fenced_cidrs')} CIDRs listed, "
                 f"{left.get('ports_down')} ports down at the mock.")
    return lines + [""]


def soak_section(run):
    lines = ["## Soak",
             "",
             "`bench/soak_driver.cc` (`mizarmp-bench-soak`). **Flat** means: the median RSS of the samples in the second half",
             f"of the run is at most {SOAK_RSS_SLACK:.0%} (or {SOAK_RSS_FLOOR_KIB} KiB, whichever is larger) above the median of the",
             "first half after warm-up, and the median open fd count of the second half is not above the first half's",
             "(medians, because RSS and fds under load move with the requests and connections in flight, a fence pass",
             "opening its update connections, and a leak lifts the whole second half); otherwise **grows**, with the figure. Warm-up is",
             f"the first {SOAK_WARMUP:.0%} of the run; \"after warm-up\" is the first sample past it. RSS is VmRSS (VmHWM = peak",
             "so far) from `/proc/PID/status`, fds the entries of `/proc/PID/fd`, read between cycles (CNI) or every",
             "few seconds under load (server).",
             ""]
    if not run.soak:
        return block(lines + [not_measured("no soak.json in the work directory") + ".", ""])
    if run.quick:
        lines += ["> A quick run: too few cycles and seconds for these verdicts to mean anything (warm-up dominates).", ""]
    return block(lines + error_lines(run.soak) + soak_cni_lines(run) + soak_server_lines(run))


# ------------------------------------------------------------------------------ fence store
STORE_ROWS = (("fence_1", "FenceClusterNetwork, 1 CIDR (median)"),
              ("unfence_1", "UnfenceClusterNetwork, 1 CIDR (median)"),
              ("fence_100", "FenceClusterNetwork, 100 CIDRs (median)"),
              ("unfence_100", "UnfenceClusterNetwork, 100 CIDRs (median)"))


def etcd_over_sqlite(a, b):
    return f"{b / a:.2f}x" if a and b else "—"


def store_section(run):
    store = run.store
    lines = ["## Fence store: SQLite vs etcd", ""]
    if not store:
        return block(lines + [not_measured("no store.json in the work directory (run.sh runs the store benchmark "
                                           "only when its etcd cluster starts)") + ".", ""])
    cfg = store.get("config", {})
    lines += ["`bench/store_driver.cc` (`mizarmp-bench-store`): one mizarmp-addons on an SQLite file and one on a 3-member etcd",
              f"cluster on loopback (Debian's etcd 3.4.23, started by run.sh), {cfg.get('ports')} ports at mizarmp-mock, both in one",
              f"run, alternating round by round ({cfg.get('rounds')} rounds). Each fence and unfence is one RPC over the unix",
              "socket: stored, then enforced by a pass (the port list and the port updates). ListClusterFence with 1,000 stored",
              f"fences: calls/s of {cfg.get('clients')} client threads, {cfg.get('seconds')} s per round, median of the rounds.",
              ""]
    lines += error_lines(store)
    stores = store.get("stores", {})
    if not stores:
        return block(lines)
    rows = []
    for key, label in STORE_ROWS:
        a, b = g(stores, "sqlite", key, "median_ms"), g(stores, "etcd", key, "median_ms")
        rows.append((label, ms(a), ms(b), etcd_over_sqlite(a, b)))
    a, b = g(stores, "sqlite", "list_median_calls_per_s"), g(stores, "etcd", "list_median_calls_per_s")
    rows.append(("ListClusterFence, 1,000 fences (calls/s)", f"{a:,.0f}", f"{b:,.0f}", etcd_over_sqlite(a, b))
                if a and b else ("ListClusterFence, 1,000 fences (calls/s)", "—", "—", "—"))
    lines += table(["", "SQLite", "etcd", "etcd / SQLite"], rows)
    lines += ["",
              "What bounds etcd here: every change commits one transaction, which a quorum of members fsyncs before it",
              "answers (the SQLite file fsyncs once, locally), and a change that does not follow this replica's own last",
              "read or commit reads the whole prefix first. Every ListClusterFence is a linearizable keys-only probe of",
              "what changed since this replica's last read or commit (the whole prefix again only when another writer",
              "changed it): a round trip to the etcd leader to confirm its commit index (ReadIndex) per call, where the",
              "SQLite store answers repeated reads of an unchanged file from memory.",
              ""]
    return block(lines)


def failover_section(run):
    fo = run.store.get("failover", {})
    lines = ["## Failover", ""]
    if not fo:
        return block(lines + [not_measured("no failover results in store.json") + ".", ""])
    rows = [(i + 1, ms(a, 0), ms(b, 0))
            for i, (a, b) in enumerate(zip(fo.get("to_first_pass_ms", []), fo.get("to_port_disabled_ms", [])))]
    rows.append(("median", ms(g(fo, "first_pass", "median_ms"), 0), ms(g(fo, "port_disabled", "median_ms"), 0)))
    lines += [f"Two replicas on the etcd store, lease {fo.get('lease_ttl_s')} s (`leaseTtlSeconds`; the default is 15 s); a fence stored",
              "through the leader, then a port created inside it (only a pass can disable it); `kill -9` of the leader. From",
              "the kill: until the other replica logs the first pass of its term, and until the new port is down at the mock",
              f"(polled every 10 ms). The stated bound is 4/3 of the lease plus the 200 ms store poll: {fo.get('bound_ms')} ms.",
              ""]
    lines += table(["run", "to the new leader's first pass", "to the new port disabled"], rows) + [""]
    return block(lines)


# ------------------------------------------------------------------------- fencing at scale
# The ways measured, as fence-scale.json names them, and as the report does: on SQLite with the
# port index and with the whole list, and (given --etcd) two replicas on etcd with its port index.
SCALE_WAYS = (("index", "port index"), ("whole_list", "whole list"), ("etcd", "etcd, 2 replicas"))
# The ways with a port index: their publications and their ratios.
SCALE_INDEX_WAYS = (("index", "port index"), ("etcd", "etcd, 2 replicas"))


def scale_rows(run):
    """The sizes the fence-scale driver measured, smallest first."""
    rows = [r for r in g(run.fence_scale, "sizes", default=[]) or [] if isinstance(r, dict) and r.get("ports")]
    return sorted(rows, key=lambda r: r["ports"])


def scale_way(row, way, *keys):
    """A figure of one way at one size; None when that way was not measured there."""
    w = row.get(way) or {}
    return g(w, *keys) if w.get("measured") else None


def scale_peak_rss(row, way, keys=("peak_rss_kib", "idle_peak_rss_kib")):
    """mizarmp-addons' peak RSS (VmHWM) of one way: the larger of its two servers' (the one that
    took the publication and the fences, the one that ran the idle passes; on etcd, the leader of
    each pair)."""
    peaks = [scale_way(row, way, k) for k in keys]
    peaks = [p for p in peaks if p is not None]
    return max(peaks) if peaks else None


def scale_standby_rss(row):
    """The etcd way's standby replica: the larger peak RSS of the two pairs' standbys."""
    return scale_peak_rss(row, "etcd", ("standby_peak_rss_kib", "idle_standby_peak_rss_kib"))


def scale_ends(run, way="index"):
    """(smallest, largest) sizes with `way` measured; None with fewer than two."""
    rows = [r for r in scale_rows(run) if g(r, way, "measured")]
    return (rows[0], rows[-1]) if len(rows) >= 2 else None


def scale_ratio(run, figure, way="index"):
    """figure(largest) / figure(smallest) over the way's sizes, with both rows; (None, ...) without."""
    ends = scale_ends(run, way)
    if not ends:
        return None, None, None
    a, b = figure(ends[0]), figure(ends[1])
    return (b / a if a and b is not None else None), ends[0], ends[1]


def scale_fence_one(way):
    return lambda row: scale_way(row, way, "fence_one", "ms")


def scale_addons_rss(way):
    return lambda row: scale_peak_rss(row, way)


def fence_scale_minutes(run):
    """How long the fence-scale driver ran, from its sizes' own timings; None without them."""
    took = [r.get("section_s") for r in scale_rows(run)]
    return sum(took) / 60 if took and None not in took else None


def fence_scale_target_rows(run):
    rows = []
    for way, way_name in SCALE_INDEX_WAYS:
        if way == "etcd" and not g(run.fence_scale, "config", "etcd"):
            continue  # run without --etcd: no etcd rows to miss
        why = f"no fence-scale results of the {way_name} way at two sizes (fence-scale.json)"
        for label, figure, unit in (("fence of one /32", scale_fence_one(way), ms),
                                    ("mizarmp-addons peak RSS", scale_addons_rss(way), kib)):
            ratio, small, large = scale_ratio(run, figure, way)
            name = f"issue 35: {label}, {way_name}, largest size over smallest"
            if ratio is None:
                rows.append(unmeasured_row(name, f"<= {FENCE_SCALE_RATIO_TARGET}x", why))
                continue
            rows.append((f"issue 35: {label}, {way_name}, {large['ports']:,} over {small['ports']:,} ports",
                         f"<= {FENCE_SCALE_RATIO_TARGET}x",
                         f"{unit(figure(large))} / {unit(figure(small))} = **{ratio:.2f}x**",
                         verdict(ratio <= FENCE_SCALE_RATIO_TARGET)))
    return rows


def bytes_text(n):
    if n is None:
        return "n/a"
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def scale_plot(run, name, title, ylabel, series, log_y=True):
    """The Markdown image of a plot drawn into the plots directory, or why there is none."""
    if not run.plots_dir:
        return "(plot not drawn: report.py was given no --plots directory)"
    if not plot.available():
        return "(plot not drawn: python3-matplotlib is not installed)"
    try:
        os.makedirs(run.plots_dir, exist_ok=True)
        file_name = plot.line_plot(os.path.join(run.plots_dir, name), title, "ports at Mizar-MP (log)", ylabel,
                                   series, log_y)
    except (OSError, ValueError) as e:
        # The tables still carry every figure: a picture that cannot be written costs only itself.
        return f"(plot not drawn: {e})"
    return f"![{title}]({file_name})"


def scale_series(rows, way, figure, label):
    return (label, [r["ports"] for r in rows], [figure(r, way) for r in rows])


def scale_latency_lines(run, rows):
    table_rows = []
    for r in rows:
        for way, name in SCALE_WAYS:
            if not (r.get(way) or {}).get("measured"):
                continue
            one, un, many = (scale_way(r, way, k) or {} for k in ("fence_one", "unfence_one", "fence_many"))
            first = (one.get("ms_rounds") or [None])[0]
            table_rows.append((f"{r['ports']:,}", name, ms(one.get("ms")), ms(first), one.get("rest_requests"),
                               ms(un.get("ms")),
                               ms(many.get("ms"), 0), many.get("rest_requests"), ms(many.get("addons_cpu_ms"), 0),
                               ms(many.get("mock_cpu_ms"), 0)))
    picture = scale_plot(run, "fence_scale_latency.png", "FenceClusterNetwork time", "ms (log)", [
        scale_series(rows, "index", lambda r, w: scale_way(r, w, "fence_one", "ms"), "fence 1 /32, port index"),
        scale_series(rows, "index", lambda r, w: scale_way(r, w, "unfence_one", "ms"), "unfence 1 /32, port index"),
        scale_series(rows, "whole_list", lambda r, w: scale_way(r, w, "fence_one", "ms"), "fence 1 /32, whole list"),
        scale_series(rows, "index", lambda r, w: scale_way(r, w, "fence_many", "ms"), "fence 1,000 /32, port index"),
        scale_series(rows, "whole_list", lambda r, w: scale_way(r, w, "fence_many", "ms"),
                     "fence 1,000 /32, whole list"),
        scale_series(rows, "etcd", lambda r, w: scale_way(r, w, "fence_one", "ms"), "fence 1 /32, etcd, 2 replicas"),
        scale_series(rows, "etcd", lambda r, w: scale_way(r, w, "fence_many", "ms"),
                     "fence 1,000 /32, etcd, 2 replicas")])
    return (["### Fence and unfence time", "", picture, ""]
            + table(["ports", "way", "fence 1 /32", "first round", "REST calls", "unfence 1 /32", "fence 1,000 /32",
                     "REST calls", "CPU mizarmp-addons", "CPU mock"], table_rows)
            + ["", "Medians; the REST calls and the CPU (user + system, /proc/PID/stat) of the last round. The "
                   "1,000 /32s are spread evenly over the ports, so over the nodes. Through the index and on etcd, "
                   "every node keeps a fence set stream (`bench/simulated_agents.h`, one completion queue for all) "
                   "and a fence answers only once each node acknowledged a set holding it "
                   "(`FenceService::AwaitNodes`): these times include that. Through the index, a fence's "
                   "pass reuses a read of the nodes' leases younger than a third of the lease "
                   "(`fence/listed_nodes.h`); the first round of each size reads them all, O(nodes), as the "
                   "reconcile does once per interval (its cost below).", ""])


def scale_ack_lines(rows):
    """The fence RPCs' wait for the nodes' acknowledgements, over the controller's own pass."""
    table_rows = []
    for r in rows:
        for way, name in SCALE_WAYS:
            if not (r.get(way) or {}).get("measured"):
                continue
            one, un, many = (scale_way(r, way, k) or {} for k in ("fence_one", "unfence_one", "fence_many"))
            if way == "whole_list" or one.get("node_wait_ms") is None:  # no index: no node to wait for
                continue
            table_rows.append((f"{r['ports']:,}", f"{r.get('nodes', 0):,}", name, ms(one.get("ms")),
                               ms(one.get("node_wait_ms")), ms(un.get("ms")), ms(un.get("node_wait_ms")),
                               ms(many.get("ms"), 0), ms(many.get("node_wait_ms"), 0),
                               ms(one.get("addons_cpu_ms"), 0)))
    if not table_rows:
        return []
    return (["### Every node acknowledges", ""]
            + table(["ports", "nodes", "way", "fence 1 /32", "of it, nodes", "unfence 1 /32", "of it, nodes",
                     "fence 1,000 /32", "of it, nodes", "CPU mizarmp-addons, 1 /32"], table_rows)
            + ["", "\"Of it, nodes\": how long the RPC waited after its own pass until every live node had "
                   "acknowledged a fence set holding the change (`mizarmp_addons_fence_node_wait_seconds`); the "
                   "set goes out before the pass, so most acknowledgements arrive during it. Targets (issue 48): "
                   "at most 100 ms at 100 nodes and 1 s at 4,000. Each node's stream holds a server thread "
                   "(the sync gRPC server), which is most of mizarmp-addons' memory at 4,000 nodes (Memory).", ""])


def scale_memory_lines(run, rows):
    table_rows = [(f"{r['ports']:,}", f"{r.get('nodes', 0):,}", kib(scale_peak_rss(r, "index")),
                   kib(scale_peak_rss(r, "whole_list")), kib(scale_peak_rss(r, "etcd")), kib(scale_standby_rss(r)),
                   kib(scale_way(r, "etcd", "etcd_rss_kib") or None), kib(r.get("mock_rss_kib")),
                   kib(r.get("mock_hwm_kib")), fmt(r.get("create_s"), "s", 1),
                   fmt(r.get("create_ports_per_s"), "/s", 0)) for r in rows]

    def mib(v):
        return None if v is None else v / 1024
    picture = scale_plot(run, "fence_scale_rss.png", "Peak RSS", "MiB (log)", [
        scale_series(rows, "index", lambda r, w: mib(scale_peak_rss(r, w)), "mizarmp-addons, port index"),
        scale_series(rows, "whole_list", lambda r, w: mib(scale_peak_rss(r, w)), "mizarmp-addons, whole list"),
        scale_series(rows, "etcd", lambda r, w: mib(scale_peak_rss(r, w)), "mizarmp-addons, etcd, the leader"),
        scale_series(rows, "etcd", lambda r, w: mib(scale_standby_rss(r)), "mizarmp-addons, etcd, the standby"),
        ("mizarmp-mock (Alcor's side)", [r["ports"] for r in rows], [mib(r.get("mock_rss_kib")) for r in rows])])
    return (["### Memory", "", picture, ""]
            + table(["ports", "nodes", "mizarmp-addons peak RSS, index", "whole list", "etcd, leader",
                     "etcd, standby", "etcd's 3 members (RSS)", "mock RSS after creation", "mock peak RSS",
                     "creation", "ports created"], table_rows)
            + ["", "mizarmp-addons: VmHWM of each way's two servers (the one that took the publication and the "
                   "fences, the one that ran the idle passes), the larger; on etcd, of the two pairs' leaders and "
                   "of their standbys. etcd's members: their VmRSS together after the fences (their history of "
                   "the earlier sizes compacted away). The mock: its ports created by Alcor's "
                   "bulk create (`POST /ports/bulk`) over one kept-alive connection.", ""])


def scale_idle_lines(run, rows):
    table_rows = []
    for r in rows:
        for way, name in SCALE_WAYS:
            idle = scale_way(r, way, "idle")
            if idle:
                etcd_cpu = idle.get("etcd_cpu_ms_per_pass") if way == "etcd" else None
                table_rows.append((f"{r['ports']:,}", name, f"{idle.get('passes', 0):.0f}",
                                   ms(idle.get("addons_cpu_ms_per_pass"), 2), ms(idle.get("mock_cpu_ms_per_pass"), 2),
                                   ms(etcd_cpu, 2) if etcd_cpu else "", num(idle.get("requests_per_pass"), 1),
                                   bytes_text(idle.get("bytes_per_pass"))))
    cpu = scale_plot(run, "fence_scale_idle_cpu.png", "Idle reconcile: CPU of mizarmp-addons per pass",
                     "ms per pass (log)", [
                         scale_series(rows, way, lambda r, w: scale_way(r, w, "idle", "addons_cpu_ms_per_pass"), name)
                         for way, name in SCALE_WAYS])
    sent = scale_plot(run, "fence_scale_idle_bytes.png", "Idle reconcile: bytes Mizar-MP answers per pass",
                      "bytes per pass (log)", [
                          scale_series(rows, way, lambda r, w: scale_way(r, w, "idle", "bytes_per_pass"), name)
                          for way, name in SCALE_WAYS])
    cfg = run.fence_scale.get("config", {})
    return (["### The idle reconcile, per pass", "", cpu, "", sent, ""]
            + table(["ports", "way", "passes watched", "CPU mizarmp-addons", "CPU mock", "CPU etcd",
                     "requests to the mock", "bytes the mock answered"], table_rows)
            + ["", f"With the {cfg.get('cidrs', 1000):,} /32 fences in place: a second mizarmp-addons on the same "
                   f"store passing every {cfg.get('idle_interval_ms')} ms, watched for {cfg.get('idle_seconds')} s "
                   "after its first pass (passes counted by its `mizarmp_addons_enforcement_passes_total`). Requests "
                   "and bytes (the bodies of the answers) as the mock counts them (`/mock/state`). At the default interval of 10 s, a core's share is the CPU "
                   "per pass / 10 s. On etcd a second pair of replicas on the same keys: the CPU is both replicas' "
                   "(the leader's passes, the standby's polls of the store), and etcd's is its three members' "
                   "together.", ""])


def scale_publication_lines(rows):
    table_rows = []
    for r in rows:
        for way, name in SCALE_INDEX_WAYS:
            if not scale_way(r, way, "publish"):
                continue
            etcd_cpu = scale_way(r, way, "publish", "etcd_cpu_ms") if way == "etcd" else None
            table_rows.append((f"{r['ports']:,}", name, f"{g(r, way, 'publish', 'nodes', default=0):,}",
                               fmt(scale_way(r, way, "publish", "s"), "s", 2),
                               ms(scale_way(r, way, "publish", "per_node", "median_ms"), 2),
                               ms(scale_way(r, way, "publish", "per_node", "p99_ms"), 2),
                               ms(scale_way(r, way, "publish", "addons_cpu_ms"), 0),
                               ms(etcd_cpu, 0) if etcd_cpu else ""))
    return (["### Publication of every node", ""]
            + table(["ports", "way", "nodes", "all nodes", "per node, median", "p99", "CPU mizarmp-addons",
                     "CPU etcd"], table_rows)
            + ["", "On etcd the agents publish through both replicas, half each; the CPU is both replicas'.", ""])


def scale_failover_lines(run, rows):
    """The etcd replicas' failover at the largest size the etcd way was measured at."""
    measured = [r for r in rows if scale_way(r, "etcd", "failover")]
    if not measured:
        return []
    r = measured[-1]
    f = scale_way(r, "etcd", "failover")
    runs = [(str(i + 1), ms(a), ms(b)) for i, (a, b) in
            enumerate(zip(f.get("to_leads_ms", []), f.get("to_fence_ok_ms", [])))]
    runs.append(("median", ms(g(f, "leads", "median_ms")), ms(g(f, "fence_ok", "median_ms"))))
    ttl = g(run.fence_scale, "config", "etcd_lease_ttl_s")
    return (["### Failover of the etcd replicas", ""]
            + table(["run", "to the other replica leading", "to its FenceClusterNetwork answering OK"], runs)
            + ["", f"At {r['ports']:,} ports, the {g(run.fence_scale, 'config', 'cidrs', default=0):,} /32 fences "
                   f"in place, leader lease {ttl} s: kill -9 of the leader, and at once a FenceClusterNetwork of one "
                   "more port's /32 through the other replica, which answers once a leader's pass enforced it "
                   "(checked at the mock). Leading: its `mizarmp_addons_leader` gauge, polled every 10 ms. The "
                   "killed replica is started again as the standby of the next run.", ""])


def scale_cutoff_lines(run, rows):
    """A new port inside a fence: how long after its creation it was down, at each size."""
    table_rows = [(f"{r['ports']:,}", ms(scale_way(r, "cutoff", "published", "publish_ms")),
                   ms(scale_way(r, "cutoff", "published", "down_ms")),
                   ms(scale_way(r, "cutoff", "unpublished", "down_ms")))
                  for r in rows if scale_way(r, "cutoff", "published")]
    if not table_rows:
        return []
    interval = g(rows[-1], "cutoff", "reconcile_interval_ms")
    return (["### A new port inside a fence: time to its cut-off", ""]
            + table(["ports", "published node: its Publish answered", "published node: port down",
                     "node that never published: port down"], table_rows)
            + ["", "From the port's creation at the mock to the mock having it down (looked at every 5 ms), through "
                   f"mizarmp-addons on the port index's store passing every {interval} ms (the default), with the "
                   f"{g(run.fence_scale, 'config', 'cidrs', default=0):,} /32 fences in place and one more on each "
                   "new port's free address. On a published node the "
                   "simulated agent publishes the node's ports with the new one at once (a real agent's next look "
                   "comes on top, at most `publishIntervalMs`), and the publication wakes the leader's pass. A node "
                   "that never published, but which Alcor's node list (`GET /nodes`) names, is listed by "
                   "`binding:host_id` at the next interval's pass: its figure is bounded by the interval. A dead "
                   "node's ports are covered the same way once its lease lapses (`publicationLeaseSeconds`).", ""])


def scale_refusal_lines(run, rows):
    lines = []
    for r in rows:
        refused = r.get("whole_list_refused")
        if not refused:
            continue
        rpc = refused.get("rpc", {})
        # The server's message names the whole request; what Mizar-MP answered is the point.
        answer = re.search(r"HTTP \d+: [^);]*", rpc.get("why", ""))
        index_ok = g(r, "index", "measured")
        lines.append(f"- {r['ports']:,} ports, Mizar-MP refusing lists of "
                     f"{g(run.fence_scale, 'config', 'row_limit', default=0):,} rows or more: without the index a fence "
                     f"of one /32 answered {rpc.get('code', 'OK')} (Mizar-MP: `{answer.group(0) if answer else rpc.get('why', '')}`) after {ms(rpc.get('ms'))}, the port "
                     f"{'still up' if refused.get('port_up_after') else 'not up'} "
                     f"(**{'refused' if refused.get('refused') else 'not refused'}**); with the index the same size "
                     f"{'fenced and unfenced as measured above' if index_ok else 'was not measured'}.")
    return (["### Above the row limit", ""] + lines + [""]) if lines else []


def fence_scale_section(run):
    lines = ["## Fencing at scale: the port index vs the whole list", ""]
    rows = scale_rows(run)
    if not rows:
        return block(lines + [not_measured("no fence-scale.json in the work directory") + ".", ""])
    cfg = run.fence_scale.get("config", {})
    lines += ["`bench/fence_scale_driver.cc` (`mizarmp-bench-fence-scale`, issue 35): mizarmp-mock answering as Alcor "
              f"does (`--strict --dialect alcor`, port lists of {cfg.get('row_limit', 0):,} rows or more refused) "
              f"filled with each size's ports, {cfg.get('ports_per_node')} per simulated node (`binding:host_id` = "
              "the node); then controller-mode mizarmp-addons on SQLite, two ways one after the other on the same "
              "ports: with the port index (`portIndex`; the simulated node agents publish every node's ports with "
              f"`mizarmp.v1.PortIndex/Publish`, {cfg.get('publishers')} at a time, the publication lease "
              f"{cfg.get('lease_seconds')} s so that every node stays live; then sync(2), so that the rounds "
              "do not wait behind the bulk load's writeback) and, below the row limit, with the "
              f"whole list. Fence + unfence of one /32: median of {cfg.get('rounds')} pairs; fence of "
              f"{cfg.get('cidrs', 0):,} /32s: median of {cfg.get('many_rounds')}. "
              + ("The same on the same ports with two replicas on the etcd fence store and its port index (a "
                 "3-member etcd cluster on loopback), the publications spread over both replicas, the RPCs "
                 "through the leader. " if cfg.get("etcd") else "Not on etcd (the driver was given no --etcd). ")
              + "Every RPC is checked at the mock "
              "(the fenced ports down, the rest up). The machine was shared with other engineers' builds.", ""]
    lines += error_lines(run.fence_scale)
    measured = {r["ports"] for r in rows}
    missing = [int(n) for n in str(cfg.get("sizes", "")).split(",") if n.strip().isdigit() and int(n) not in measured]
    if missing:
        lines += [f"- **not measured**: {', '.join(f'{n:,}' for n in missing)} ports (asked for, but the driver "
                  "stopped before it wrote them; the log of the run says where).", ""]
    lines += (scale_latency_lines(run, rows) + scale_ack_lines(rows) + scale_memory_lines(run, rows) + scale_idle_lines(run, rows)
              + scale_publication_lines(rows) + scale_cutoff_lines(run, rows) + scale_failover_lines(run, rows)
              + scale_refusal_lines(run, rows))
    return block(lines)


# ------------------------------------------------------------------------- the fence set on a node
def spread(values):
    """(median, min, max) of `values`, or Nones."""
    return (median(values), min(values), max(values)) if values else (None, None, None)


def fence_set_row(label, values, show):
    mid, low, high = spread(values)
    return (label, show(mid), f"{show(low)} to {show(high)}" if values else "n/a")


def fence_set_section(run):
    d = run.fence_set
    lines = ["## A node enforcing 65,536 fences", ""]
    if not d:
        return block(lines + [not_measured("no fence-set.json in the work directory") + ".", ""])
    cfg = d.get("config", {})
    update = d.get("update_ms", {})
    traffic = d.get("traffic", {})

    def side(name, key):
        return [x[key] for x in traffic.get(name, []) if key in x]

    def gbit(x):
        return fmt(x, "Gbit/s", 2)
    lines += [f"`bench/fence_set_driver.cc` (`mizarmp-bench-fence-set`, issue 48 target 8): a node namespace "
              f"routing for {cfg.get('pods')} pod namespaces (a veth and a /32 route each, as agent mode wires "
              f"them); its host filter (`fence/host_filter.h`, nftables through libnftables) holding "
              f"{cfg.get('cidrs', 0):,} fenced /32s, no two adjacent (nftables held "
              f"{d.get('kernel_elements', 0):,} elements), and the same table in every pod "
              f"(`fence/pod_filters.h`), as a node agent enforces a set before it "
              f"acknowledges it. {cfg.get('rounds')} rounds, each measuring the "
              f"traffic without the set, then the updates, then the traffic with it; traffic runs "
              f"{cfg.get('seconds')} s from pod 0 to pod 1 through the node's forward hook and both "
              f"pods' own tables.", ""]
    lines += error_lines(d)
    rows = [fence_set_row("update: the whole set, into a node without it", update.get("whole", []), ms),
            fence_set_row("update: one fence more or one less (a delta)", update.get("one_apart", []), ms),
            fence_set_row("update: the last fence lifted (the table removed)", update.get("removal", []), ms),
            fence_set_row(f"update of every pod's table ({cfg.get('pods')}): the whole set",
                          update.get("pods_whole", []), ms),
            fence_set_row("update of every pod's table: one fence more or one less",
                          update.get("pods_one_apart", []), ms),
            fence_set_row("update of every pod's table: the last fence lifted",
                          update.get("pods_removal", []), ms),
            fence_set_row("TCP throughput (iperf3), without the set", side("without", "gbit_per_s"), gbit),
            fence_set_row("TCP throughput (iperf3), with the set", side("with", "gbit_per_s"), gbit),
            fence_set_row("UDP latency (sockperf ping-pong, one way), average, without", side("without", "avg_us"), us),
            fence_set_row("UDP latency, average, with the set", side("with", "avg_us"), us),
            fence_set_row("UDP latency, p99, without", side("without", "p99_us"), us),
            fence_set_row("UDP latency, p99, with the set", side("with", "p99_us"), us),
            fence_set_row("memory: the agent's peak RSS growth over the first update",
                          g(d, "memory", "driver_rss_growth_kib", default=[])[:1], kib),
            fence_set_row("memory: the kernel's unreclaimable slab growth while the set stands (node and pods)",
                          g(d, "memory", "kernel_slab_growth_kib", default=[]), kib)]
    lines += table(["", "median", f"range ({cfg.get('rounds')} rounds)"], rows) + [""]
    # Each round's with-set figure over the same round's without-set one: adjacent in time, so a
    # shared machine's drift falls on both.
    paired = {key: [b[key] / a[key] for a, b in zip(traffic.get("without", []), traffic.get("with", []))
                    if a.get(key) and b.get(key)] for key in ("gbit_per_s", "avg_us")}
    if paired["gbit_per_s"] and paired["avg_us"]:
        tput, lat = paired["gbit_per_s"], paired["avg_us"]
        mid, low, high = spread(side("without", "gbit_per_s"))
        noise = (high - low) / mid * 100
        lines += [f"Unfenced traffic with the set over without it, each round against its own (target: no more "
                  f"than noise, 2%): throughput {(median(tput) - 1) * 100:+.1f}% (rounds {(min(tput) - 1) * 100:+.0f}% "
                  f"to {(max(tput) - 1) * 100:+.0f}%), average latency {(median(lat) - 1) * 100:+.1f}% (rounds "
                  f"{(min(lat) - 1) * 100:+.0f}% to {(max(lat) - 1) * 100:+.0f}%). The rounds without the set "
                  f"alone spread {noise:.0f}% of their median throughput on this shared 2-core machine, so a 2% "
                  "difference cannot be told apart from noise here; what bounds the cost is the lookups: each "
                  "fenced address is one element "
                  "of a hash set (`hosts4`), so an unfenced packet pays one hash lookup per set, direction and "
                  "hook, whatever the number of fences.", "",
                  "What bounds a pod's update: a change that removes elements (or the table) waits out one "
                  "RCU grace period in the kernel, some 10 to 15 ms here whatever its size, so the pods are "
                  "changed 4 at a time and their waits overlap; adding elements costs well under a "
                  "millisecond a pod. A pod whose table holds nothing gets the whole set, one pod at a "
                  "time: libnftables parses it in CPU time and tens of MiB while it lasts (4 at a time "
                  "peaked 280 MiB, as did a copy of the set per pod, now one shared copy), and it is "
                  "what a restarted agent pays, once. The kernel holds each pod's set as the node's, so "
                  "the slab grows with pods times fences; at a more usual 1,000 fences a pod's set is "
                  "some 100 KiB.", ""]
    return block(lines)


# ------------------------------------------------------------------------- records at scale
def records_rows(run, section):
    """One section's rows of the records driver, by record count, smallest first."""
    rows = g(run.records, section, "by_size", default=[]) or []
    return sorted((r for r in rows if isinstance(r, dict) and r.get("records")), key=lambda r: r["records"])


def records_ends(run, section):
    """(baseline, largest) rows of one section; None with fewer than two sizes."""
    rows = records_rows(run, section)
    return (rows[0], rows[-1]) if len(rows) >= 2 else None


def records_ratio(run, section, *keys):
    """(largest's figure / baseline's, baseline, largest); (None, ...) without both."""
    ends = records_ends(run, section)
    if not ends:
        return None, None, None
    a, b = g(ends[0], *keys), g(ends[1], *keys)
    return (b / a if a and b is not None else None), ends[0], ends[1]


def records_target_rows(run):
    target = f"ADD and DEL median <= {RECORDS_RATIO_TARGET}x the baseline's (set here: the issue states none)"
    ratios = {op: records_ratio(run, "adddel", op, "median_ms") for op in ("add", "del")}
    if any(r[0] is None for r in ratios.values()):
        return [unmeasured_row("7. CNI at 10,000 records", target,
                               "no ADD/DEL at two sizes in records.json")]
    small, large = ratios["add"][1], ratios["add"][2]
    text = "; ".join(f"{op.upper()} {ms(g(large, op, 'median_ms'))} / {ms(g(small, op, 'median_ms'))} = "
                     f"**{ratio:.2f}x**" for op, (ratio, _, _) in ratios.items())
    for label, section, keys in (("GC, nothing to delete", "gc", ("keep_all", "median_ms")),
                                 ("`mizarmpctl attachments`", "attachments", ("latency", "median_ms")),
                                 ("GetFenceClients after a change", "getclients", ("after_change", "median_ms"))):
        ratio, a, b = records_ratio(run, section, *keys)
        if ratio is not None:
            text += f"; {label} {ms(g(b, *keys))} ({ratio:.0f}x)"
    ok = all(r[0] <= RECORDS_RATIO_TARGET for r in ratios.values())
    return [(f"7. CNI at {large['records']:,} records (against {small['records']:,})", target, text, verdict(ok))]


def records_table_rows(run):
    """(operation, figure per size...) for every measured operation."""
    def row(label, section, *keys, unit=ms):
        values = [g(r, *keys) for r in records_rows(run, section)]
        ratio = values[-1] / values[0] if len(values) >= 2 and values[0] and values[-1] is not None else None
        return [label] + [unit(v) for v in values] + [f"{ratio:.2f}x" if ratio is not None else "n/a"]

    rows = [row("ADD, median", "adddel", "add", "median_ms"), row("ADD, p99", "adddel", "add", "p99_ms"),
            row("DEL, median", "adddel", "del", "median_ms"), row("DEL, p99", "adddel", "del", "p99_ms"),
            row("`mizarmpctl attachments -o json`, median", "attachments", "latency", "median_ms", unit=lambda x: ms(x, 0)),
            row("... attachments listed", "attachments", "listed", unit=lambda x: fmt(x, "", 0)),
            row("GetFenceClients (node mode), first call", "getclients", "first_ms"),
            row("GetFenceClients, state dir unchanged, median", "getclients", "unchanged", "median_ms", unit=lambda x: ms(x, 2)),
            row("GetFenceClients, one record just rewritten, median", "getclients", "after_change", "median_ms"),
            row("GC, every record valid, median", "gc", "keep_all", "median_ms", unit=lambda x: ms(x, 0)),
            row("GC collecting the stale records", "gc", "collect_ms", unit=lambda x: ms(x, 0)),
            row("... stale records collected", "gc", "collect_check", "stale", unit=lambda x: fmt(x, "", 0)),
            row("... attachments left wrong (record, lock or port)", "gc", "collect_check", "attachments_wrong",
                unit=lambda x: fmt(x, "", 0))]
    return [r for r in rows if len(r) > 2]


def records_section(run):
    lines = ["## The CNI side on a node holding many attachment records", ""]
    if not run.records:
        return block(lines + [not_measured("no records.json in the work directory") + ".", ""])
    cfg = run.records.get("config", {})
    sizes = sorted({r["records"] for s in ("adddel", "attachments", "getclients", "gc") for r in records_rows(run, s)})
    lines += ["`bench/records_driver.cc` (`mizarmp-bench-records`, issue 35 target 7): one node per size, each with "
              "mizarmp-mock and its agent in a netns of its own and a state dir holding that many attachments as a "
              "successful ADD leaves them (complete record and lock file, written with `records::RecordStore`; "
              "its port created at the mock with the id, description and `binding:host_id` ADD gives it, in bulk "
              "while the mock's `never_ready` fault is on, so its agent makes no veth for them). Every record has a "
              "netns path of its own, a symlink to one of 8 real namespaces holding an eth0, so `mizarmpctl "
              "attachments` inspects an interface per record. The sizes take turns: ADD then DEL of a new pod "
              f"(real plugin, kubelet's `CNI_ARGS`), {cfg.get('iterations')} pairs per size after "
              f"{cfg.get('warmup')} warm-up pairs; `mizarmpctl attachments -o json` {cfg.get('ctl_rounds')} times; "
              "GetFenceClients of a node-mode mizarmp-addons: its first call, then "
              f"{cfg.get('getclients_calls')} calls on an unchanged state dir (its directory cached by the server), "
              f"then {cfg.get('getclients_calls')} each right after one record was rewritten (the directory read "
              f"again); GC naming every record valid {cfg.get('gc_rounds')} times, then one GC with "
              f"one record in {cfg.get('stale_every')} left out of the valid list, checked record by record "
              "(record, lock file, port at the mock).", ""]
    lines += error_lines(run.records)
    rows = records_table_rows(run)
    if rows:
        lines += table(["operation"] + [f"{n:,} records" for n in sizes] + ["largest / baseline"], rows) + [""]
    fill = run.records.get("fill", {})
    if fill:
        lines += ["Filling each node (not timed above): " + ", ".join(
            f"{int(k):,} records in {f.get('ports_s', 0) + f.get('records_s', 0):.1f} s"
            for k, f in sorted(fill.items(), key=lambda kv: int(kv[0]))) + ".", ""]
    return block(lines)


# ----------------------------------------------------------------------------------- misses
def profiles_intro(run):
    perf_probe = read_text(run.profile_path("perf-probe.txt"))
    perf_hw = "not supported" not in perf_probe and perf_probe != ""
    return block([
        "## What bounds each miss, and what would move it",
        "",
        "Profiles: `valgrind --tool=callgrind` (instruction counts; repeatable on a shared machine). "
        f"`perf stat -e instructions` {'works' if perf_hw else 'reports the hardware counters as not supported on this VM'}, "
        "so for the plugin perf gives software counters only (below); the servers are sampled with `perf record -e cpu-clock`.",
        ""])


def add_miss(run):
    add_ratio = run.latency.get("add_ratio_median")
    ver, ver_ptp = run.startup_ms("version_mizarmp"), run.startup_ms("version_ptp")
    if add_ratio is None or add_ratio <= RATIO_TO_PTP_TARGET or not (ver and ver_ptp):
        return ""
    mz_add, pt_add = run.side("mizarmp", "add", "median_ms"), run.side("ptp", "add", "median_ms")
    lines = ["### 1. ADD over http://: start-up and the network work",
             "",
             f"- Split each median ADD into start-up (its VERSION median) and the rest: mizarmp {ms(ver)} + "
             f"{ms(mz_add - ver)}, ptp {ms(ver_ptp)} + {ms(pt_add - ver_ptp)}. 0.6x of ptp's ADD is "
             f"{ms(0.6 * pt_add)}."]
    cg_add = callgrind_total(run.profile_path("callgrind.ADD"))
    if cg_add:
        entries = annotate_entries(run.profile_path("annotate.ADD.txt"))
        lines += [f"- Instructions (callgrind) of one ADD: {mi(cg_add)}, of which under `main` "
                  f"{mi(inclusive(entries, 'main'))} and the plugin's `cni::Run` "
                  f"{mi(inclusive(entries, 'mizarmp::cni::Run'))}. Top of the ADD profile (inclusive):",
                  ""] + profile_table(entries, 18)
    return block(lines + [""])


def del_miss(run):
    lat = run.latency
    del_ratio = lat.get("del_ratio_median")
    if del_ratio is None or del_ratio <= RATIO_TO_PTP_TARGET:
        return ""
    mz_del, pt_del = run.side("mizarmp", "del", "median_ms"), run.side("ptp", "del", "median_ms")
    kdel = g(run.kernel, "ip_veth_del", "median_ms")
    kq = g(run.kernel, "ip_link_show", "median_ms")
    teardown = sub(kdel, kq)
    later_del = run.side("agent_unplugs_later", "del", "median_ms")
    lines = ["### 1. DEL: the kernel's veth teardown inside the controller's answer",
             "",
             f"- DEL median mizarmp {ms(mz_del)} vs ptp {ms(pt_del)}. The plugin's DEL is start-up, its lock and "
             "record, and one `DELETE`; the mock answers that `DELETE` only after its agent has deleted the veth "
             "pair, as ptp's DEL deletes its own."]
    if teardown is not None:
        lines.append(f"- The kernel alone, in the same run: `ip link del` of a veth pair across two netns {ms(kdel)} median "
                     f"against {ms(kq)} for `ip link show` (the same exec and netlink set-up): the teardown is "
                     f"~{ms(teardown)} (`unregister_netdevice` waits for RCU grace periods), "
                     + ("more than" if teardown > 0.6 * pt_del else "most of") + f" 0.6x of ptp's DEL ({ms(0.6 * pt_del)}).")
    if later_del is not None:
        lines.append(f"- Against an agent that removes the NIC after the controller answered, the same plugin's DEL takes "
                     f"{ms(later_del)} ({num(lat.get('unplug_later_del_ratio_median'))}x ptp): what is left is the "
                     "plugin's own work. Which of the two a deployment sees is its controller's choice; the plugin "
                     "waits for the `DELETE`'s answer either way, since answering DEL before the controller has the "
                     "port gone would give up its leak-free guarantee.")
    cg_del = callgrind_total(run.profile_path("callgrind.DEL"))
    if cg_del:
        lines.append(f"- Instructions of one DEL: {mi(cg_del)}.")
    return block(lines + [""])


HTTPS_PROFILE_PARTS = ("SSL_CTX_new_ex", "ssl_load_ciphers", "ERR_load_strings_const", "SSL_do_handshake",
                       "ssl_derive", "EVP_PKEY_keygen")


def https_profile_lines(run):
    cg_https = callgrind_total(run.profile_path("callgrind.ADD-https"))
    cg_add = callgrind_total(run.profile_path("callgrind.ADD"))
    if not (cg_https and cg_add):
        return []
    cg_full = callgrind_total(run.profile_path("callgrind.ADD-https-full"))
    entries = annotate_entries(run.profile_path("annotate.ADD-https.txt"))
    parts = {name: mi(inclusive(entries, name)) for name in HTTPS_PROFILE_PARTS}
    return ([f"- Instructions (callgrind) of one ADD over https:// that resumes: {mi(cg_https)} ({mi(cg_full)} "
             f"with a full handshake) against {mi(cg_add)} over http://. Of the difference: `SSL_CTX_new` "
             f"{parts['SSL_CTX_new_ex']} (of which `ssl_load_ciphers` {parts['ssl_load_ciphers']}: "
             "OpenSSL 3 fetches every cipher and digest the TLS code knows from its provider, and the first "
             "fetch of each kind constructs every algorithm the provider offers), OpenSSL's error strings "
             f"{parts['ERR_load_strings_const']} (loaded by libcrypto whenever a thread first touches its "
             f"error queue), the resumed handshake {parts['SSL_do_handshake']} (the ECDHE key share "
             f"{parts['EVP_PKEY_keygen']} and its derivation {parts['ssl_derive']}, the key schedule); "
             "the kept session holds no certificate, so reading it decodes no key. Top of its profile (inclusive):",
             ""] + profile_table(entries, 14) + [""])


def https_miss(run):
    misses = [(side, label) for side, label in
              (("https_ca_file", "`tls.caFile`"), ("https_system_store", "the system trust store"))
              if (run.latency.get(side + "_add_ratio_median") or 0) > HTTPS_TO_HTTP_TARGET]
    if not misses:
        return ""
    mz_add = run.side("mizarmp", "add", "median_ms")
    lines = ["### 2. ADD over https://", ""]
    for side, label in misses:
        lines.append(f"- With {label}: {ms(run.side(side, 'add', 'median_ms'))} against {ms(mz_add)} over http://, TLS "
                     f"adds {ms(run.side(side, 'add', 'median_ms') - mz_add)} (CPU "
                     f"{ms(run.side(side, 'add_cpu', 'median_ms'), 2)} against "
                     f"{ms(run.side('mizarmp', 'add_cpu', 'median_ms'), 2)}; peak RSS "
                     f"{kib(run.side(side, 'add_maxrss_kib', 'max'))} against "
                     f"{kib(run.side('mizarmp', 'add_maxrss_kib', 'max'))}), with the session resumed.")
    lines += https_profile_lines(run)
    lines.append("- What bounds it: every plugin process is new, so it pays OpenSSL 3's set-up (`SSL_CTX_new`'s "
                 "provider construction, the error strings) and the pages it touches before its first byte of TLS; "
                 "with the certificate work gone (the resumed session), that set-up is most of what is left, and "
                 "it alone is several times the http:// ADD's own instructions. A filtering provider that offers "
                 "libssl only the ciphers and digests TLS uses (tried: OpenSSL's own test suite builds one) cut a "
                 "handshake's instructions by about a tenth, too little for the complexity. What moves it is no "
                 "TLS in the plugin process: the node's relay (`relaySocket`, README \"The node's relay\"), a "
                 "long-lived mizarmp-addons that keeps the controller connections and that the plugin reaches over "
                 "a unix socket, as Cilium's and Antrea's plugins hand their work to their node agent.")
    relay_ratio = run.latency.get("https_relay_add_ratio_median")
    if relay_ratio is not None:
        lines.append(f"- Through the relay, in the same run: {ms(run.side('https_relay', 'add', 'median_ms'))} against "
                     f"{ms(mz_add)} over http:// (**{num(relay_ratio)}**; CPU "
                     f"{ms(run.side('https_relay', 'add_cpu', 'median_ms'), 2)}, peak RSS "
                     f"{kib(run.side('https_relay', 'add_maxrss_kib', 'max'))}): the plugin's part of an https "
                     "ADD is then an http ADD over a unix socket, and the TLS is the relay's, on a connection it keeps. "
                     "A node without the relay (or a plugin whose relay fails) gets the figures above.")
    return block(lines + [""])


def version_miss(run):
    ratio = run.version_ratio()
    if ratio is None or ratio <= VERSION_TO_PTP_TARGET:
        return ""
    return block(["### 3. VERSION",
                  "",
                  f"- mizarmp {ms(run.startup_ms('version_mizarmp'), 2)}, ptp {ms(run.startup_ms('version_ptp'), 2)}, "
                  f"fork+exec of /bin/true {ms(run.startup_ms('exec_bin_true'), 2)}; instructions "
                  f"{mi(callgrind_total(run.profile_path('cg.version')))}.",
                  ""])


def peak_rss_miss(run):
    rss = run.peak_add_rss()
    if rss is None or rss <= PEAK_RSS_TARGET_KIB:
        return ""
    lines = ["### 3. Peak RSS",
             "",
             f"- The largest ADD peaked at {kib(rss)}; VERSION peaks at {kib(run.startup_rss('version_mizarmp'))}; "
             "the rest is the plugin's heap and the pages its run touches."]
    if run.side("https_relay", "add_maxrss_kib", "max"):
        lines.append(f"- The largest are the https sides without the relay: OpenSSL's set-up and the pages it touches "
                     f"(see 2.). Through the node's relay an https ADD peaked at "
                     f"{kib(run.side('https_relay', 'add_maxrss_kib', 'max'))}, as over http:// "
                     f"({kib(run.side('mizarmp', 'add_maxrss_kib', 'max'))}): no TLS runs in the process.")
    lines.append("- A peak RSS counts the executable's pages the process maps, and this kernel maps a file's page cache "
                 "a folio at a time, however the file's folios fell when it was written: by hand on 2026-11-27, one "
                 "plugin binary's VERSION peaked at 2324 KiB (68 page faults) and, run from a byte-identical `cp` of it, "
                 "at 2848 KiB (57 page faults: fewer, larger folios). A few hundred KiB between runs, or between two "
                 "builds of nearly the same code (this run's VERSION against the previous run's), say nothing about "
                 "the code.")
    return block(lines + [""])


def readiness_miss(run):
    misses = [(d, over, gets, budget) for _, d, over, gets, budget in readiness_checks(run)
              if readiness_met(over, gets, budget) is False]
    if not misses:
        return ""
    lines = ["### 4. Readiness", ""]
    for d, over, gets, budget in misses:
        lines.append(f"- d = {d} ms: {ms(over, 2)} over ADD(0) + d with {num(gets, 0)} GETs (budget "
                     f"{budget}). Between the NIC's arrival and the controller's answer saying ready "
                     "lie the agent's last steps (bridging the host end, bringing it up) and one GET round trip; a GET "
                     "that lands before them waits for the 1, 2, 4 ms re-polls.")
    return block(lines + [""])


def perf_stat_counters(path):
    """counter -> value of a `perf stat -x ,` output file."""
    values = {}
    for line in read_text(path).splitlines():
        parts = line.split(",")
        if len(parts) >= 3 and parts[0] and not line.startswith("#"):
            values[parts[2]] = parts[0]
    return values


def plugin_perf_stat(run):
    counted = [(c, perf_stat_counters(run.profile_path(f"perf.{c}"))) for c in ("ADD", "DEL")]
    parts = [f"{c}: " + ", ".join(f"{k} {v}" for k, v in vals.items()) for c, vals in counted if vals]
    if not parts:
        return ""
    return block(["perf stat (software counters) of one mizarmp " + "; ".join(parts) + ".", ""])


def rpc_analysis(run, method):
    """What bounds `method`'s calls/s against the bare server, from the server CPU and perf samples."""
    m = run.rpc.get(method, {})
    if not m.get("measured"):
        return ""
    ratio = m["ratio_calls_per_s"]
    a_cpu = g(m, "mizarmp-addons", "server_cpu_us_per_call_median")
    b_cpu = g(m, "bare", "server_cpu_us_per_call_median")
    h_cpu = g(m, "bare+health", "server_cpu_us_per_call_median")
    lines = [f"### {method} ({'misses' if ratio < RPC_RATIO_TARGET else 'meets'} its target: {ratio:.2f})",
             "",
             f"- Calls/s on 2 shared CPUs swing between rounds (the 'each round' column), so the steadier figure is "
             f"the server's CPU per call: mizarmp-addons {us(a_cpu)}, bare {us(b_cpu)}, bare with "
             f"gRPC's default health service {us(h_cpu)}. Clients and server share the 2 CPUs, so the "
             f"server's extra CPU per call ({us(sub(a_cpu, b_cpu))}) is taken from the calls."]
    threads = {srv: perf_comm(run.perf_path(f"perf.{srv}.{method}.data.comm.txt"))
               for srv in ("mizarmp-addons", "bare", "bare+health")}
    if any(threads.values()):
        lines.append("- `perf record -a -e cpu-clock -g` during the last round of each server, the server's threads as a "
                     "share of all samples: " + "; ".join(f"{k}: {', '.join(f'{c} {pc:.2f}%' for c, pc in v[:4]) or 'n/a'}"
                                                          for k, v in threads.items()) + ".")
    libraries = {srv: shares_by_library(perf_rows(run.perf_path(f"perf.{srv}.{method}.data.sym.txt")))
                 for srv in ("mizarmp-addons", "bare")}
    if libraries["mizarmp-addons"]:
        lines.append("- The server's samples by library: " + "; ".join(
            f"{srv}: " + ", ".join(f"{k} {v:.0f}%" for k, v in shares[:6]) for srv, shares in libraries.items() if shares)
            + ".")
    symbols = perf_rows(run.perf_path(f"perf.mizarmp-addons.{method}.data.sym.txt"))
    if symbols:
        lines.append("- mizarmp-addons' top symbols: " + "; ".join(
            f"{pc:.2f}% {short_sym(sym)} ({dso})" for pc, dso, sym in symbols[:6]) + " (shares of all samples).")
    sqlite = dict(libraries["mizarmp-addons"]).get("SQLite", 0.0)
    if method == "ListClusterFence" and ratio < RPC_RATIO_TARGET and sqlite >= 5:
        lines.append(f"- What bounds it: SQLite is still {sqlite:.0f}% of the server's samples although repeated snapshots "
                     "are served from memory: each call steps `PRAGMA data_version` under the store's one mutex (to see "
                     "another connection's commits), so the 8 clients' calls are serialised on it.")
        lines.append("- What would move it (fence/ owners): check `data_version` at most once per short interval, or "
                     "only in the reconcile loop when a single server owns the file (a lock file would make that "
                     "explicit), leaving the list call the bare handler plus building the response.")
    elif ratio < RPC_RATIO_TARGET:
        lines.append("- What would move it: the server's CPU per call above the bare server's, where the libraries and "
                     "symbols above put it.")
    elif method == "Probe":
        lines.append("- Probe meets its target" + run.previous.note(" (previous run {})", "probe_ratio")
                     + ": mizarmp-addons serves its own sync health service and runs no gRPC callback `nexting_thread`s "
                     "(their share above); its CPU per call is within "
                     + (f"{100 * (a_cpu / b_cpu - 1):.0f}%" if a_cpu and b_cpu else "n/a") + " of the bare server's.")
    return block(lines + [""])


def getclients_miss(run):
    gc = run.getclients
    whole = g(gc, "latency", "median_ms")
    one_node = g(gc, "one_node", "latency", "median_ms")
    if not gc.get("measured") or max(whole or 0, one_node or 0) <= GETCLIENTS_TARGET_MS:
        return ""
    samples = perf_rows(run.perf_path("perf.GetFenceClients.data.sym.txt"))
    total = sum(r[0] for r in samples)
    kinds = {k: 0.0 for k in ("JSON parsing (nlohmann)", "kernel", "malloc/free",
                              "record decoding and the rest of mizarmp-addons", "other")}
    for pc, dso, sym in samples:
        kinds[kind_of_getclients_sample(dso, sym)] += pc
    per_record = whole * 1000 / gc["records"] if whole else None
    lines = ["### GetFenceClients: building the answer",
             "",
             f"- {ms(whole)} for {gc['records']:,} records = {us(per_record)} per record (narrowed to one "
             f"node: {ms(one_node)}). The records are cached (records/cache.h), so a call stats each network "
             "directory and then walks every cached record: parses each pod address into a CIDR, groups by host "
             "and merges each node's list; the `hostId` filter skips other nodes' records but still visits them. "
             f"Server CPU per call: {ms(gc.get('server_cpu_ms_per_call'))} ({gc.get('profiled_calls')} "
             "calls profiled back to back)."]
    if total:
        lines.append("- `perf record -e cpu-clock` of mizarmp-addons during those calls, its samples by kind: "
                     + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in kinds.items() if v) + ". Top symbols: "
                     + "; ".join(f"{pc:.2f}% {short_sym(sym)} ({dso})" for pc, dso, sym in samples[:6]) + ".")
    lines.append("- What would move it (fence/ owners): keep the merged CIDR list per node beside the cached records "
                 "(recomputed only for a directory that changed), and index the records by host id, so an unchanged "
                 "cluster costs one `stat` per network plus copying 100 short lists into the response.")
    return block(lines + [""])


def fence_cpu_floor(name, r, cores):
    """What the RPC's CPU alone makes it take on `cores` cores, and whether that explains its time."""
    cpu = (r.get("addons_cpu_ms") or 0) + (r.get("mock_cpu_ms") or 0)
    if not cpu:
        return []
    floor = cpu / cores
    bound = ("so it is bound by CPU, not by round trips." if floor >= 0.85 * r.get("ms", 0) else
             f"so CPU explains {ms(floor, 0)} of its {ms(r.get('ms'), 0)}; the rest is waiting on round trips.")
    return [f"- {name}: mizarmp-addons used {ms(r.get('addons_cpu_ms'), 0)} of CPU and the mock "
            f"{ms(r.get('mock_cpu_ms'), 0)}: on {cores} cores the RPC cannot take less than "
            f"{ms(floor, 0)} however many connections carry the updates, {bound}"]


def fence_miss(run, store_name, f):
    ff, uf = f.get("fence", {}), f.get("unfence", {})
    if not fence_measured(f) or max(ff["ms"], uf["ms"]) <= FENCE_TARGET_MS:
        return ""
    lines = [f"### FenceClusterNetwork / Unfence on {store_name} (misses 150 ms)",
             "",
             f"- fence {ms(ff.get('ms'))}, unfence {ms(uf.get('ms'))} for {f.get('cidrs'):,} CIDRs over "
             f"{f.get('ports'):,} ports: {ff.get('rest_requests')} REST calls = one port list plus one `PUT` "
             "(admin_state_up) per fenced port, the `PUT`s spread over the `updateConnections` connections."]
    for name, r in (("fence", ff), ("unfence", uf)):
        lines += fence_cpu_floor(name, r, run.cores())
    lines.append("- Where that CPU goes: the port list, which asks only for the members the fence reads "
                 "(`?fields=`: ~180 bytes of JSON per port, 1.8 MB rather than 5 MB whole), and the `PUT`s. The mock "
                 "cuts each selection from its ready documents; mizarmp-client reads the list with simdjson, whose "
                 "events fill each port's members with no tree (some 14 ms of the list's CPU); then one `PUT` per "
                 "fenced port, each a round trip with an HTTP request and answer, and a port document, on both sides.")
    sqlite = run.fence_store("SQLite")
    if store_name == "etcd" and g(sqlite, "fence", "measured"):
        lines.append(f"- The same RPCs on the SQLite store took {ms(sqlite['fence'].get('ms'))} and "
                     f"{ms(sqlite.get('unfence', {}).get('ms'))}: the rest is the store. A fence changes it three "
                     "times (the fence itself, the held ports before the first update, what the pass completed after "
                     "the last), an unfence twice (it holds no new ports), each a transaction that a quorum of the three "
                     "members, which share these cores "
                     "and one disk, fsyncs before it answers, and each rewriting every shard it touches (a fence of "
                     "1,000 CIDRs touches all 64). The fence (or the lift) is stored while the port list is read, so "
                     "only the held ports and the completion are on the RPC's time. It reads the store twice (the fence "
                     "limit's check, the pass's plan, the latter also while the list is read), each a linearizable "
                     "keys-only probe when nothing but this replica changed the prefix; the changes start from the state "
                     "the last read or commit left, and the gauges after the pass are counted from what it read and wrote.")
        lines.append("- What would move it: on the Mizar-MP side a bulk update (one call for the 1,000 `PUT`s whose CPU is "
                     "above). Not the held ports written in the fence's own transaction: they come from the port list, so "
                     "that transaction would wait for the list, as the held ports' own transaction does now.")
    else:
        lines.append("- What would move it: on the controller side, a bulk update. The `PUT`s already overlap, so more "
                     "connections would not help on these cores.")
    return block(lines + [""])


def misses_section(run):
    parts = [profiles_intro(run), add_miss(run), del_miss(run), https_miss(run), version_miss(run),
             peak_rss_miss(run), readiness_miss(run), plugin_perf_stat(run)]
    parts += [rpc_analysis(run, method) for method in ("Probe", "ListClusterFence")]
    parts.append(getclients_miss(run))
    parts += [fence_miss(run, store_name, f) for store_name, f in run.fence_stores]
    return join_blocks(parts)


# -------------------------------------------------------------------------------------- main
SECTIONS = (header_section, this_run_section, targets_section, what_changed_section, how_measured_section,
            latency_section, readiness_section, burst_section, footprint_section, addons_section, soak_section,
            store_section, failover_section, fence_scale_section, fence_set_section, records_section,
            misses_section)


def render(run):
    return join_blocks(section(run) for section in SECTIONS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="bench/run.sh's work directory")
    ap.add_argument("--quick", default="", help="non-empty for a quick (smoke) run")
    ap.add_argument("--previous", default=DEFAULT_PREVIOUS,
                    help="the earlier run to compare with (default: %(default)s)")
    ap.add_argument("--plots", default="", help="draw the plots into this directory (the report's own)")
    a = ap.parse_args()
    print(render(Run(a.work, a.quick, Previous(a.previous), a.plots)))


if __name__ == "__main__":
    sys.exit(main())
