# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""mizarmp-addons Identity service, seen by an independent Python gRPC client.

Run: MIZARMP_BIN_DIR=build/bin python3 -m unittest -v test_identity   (from tests/python)
Needs the built mizarmp-addons and mizarmp-mock, python3-grpcio, python3-grpc-tools, openssl.
"""

import os
import stat
import subprocess
import unittest

import grpc

import addons_client as ac

TIMEOUT = 10  # seconds per RPC; generous, never asserted on


class IdentityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = ac.Workdir()
        cls.stubs = ac.generate_stubs(os.path.join(cls.work.path, "stubs"))
        cls.tls = ac.make_tls_material(cls.work.path)
        # tcp:// needs client authentication; the TLS tests without client certificates use
        # request secrets (Identity itself takes none).
        cls.secrets_file = ac.make_secrets_file(cls.work.path)
        cls.mock = ac.MizarMpMock(cls.work.path, ac.STRICT_ALCOR).start()

    @classmethod
    def tearDownClass(cls):
        cls.mock.stop()
        cls.work.cleanup()

    def server(self, **kwargs):
        kwargs.setdefault("mpurl", self.mock.base_url)
        kwargs.setdefault("name", self.id().rsplit(".", 1)[-1])
        srv = ac.AddonsServer(self.work.path, **kwargs)
        srv.start()
        self.addCleanup(srv.stop)
        return srv

    def identity(self, channel):
        self.addCleanup(channel.close)
        return self.stubs.identity_pb2_grpc.IdentityStub(channel)

    def capabilities(self, stub):
        pb = self.stubs.identity_pb2
        resp = stub.GetCapabilities(pb.GetCapabilitiesRequest(), timeout=TIMEOUT)
        caps = set()
        for c in resp.capabilities:
            kind = c.WhichOneof("type")
            if kind == "service":
                caps.add(("service", pb.Capability.Service.Type.Name(c.service.type)))
            elif kind == "network_fence":
                caps.add(("network_fence",
                          pb.Capability.NetworkFence.Type.Name(c.network_fence.type)))
            elif kind == "encryption_key_rotation":
                caps.add(("encryption_key_rotation",
                          pb.Capability.EncryptionKeyRotation.Type.Name(
                              c.encryption_key_rotation.type)))
            else:
                caps.add((kind, None))
        self.assertEqual(len(caps), len(resp.capabilities), "duplicate capabilities")
        return caps

    def served(self, channel, call):
        """Whether the server serves this method: anything but UNIMPLEMENTED."""
        try:
            call(channel)
            return True
        except grpc.RpcError as err:
            return err.code() != grpc.StatusCode.UNIMPLEMENTED

    # --- unix socket ---------------------------------------------------------------------

    def test_get_identity(self):
        srv = self.server()
        pb = self.stubs.identity_pb2
        resp = self.identity(srv.channel()).GetIdentity(pb.GetIdentityRequest(), timeout=TIMEOUT)
        self.assertEqual(resp.name, "mizarmp.csi-addons.mizar.io")
        version = subprocess.run([ac.binary("mizarmp-addons"), "--version"], check=True,
                                 capture_output=True, text=True).stdout.split()
        self.assertEqual(resp.vendor_version, version[1])
        self.assertEqual(dict(resp.manifest),
                         {"mizarmp-url": self.mock.base_url, "commit": version[2].strip("()"),
                          "mode": "controller"})

    def test_custom_drivername_and_node_mode(self):
        srv = self.server(args=["--drivername", "node.example.io", "--mode", "node"])
        pb = self.stubs.identity_pb2
        stub = self.identity(srv.channel())
        resp = stub.GetIdentity(pb.GetIdentityRequest(), timeout=TIMEOUT)
        self.assertEqual(resp.name, "node.example.io")
        self.assertEqual(resp.manifest["mode"], "node")
        caps = self.capabilities(stub)
        self.assertIn(("service", "NODE_SERVICE"), caps)
        self.assertNotIn(("service", "CONTROLLER_SERVICE"), caps)
        # A node reports its own fence clients (the CSI-Addons controller asks every node that
        # advertises it) and leaves fencing to the controller.
        self.assertIn(("network_fence", "GET_CLIENTS_TO_FENCE"), caps)
        self.assertNotIn(("network_fence", "NETWORK_FENCE"), caps)
        fence = self.stubs.fence_pb2
        fence_stub = self.stubs.fence_pb2_grpc.FenceControllerStub(srv.channel())
        answer = fence_stub.GetFenceClients(fence.GetFenceClientsRequest(), timeout=TIMEOUT)
        self.assertEqual(list(answer.clients), [])  # no pod on this node yet

    def test_capabilities_match_served_services(self):
        srv = self.server()
        channel = srv.channel()
        caps = self.capabilities(self.identity(channel))
        self.assertIn(("service", "CONTROLLER_SERVICE"), caps)
        fence = self.stubs.fence_pb2
        fence_grpc = self.stubs.fence_pb2_grpc
        list_fence = lambda ch: fence_grpc.FenceControllerStub(ch).ListClusterFence(  # noqa
            fence.ListClusterFenceRequest(), timeout=TIMEOUT)
        get_clients = lambda ch: fence_grpc.FenceControllerStub(ch).GetFenceClients(  # noqa
            fence.GetFenceClientsRequest(), timeout=TIMEOUT)
        # What is advertised is served (the CO calls what is advertised).
        self.assertIn(("network_fence", "NETWORK_FENCE"), caps)
        self.assertTrue(self.served(channel, list_fence))
        # GetFenceClients is served for mizarmpctl but not advertised: the CSI-Addons controller
        # files an answer under the CSIAddonsNode of the sidecar it asked, so only node plugins
        # advertise it, each for its own node.
        self.assertNotIn(("network_fence", "GET_CLIENTS_TO_FENCE"), caps)
        self.assertTrue(self.served(channel, get_clients))

    def test_probe_ready(self):
        srv = self.server().wait_ready(self.stubs)
        pb = self.stubs.identity_pb2
        resp = self.identity(srv.channel()).Probe(pb.ProbeRequest(), timeout=TIMEOUT)
        self.assertTrue(resp.HasField("ready"))
        self.assertTrue(resp.ready.value)

    def test_probe_mizarmp_unreachable(self):
        # ready=false, not an error: the CSI-Addons sidecar exits on any Probe error but
        # DEADLINE_EXCEEDED and retries every second on ready=false (kubernetes-csi-addons
        # sidecar/internal/client/client.go). The reason rides in the trailing metadata.
        srv = self.server(mpurl=f"http://127.0.0.1:{ac.free_port()}")
        pb = self.stubs.identity_pb2
        resp, call = self.identity(srv.channel()).Probe.with_call(pb.ProbeRequest(),
                                                                  timeout=TIMEOUT)
        self.assertEqual(call.code(), grpc.StatusCode.OK)
        self.assertTrue(resp.HasField("ready"))
        self.assertFalse(resp.ready.value)
        why = dict(call.trailing_metadata() or ()).get("mizarmp-not-ready", "")
        self.assertTrue(why.startswith("Mizar-MP at "), why)

    def test_unserved_method_is_unimplemented(self):
        srv = self.server()
        ekr = self.stubs.encryptionkeyrotation_pb2
        channel = srv.channel()
        self.addCleanup(channel.close)
        stub = self.stubs.encryptionkeyrotation_pb2_grpc.EncryptionKeyRotationControllerStub(
            channel)
        req = ekr.EncryptionKeyRotateRequest(volume_id="vol-1")
        req.volume_capability.block.SetInParent()
        with self.assertRaises(grpc.RpcError) as ctx:
            stub.EncryptionKeyRotate(req, timeout=TIMEOUT)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    def test_socket_private_and_removed_on_sigterm(self):
        srv = ac.AddonsServer(self.work.path, mpurl=self.mock.base_url, name="sigterm")
        srv.start()
        try:
            mode = os.lstat(srv.socket_path).st_mode
            self.assertTrue(stat.S_ISSOCK(mode))
            self.assertEqual(stat.S_IMODE(mode), 0o600)
        finally:
            rc = srv.stop()
        self.assertEqual(rc, 0, srv.log_text())
        self.assertFalse(os.path.exists(srv.socket_path))

    def test_bad_config_exits_2(self):
        run = subprocess.run([ac.binary("mizarmp-addons"), "--mpurl", self.mock.base_url,
                              "--endpoint", "tcp://127.0.0.1:1"],
                             capture_output=True, text=True, timeout=30, check=False)
        self.assertEqual(run.returncode, 2)
        self.assertIn("tlsCertFile", run.stderr)
        self.assertEqual(run.stdout, "")

    def test_tcp_without_client_authentication_exits_2(self):
        for extra in (["--tls-cert-file", self.tls["server_cert"],
                       "--tls-key-file", self.tls["server_key"]],
                      ["--insecure-tcp"],
                      ["--insecure-tcp", "--secrets-file",
                       ac.make_secrets_file(self.work.path, {}, name="empty-secrets.json")]):
            with self.subTest(extra=extra):
                run = subprocess.run([ac.binary("mizarmp-addons"), "--mpurl", self.mock.base_url,
                                      "--endpoint", f"tcp://127.0.0.1:{ac.free_port()}", *extra],
                                     capture_output=True, text=True, timeout=30, check=False)
                self.assertEqual(run.returncode, 2, run.stderr)
                self.assertIn("authenticated", run.stderr)
                self.assertIn("tlsClientCaFile", run.stderr)
                self.assertIn("secretsFile", run.stderr)
                self.assertEqual(run.stdout, "")

    # --- TLS over TCP --------------------------------------------------------------------

    def test_tls_identity_and_probe(self):
        srv = self.server(endpoint="tcp", tls=self.tls, secrets_file=self.secrets_file)
        srv.wait_ready(self.stubs)
        pb = self.stubs.identity_pb2
        stub = self.identity(srv.channel())
        self.assertEqual(stub.GetIdentity(pb.GetIdentityRequest(), timeout=TIMEOUT).name,
                         "mizarmp.csi-addons.mizar.io")
        self.assertIn(("service", "CONTROLLER_SERVICE"), self.capabilities(stub))
        self.assertTrue(stub.Probe(pb.ProbeRequest(), timeout=TIMEOUT).ready.value)

    def test_tls_server_not_trusted_by_other_ca(self):
        srv = self.server(endpoint="tcp", tls=self.tls, secrets_file=self.secrets_file)
        pb = self.stubs.identity_pb2
        stub = self.identity(srv.channel(ca=self.tls["other_ca"]))
        with self.assertRaises(grpc.RpcError) as ctx:
            stub.GetIdentity(pb.GetIdentityRequest(), timeout=5)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNAVAILABLE)

    def test_plaintext_client_rejected_by_tls_server(self):
        srv = self.server(endpoint="tcp", tls=self.tls, secrets_file=self.secrets_file)
        pb = self.stubs.identity_pb2
        stub = self.identity(grpc.insecure_channel(srv.address))
        with self.assertRaises(grpc.RpcError) as ctx:
            stub.GetIdentity(pb.GetIdentityRequest(), timeout=5)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNAVAILABLE)

    def test_mutual_tls(self):
        srv = self.server(endpoint="tcp", tls=self.tls, client_ca=True)
        pb = self.stubs.identity_pb2
        ok = self.identity(srv.channel())  # presents the CA-signed client certificate
        self.assertEqual(ok.GetIdentity(pb.GetIdentityRequest(), timeout=TIMEOUT).name,
                         "mizarmp.csi-addons.mizar.io")
        for cert, key in ((None, None),
                          (self.tls["other_client_cert"], self.tls["other_client_key"])):
            channel = ac.tls_channel(srv.address, self.tls["ca"], cert, key)
            stub = self.identity(channel)
            with self.assertRaises(grpc.RpcError, msg=f"client cert {cert}") as ctx:
                stub.GetIdentity(pb.GetIdentityRequest(), timeout=5)
            self.assertEqual(ctx.exception.code(), grpc.StatusCode.UNAVAILABLE)


if __name__ == "__main__":
    unittest.main()
