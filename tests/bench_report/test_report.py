#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""bench/report.py rendered on a committed work directory (a trimmed quick run of bench/run.sh,
tests/bench_report/work): every section is there, the run's figures are in it, the earlier run's
figures come from bench/previous.json, and a driver that left no results makes the report say
"not measured" rather than fail."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REPORT = os.path.join(ROOT, "bench", "report.py")
PREVIOUS = os.path.join(ROOT, "bench", "previous.json")
FIXTURE = os.path.join(HERE, "work")

sys.path.insert(0, os.path.join(ROOT, "bench"))
import plot  # noqa: E402  (bench/plot.py: whether matplotlib is there)

HEADINGS = [
    "# Benchmarks",
    "## This run",
    "## Figures against their targets",
    "## What changed since the previous run",
    "## How it is measured",
    "### ADD and DEL latency (ports ready at once), http:// and https://",
    "### Readiness latency",
    "### Burst",
    "### Footprint and start-up",
    "### mizarmp-addons",
    "## Soak",
    "## Fence store: SQLite vs etcd",
    "## Failover",
    "## Fencing at scale: the port index vs the whole list",
    "## What bounds each miss, and what would move it",
]

# The fence-scale section's pictures, drawn beside the report when report.py is given --plots.
PLOTS = ["fence_scale_latency.png", "fence_scale_rss.png", "fence_scale_idle_cpu.png", "fence_scale_idle_bytes.png"]

INPUTS = ["cni.json", "addons.json", "addons-etcd.json", "soak.json", "store.json", "fence-scale.json",
          "machine.txt", "commands.txt"]


def render(work, *extra):
    """(exit code, stdout, stderr) of report.py on `work`."""
    r = subprocess.run([sys.executable, REPORT, "--work", work, "--quick", "1", *extra],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def fixture(name):
    with open(os.path.join(FIXTURE, name)) as f:
        return json.load(f)


class FullRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rc, cls.out, cls.err = render(FIXTURE)

    def test_renders_without_complaint(self):
        self.assertEqual(self.rc, 0, self.err)
        self.assertEqual(self.err, "")

    def test_every_section_heading_is_present(self):
        lines = self.out.splitlines()
        for heading in HEADINGS:
            self.assertIn(heading, lines)
        self.assertTrue(any(line.startswith("### CNI: ") for line in lines))
        self.assertTrue(any(line.startswith("### Server: ") for line in lines))

    def test_sections_come_in_order(self):
        lines = self.out.splitlines()
        at = [lines.index(h) for h in HEADINGS]
        self.assertEqual(at, sorted(at))

    def test_the_runs_figures_are_in_it(self):
        cni, addons, store = fixture("cni.json"), fixture("addons.json"), fixture("store.json")
        lat = cni["latency"]
        self.assertIn(f"| mizarmp, http:// | {lat['mizarmp']['add']['median_ms']:.2f} ms |", self.out)
        self.assertIn(f"= **{lat['add_ratio_median']:.2f}**", self.out)
        version = cni["footprint"]["startup"]["version_mizarmp"]["median_ms"]
        self.assertIn(f"| **mizarmp VERSION** | {version:.2f} ms |", self.out)
        probe = addons["rpc"]["Probe"]
        self.assertIn(f"= **{probe['ratio_calls_per_s']:.2f}**", self.out)
        fence = addons["fence"]["fence"]
        self.assertIn(f"fence **{fence['ms']:.1f} ms**", self.out)
        failover = store["failover"]["port_disabled"]["median_ms"]
        self.assertIn(f"| {failover:.0f} ms |", self.out)
        cycles = fixture("soak.json")["cni"]["cycles"]
        self.assertIn(f"### CNI: {cycles:,} ADD/DEL cycles", self.out)

    def test_the_machine_and_commands_are_in_it(self):
        with open(os.path.join(FIXTURE, "machine.txt")) as f:
            commit = next(line.split("=", 1)[1] for line in f.read().splitlines() if line.startswith("commit="))
        self.assertIn(f"| source | commit {commit} (", self.out)
        self.assertIn("mizarmp-bench-cni --bin-dir", self.out)

    def test_the_previous_runs_figures_come_from_its_file(self):
        with open(PREVIOUS) as f:
            previous = json.load(f)
        self.assertIn(f"The previous run (commit {previous['commit']})", self.out)
        figures = previous["figures"]
        self.assertIn(f"previous run {figures['add_ms']} / {figures['ptp_add_ms']} ms", self.out)
        self.assertIn(f"ADD median {figures['add_ms']} -> ", self.out)
        self.assertNotIn("{", self.section("## What changed since the previous run"))

    def test_the_fence_scale_figures_are_in_it(self):
        sizes = sorted(fixture("fence-scale.json")["sizes"], key=lambda r: r["ports"])
        section = self.section("## Fencing at scale: the port index vs the whole list")
        for row in sizes:
            index = row["index"]
            self.assertIn(f"| {row['ports']:,} | port index | {index['fence_one']['ms']:.1f} ms |", section)
            self.assertIn(f"| {row['ports']:,} | port index | {row['nodes']:,} | {index['publish']['s']:.2f} s |",
                          section)
        below = [r for r in sizes if r["whole_list"].get("measured")]
        self.assertTrue(below, "the fixture has a size below the row limit")
        whole = below[0]["whole_list"]
        self.assertIn(f"| {below[0]['ports']:,} | whole list | {whole['fence_one']['ms']:.1f} ms |", section)
        self.assertIn("(**refused**)", section)

    def test_the_etcd_way_is_beside_the_others(self):
        sizes = sorted(fixture("fence-scale.json")["sizes"], key=lambda r: r["ports"])
        section = self.section("## Fencing at scale: the port index vs the whole list")
        for row in sizes:
            etcd = row["etcd"]
            self.assertIn(f"| {row['ports']:,} | etcd, 2 replicas | {etcd['fence_one']['ms']:.1f} ms |", section)
            self.assertIn(f"| {row['ports']:,} | etcd, 2 replicas | {row['nodes']:,} | {etcd['publish']['s']:.2f} s |",
                          section)
            self.assertIn(f"| {etcd['idle']['etcd_cpu_ms_per_pass']:.2f} ms |", section)
        failover = sizes[-1]["etcd"]["failover"]
        self.assertIn("### Failover of the etcd replicas", section)
        self.assertIn(f"| median | {failover['leads']['median_ms']:.1f} ms | {failover['fence_ok']['median_ms']:.1f} ms |",
                      section)
        ratio = sizes[-1]["etcd"]["fence_one"]["ms"] / sizes[0]["etcd"]["fence_one"]["ms"]
        row = next(line for line in self.out.splitlines() if line.startswith("| issue 35: fence of one /32, etcd"))
        self.assertIn(f"= **{ratio:.2f}x**", row)

    def test_a_new_ports_cut_off_is_shown_where_it_was_measured(self):
        sizes = sorted(fixture("fence-scale.json")["sizes"], key=lambda r: r["ports"])
        section = self.section("## Fencing at scale: the port index vs the whole list")
        self.assertIn("### A new port inside a fence: time to its cut-off", section)
        measured = [r for r in sizes if r.get("cutoff", {}).get("measured")]
        self.assertTrue(measured, "the fixture has a size with the cut-off measured")
        for row in measured:
            cut = row["cutoff"]
            self.assertIn(f"| {row['ports']:,} | {cut['published']['publish_ms']:.1f} ms | "
                          f"{cut['published']['down_ms']:.1f} ms | {cut['unpublished']['down_ms']:.1f} ms |", section)
        for row in sizes:
            if row not in measured:
                self.assertNotIn(f"| {row['ports']:,} | ", section.split("time to its cut-off")[1].split("###")[0])

    def test_the_fence_scale_targets_are_checked(self):
        sizes = sorted(fixture("fence-scale.json")["sizes"], key=lambda r: r["ports"])
        small, large = sizes[0]["index"], sizes[-1]["index"]
        ratio = large["fence_one"]["ms"] / small["fence_one"]["ms"]
        row = next(line for line in self.out.splitlines() if line.startswith("| issue 35: fence of one /32"))
        self.assertIn(f"{sizes[-1]['ports']:,} over {sizes[0]['ports']:,} ports", row)
        self.assertIn(f"= **{ratio:.2f}x**", row)
        self.assertIn("**met**" if ratio <= 1.5 else "**not met**", row)
        self.assertTrue(any(line.startswith("| issue 35: mizarmp-addons peak RSS") for line in self.out.splitlines()))

    def test_without_a_plots_directory_no_picture_is_claimed(self):
        self.assertNotIn("![", self.out)
        self.assertIn("(plot not drawn: report.py was given no --plots directory)", self.out)

    def test_a_quick_run_says_so(self):
        self.assertIn("> **QUICK RUN**", self.out)

    def section(self, heading):
        start = self.out.index(heading + "\n")
        end = self.out.find("\n## ", start + 1)
        return self.out[start:end if end >= 0 else None]


@unittest.skipUnless(plot.available(), "python3-matplotlib is not installed")
class Plots(unittest.TestCase):
    def setUp(self):
        self.plots = tempfile.mkdtemp(prefix="bench-report-plots.")

    def tearDown(self):
        shutil.rmtree(self.plots)

    def test_each_plot_is_drawn_and_linked(self):
        rc, out, err = render(FIXTURE, "--plots", self.plots)
        self.assertEqual(rc, 0, err)
        for name in PLOTS:
            path = os.path.join(self.plots, name)
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
            self.assertIn(f"]({name})", out)

    def drawn(self):
        files = {}
        for name in PLOTS:
            with open(os.path.join(self.plots, name), "rb") as f:
                files[name] = f.read()
        return files

    def test_the_same_figures_draw_the_same_files(self):
        render(FIXTURE, "--plots", self.plots)
        first = self.drawn()
        render(FIXTURE, "--plots", self.plots)
        self.assertEqual(self.drawn(), first)


class MissingInputs(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="bench-report-test.")
        for name in INPUTS:
            shutil.copy(os.path.join(FIXTURE, name), self.work)

    def tearDown(self):
        shutil.rmtree(self.work)

    def render_without(self, *names):
        for name in names:
            os.remove(os.path.join(self.work, name))
        rc, out, err = render(self.work)
        self.assertEqual(rc, 0, err)
        return out

    def row(self, out, figure):
        return next(line for line in out.splitlines() if line.startswith(f"| {figure}"))

    def test_without_the_cni_results(self):
        out = self.render_without("cni.json")
        self.assertIn("not measured", self.row(out, "1-2. ADD and DEL medians"))
        self.assertIn("not measured", self.row(out, "3. VERSION"))
        for heading in HEADINGS:
            self.assertIn(heading, out.splitlines())

    def test_without_the_addons_results(self):
        out = self.render_without("addons.json", "addons-etcd.json")
        self.assertIn("not measured", self.row(out, "Probe calls/s"))
        self.assertIn("not measured", self.row(out, "GetFenceClients"))
        self.assertIn("not measured", self.row(out, "5. FenceClusterNetwork / Unfence"))

    def test_without_the_fence_scale_results(self):
        out = self.render_without("fence-scale.json")
        self.assertIn("not measured", self.row(out, "issue 35: fence of one /32"))
        self.assertIn("not measured", self.row(out, "issue 35: mizarmp-addons peak RSS"))
        start = out.index("## Fencing at scale: the port index vs the whole list\n")
        self.assertIn("not measured", out[start:out.index("\n## ", start + 1)])

    def test_without_the_soak_and_store_results(self):
        out = self.render_without("soak.json", "store.json")
        self.assertIn("not measured", self.row(out, "soak"))
        for heading in ("## Soak", "## Fence store: SQLite vs etcd", "## Failover"):
            start = out.index(heading + "\n")
            self.assertIn("not measured", out[start:out.index("\n## ", start + 1)])

    def test_an_empty_work_directory(self):
        out = self.render_without(*INPUTS)
        for heading in HEADINGS:
            self.assertIn(heading, out.splitlines())
        self.assertIn("not measured", out)

    def test_without_the_previous_run(self):
        rc, out, err = render(self.work, "--previous", os.path.join(self.work, "no-such-previous.json"))
        self.assertEqual(rc, 0, err)
        self.assertIn("No earlier run to compare with", out)
        self.assertNotIn("previous run", self.row(out, "1. ADD median over http://"))


if __name__ == "__main__":
    unittest.main()
