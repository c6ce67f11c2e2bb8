# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""EncryptionKeyRotation through the independent Python gRPC client against a real
mizarmp-addons-testhooks --mode node process (the server with the test hooks, for cheap PBKDF2
keyslots): the status codes a CSI-Addons caller sees for a missing
volume_id, an unknown volume and a device that is not LUKS2, the capabilities Identity
advertises in node mode, and (when the cryptsetup CLI is installed to make the test image) a
successful rotation whose new key opens the header and old key does not, also for a request
shaped exactly like the CSI-Addons sidecar's (no volume_path) for a volume kubelet staged."""

import hashlib
import json
import os
import shutil
import subprocess
import unittest

import grpc

import addons_client as ac

TIMEOUT = 30  # seconds per RPC; generous, never asserted on
DRIVER = "luks.csi.example.com"  # the server's drivername: kubelet stages volumes under it
CRYPTSETUP = shutil.which("cryptsetup") or (
    "/usr/sbin/cryptsetup" if os.access("/usr/sbin/cryptsetup", os.X_OK) else None)


class TestHooksAddonsServer(ac.AddonsServer):
    """The same server linked with the test hooks that read MIZARMP_KEYROT_* (found, like every
    binary, in MIZARMP_BIN_DIR)."""

    def command(self):
        return [ac.binary("mizarmp-addons-testhooks")] + super().command()[1:]


def cryptsetup(*args, key):
    """Runs the cryptsetup CLI with the passphrase on stdin."""
    run = subprocess.run([CRYPTSETUP, "--batch-mode", *args, "--key-file", "-"], input=key,
                         capture_output=True, check=False)
    return run.returncode


class KeyRotationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = ac.Workdir()
        cls.stubs = ac.generate_stubs(os.path.join(cls.work.path, "stubs"))
        cls.keys = os.path.join(cls.work.path, "keys")
        # Cheap PBKDF2 for the keyslots the server adds (a test-only hook of the server).
        os.environ["MIZARMP_KEYROT_TEST_PBKDF2_ITERATIONS"] = "1000"
        # Filesystem volumes resolve through this mount table (a test's own file: nothing is
        # mounted); the kubelet root is the server's per-test kubelet_dir.
        cls.mounts = os.path.join(cls.work.path, "mountinfo")
        with open(cls.mounts, "w", encoding="ascii") as f:
            f.write("/dev/vda / ext4 rw 0 0\n")
        cls.srv = TestHooksAddonsServer(
            cls.work.path, args=["--mode", "node", "--drivername", DRIVER,
                                 "--mount-table", cls.mounts],
            key_store_dir=cls.keys).start()
        cls.channel = cls.srv.channel()
        pb = cls.stubs.encryptionkeyrotation_pb2_grpc
        cls.stub = pb.EncryptionKeyRotationControllerStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.srv.stop()
        os.environ.pop("MIZARMP_KEYROT_TEST_PBKDF2_ITERATIONS", None)
        cls.work.cleanup()

    def rotate(self, **fields):
        req = self.stubs.encryptionkeyrotation_pb2.EncryptionKeyRotateRequest(**fields)
        return self.stub.EncryptionKeyRotate(req, timeout=TIMEOUT)

    def assert_code(self, code, **fields):
        with self.assertRaises(grpc.RpcError) as ctx:
            self.rotate(**fields)
        self.assertEqual(ctx.exception.code(), code, ctx.exception.details())
        return ctx.exception.details()

    def test_missing_volume_id_is_invalid_argument(self):
        details = self.assert_code(grpc.StatusCode.INVALID_ARGUMENT, volume_path="/dev/null")
        self.assertIn("volume_id", details)

    def test_unknown_volume_is_not_found(self):
        self.assert_code(grpc.StatusCode.NOT_FOUND, volume_id="no-such-volume")
        self.assert_code(grpc.StatusCode.NOT_FOUND, volume_id="no-such-volume",
                         volume_path=os.path.join(self.work.path, "missing.img"))

    def test_non_luks_device_is_failed_precondition(self):
        plain = os.path.join(self.work.path, "plain.img")
        with open(plain, "wb") as f:
            f.truncate(20 << 20)
        details = self.assert_code(grpc.StatusCode.FAILED_PRECONDITION, volume_id="plain",
                                   volume_path=plain)
        self.assertIn("not a LUKS2 device", details)

    def test_node_mode_capabilities(self):
        ident = self.stubs.identity_pb2_grpc.IdentityStub(self.channel)
        caps = ident.GetCapabilities(self.stubs.identity_pb2.GetCapabilitiesRequest(),
                                     timeout=TIMEOUT).capabilities
        cap = self.stubs.identity_pb2.Capability
        self.assertIn(cap.Service.NODE_SERVICE,
                      [c.service.type for c in caps if c.HasField("service")])
        self.assertIn(cap.EncryptionKeyRotation.ENCRYPTIONKEYROTATION,
                      [c.encryption_key_rotation.type for c in caps
                       if c.HasField("encryption_key_rotation")])

    @unittest.skipIf(CRYPTSETUP is None, "the cryptsetup CLI is not installed")
    def test_rotation_with_a_supplied_key(self):
        image = os.path.join(self.work.path, "luks.img")
        with open(image, "wb") as f:
            f.truncate(20 << 20)
        old, new = b"py-old-key-1234", "py-new-key-5678"
        self.assertEqual(cryptsetup("luksFormat", "--type", "luks2", "--pbkdf", "pbkdf2",
                                    "--pbkdf-force-iterations", "1000", image, key=old), 0)
        # The key store's documented record format: one 0600 file per volume.
        record = os.path.join(self.keys, "vol-py-vol")
        fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"volumeId": "py-vol", "device": image, "current": old.hex()}, f)
        self.rotate(volume_id="py-vol", encryption_key=new)
        self.assertEqual(cryptsetup("open", "--test-passphrase", image, key=new.encode()), 0)
        self.assertNotEqual(cryptsetup("open", "--test-passphrase", image, key=old), 0)
        with open(record, encoding="ascii") as f:
            self.assertEqual(json.load(f)["current"], new.encode().hex())
        self.assertEqual(os.stat(record).st_mode & 0o777, 0o600)
        self.assertNotIn(new, self.srv.log_text())


    def luks_image(self, name, key):
        image = os.path.join(self.work.path, name)
        with open(image, "wb") as f:
            f.truncate(20 << 20)
        self.assertEqual(cryptsetup("luksFormat", "--type", "luks2", "--pbkdf", "pbkdf2",
                                    "--pbkdf-force-iterations", "1000", image, key=key), 0)
        return image

    @unittest.skipIf(CRYPTSETUP is None, "the cryptsetup CLI is not installed")
    def test_sidecar_shaped_request_rotates_a_volume_staged_by_kubelet(self):
        # kubelet >= 1.24 stages a filesystem volume in <root>/plugins/kubernetes.io/csi/
        # <driver>/<sha256 hex of the volume handle>/globalmount, vol_data.json beside it.
        volume_id = "0001-0009-py-sidecar-0000000000000002-5f1c"
        old = b"py-sidecar-old-key"
        image = self.luks_image("sidecar.img", old)
        staging = os.path.join(self.srv.kubelet_dir, "plugins", "kubernetes.io", "csi", DRIVER,
                               hashlib.sha256(volume_id.encode()).hexdigest())
        os.makedirs(os.path.join(staging, "globalmount"))
        with open(os.path.join(staging, "vol_data.json"), "w", encoding="ascii") as f:
            json.dump({"driverName": DRIVER, "volumeHandle": volume_id}, f)
        with open(self.mounts, "a", encoding="ascii") as f:
            f.write(f"{image} {staging}/globalmount ext4 rw,relatime 0 0\n")
        # The key store knows the volume's key, not where the volume is.
        record = os.path.join(self.keys, "vol-" + volume_id)
        fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"volumeId": volume_id, "device": "", "current": old.hex()}, f)

        # internal/sidecar/service/encryptionkeyrotation.go: volumeHandle, volumeAttributes,
        # the node-stage secret, and a capability with an access mode but no access type.
        req = self.stubs.encryptionkeyrotation_pb2.EncryptionKeyRotateRequest(
            volume_id=volume_id,
            parameters={"clusterID": "rook-ceph", "encrypted": "true"},
            secrets={"userID": "csi-rbd-node", "userKey": "AQBn+py+secret=="})
        mode = req.volume_capability.access_mode
        mode.mode = type(mode).SINGLE_NODE_WRITER
        self.assertTrue(req.HasField("volume_capability"))
        self.assertEqual(req.volume_capability.WhichOneof("access_type"), None)
        self.assertEqual(req.volume_path, "")
        self.assertEqual(req.encryption_key, "")
        self.stub.EncryptionKeyRotate(req, timeout=TIMEOUT)

        with open(record, encoding="ascii") as f:
            stored = json.load(f)
        new = bytes.fromhex(stored["current"])
        self.assertEqual(len(new), 32)  # generated: the sidecar sends no key
        self.assertEqual(stored["device"], image)
        self.assertEqual(cryptsetup("open", "--test-passphrase", image, key=new), 0)
        self.assertNotEqual(cryptsetup("open", "--test-passphrase", image, key=old), 0)

    def test_sidecar_shaped_request_for_an_unstaged_volume_is_not_found(self):
        req = self.stubs.encryptionkeyrotation_pb2.EncryptionKeyRotateRequest(
            volume_id="pvc-nowhere")
        mode = req.volume_capability.access_mode
        mode.mode = type(mode).SINGLE_NODE_WRITER
        with self.assertRaises(grpc.RpcError) as ctx:
            self.stub.EncryptionKeyRotate(req, timeout=TIMEOUT)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)
        details = ctx.exception.details()
        self.assertIn('"pvc-nowhere"', details)
        base = os.path.join(self.srv.kubelet_dir, "plugins", "kubernetes.io", "csi")
        self.assertIn(os.path.join(base, DRIVER,
                                   hashlib.sha256(b"pvc-nowhere").hexdigest(), "vol_data.json"),
                      details)
        self.assertIn(os.path.join(base, "volumeDevices", "*", "data", "vol_data.json"), details)


if __name__ == "__main__":
    unittest.main()
