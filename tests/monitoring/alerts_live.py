#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""The alerts of deploy/monitoring/rules.yml, evaluated by a real Prometheus on a running
controller (tests/monitoring.cmake):

  alerts_live.py ROOT BIN_DIR

A 3-member etcd cluster on loopback, mizarmp-mock, mizarmp-addons in controller mode on the
etcd fence store with its metrics endpoint, and Debian's prometheus scraping both every second:
the mock's target must be up, its REST requests counted, before two faults, one after the
other:

  - Mizar-MP stops answering (the mock closes every REST connection):
    MizarmpMizarMPUnreachable is pending or firing within its for: window, then fires, and
    resolves once the mock answers again;
  - etcd loses quorum (2 of 3 members stopped): MizarmpFenceStoreUnavailable likewise, and it
    resolves once they are back.

Prometheus loads a copy of rules.yml whose for: durations are divided by FOR_SCALE, so that the
test takes seconds rather than minutes; everything else in the copy, the expressions included,
is checked to be identical to rules.yml.

Exits 1 after printing what went wrong and the end of every log.
"""

import glob
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from check_monitoring import RULES, Servers, probe_ready, prom_duration, read_text, wait_for

FOR_SCALE = 12
MIZARMP_ALERT = "MizarmpMizarMPUnreachable"
STORE_ALERT = "MizarmpFenceStoreUnavailable"
ACTIVE = ("pending", "firing")
# Lifting a fault: readiness is evaluated every second while not ready, then a scrape and a rule
# evaluation; the rest is room for a loaded machine.
RESOLVE_TIMEOUT = 20
ETCD_MEMBERS = 3
MOCK_JOB = "mizarmp-mock"


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------- the scaled rules

def scaled_duration(text):
    seconds = prom_duration(text)
    if seconds % FOR_SCALE:
        raise Failure(f"for: {text} is not a whole number of seconds once divided by {FOR_SCALE}")
    return f"{seconds // FOR_SCALE}s"


def without_for(groups):
    return [{**g, "rules": [{k: v for k, v in r.items() if k != "for"} for r in g["rules"]]}
            for g in groups]


def write_scaled_rules(root, path):
    """The copy of rules.yml Prometheus loads; returns {alert: its scaled for: in seconds}."""
    with open(os.path.join(root, RULES), encoding="utf-8") as f:
        original = yaml.safe_load(f)
    scaled = json.loads(json.dumps(original))
    windows = {}
    for group in scaled["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = scaled_duration(rule["for"])
                windows[rule.get("alert", rule.get("record"))] = prom_duration(rule["for"])
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(scaled, f, sort_keys=False)
    with open(path, encoding="utf-8") as f:
        reread = yaml.safe_load(f)
    if without_for(reread["groups"]) != without_for(original["groups"]):
        raise Failure(f"the scaled copy of {RULES} differs from it in more than for:")
    return windows


# ------------------------------------------------------------------------------------ processes

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EtcdCluster:
    """ETCD_MEMBERS members on loopback, each restartable on its own data."""

    def __init__(self, servers, workdir):
        self.servers, self.workdir = servers, workdir
        self.client_ports = [free_port() for _ in range(ETCD_MEMBERS)]
        peer_ports = [free_port() for _ in range(ETCD_MEMBERS)]
        self.peer_urls = [f"http://127.0.0.1:{p}" for p in peer_ports]
        self.initial_cluster = ",".join(f"m{i}={u}" for i, u in enumerate(self.peer_urls))
        self.members = [None] * ETCD_MEMBERS

    @property
    def endpoints(self):
        return ",".join(f"127.0.0.1:{p}" for p in self.client_ports)

    def start(self, i):
        client = f"http://127.0.0.1:{self.client_ports[i]}"
        # --initial-cluster-state is read only while the data directory is empty: a restarted
        # member rejoins with what it stored. (An absolute program: Servers.start's join with
        # BIN_DIR keeps it.)
        self.members[i], _ = self.servers.start(f"etcd-m{i}", [
            "/usr/bin/etcd", "--name", f"m{i}", "--data-dir", f"{self.workdir}/etcd-m{i}",
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", self.peer_urls[i],
            "--initial-advertise-peer-urls", self.peer_urls[i],
            "--initial-cluster", self.initial_cluster,
            "--initial-cluster-token", f"promlive-{os.getpid()}",
            "--initial-cluster-state", "new"])

    def stop(self, i):
        self.members[i].terminate()
        self.members[i].wait(timeout=10)

    def healthy(self):
        checked = subprocess.run(
            ["etcdctl", "--endpoints", self.endpoints, "--command-timeout=1s", "endpoint",
             "health"], env={**os.environ, "ETCDCTL_API": "3"}, capture_output=True,
            check=False)
        return checked.returncode == 0

    def wait_healthy(self):
        wait_for(self.healthy, "etcd: every member healthy", self.members[0])


def start_controller(servers, workdir, mpurl, etcd):
    """mizarmp-addons in controller mode on the etcd fence store; its metrics port once ready.
    Short intervals and timeouts so that a fault shows in its metrics within a second or two."""
    proc, log = servers.start("controller", [
        "mizarmp-addons", "--mode", "controller", "--endpoint",
        f"unix://{workdir}/csi-addons.sock", "--mpurl", mpurl, "--metrics-address",
        "127.0.0.1:0", "--fence-store", f"etcd://{etcd.endpoints}", "--etcd-prefix",
        "/promlive/", "--etcd-call-timeout-ms", "500", "--reconcile-interval-ms", "500",
        "--readiness-interval-ms", "250", "--probe-timeout-ms", "500", "--replica-id", "r0",
        "--state-dir", f"{workdir}/cni"])
    found = wait_for(lambda: re.search(r"serving Prometheus metrics on .* \(port (\d+)\)",
                                       read_text(log)), "controller: metrics port", proc)
    port = int(found.group(1))
    wait_for(lambda: probe_ready(port), "controller: ready", proc)
    return port


def start_prometheus(servers, workdir, rules_path, metrics_port, mpurl):
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [rules_path],
        "scrape_configs": [
            {"job_name": "mizarmp-addons",
             "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]},
            {"job_name": MOCK_JOB,
             "static_configs": [{"targets": [urllib.parse.urlsplit(mpurl).netloc]}]},
        ],
    }
    config_path = os.path.join(workdir, "prometheus.yml")
    with open(config_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f)
    port = free_port()
    proc, _ = servers.start("prometheus", [
        "/usr/bin/prometheus", f"--config.file={config_path}",
        f"--storage.tsdb.path={workdir}/tsdb", f"--web.listen-address=127.0.0.1:{port}"])
    api = Prometheus(port)
    wait_for(api.ready, "prometheus: ready", proc)
    return api, proc


# ---------------------------------------------------------------------------- Prometheus' API

class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def get(self, path):
        with self.opener.open(self.base + path, timeout=5) as answer:
            return answer.read().decode()

    def ready(self):
        try:
            self.get("/-/ready")
            return True
        except (urllib.error.URLError, ConnectionError):
            return False

    def api(self, path):
        answer = json.loads(self.get(path))
        if answer.get("status") != "success":
            raise Failure(f"{path}: {answer}")
        return answer["data"]

    def alert_state(self, name):
        """"firing", "pending", or None when the alert is not active."""
        states = {a["state"] for a in self.api("/api/v1/alerts")["alerts"]
                  if a["labels"].get("alertname") == name}
        return "firing" if "firing" in states else next(iter(states), None)

    def target_health(self, job):
        """The health of each of JOB's targets: "up", "down" or, before its first scrape,
        "unknown"."""
        return [t["health"] for t in self.api("/api/v1/targets")["activeTargets"]
                if t["labels"].get("job") == job]

    def query_has_result(self, expr):
        return bool(self.api("/api/v1/query?query=" + urllib.parse.quote(expr))["result"])


# ---------------------------------------------------------------------------------- the faults

def post_mock_faults(mpurl, faults):
    request = urllib.request.Request(f"{mpurl}/mock/faults", data=json.dumps(faults).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=5):
        pass


def wait_until(predicate, what, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.1)
    raise Failure(f"{what}: not within {timeout:g}s")


def prove_alert(prom, name, window, inject, lift, prometheus_proc):
    """Injects the fault; the alert must be active within its for: window and then fire; lifts
    the fault; the alert must resolve."""
    def state():
        if prometheus_proc.poll() is not None:
            raise Failure(f"prometheus exited with {prometheus_proc.returncode}")
        return prom.alert_state(name)

    if state() is not None:
        raise Failure(f"{name} is {state()} before its fault")
    began = time.monotonic()
    inject()
    active = wait_until(lambda: state() in ACTIVE, f"{name} pending or firing", window)
    # Pending for its whole window, then firing: the window is at least one more window away.
    fired = wait_until(lambda: state() == "firing", f"{name} firing", 2 * window + 5)
    lift()
    lifted = time.monotonic()
    resolved = wait_until(lambda: state() is None, f"{name} resolved", RESOLVE_TIMEOUT)
    print(f"{name}: active {active - began:.1f}s after the fault (for: {window}s), firing "
          f"after {fired - began:.1f}s, resolved {resolved - lifted:.1f}s after it was lifted")


def run(root, bin_dir, workdir):
    windows = write_scaled_rules(root, os.path.join(workdir, "rules.yml"))
    with Servers(bin_dir, workdir) as servers:
        etcd = EtcdCluster(servers, workdir)
        for i in range(ETCD_MEMBERS):
            etcd.start(i)
        etcd.wait_healthy()
        mpurl = servers.mock()
        metrics_port = start_controller(servers, workdir, mpurl, etcd)
        prom, prom_proc = start_prometheus(servers, workdir, os.path.join(workdir, "rules.yml"),
                                           metrics_port, mpurl)
        wait_for(lambda: prom.target_health(MOCK_JOB) == ["up"], "prometheus: the mock's target up",
                 prom_proc)
        # The controller's readiness checks are REST requests to the mock.
        mock_requests = f'mizarmp_mock_requests_total{{job="{MOCK_JOB}"}} > 0'
        wait_for(lambda: prom.query_has_result(mock_requests),
                 "prometheus: the mock's requests counted", prom_proc)
        # Both readiness series scraped as ready: the rules have something to evaluate.
        wait_for(lambda: prom.query_has_result(
            'sum(mizarmp_addons_dependency_ready{dependency=~"Mizar-MP|fence store"}) == 2'),
            "prometheus: the controller scraped ready", prom_proc)

        prove_alert(prom, MIZARMP_ALERT, windows[MIZARMP_ALERT],
                    lambda: post_mock_faults(mpurl, {"close_connections": 1000000000}),
                    lambda: post_mock_faults(mpurl, {}), prom_proc)

        lost = range(1, ETCD_MEMBERS)

        def lose_quorum():
            for i in lost:
                etcd.stop(i)

        def restore_quorum():
            for i in lost:
                etcd.start(i)

        prove_alert(prom, STORE_ALERT, windows[STORE_ALERT], lose_quorum, restore_quorum,
                    prom_proc)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, bin_dir = argv[1], argv[2]
    # Short: unix socket paths are limited to 107 bytes.
    with tempfile.TemporaryDirectory(prefix="mzprom", dir="/tmp") as workdir:
        try:
            run(root, bin_dir, workdir)
        except (Failure, RuntimeError, TimeoutError, subprocess.SubprocessError) as e:
            print(f"FAILED: {e}")
            for log in sorted(glob.glob(os.path.join(workdir, "*.log"))):
                print(f"--- {os.path.basename(log)}\n{read_text(log)[-3000:]}")
            return 1
    print("ok: both alerts went active within their for: windows, fired and resolved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
