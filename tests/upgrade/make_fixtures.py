# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""Writes one release's upgrade fixture for tests/integration/upgrade_test.cc.

A fence store as this build's mizarmp-addons leaves it, once in SQLite (fence.db) and once in
etcd (etcd.json: every key under the server's prefix, base64 as etcdctl prints it), and
manifest.json: the ports the fences were made over (id, address, node, down or up when the
server stopped) and what the store holds (each fence's state and the ports it holds down, the
pending unfences). The test recreates those ports at a fresh mock, opens the store with the
newer server and checks that nothing the store held was lost.

The scenario, played against a strict Alcor mizarmp-mock for each store:
  - an operator quarantined a3 before any fence (down, held by no fence);
  - 10.240.1.0/24, 10.240.1.8/29 (inside it) and 10.240.2.10/32 are fenced and enforced;
  - 10.240.3.0/24 was fenced, then unfenced while Mizar-MP dropped every connection: a pending
    unfence whose ports are still down;
  - 10.240.2.16/28 was fenced while Mizar-MP dropped every connection: a pending fence whose
    port is still up.
The script checks that the server and the store ended exactly so before writing anything.

Run it through make_fixtures.sh, which starts the etcd cluster:
    bash tests/upgrade/make_fixtures.sh build/bin tests/upgrade/fixtures/<release>
"""

import argparse
import base64
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import grpc

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "python"))
import addons_client as ac  # noqa: E402  pylint: disable=wrong-import-position

RPC_TIMEOUT = 30
ETCD_PREFIX = "/mizarmp/fence/"
# Enough dropped connections for every request the server makes until it is stopped.
DROP_EVERY_CONNECTION = {"close_connections": 1000000}
# No pass but the RPCs' own: the stores must stay as the RPCs left them.
NO_RECONCILE = ["--reconcile-interval-ms", str(24 * 3600 * 1000)]

# (id, IPv4 address, node); inside the mock's default subnet 10.240.0.0/16.
PORTS = [
    ("a1", "10.240.1.10", "node-a"),
    ("a2", "10.240.1.11", "node-a"),
    ("a3", "10.240.1.12", "node-a"),
    ("b1", "10.240.2.10", "node-b"),
    ("b2", "10.240.2.20", "node-b"),
    ("c1", "10.240.3.10", "node-c"),
    ("c2", "10.240.3.11", "node-c"),
    ("d1", "10.240.4.10", "node-d"),
]
QUARANTINED = ["a3"]
ENFORCED = ["10.240.1.0/24", "10.240.1.8/29", "10.240.2.10/32"]
UNFENCED_WHILE_UNREACHABLE = "10.240.3.0/24"
FENCED_WHILE_UNREACHABLE = "10.240.2.16/28"

# What the store must hold at the end, sorted as ListClusterFence sorts.
EXPECTED_FENCES = [
    {"cidr": "10.240.1.0/24", "state": "enforced", "held_ports": ["a1", "a2"]},
    {"cidr": "10.240.1.8/29", "state": "enforced", "held_ports": ["a1", "a2"]},
    {"cidr": "10.240.2.10/32", "state": "enforced", "held_ports": ["b1"]},
    {"cidr": "10.240.2.16/28", "state": "pending", "held_ports": []},
]
EXPECTED_UNFENCES = [{"cidr": "10.240.3.0/24", "held_ports": ["c1", "c2"]}]
EXPECTED_DOWN = ["a1", "a2", "a3", "b1", "c1", "c2"]


def create_ports(mock):
    project = ac.DEFAULT_PROJECT
    for port_id, ip, node in PORTS:
        mock.request("POST", f"/project/{project}/ports", {"port": {
            "project_id": project, "id": port_id, "name": "k8s_" + port_id,
            "network_id": ac.DEFAULT_VPC, "veth_name": "eth0",
            "network_ns": "/var/run/netns/x-" + port_id, "binding:host_id": node,
            "admin_state_up": True,
            "fixed_ips": [{"subnet_id": ac.DEFAULT_SUBNET, "ip_address": ip}]}})
    for port_id in QUARANTINED:
        mock.request("PUT", f"/project/{project}/ports/{port_id}",
                     {"port": {"admin_state_up": False}})


def down_ports(mock):
    ports = mock.request("GET", f"/project/{ac.DEFAULT_PROJECT}/ports")["ports"]
    return sorted(p["id"] for p in ports if not p["admin_state_up"])


def require(condition, what):
    if not condition:
        raise SystemExit("make_fixtures: " + what)


class Scenario:
    """One run of the scenario against a fresh mock and one fence store location."""

    def __init__(self, work, stubs, name, fence_store, extra_args):
        self.work = work
        self.stubs = stubs
        self.name = name
        self.fence_store = fence_store
        self.extra_args = extra_args

    def fence(self, stub, cidr):
        pb = self.stubs.fence_pb2
        stub.FenceClusterNetwork(pb.FenceClusterNetworkRequest(
            cidrs=[pb.CIDR(cidr=cidr)]), timeout=RPC_TIMEOUT)

    def unfence(self, stub, cidr):
        pb = self.stubs.fence_pb2
        stub.UnfenceClusterNetwork(pb.UnfenceClusterNetworkRequest(
            cidrs=[pb.CIDR(cidr=cidr)]), timeout=RPC_TIMEOUT)

    def refused(self, call, stub, cidr):
        """Runs a fence or unfence that Mizar-MP cannot carry out: it must fail, stored."""
        try:
            call(stub, cidr)
        except grpc.RpcError as e:
            require("stored" in e.details(), f"{self.name}: {cidr}: {e.details()}")
            return
        raise SystemExit(f"make_fixtures: {self.name}: {cidr} succeeded without Mizar-MP")

    def listed(self, stub):
        pb = self.stubs.fence_pb2
        answer = stub.ListClusterFence(pb.ListClusterFenceRequest(), timeout=RPC_TIMEOUT)
        return [c.cidr for c in answer.cidrs]

    def play(self):
        with ac.MizarMpMock(self.work, ac.STRICT_ALCOR) as mock:
            create_ports(mock)
            srv = ac.AddonsServer(self.work, mpurl=mock.base_url, name=self.name,
                                  fence_store=self.fence_store,
                                  args=NO_RECONCILE + ["--replica-id", "fixture"] +
                                  self.extra_args)
            srv.start()
            try:
                srv.wait_ready(self.stubs)
                with srv.channel() as channel:
                    stub = self.stubs.fence_pb2_grpc.FenceControllerStub(channel)
                    for cidr in ENFORCED + [UNFENCED_WHILE_UNREACHABLE]:
                        self.fence(stub, cidr)
                    mock.request("POST", "/mock/faults", DROP_EVERY_CONNECTION)
                    self.refused(self.unfence, stub, UNFENCED_WHILE_UNREACHABLE)
                    self.refused(self.fence, stub, FENCED_WHILE_UNREACHABLE)
                    listed = self.listed(stub)
            finally:
                # Stopped before Mizar-MP answers again, so no pass finishes what is pending.
                code = srv.stop()
            mock.request("POST", "/mock/faults", {})
            require(code == 0, f"{self.name}: mizarmp-addons exited {code}")
            require(listed == [f["cidr"] for f in EXPECTED_FENCES],
                    f"{self.name}: ListClusterFence answered {listed}")
            down = down_ports(mock)
            require(down == EXPECTED_DOWN, f"{self.name}: ports down at the end: {down}")


def sqlite_records(path):
    """The fences and pending unfences of an SQLite store, read with Python's sqlite3 (this
    release's tables)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        held = {}
        for cidr, port in db.execute("SELECT cidr, port_id FROM held_ports ORDER BY port_id"):
            held.setdefault(cidr, []).append(port)
        fences = [{"cidr": c, "state": s, "held_ports": held.get(c, [])}
                  for c, s in db.execute("SELECT cidr, state FROM fences")]
        unfences = [{"cidr": c, "held_ports": held.get(c, [])}
                    for (c,) in db.execute("SELECT cidr FROM unfences")]
    finally:
        db.close()
    return sorted(fences, key=lambda f: f["cidr"]), sorted(unfences, key=lambda u: u["cidr"])


def etcd_records(kvs):
    """The same read from the etcd store's shards (this release's documents)."""
    fences, unfences = [], []
    for kv in kvs:
        name = base64.b64decode(kv["key"]).decode()[len(ETCD_PREFIX):]
        if not name.startswith("shards/"):
            continue
        shard = json.loads(base64.b64decode(kv["value"]))
        for cidr, f in shard.get("fences", {}).items():
            fences.append({"cidr": cidr, "state": f["state"],
                           "held_ports": sorted(f.get("held_ports", []))})
        for cidr, u in shard.get("unfences", {}).items():
            unfences.append({"cidr": cidr, "held_ports": sorted(u.get("held_ports", []))})
    return sorted(fences, key=lambda f: f["cidr"]), sorted(unfences, key=lambda u: u["cidr"])


def check_records(name, fences, unfences):
    require(fences == EXPECTED_FENCES, f"{name}: the store holds the fences {fences}")
    require(unfences == EXPECTED_UNFENCES, f"{name}: the store holds the unfences {unfences}")


def capture_sqlite(path, out_dir):
    # A clean shutdown checkpoints the write-ahead log into the file and removes it: the file
    # alone is the store.
    require(not os.path.exists(path + "-wal"), f"{path}-wal is left after a clean shutdown")
    check_records("sqlite", *sqlite_records(path))
    shutil.copyfile(path, os.path.join(out_dir, "fence.db"))


def capture_etcd(endpoints, out_dir):
    run = subprocess.run(
        ["etcdctl", "--endpoints", endpoints, "get", "--prefix", ETCD_PREFIX, "-w", "json"],
        capture_output=True, text=True, check=False, env=dict(os.environ, ETCDCTL_API="3"))
    require(run.returncode == 0, f"etcdctl get failed: {run.stderr}")
    kvs = json.loads(run.stdout).get("kvs", [])
    # A key under a lease (the leader's) is gone once its server resigned; one left would be
    # loaded without its lease and hold the election forever.
    leased = [base64.b64decode(kv["key"]).decode() for kv in kvs if kv.get("lease")]
    require(not leased, f"keys under a lease are left: {leased}")
    check_records("etcd", *etcd_records(kvs))
    dump = {"prefix": ETCD_PREFIX,
            "kvs": sorted(({"key": kv["key"], "value": kv["value"]} for kv in kvs),
                          key=lambda kv: base64.b64decode(kv["key"]))}
    with open(os.path.join(out_dir, "etcd.json"), "w", encoding="ascii") as f:
        json.dump(dump, f, indent=1)
        f.write("\n")


def server_version():
    run = subprocess.run([ac.binary("mizarmp-addons"), "--version"], capture_output=True,
                         text=True, check=True)
    return run.stdout.strip()


def write_manifest(out_dir):
    down = set(EXPECTED_DOWN)
    manifest = {
        "written_by": server_version(),
        "generator": "tests/upgrade/make_fixtures.sh",
        "mizarmp": {"project": ac.DEFAULT_PROJECT, "vpc": ac.DEFAULT_VPC,
                    "subnet": ac.DEFAULT_SUBNET, "cidr": "10.240.0.0/16"},
        "ports": [{"id": i, "ip": ip, "node": node, "down": i in down}
                  for i, ip, node in PORTS],
        "fences": EXPECTED_FENCES,
        "pending_unfences": EXPECTED_UNFENCES,
        "sqlite": "fence.db",
        "etcd": "etcd.json",
    }
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="ascii") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--etcd", required=True, help="the etcd cluster's endpoints, h:p,h:p")
    parser.add_argument("--out", required=True, help="the fixture directory to write")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = ac.Workdir()
    try:
        stubs = ac.generate_stubs(os.path.join(work.path, "stubs"))
        sqlite_path = os.path.join(work.path, "sqlite-lib", "fence.db")
        Scenario(work.path, stubs, "sqlite", sqlite_path, []).play()
        Scenario(work.path, stubs, "etcd", "etcd://" + args.etcd,
                 ["--etcd-prefix", ETCD_PREFIX]).play()
        capture_sqlite(sqlite_path, args.out)
        capture_etcd(args.etcd, args.out)
        write_manifest(args.out)
    finally:
        work.cleanup()


if __name__ == "__main__":
    main()
