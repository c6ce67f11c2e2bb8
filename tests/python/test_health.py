# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""mizarmp-addons' grpc.health.v1.Health, seen by an independent Python gRPC client whose stubs
are generated from proto/health.proto (the standard health protocol's names and numbers).

Run: MIZARMP_BIN_DIR=build/bin python3 -m unittest -v test_health   (from tests/python)
Needs the built mizarmp-addons and mizarmp-mock, python3-grpcio, python3-grpc-tools.
"""

import os
import queue
import threading
import time
import unittest

import grpc

import addons_client as ac

TIMEOUT = 10  # seconds per RPC; generous, never asserted on

IDENTITY = "identity.Identity"
FENCE = "fence.FenceController"
KEYROT = "encryptionkeyrotation.EncryptionKeyRotationController"


class HealthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = ac.Workdir()
        cls.stubs = ac.generate_stubs(os.path.join(cls.work.path, "stubs"))
        cls.mock = ac.MizarMpMock(cls.work.path, ac.STRICT_ALCOR).start()

    @classmethod
    def tearDownClass(cls):
        cls.mock.stop()
        cls.work.cleanup()

    def server(self, wait_ready=True, **kwargs):
        """A started server; by default once Probe said ready (health follows readiness, and
        the fence store opens after the socket is up)."""
        kwargs.setdefault("mpurl", self.mock.base_url)
        kwargs.setdefault("name", self.id().rsplit(".", 1)[-1])
        srv = ac.AddonsServer(self.work.path, **kwargs)
        srv.start()
        self.addCleanup(srv.stop)
        if wait_ready:
            srv.wait_ready(self.stubs)
        return srv

    def health(self, srv):
        channel = srv.channel()
        self.addCleanup(channel.close)
        return self.stubs.health_pb2_grpc.HealthStub(channel)

    def check(self, stub, service):
        """The status name, or the gRPC status code when the call fails."""
        pb = self.stubs.health_pb2
        try:
            resp = stub.Check(pb.HealthCheckRequest(service=service), timeout=TIMEOUT)
        except grpc.RpcError as err:
            return err.code()
        return pb.HealthCheckResponse.ServingStatus.Name(resp.status)

    def watch(self, stub, service, timeout=60):
        """Starts a Watch; returns (call, queue of status names, None at the end)."""
        pb = self.stubs.health_pb2
        call = stub.Watch(pb.HealthCheckRequest(service=service), timeout=timeout)
        updates = queue.Queue()

        def pump():
            try:
                for resp in call:
                    updates.put(pb.HealthCheckResponse.ServingStatus.Name(resp.status))
            except grpc.RpcError:
                pass
            updates.put(None)

        threading.Thread(target=pump, daemon=True).start()
        self.addCleanup(call.cancel)
        return call, updates

    def test_check_controller_mode(self):
        stub = self.health(self.server())
        for name in ("", IDENTITY, FENCE):
            self.assertEqual(self.check(stub, name), "SERVING", name)
        # Not served in controller mode, and names nobody registered.
        for name in (KEYROT, "no.Such", "grpc.health.v1.Health"):
            self.assertEqual(self.check(stub, name), grpc.StatusCode.NOT_FOUND, name)

    def test_check_node_mode(self):
        stub = self.health(self.server(args=["--mode", "node"]))
        # FenceController too: a node serves GetFenceClients for itself.
        for name in ("", IDENTITY, KEYROT, FENCE):
            self.assertEqual(self.check(stub, name), "SERVING", name)

    def test_watch_serving_first_and_unknown_stays_open(self):
        stub = self.health(self.server())
        _, overall = self.watch(stub, "")
        self.assertEqual(overall.get(timeout=TIMEOUT), "SERVING")
        _, fence = self.watch(stub, FENCE)
        self.assertEqual(fence.get(timeout=TIMEOUT), "SERVING")
        unknown_call, unknown = self.watch(stub, "no.Such")
        self.assertEqual(unknown.get(timeout=TIMEOUT), "SERVICE_UNKNOWN")
        time.sleep(0.5)
        self.assertTrue(unknown_call.is_active())  # the protocol keeps it open
        self.assertTrue(unknown.empty())

    def test_sigterm_ends_watches_with_not_serving(self):
        srv = ac.AddonsServer(self.work.path, mpurl=self.mock.base_url, name="sigterm-health")
        srv.start()
        self.addCleanup(srv.stop)
        srv.wait_ready(self.stubs)
        stub = self.health(srv)
        calls = {}
        for name in ("", IDENTITY, "no.Such"):
            calls[name] = self.watch(stub, name)
        self.assertEqual(calls[""][1].get(timeout=TIMEOUT), "SERVING")
        self.assertEqual(calls[IDENTITY][1].get(timeout=TIMEOUT), "SERVING")
        self.assertEqual(calls["no.Such"][1].get(timeout=TIMEOUT), "SERVICE_UNKNOWN")

        start = time.monotonic()
        rc = srv.stop(timeout=20)
        elapsed = time.monotonic() - start
        self.assertEqual(rc, 0, srv.log_text())
        # The drain's grace is 10 s: open Watch calls must not hold it up.
        self.assertLess(elapsed, 5, srv.log_text())
        for name in ("", IDENTITY):
            call, updates = calls[name]
            self.assertEqual(updates.get(timeout=TIMEOUT), "NOT_SERVING", name)
            self.assertIsNone(updates.get(timeout=TIMEOUT), name)
            self.assertEqual(call.code(), grpc.StatusCode.OK, name)
        call, updates = calls["no.Such"]
        self.assertIsNone(updates.get(timeout=TIMEOUT))
        self.assertEqual(call.code(), grpc.StatusCode.OK)

    def test_sigterm_does_not_wait_for_an_idle_client(self):
        # A client that made a call and keeps its channel open, as kubelet or a sidecar does.
        srv = ac.AddonsServer(self.work.path, mpurl=self.mock.base_url, name="sigterm-idle")
        srv.start()
        self.addCleanup(srv.stop)
        srv.wait_ready(self.stubs)
        stub = self.health(srv)
        self.assertEqual(self.check(stub, ""), "SERVING")
        start = time.monotonic()
        rc = srv.stop(timeout=20)
        elapsed = time.monotonic() - start
        self.assertEqual(rc, 0, srv.log_text())
        # Nothing was in flight, so the drain (10 s grace) has nothing to wait for; left to the
        # client, an idle HTTP/2 connection closes ~5 s after the server's GOAWAY.
        self.assertLess(elapsed, 2.5, srv.log_text())
        self.assertEqual(self.check(stub, ""), grpc.StatusCode.UNAVAILABLE)

    def test_not_ready_is_not_serving_but_alive(self):
        # Mizar-MP unreachable: Probe says ready=false, so "" and the services are NOT_SERVING
        # (a readinessProbe's answer), while "liveness" (the livenessProbe's) stays SERVING: a
        # restart would not bring Mizar-MP back.
        srv = self.server(wait_ready=False, mpurl=f"http://127.0.0.1:{ac.free_port()}")
        stub = self.health(srv)
        _, overall = self.watch(stub, "")
        self.assertEqual(overall.get(timeout=TIMEOUT), "NOT_SERVING")
        for name in ("", IDENTITY, FENCE):
            self.assertEqual(self.check(stub, name), "NOT_SERVING", name)
        self.assertEqual(self.check(stub, "liveness"), "SERVING")
        time.sleep(1.5)  # the background evaluation runs every second while not ready
        self.assertTrue(overall.empty(), "no change, no message")

    def test_reflection_lists_health(self):
        srv = self.server()
        channel = srv.channel()
        self.addCleanup(channel.close)
        # ServerReflectionRequest{list_services: ""} (field 7, empty string), as raw bytes.
        info = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        responses = list(info(iter([b"\x3a\x00"]), timeout=TIMEOUT))
        self.assertEqual(len(responses), 1)
        for name in (b"grpc.health.v1.Health", IDENTITY.encode(), FENCE.encode()):
            self.assertIn(name, responses[0])


if __name__ == "__main__":
    unittest.main()
