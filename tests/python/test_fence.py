# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""mizarmp-addons FenceController, seen by an independent Python gRPC client.

Every RPC over the unix socket and over TLS on TCP, against mizarmp-mock as a process (no agent,
no root) playing the real Alcor controller (--strict): the ports' admin state at the mock is what
a fence changes. Stubs are generated from
the project's protos at test time; the TLS material is made with openssl at test time.

Run: MIZARMP_BIN_DIR=build/bin python3 -m unittest -v test_fence   (from tests/python)
"""

import json
import os
import time
import unittest

import grpc

import addons_client as ac

TIMEOUT = 20  # seconds per RPC; generous, never asserted on
PROJECT = ac.DEFAULT_PROJECT
SUBNET = ac.DEFAULT_SUBNET
VPC = ac.DEFAULT_VPC

# port id -> (IPv4 address, host id); the mock's default subnet is 10.240.0.0/16.
PORTS = {
    "a1": ("10.240.1.10", "node-a"),
    "a2": ("10.240.1.11", "node-a"),
    "b1": ("10.240.2.10", "node-b"),
}


def create_port(mock, port_id, ip, host):
    mock.request("POST", f"/project/{PROJECT}/ports", {"port": {
        "project_id": PROJECT, "id": port_id, "name": "k8s_" + port_id,
        "network_id": VPC, "veth_name": "eth0", "network_ns": "/var/run/netns/x-" + port_id,
        "binding:host_id": host, "admin_state_up": True,
        "fixed_ips": [{"subnet_id": SUBNET, "ip_address": ip}]}})


def admin_state(mock):
    ports = mock.request("GET", f"/project/{PROJECT}/ports")["ports"]
    return {p["id"]: p["admin_state_up"] for p in ports}


class FenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = ac.Workdir()
        cls.stubs = ac.generate_stubs(os.path.join(cls.work.path, "stubs"))
        cls.tls = ac.make_tls_material(cls.work.path)
        cls.secrets_file = os.path.join(cls.work.path, "secrets.json")
        with open(cls.secrets_file, "w", encoding="utf-8") as f:
            json.dump({"fence-key": "open-sesame"}, f)
        os.chmod(cls.secrets_file, 0o600)

    @classmethod
    def tearDownClass(cls):
        cls.work.cleanup()

    def setUp(self):
        # A fresh controller per test, so port states never leak between tests.
        self.mock = ac.MizarMpMock(self.work.path, ac.STRICT_ALCOR).start()
        self.addCleanup(self.mock.stop)
        for port_id, (ip, host) in PORTS.items():
            create_port(self.mock, port_id, ip, host)

    def server(self, wait_ready=True, **kwargs):
        kwargs.setdefault("mpurl", self.mock.base_url)
        kwargs.setdefault("name", self.id().rsplit(".", 1)[-1])
        srv = ac.AddonsServer(self.work.path, **kwargs)
        srv.start()
        self.addCleanup(srv.stop)
        if wait_ready:
            srv.wait_ready(self.stubs)
        return srv

    def fence_stub(self, srv):
        channel = srv.channel()
        self.addCleanup(channel.close)
        return self.stubs.fence_pb2_grpc.FenceControllerStub(channel)

    def cidrs(self, *texts):
        return [self.stubs.fence_pb2.CIDR(cidr=t) for t in texts]

    def assert_code(self, code, call, *needles):
        with self.assertRaises(grpc.RpcError) as ctx:
            call()
        self.assertEqual(ctx.exception.code(), code, ctx.exception.details())
        for needle in needles:
            self.assertIn(needle, ctx.exception.details())
        return ctx.exception

    # --- every RPC, over both transports ---------------------------------------------------

    def exercise_every_rpc(self, srv, secrets=None):
        pb = self.stubs.fence_pb2
        stub = self.fence_stub(srv)
        sec = secrets or {}

        clients = stub.GetFenceClients(pb.GetFenceClientsRequest(secrets=sec), timeout=TIMEOUT)
        got = {c.id: [a.cidr for a in c.addresses] for c in clients.clients}
        self.assertEqual(got, {"node-a": ["10.240.1.10/31"], "node-b": ["10.240.2.10/32"]})

        narrowed = stub.GetFenceClients(
            pb.GetFenceClientsRequest(parameters={"hostId": "node-b"}, secrets=sec),
            timeout=TIMEOUT)
        self.assertEqual([(c.id, [a.cidr for a in c.addresses]) for c in narrowed.clients],
                         [("node-b", ["10.240.2.10/32"])])

        stub.FenceClusterNetwork(pb.FenceClusterNetworkRequest(
            cidrs=self.cidrs(*got["node-a"]), secrets=sec), timeout=TIMEOUT)
        self.assertEqual(admin_state(self.mock), {"a1": False, "a2": False, "b1": True})
        # Repeating the fence is harmless.
        stub.FenceClusterNetwork(pb.FenceClusterNetworkRequest(
            cidrs=self.cidrs("10.240.1.10/31", "10.240.1.10/31"), secrets=sec), timeout=TIMEOUT)
        listed = stub.ListClusterFence(pb.ListClusterFenceRequest(secrets=sec), timeout=TIMEOUT)
        self.assertEqual([c.cidr for c in listed.cidrs], ["10.240.1.10/31"])

        stub.UnfenceClusterNetwork(pb.UnfenceClusterNetworkRequest(
            cidrs=self.cidrs("10.240.1.10/31"), secrets=sec), timeout=TIMEOUT)
        self.assertEqual(admin_state(self.mock), {"a1": True, "a2": True, "b1": True})
        listed = stub.ListClusterFence(pb.ListClusterFenceRequest(secrets=sec), timeout=TIMEOUT)
        self.assertEqual(list(listed.cidrs), [])

    def test_every_rpc_over_the_unix_socket(self):
        self.exercise_every_rpc(self.server(args=["--use-port-list"]))

    def test_every_rpc_over_tls_with_secrets(self):
        # Server-side TLS; a tcp:// endpoint needs authenticated clients: here the secrets.
        srv = self.server(endpoint="tcp", tls=self.tls,
                          args=["--use-port-list", "--secrets-file", self.secrets_file])
        self.exercise_every_rpc(srv, secrets={"fence-key": "open-sesame"})

    def test_every_rpc_over_mutual_tls_with_secrets(self):
        srv = self.server(endpoint="tcp", tls=self.tls, client_ca=True,
                          args=["--use-port-list", "--secrets-file", self.secrets_file])
        self.exercise_every_rpc(srv, secrets={"fence-key": "open-sesame"})

    # --- what a fence changes -------------------------------------------------------------

    def test_unfence_leaves_an_operators_quarantine_in_place(self):
        self.mock.request("PUT", f"/project/{PROJECT}/ports/a2",
                     {"port": {"admin_state_up": False}})
        srv = self.server()
        pb = self.stubs.fence_pb2
        stub = self.fence_stub(srv)
        stub.FenceClusterNetwork(pb.FenceClusterNetworkRequest(
            cidrs=self.cidrs("10.240.1.0/24")), timeout=TIMEOUT)
        self.assertEqual(admin_state(self.mock), {"a1": False, "a2": False, "b1": True})
        stub.UnfenceClusterNetwork(pb.UnfenceClusterNetworkRequest(
            cidrs=self.cidrs("10.240.1.0/24")), timeout=TIMEOUT)
        self.assertEqual(admin_state(self.mock), {"a1": True, "a2": False, "b1": True})

    def test_two_hundred_thousand_cidrs_are_refused_naming_the_limit(self):
        srv = self.server()
        pb = self.stubs.fence_pb2
        stub = self.fence_stub(srv)
        many = self.cidrs(*(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}/32" for i in range(200000)))
        # A generous deadline: the answer must come, not time out.
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT,
                         lambda: stub.FenceClusterNetwork(
                             pb.FenceClusterNetworkRequest(cidrs=many), timeout=60),
                         "200000", "65536")
        self.assert_code(grpc.StatusCode.INVALID_ARGUMENT,
                         lambda: stub.UnfenceClusterNetwork(
                             pb.UnfenceClusterNetworkRequest(cidrs=many), timeout=60),
                         "200000", "65536")
        self.assertEqual(admin_state(self.mock), {"a1": True, "a2": True, "b1": True})

    # --- the error scheme ----------------------------------------------------------------

    def test_bad_and_missing_cidrs_are_invalid_argument(self):
        srv = self.server()
        pb = self.stubs.fence_pb2
        stub = self.fence_stub(srv)
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        for req_type, rpc in ((pb.FenceClusterNetworkRequest, stub.FenceClusterNetwork),
                              (pb.UnfenceClusterNetworkRequest, stub.UnfenceClusterNetwork)):
            self.assert_code(invalid, lambda: rpc(req_type(), timeout=TIMEOUT), "cidrs")
            for bad in ("10.240.1.1/24", "10.0.0.0/33", "not-a-cidr", "fd00::/129", "",
                        "1.2.3"):
                self.assert_code(invalid, lambda: rpc(req_type(cidrs=self.cidrs(
                    "10.240.0.0/16", bad)), timeout=TIMEOUT), f'"{bad}"')
        listed = stub.ListClusterFence(pb.ListClusterFenceRequest(), timeout=TIMEOUT)
        self.assertEqual(list(listed.cidrs), [])
        self.assertEqual(admin_state(self.mock), {"a1": True, "a2": True, "b1": True})

    def test_wrong_secret_is_unauthenticated(self):
        srv = self.server(args=["--secrets-file", self.secrets_file])
        pb = self.stubs.fence_pb2
        stub = self.fence_stub(srv)
        unauth = grpc.StatusCode.UNAUTHENTICATED
        for secrets in ({}, {"fence-key": "guess"}, {"other": "open-sesame"}):
            calls = [
                lambda: stub.FenceClusterNetwork(pb.FenceClusterNetworkRequest(
                    cidrs=self.cidrs("10.240.1.0/24"), secrets=secrets), timeout=TIMEOUT),
                lambda: stub.UnfenceClusterNetwork(pb.UnfenceClusterNetworkRequest(
                    cidrs=self.cidrs("10.240.1.0/24"), secrets=secrets), timeout=TIMEOUT),
                lambda: stub.ListClusterFence(pb.ListClusterFenceRequest(secrets=secrets),
                                              timeout=TIMEOUT),
                lambda: stub.GetFenceClients(pb.GetFenceClientsRequest(secrets=secrets),
                                             timeout=TIMEOUT),
            ]
            for call in calls:
                err = self.assert_code(unauth, call)
                self.assertNotIn("guess", err.details())
                self.assertNotIn("open-sesame", err.details())
        self.assertEqual(admin_state(self.mock), {"a1": True, "a2": True, "b1": True})
        # The secret values never reach the log either.
        srv.stop()
        log = srv.log_text()
        self.assertNotIn("open-sesame", log)
        self.assertNotIn("guess", log)

    def test_methods_not_served_are_unimplemented(self):
        srv = self.server()
        channel = srv.channel()
        self.addCleanup(channel.close)
        ekr = self.stubs.encryptionkeyrotation_pb2
        stub = self.stubs.encryptionkeyrotation_pb2_grpc.EncryptionKeyRotationControllerStub(
            channel)
        req = ekr.EncryptionKeyRotateRequest(volume_id="vol-1")
        req.volume_capability.block.SetInParent()
        self.assert_code(grpc.StatusCode.UNIMPLEMENTED,
                         lambda: stub.EncryptionKeyRotate(req, timeout=TIMEOUT))
        # A CSI-Addons service this server has no part of (replication), as raw bytes.
        raw = channel.unary_unary("/replication.Controller/EnableVolumeReplication",
                                  request_serializer=None, response_deserializer=None)
        self.assert_code(grpc.StatusCode.UNIMPLEMENTED, lambda: raw(b"", timeout=TIMEOUT))

    # --- capabilities, probe, durability ------------------------------------------------------

    def test_identity_advertises_fencing_and_probe_is_ready(self):
        srv = self.server()
        channel = srv.channel()
        self.addCleanup(channel.close)
        ipb = self.stubs.identity_pb2
        ident = self.stubs.identity_pb2_grpc.IdentityStub(channel)
        caps = ident.GetCapabilities(ipb.GetCapabilitiesRequest(), timeout=TIMEOUT)
        fence_types = {ipb.Capability.NetworkFence.Type.Name(c.network_fence.type)
                       for c in caps.capabilities if c.WhichOneof("type") == "network_fence"}
        # GET_CLIENTS_TO_FENCE is the node plugins' (each for its own node); the controller still
        # answers GetFenceClients when asked (mizarmpctl).
        self.assertEqual(fence_types, {"NETWORK_FENCE"})
        self.fence_stub(srv).GetFenceClients(self.stubs.fence_pb2.GetFenceClientsRequest(),
                                             timeout=TIMEOUT)
        self.assertTrue(ident.Probe(ipb.ProbeRequest(), timeout=TIMEOUT).ready.value)

    def test_unusable_store_makes_the_probe_not_ready(self):
        # Not an error, which would make the CSI-Addons sidecar exit: ready=false, the reason
        # in the trailing metadata.
        store = os.path.join(self.work.path, "store-is-a-dir")
        os.makedirs(store, exist_ok=True)
        srv = self.server(fence_store=store, wait_ready=False)
        channel = srv.channel()
        self.addCleanup(channel.close)
        ipb = self.stubs.identity_pb2
        ident = self.stubs.identity_pb2_grpc.IdentityStub(channel)
        deadline = time.monotonic() + 20
        while True:  # the store fails to open in the background, after the socket is up
            resp, call = ident.Probe.with_call(ipb.ProbeRequest(), timeout=TIMEOUT)
            why = dict(call.trailing_metadata() or ()).get("mizarmp-not-ready", "")
            if why.startswith("fence store: ") and "initialising" not in why:
                break
            self.assertLess(time.monotonic(), deadline, why)
            time.sleep(0.1)
        self.assertFalse(resp.ready.value)
        self.assertIn(store, why)

    def test_acknowledged_fence_survives_kill_9(self):
        store = os.path.join(self.work.path, "kill9", "fence.db")
        srv = self.server(fence_store=store, name="kill9a")
        pb = self.stubs.fence_pb2
        self.fence_stub(srv).FenceClusterNetwork(
            pb.FenceClusterNetworkRequest(cidrs=self.cidrs("10.240.2.10")), timeout=TIMEOUT)
        srv.kill()
        self.assertEqual(os.stat(store).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.dirname(store)).st_mode & 0o777, 0o700)
        again = self.server(fence_store=store, name="kill9b")
        listed = self.fence_stub(again).ListClusterFence(pb.ListClusterFenceRequest(),
                                                         timeout=TIMEOUT)
        self.assertEqual([c.cidr for c in listed.cidrs], ["10.240.2.10/32"])
        self.assertEqual(admin_state(self.mock), {"a1": True, "a2": True, "b1": False})


if __name__ == "__main__":
    unittest.main()
