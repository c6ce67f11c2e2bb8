# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
"""An independent Python client for mizarmp-addons, shared by the Python gRPC tests.

Nothing here comes from the C++ build except the binaries under test: the stubs are generated
at test time with grpc_tools (Debian's python3-grpc-tools): the CSI-Addons ones from
csi-addons/spec's own protos as published where MIZARMP_UPSTREAM_PROTO_DIR names them (the Python
tests: every RPC is driven in upstream's wire format), else from proto/, and gRPC's health.proto
from proto/;
TLS material is made with the openssl CLI, and the servers are real processes.

    stubs = generate_stubs(tmpdir)               # identity_pb2, fence_pb2_grpc, health_pb2, ...
    with MizarMpMock(tmpdir) as mp, AddonsServer(tmpdir, mpurl=mp.base_url) as srv:
        ident = stubs.identity_pb2_grpc.IdentityStub(srv.channel())
        ident.Probe(stubs.identity_pb2.ProbeRequest(), timeout=10)

Environment: MIZARMP_BIN_DIR (default <repo>/build/bin), MIZARMP_PROTO_DIR (default
<repo>/proto), MIZARMP_UPSTREAM_PROTO_DIR (unset: the CSI-Addons stubs come from proto/; set to an
absent directory: the same with a printed note, and under CI=true an error).
"""

import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types
import urllib.request

import grpc

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))

# Paths under the include root, where csi-addons/spec has them (and proto/ mirrors them).
CSI_ADDONS_PROTO_FILES = [
    "identity/identity.proto",
    "fence/fence.proto",
    "encryptionkeyrotation/encryptionkeyrotation.proto",
    "github.com/container-storage-interface/spec/lib/go/csi/csi.proto",
]
# gRPC's own health service, which is no part of the CSI-Addons spec: always from proto/.
HEALTH_PROTO_FILES = ["health.proto"]
# The generated modules (named by their .proto's path, so "identity/identity.proto" gives
# identity.identity_pb2, a module of the namespace package identity) and the attribute of the
# namespace generate_stubs() returns each under.
STUB_MODULES = {
    "identity_pb2": "identity.identity_pb2",
    "identity_pb2_grpc": "identity.identity_pb2_grpc",
    "fence_pb2": "fence.fence_pb2",
    "fence_pb2_grpc": "fence.fence_pb2_grpc",
    "encryptionkeyrotation_pb2": "encryptionkeyrotation.encryptionkeyrotation_pb2",
    "encryptionkeyrotation_pb2_grpc": "encryptionkeyrotation.encryptionkeyrotation_pb2_grpc",
    "health_pb2": "health_pb2",
    "health_pb2_grpc": "health_pb2_grpc",
}

# The seed's one-box ids, which mizarmp-mock serves by default.
DEFAULT_PROJECT = "3dda2801-d675-4688-a63f-dcda8d327f50"
DEFAULT_SUBNET = "a87e0f87-a2d9-44ef-9194-9a62f178594e"
# The VPC: a strict Alcor mock's network_id (the subnet goes in fixed_ips).
DEFAULT_VPC = "9192a4d4-ffff-4ece-b3f0-8d36e3d88038"

# mizarmp-mock's flags for the real Alcor controller's behaviour (mock-server/strict.h), the
# generation whose port list the addons server fences from.
STRICT_ALCOR = ("--strict", "--dialect", "alcor")


def bin_dir():
    return os.environ.get("MIZARMP_BIN_DIR", os.path.join(_REPO, "build", "bin"))


def proto_dir():
    return os.environ.get("MIZARMP_PROTO_DIR", os.path.join(_REPO, "proto"))


def binary(name):
    path = os.path.join(bin_dir(), name)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path} is not built (set MIZARMP_BIN_DIR)")
    return path


def _well_known_include():
    """Directory holding google/protobuf/*.proto for grpc_tools.protoc."""
    import grpc_tools  # pylint: disable=import-outside-toplevel
    bundled = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    if os.path.exists(os.path.join(bundled, "google", "protobuf", "wrappers.proto")):
        return bundled
    return "/usr/include"


def csi_addons_proto_dir():
    """The include root of the CSI-Addons protos the stubs are made from: proto/ unless
    MIZARMP_UPSTREAM_PROTO_DIR names upstream's (the Python tests' ctest entries do; the demo
    and the package test do not). Where it names a directory that is absent, proto/ serves with
    a printed note, and under CI=true, where upstream's are always present, that is an error."""
    upstream = os.environ.get("MIZARMP_UPSTREAM_PROTO_DIR", "")
    if not upstream:
        return proto_dir()
    if os.path.isdir(upstream):
        return upstream
    reason = f"no upstream CSI-Addons protos at {upstream}"
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{reason}; CI always has them")
    print(f"note: {reason}; the stubs come from proto/", file=sys.stderr)
    return proto_dir()


def _protoc(include_dir, out_dir, files):
    cmd = [sys.executable, "-m", "grpc_tools.protoc",
           "-I", include_dir, "-I", _well_known_include(),
           "--python_out", out_dir, "--grpc_python_out", out_dir] + files
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"grpc_tools.protoc on {include_dir} failed ({run.returncode}): "
                           f"{run.stderr}")


def generate_stubs(out_dir):
    """Generates Python message and gRPC modules into out_dir (the CSI-Addons ones from
    csi_addons_proto_dir()), puts out_dir on sys.path and returns a namespace with the imported
    modules as attributes."""
    os.makedirs(out_dir, exist_ok=True)
    _protoc(csi_addons_proto_dir(), out_dir, CSI_ADDONS_PROTO_FILES)
    _protoc(proto_dir(), out_dir, HEALTH_PROTO_FILES)
    # Regular packages, so a same-named directory elsewhere on sys.path (the repository's fence/
    # when run from its root) cannot join them as a namespace package.
    for module in STUB_MODULES.values():
        if "." in module:
            init = os.path.join(out_dir, module.split(".")[0], "__init__.py")
            if not os.path.exists(init):
                open(init, "w", encoding="ascii").close()
    if out_dir not in sys.path:
        sys.path.insert(0, out_dir)
    importlib.invalidate_caches()
    ns = types.SimpleNamespace()
    for name, module in STUB_MODULES.items():
        setattr(ns, name, importlib.import_module(module))
    return ns


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args, cwd):
    run = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                         check=False)
    if run.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {run.stderr}")


def make_tls_material(directory, name="tls"):
    """A throwaway CA, a server certificate for localhost/127.0.0.1 and a client certificate,
    both signed by the CA, plus a second, unrelated CA and a client certificate signed by it.
    Returns a dict of absolute paths: ca, server_cert, server_key, client_cert, client_key,
    other_ca, other_client_cert, other_client_key."""
    d = os.path.join(directory, name)
    os.makedirs(d, exist_ok=True)
    ext = os.path.join(d, "server.ext")
    with open(ext, "w", encoding="ascii") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    client_ext = os.path.join(d, "client.ext")
    with open(client_ext, "w", encoding="ascii") as f:
        f.write("extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n")

    def ca(prefix):
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", f"{prefix}.key", "-out", f"{prefix}.crt", "-days", "2",
                 "-subj", f"/CN=mizarmp test {prefix}", cwd=d)

    def leaf(prefix, issuer, extfile, cn):
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", f"{prefix}.key", "-out", f"{prefix}.csr", "-subj", f"/CN={cn}",
                 cwd=d)
        _openssl("x509", "-req", "-in", f"{prefix}.csr", "-CA", f"{issuer}.crt",
                 "-CAkey", f"{issuer}.key", "-CAcreateserial", "-out", f"{prefix}.crt",
                 "-days", "2", "-extfile", extfile, cwd=d)

    ca("ca")
    ca("otherca")
    leaf("server", "ca", ext, "localhost")
    leaf("client", "ca", client_ext, "mizarmp test client")
    leaf("otherclient", "otherca", client_ext, "mizarmp stranger")
    p = lambda n: os.path.join(d, n)  # noqa: E731
    return {
        "ca": p("ca.crt"),
        "server_cert": p("server.crt"), "server_key": p("server.key"),
        "client_cert": p("client.crt"), "client_key": p("client.key"),
        "other_ca": p("otherca.crt"),
        "other_client_cert": p("otherclient.crt"), "other_client_key": p("otherclient.key"),
    }


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def make_secrets_file(directory, secrets=None, name="secrets.json"):
    """A 0600 secrets file (a JSON object of strings) for --secrets-file; returns its path.
    The default holds one secret, enough to authenticate a tcp:// endpoint's clients."""
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(secrets if secrets is not None else {"addons-key": "test-only"}, f)
    os.chmod(path, 0o600)
    return path


def tls_channel(address, ca, cert=None, key=None, server_name="localhost"):
    """A TLS channel to host:port, verifying the server against `ca`, optionally presenting a
    client certificate."""
    creds = grpc.ssl_channel_credentials(
        root_certificates=_read(ca),
        private_key=_read(key) if key else None,
        certificate_chain=_read(cert) if cert else None)
    return grpc.secure_channel(address, creds,
                               options=[("grpc.ssl_target_name_override", server_name)])


def _wait_for(predicate, timeout, what, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {proc.returncode}; "
                               f"log:\n{_tail(log)}")
        if predicate():
            return
        time.sleep(0.02)
    raise TimeoutError(f"{what}: not ready after {timeout}s; log:\n{_tail(log)}")


def _tail(path, limit=4000):
    if not path or not os.path.exists(path):
        return ""
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        return f.read()[-limit:]


# Loopback only: never through an http_proxy from the environment.
_LOOPBACK_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class MizarMpMock:
    """mizarmp-mock on 127.0.0.1 with a free port (no agent, no root needed)."""

    def __init__(self, workdir, extra_args=()):
        self.workdir = workdir
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None
        self.log = os.path.join(workdir, f"mock-{id(self)}.log")

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, body=None, timeout=20):
        """One REST call to the mock with a JSON body; its decoded answer (None when empty)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with _LOOPBACK_OPENER.open(req, timeout=timeout) as resp:
            return json.loads(resp.read().decode() or "null")

    def start(self):
        # id() values are reused once an object is gone: never read a previous mock's port.
        port_file = os.path.join(self.workdir, f"mock-{id(self)}.port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [binary("mizarmp-mock"), "--listen", "127.0.0.1:0", "--port-file", port_file,
                 *self.extra_args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def has_port():
            try:
                text = _read(port_file).decode().strip()
            except FileNotFoundError:
                return False
            if not text:
                return False
            self.port = int(text)
            return True

        _wait_for(has_port, 20, "mizarmp-mock", self.proc, self.log)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class AddonsServer:
    """mizarmp-addons as a subprocess.

    endpoint: None for a unix socket in workdir, "tcp" for TLS on a free loopback port (tls
    must then be a make_tls_material() dict; client_ca=True also requires client certs), or an
    explicit endpoint string. A tcp endpoint needs client authentication: client_ca=True or a
    secrets_file (--secrets-file; make_secrets_file() writes one). Extra flags go in `args`."""

    def __init__(self, workdir, mpurl=None, endpoint=None, tls=None, client_ca=False, args=(),
                 name="addons", fence_store=None, state_dir=None, key_store_dir=None,
                 secrets_file=None):
        self.workdir = workdir
        # Never the system defaults (/var/lib/...): a fence store, a records dir, a key store
        # and a kubelet root per server name unless the test shares one between servers (a
        # restart on the same store).
        self.fence_store = fence_store or os.path.join(workdir, f"{name}-lib", "fence.db")
        self.state_dir = state_dir or os.path.join(workdir, f"{name}-cni")
        self.key_store_dir = key_store_dir or os.path.join(workdir, f"{name}-keys")
        self.kubelet_dir = os.path.join(workdir, f"{name}-kubelet")
        self.mpurl = mpurl or f"http://127.0.0.1:{free_port()}"
        self.tls = tls
        self.client_ca = client_ca
        self.secrets_file = secrets_file
        self.args = list(args)
        self.proc = None
        self.log = os.path.join(workdir, f"{name}.log")
        self.socket_path = None
        self.port = None
        if endpoint is None:
            self.socket_path = os.path.join(workdir, f"{name}-run", "csi-addons.sock")
            self.endpoint = "unix://" + self.socket_path
        elif endpoint == "tcp":
            self.port = free_port()
            self.endpoint = f"tcp://127.0.0.1:{self.port}"
        else:
            self.endpoint = endpoint

    @property
    def address(self):
        """The gRPC target for clients."""
        if self.socket_path:
            return "unix:" + self.socket_path
        return f"127.0.0.1:{self.port}"

    def command(self):
        cmd = [binary("mizarmp-addons"), "--endpoint", self.endpoint, "--mpurl", self.mpurl,
               "--log-level", "debug", "--fence-store", self.fence_store,
               "--state-dir", self.state_dir, "--key-store-dir", self.key_store_dir,
               "--kubelet-dir", self.kubelet_dir]
        if self.tls:
            cmd += ["--tls-cert-file", self.tls["server_cert"],
                    "--tls-key-file", self.tls["server_key"]]
            if self.client_ca:
                cmd += ["--tls-client-ca-file", self.tls["ca"]]
        if self.secrets_file:
            cmd += ["--secrets-file", self.secrets_file]
        return cmd + self.args

    def channel(self, cert=None, key=None, ca=None):
        """A channel to the server: plain for unix sockets, TLS (verifying against the test CA,
        presenting the test client certificate when the server requires one) for tcp."""
        if self.tls:
            if cert is None and self.client_ca:
                cert, key = self.tls["client_cert"], self.tls["client_key"]
            return tls_channel(self.address, ca or self.tls["ca"], cert, key)
        return grpc.insecure_channel(self.address)

    def start(self, timeout=20):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT)

        def ready():
            ch = self.channel()
            try:
                grpc.channel_ready_future(ch).result(timeout=0.5)
                return True
            except grpc.FutureTimeoutError:
                return False
            finally:
                ch.close()

        _wait_for(ready, timeout, "mizarmp-addons", self.proc, self.log)
        return self

    def wait_ready(self, stubs, timeout=30):
        """Returns once Probe says ready. The fence store opens in the background after the
        socket is up, and until then a fence is refused (UNAVAILABLE, "still opening"): a test
        starts where a CSI-Addons sidecar would, at the first ready Probe."""
        channel = self.channel()
        ident = stubs.identity_pb2_grpc.IdentityStub(channel)

        def ready():
            try:
                return ident.Probe(stubs.identity_pb2.ProbeRequest(), timeout=2).ready.value
            except grpc.RpcError:
                return False

        try:
            _wait_for(ready, timeout, "mizarmp-addons Probe", self.proc, self.log)
        finally:
            channel.close()
        return self

    def stop(self, timeout=20):
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return self.proc.returncode

    def kill(self):
        """SIGKILL, no chance to clean up (a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log_text(self):
        return _tail(self.log, limit=1 << 20)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Workdir:
    """A temp dir removed afterwards (short path: unix socket paths are limited to 107)."""

    def __init__(self):
        self._td = tempfile.TemporaryDirectory(prefix="mzpy", dir="/tmp")
        self.path = self._td.name

    def cleanup(self):
        self._td.cleanup()
