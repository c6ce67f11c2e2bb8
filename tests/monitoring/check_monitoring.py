#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""Checks deploy/monitoring/ beyond what promtool sees (tests/monitoring.cmake):

  check_monitoring.py alerts ROOT              every alert has a severity, a summary, a
                                               description and a runbook_url naming a heading of
                                               docs/runbook.md (and every heading an alert); the
                                               unit tests make every alert fire and resolve
  check_monitoring.py dashboard ROOT WORKDIR   the dashboard's panels are well formed and promtool
                                               parses every query (as recording rules)
  check_monitoring.py live ROOT BIN_DIR        mizarmp-addons in controller and node mode, against
                                               mizarmp-mock and with the node's CNI plugin run
                                               once, export every metric the alerts, the
                                               dashboard and the unit tests name, with their labels

Exits 1 after printing every problem.
"""

import collections
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

RULES = "deploy/monitoring/rules.yml"
RULE_TESTS = "tests/monitoring/rules_test.yml"
DASHBOARD = "deploy/monitoring/dashboard.json"
RUNBOOK = "docs/runbook.md"
SEVERITIES = {"critical", "warning"}
# Labels a scrape adds to every series, not the server.
TARGET_LABELS = {"job", "instance"}
# mizarmp-mock's project and IPv4 subnet when not told others (mock-server/mock.h).
PROJECT = "3dda2801-d675-4688-a63f-dcda8d327f50"
SUBNET = "a87e0f87-a2d9-44ef-9194-9a62f178594e"

problems = []


def problem(what):
    problems.append(what)


def load_yaml(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return yaml.safe_load(f)


def alerting_rules(root):
    return [r for g in load_yaml(root, RULES)["groups"] for r in g["rules"] if "alert" in r]


def dashboard_queries(root):
    with open(os.path.join(root, DASHBOARD), encoding="utf-8") as f:
        dashboard = json.load(f)
    return dashboard, [(p, t) for p in dashboard["panels"] for t in p.get("targets", [])]


# ------------------------------------------------------------------------------------- alerts

def runbook_anchors(root):
    """GitHub's anchors of the runbook's "## " headings (their lower-cased text)."""
    with open(os.path.join(root, RUNBOOK), encoding="utf-8") as f:
        return {line[3:].strip().lower() for line in f if line.startswith("## ")}


def check_annotations(rule, anchors):
    name = rule["alert"]
    if rule.get("labels", {}).get("severity") not in SEVERITIES:
        problem(f"{name}: severity is not one of {sorted(SEVERITIES)}")
    notes = rule.get("annotations", {})
    for key in ("summary", "description"):
        if not notes.get(key, "").strip():
            problem(f"{name}: no {key}")
    expected = f"{RUNBOOK}#{name.lower()}"
    if notes.get("runbook_url") != expected:
        problem(f"{name}: runbook_url {notes.get('runbook_url')!r}, not {expected!r}")
    if name.lower() not in anchors:
        problem(f"{name}: {RUNBOOK} has no heading \"## {name}\"")


def check_fires_and_resolves(name, tests):
    """Some test case expects NAME firing and, later in the same case, nothing."""
    for case in tests:
        evals = sorted((prom_duration(e["eval_time"]), bool(e.get("exp_alerts")))
                       for e in case.get("alert_rule_test", []) if e["alertname"] == name)
        fired = [t for t, firing in evals if firing]
        if fired and any(t > fired[0] and not firing for t, firing in evals):
            return
    problem(f"{name}: no unit test in {RULE_TESTS} makes it fire and then resolve")


def prom_duration(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d)", text))


def check_alerts(root):
    rules = alerting_rules(root)
    anchors = runbook_anchors(root)
    tests = load_yaml(root, RULE_TESTS)["tests"]
    for rule in rules:
        check_annotations(rule, anchors)
        check_fires_and_resolves(rule["alert"], tests)
    for orphan in anchors - {r["alert"].lower() for r in rules}:
        problem(f"{RUNBOOK}: heading {orphan!r} is no alert of {RULES}")
    return f"{len(rules)} alerts"


# ---------------------------------------------------------------------------------- dashboard

def check_dashboard(root, workdir):
    dashboard, queries = dashboard_queries(root)
    ids = [p.get("id") for p in dashboard["panels"]]
    if len(set(ids)) != len(ids):
        problem(f"{DASHBOARD}: panel ids repeat: {ids}")
    for panel in dashboard["panels"]:
        if not panel.get("targets"):
            problem(f"{DASHBOARD}: panel {panel.get('title')!r} has no query")
        if not {"h", "w", "x", "y"} <= set(panel.get("gridPos", {})):
            problem(f"{DASHBOARD}: panel {panel.get('title')!r} has no complete gridPos")
    # promtool parses rule files only: each query becomes a recording rule. Grafana's own
    # variables are not PromQL; $__rate_interval stands for a duration.
    rules = [{"record": f"panel_{p['id']}_{t['refId']}",
              "expr": t["expr"].replace("$__rate_interval", "5m")} for p, t in queries]
    path = os.path.join(workdir, "dashboard_queries.yml")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
    checked = subprocess.run(["promtool", "check", "rules", path], capture_output=True,
                             text=True, check=False)
    if checked.returncode != 0:
        problem(f"promtool check rules on the dashboard's queries:\n{checked.stdout}"
                f"{checked.stderr}")
    return f"{len(queries)} queries in {len(ids)} panels"


# --------------------------------------------------------------------------------------- live

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "bool", "offset", "inf", "nan"}
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*\"((?:[^\"\\]|\\.)*)\"")


def metric_names(expr):
    """The metric names a PromQL expression selects: identifiers outside label braces, string
    literals, ranges and grouping clauses that are neither functions nor keywords."""
    text = re.sub(r"\"(?:[^\"\\]|\\.)*\"", "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        following = text[m.end():].lstrip()
        if m.group(0).lower() not in KEYWORDS and not following.startswith("("):
            names.add(m.group(0))
    return names


def equality_matchers(expr):
    """(metric, label, value) for every label="value" of a named selector."""
    return [(name, label, value) for name, body in SELECTOR.findall(expr)
            for label, op, value in MATCHER.findall(body) if op == "="]


def parse_exposition(text):
    """{metric name: [(labels dict, value), ...]} of a /metrics answer."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m:
            labels = {k: v for k, _, v in MATCHER.findall(m.group(2) or "")}
            series.setdefault(m.group(1), []).append((labels, m.group(3)))
    return series


def wait_for(predicate, what, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {proc.returncode}")
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"{what}: not within {timeout}s")


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def scrape(port):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return parse_exposition(answer.read().decode())


def probe_ready(port):
    return ({}, "1") in scrape(port).get("mizarmp_addons_ready", [])


# A started mizarmp-addons: its CSI-Addons endpoint, metrics port, CNI state dir and process.
Addons = collections.namedtuple("Addons", "endpoint metrics_port state_dir proc")


class Servers:
    """Processes started from BIN_DIR with their logs in WORKDIR; SIGTERM on exit."""

    def __init__(self, bin_dir, workdir):
        self.bin_dir, self.workdir, self.procs = bin_dir, workdir, []

    def start(self, name, args):
        log = os.path.join(self.workdir, f"{name}.log")
        with open(log, "wb") as out:
            proc = subprocess.Popen([os.path.join(self.bin_dir, args[0]), *args[1:]],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc, log

    def mock(self):
        port_file = os.path.join(self.workdir, "mock.port")
        proc, _ = self.start("mock", ["mizarmp-mock", "--listen", "127.0.0.1:0", "--port-file",
                                      port_file, "--strict", "--dialect", "alcor"])
        port = wait_for(lambda: read_text(port_file).strip(), "mizarmp-mock's port", proc)
        return f"http://127.0.0.1:{port}"

    def addons(self, mode, mpurl):
        """Starts mizarmp-addons in MODE; returns it (Addons) once Probe would answer ready."""
        at = os.path.join(self.workdir, mode)
        relay = ["--relay-socket", f"{at}/relay/relay.sock"] if mode == "node" else []
        proc, log = self.start(mode, [
            "mizarmp-addons", "--mode", mode, "--endpoint", f"unix://{at}/csi-addons.sock",
            "--mpurl", mpurl, "--metrics-address", "127.0.0.1:0", "--fence-store",
            f"{at}/fence.db", "--state-dir", f"{at}/cni", "--key-store-dir", f"{at}/keys",
            "--kubelet-dir", f"{at}/kubelet", "--host-id", "node-a", *relay])
        found = wait_for(lambda: re.search(r"serving Prometheus metrics on .* \(port (\d+)\)",
                                           read_text(log)), f"{mode}: metrics port", proc)
        port = int(found.group(1))
        wait_for(lambda: probe_ready(port), f"{mode}: ready", proc)
        return Addons(f"unix://{at}/csi-addons.sock", port, f"{at}/cni", proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def closed_port():
    """A loopback port nothing listens on: connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail_a_plugin_command(bin_dir, state_dir):
    """The real CNI plugin runs STATUS against a Mizar-MP that refuses connections, so its
    outcome log in `state_dir` holds a failure: the node exports no CNI error code before one."""
    conf = {"cniVersion": "1.1.0", "name": "net1", "type": "mizarmp",
            "mpurl": f"http://127.0.0.1:{closed_port()}", "project": PROJECT, "subnet": SUBNET,
            "hostId": "node-a", "stateDir": state_dir, "logLevel": "off"}
    ran = subprocess.run([os.path.join(bin_dir, "mizarmp")], input=json.dumps(conf).encode(),
                         env={"CNI_COMMAND": "STATUS", "CNI_PATH": "/opt/cni/bin"},
                         capture_output=True, timeout=60, check=False)
    if ran.returncode == 0:
        raise RuntimeError(f"the plugin's STATUS succeeded without Mizar-MP: {ran.stdout!r}")


def cni_error_exported(port):
    return any(labels.get("command") == "STATUS"
               for labels, _ in scrape(port).get("mizarmp_cni_command_errors_total", []))


def exported_series(bin_dir, workdir):
    """Both modes' /metrics merged, after a fence, a Probe and a failed plugin command: the
    RPC, Mizar-MP and CNI error families have no series before their first event, and
    prometheus-cpp then omits even their # TYPE."""
    with Servers(bin_dir, workdir) as servers:
        mpurl = servers.mock()
        controller = servers.addons("controller", mpurl)
        node = servers.addons("node", mpurl)
        ctl = os.path.join(bin_dir, "mizarmpctl")
        for args in (["probe"], ["fence", "192.0.2.0/24"]):
            subprocess.run([ctl, *args, "--endpoint", controller.endpoint], check=True,
                           stdout=subprocess.DEVNULL, timeout=60)
        fail_a_plugin_command(bin_dir, node.state_dir)
        wait_for(lambda: cni_error_exported(node.metrics_port),
                 "node: the plugin's failure exported", node.proc)
        merged = {}
        for port in (controller.metrics_port, node.metrics_port):
            for name, samples in scrape(port).items():
                merged.setdefault(name, []).extend(samples)
        return merged


def test_series_selectors(root):
    """The unit tests' input series as (metric, labels) pairs."""
    out = []
    for case in load_yaml(root, RULE_TESTS)["tests"]:
        for s in case.get("input_series", []):
            name = s["series"].split("{", 1)[0]
            out.append((name, {k: v for k, _, v in MATCHER.findall(s["series"])}))
    return out


def check_live(root, bin_dir):
    # Short: unix socket paths are limited to 107 bytes.
    with tempfile.TemporaryDirectory(prefix="mzmon", dir="/tmp") as workdir:
        try:
            exported = exported_series(bin_dir, workdir)
        except (RuntimeError, TimeoutError, subprocess.SubprocessError):
            for log in sorted(glob.glob(os.path.join(workdir, "*.log"))):
                print(f"--- {os.path.basename(log)}\n{read_text(log)[-3000:]}")
            raise
    _, queries = dashboard_queries(root)
    exprs = [(RULES, r["expr"]) for r in alerting_rules(root)]
    exprs += [(DASHBOARD, t["expr"]) for _, t in queries]
    for where, expr in exprs:
        for name in sorted(metric_names(expr)):
            if name not in exported:
                problem(f"{where}: {name} is not exported (in {expr!r})")
        for name, label, value in equality_matchers(expr):
            if not any(labels.get(label) == value for labels, _ in exported.get(name, [])):
                problem(f"{where}: no exported {name} has {label}=\"{value}\"")
    for name, labels in test_series_selectors(root):
        names = {frozenset(set(ls) | TARGET_LABELS) for ls, _ in exported.get(name, [])}
        if frozenset(labels) not in names:
            problem(f"{RULE_TESTS}: {name} with labels {sorted(labels)} is not exported; "
                    f"exported: {sorted(sorted(n) for n in names)}")
    return f"{len(exported)} exported metrics, {len(exprs)} queries"


def main(argv):
    commands = {"alerts": (check_alerts, 1), "dashboard": (check_dashboard, 2),
                "live": (check_live, 2)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) != 2 + commands[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    check, _ = commands[argv[1]]
    summary = check(*argv[2:])
    for p in problems:
        print(f"PROBLEM {p}")
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    print(f"ok: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
