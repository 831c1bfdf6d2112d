"""Two real API processes for the HA tests: each its own uvicorn, database, state directory and
keepalived notify FIFO (through which a test reports VRRP states, as keepalived would), talking
to each other over real sockets, optionally through a `Gate` that can cut the link between them.

A node is forked from a "zygote": one helper process per test session that has imported the API
and forks a node on request (run as `python hanode.py`). A fresh interpreter per node would spend
most of its start-up importing; forking the test process itself is unsafe, as SQLite's
per-process state (open files, locks) would be inherited from the test's own connections.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import hashlib
import ipaddress
import json
import os
import select
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from apitest import PASSWORD  # also puts tests/ on the path, for lab (the zygote's too)
from lab.api_client import ApiClient
from lab.bundles import DEV_KEYS
from lab.wait import StopWaiting, wait_until

RAUC_SYSTEM_CONF = Path(__file__).resolve().parents[2] / "overlay/etc/rauc/system.conf"
START_DEADLINE = 60.0
WAIT_DEADLINE = 45.0  # for replication and the watcher: generous, the host's 2 cores are shared


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NodeExited(StopWaiting, AssertionError):
    """The node's process is gone: waiting longer for it cannot help."""


class Node(ApiClient):
    """One appliance's API in its own process; over HTTPS with a generated certificate if `tls`
    (as the appliance serves it), with its wall clock `clock_offset` seconds off and writing the
    shared configuration in format `config_schema` (as a newer version would) if given.
    The requests are lab.api_client's; this class runs the process."""

    def __init__(self, root: Path, name: str, sync_interval: float = 0.3, tls: bool = False, clock_offset: float = 0.0,
                 config_schema: int | None = None) -> None:
        super().__init__()
        self.name = name
        self.data = root / name
        self.data.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.fifo = self.data / "vrrp.fifo"
        self.maintenance_file = self.data / "state" / "maintenance"
        self.env = {
            "FULCRUM_DATA_DIR": str(self.data),
            "FULCRUM_APPLY_MODE": "local",
            "FULCRUM_COOKIE_SECURE": "false",
            "FULCRUM_REAPPLY_ON_START": "false",
            "FULCRUM_STATS_INTERVAL": "1",  # also starts the notify FIFO reader
            "FULCRUM_NOTIFY_FIFO": str(self.fifo),
            "FULCRUM_HA_SYNC_INTERVAL": str(sync_interval),
        }
        self.clock_offset = clock_offset
        self.config_schema = config_schema
        self.tls: tuple[Path, Path] | None = None
        self.certificates = 0
        if tls:
            self.new_certificate()
        self.pid: int | None = None
        self.reconnect()

    def new_certificate(self) -> str:
        """A fresh key and self-signed certificate, served from the next start; its SHA-256."""
        self.certificates += 1
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{self.name} #{self.certificates}")])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256())
        )  # fmt: skip
        tls = self.data / "tls"
        tls.mkdir(exist_ok=True)
        certfile, keyfile = tls / f"api-{self.certificates}.crt", tls / f"api-{self.certificates}.key"
        certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self.tls = (certfile, keyfile)
        self.env["FULCRUM_TLS_CERTFILE"] = str(certfile)
        self.env["FULCRUM_TLS_KEYFILE"] = str(keyfile)
        return hashlib.sha256(certificate.public_bytes(serialization.Encoding.DER)).hexdigest()

    def reconnect(self) -> None:
        """A new client (its old connections closed), keeping the session; over HTTPS it trusts
        exactly the certificate the node serves."""
        verify = ssl.create_default_context(cafile=str(self.tls[0])) if self.tls is not None else True
        self.connect(self.url, timeout=60, verify=verify)

    # --- the process ---------------------------------------------------------------------------

    def start(self, wait: bool = True) -> Node:
        self.reconnect()  # the certificate may be new
        self.pid = spawn(self.port, self.env, self.data / "api.log", self.tls, self.clock_offset, self.config_schema)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        wait_until(self._healthy, START_DEADLINE, what=f"{self.name} to answer")

    def _healthy(self) -> bool:
        assert self.pid is not None
        if not alive(self.pid):
            self.pid = None
            raise NodeExited(f"{self.name} exited:\n{self.log()}")
        try:
            return self.http.get("/api/v1/health").status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """SIGTERM (uvicorn shuts down gracefully), SIGKILL after 15 s."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        # Over HTTPS, uvicorn waits for the test's idle keep-alive connection until the SIGKILL
        # (15 s per stop, most of the TLS tests' time); without it, it exits in under a second.
        self.reconnect()
        for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            end = time.monotonic() + grace
            while time.monotonic() < end:
                if not alive(pid):
                    return
                time.sleep(0.05)
        raise AssertionError(f"{self.name} (pid {pid}) did not exit")

    def log(self) -> str:
        path = self.data / "api.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    # --- as an operator ------------------------------------------------------------------------

    def initialise(self, node_name: str | None = None) -> Node:
        """First-run setup (admin, PASSWORD), logged in, and the node's name."""
        self.setup("admin", PASSWORD)
        self.put("/node", {"name": node_name or self.name})
        return self

    def login(self, username: str, password: str = PASSWORD) -> None:
        super().login(username, password)

    def commit(self, message: str = "", *, expect_state: str | None = None, **body: Any) -> dict[str, Any]:
        """Any state by default: without IPVS on this host an apply stops at VALIDATED."""
        return super().commit(message, expect_state=expect_state, **body)

    def head(self) -> dict[str, Any] | None:
        """The newest good revision, read from the database like the API does."""
        rows = self.sql("SELECT number, shared_hash, lineage, message, author FROM revisions WHERE state IN ('applied', 'validated') ORDER BY number DESC LIMIT 1")
        return dict(zip(("number", "shared_hash", "lineage", "message", "author"), rows[0], strict=True)) if rows else None

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(self.data / "fulcrum.db", timeout=10)) as db:
            rows = db.execute(query, args).fetchall()
            db.commit()
            return rows

    def vrrp(self, group: str, state: str, priority: int = 100) -> None:
        """Report a VRRP instance state as keepalived does, through the notify FIFO."""
        wait_until(self.fifo.exists, 10, what=f"{self.name}'s notify FIFO")
        fd = os.open(self.fifo, os.O_WRONLY)
        try:
            os.write(fd, f'INSTANCE "VG_{group}" {state} {priority}\n'.encode())
        finally:
            os.close(fd)
        wait_until(
            lambda: self._group_state(group) == state, 15, what=f"{self.name}'s API to take {group} {state}",
        )

    def _group_state(self, group: str) -> str | None:
        groups = self.ha_status()["node"]["groups"]
        return next((g["state"] for g in groups if g["name"] == group), None)


class Gate:
    """A TCP forwarder in front of a node: the link between the nodes, which a test can cut."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self.open()

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, []
        for sock in ([listener] if listener else []) + connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._connections += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        sockets = [a, b]
        try:
            while True:
                ready, _, _ = select.select(sockets, [], [], 1.0)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for sock in sockets:
                sock.close()


@contextlib.contextmanager
def two_nodes(
    root: Path, gated: bool = False, tls: bool = False, beta_clock_offset: float = 0.0, env: dict[str, str] | None = None,
    alpha_config_schema: int | None = None, node_env: dict[str, dict[str, str]] | None = None,
) -> Iterator[tuple[Node, Node, Gate | None, Gate | None]]:
    """alpha and beta, started and set up (not paired); with gates in front of each if `gated`,
    over HTTPS if `tls`, beta's clock off by `beta_clock_offset` seconds, alpha writing configuration
    format `alpha_config_schema` (a newer version), `env` added to both and `node_env[name]` to one."""
    alpha = Node(root, "alpha", tls=tls, config_schema=alpha_config_schema)
    beta = Node(root, "beta", tls=tls, clock_offset=beta_clock_offset)
    for node in (alpha, beta):
        node.env.update(env or {})
        node.env.update((node_env or {}).get(node.name, {}))
    gates: tuple[Gate | None, Gate | None] = (None, None)
    try:
        alpha.start(wait=False)
        beta.start(wait=False)
        alpha.wait_ready()
        beta.wait_ready()
        alpha.initialise()
        beta.initialise()
        if gated:
            gates = (Gate(alpha.port), Gate(beta.port))
        yield alpha, beta, gates[0], gates[1]
    finally:
        for gate in gates:
            if gate is not None:
                gate.cut()
        alpha.stop()
        beta.stop()


@contextlib.contextmanager
def started_nodes(root: Path, *names: str) -> Iterator[list[Node]]:
    """Nodes of these names, started side by side and set up (first run, logged in), unrelated."""
    nodes = [Node(root, name) for name in names]
    try:
        for node in nodes:
            node.start(wait=False)
        for node in nodes:
            node.wait_ready()
            node.initialise()
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def add_member(writer: Node, member: Node) -> dict[str, Any]:
    """The writer enters the member's pairing code on its Cluster page; returns the answer."""
    code = member.post("/ha/pairing-code", expect=201)["code"]
    body = {"peer_url": member.url, "code": code, "local_url": writer.url}
    answer: dict[str, Any] = writer.post("/cluster/members", body, expect=200)
    return answer


def pair(alpha: Node, beta: Node, alpha_url: str | None = None, beta_url: str | None = None) -> dict[str, Any]:
    """alpha enters beta's pairing code; returns the pairing answer."""
    code = beta.post("/ha/pairing-code", expect=201)["code"]
    body = {"peer_url": beta_url or beta.url, "code": code, "local_url": alpha_url or alpha.url}
    answer: dict[str, Any] = alpha.post("/ha/pair", body, expect=200)
    return answer


def in_sync(alpha: Node, beta: Node) -> bool:
    a, b = alpha.head(), beta.head()
    return a is not None and b is not None and a["shared_hash"] == b["shared_hash"]


# --- the zygote --------------------------------------------------------------------------------

_zygote: subprocess.Popen[str] | None = None


def spawn(port: int, env: dict[str, str], log: Path, tls: tuple[Path, Path] | None = None, clock_offset: float = 0.0,
          config_schema: int | None = None) -> int:
    """A node's API forked by the zygote (started on first use); returns its pid."""
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        _zygote = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        atexit.register(_end_zygote, _zygote)
    assert _zygote.stdin is not None and _zygote.stdout is not None
    request = {"port": port, "env": env, "log": str(log), "tls": [str(p) for p in tls] if tls else None, "clock_offset": clock_offset,
               "config_schema": config_schema}
    _zygote.stdin.write(json.dumps(request) + "\n")
    _zygote.stdin.flush()
    return int(_zygote.stdout.readline())


def _end_zygote(zygote: subprocess.Popen[str]) -> None:
    """Close its input and wait: it exits, and its nodes' CPU time counts towards this process's."""
    assert zygote.stdin is not None
    zygote.stdin.close()
    zygote.wait(30)


def alive(pid: int) -> bool:
    """The zygote reaps its children as they exit, so a gone pid is a dead node."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _serve(port: int, env: dict[str, str], log_path: str, tls: list[str] | None, clock_offset: float,
           config_schema: int | None) -> None:
    """In the forked child: become the node's API; never returns."""
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)  # SIGCHLD: the API waits for keepalived -t and nft
        os.environ.update(env)
        import uvicorn

        from fulcrum import serve
        from fulcrum.ha import clock, wire
        from fulcrum.main import create_app
        from fulcrum.settings import Settings

        if clock_offset:
            clock.now = lambda: time.time() + clock_offset  # this node's wall clock is off
        if config_schema:
            wire.CONFIG_SCHEMA = config_schema  # a newer version's configuration format
        certfile, keyfile = (Path(tls[0]), Path(tls[1])) if tls else (None, None)
        # As the appliance serves: an uploaded certificate is served from the next connection.
        app = create_app(Settings())
        uvicorn.Server(serve.config(app, "127.0.0.1", port, certfile, keyfile, log_level="warning")).run()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(1)


def _zygote_main() -> None:
    import uvicorn  # noqa: F401  (imported once here, inherited by every node)

    import fulcrum.main  # noqa: F401

    def reap(*_: object) -> None:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass

    signal.signal(signal.SIGCHLD, reap)
    for line in sys.stdin:  # until the test process exits
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _serve(request["port"], request["env"], request["log"], request["tls"], request["clock_offset"],
                   request["config_schema"])
        print(pid, flush=True)


if __name__ == "__main__":
    _zygote_main()


def rauc_env(root: Path) -> dict[str, str]:
    """A node's RAUC configuration: the appliance's system.conf with the development CA as its
    keyring (no RAUC service: taking a bundle needs only `rauc info`)."""
    directory = root / "rauc"
    directory.mkdir()
    conf = RAUC_SYSTEM_CONF.read_text().replace("path=/etc/rauc/keyring.pem", "path=keyring.pem")
    (directory / "system.conf").write_text(conf)
    shutil.copy(DEV_KEYS / "ca.cert.pem", directory / "keyring.pem")
    return {"FULCRUM_RAUC_SYSTEM_CONF": str(directory / "system.conf")}


def kept_bundle_files(node: Node) -> list[str]:
    """The files of the node's waiting firmware bundle."""
    directory = node.data / "firmware"
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


FRONT_GROUP = {"name": "front", "virtual_router_id": 51, "addresses": ["192.0.2.100/24"]}


def active_and_standby(alpha: Node, beta: Node, service: dict[str, Any]) -> None:
    """Pair them, give alpha a VIP group and `service`, wait until beta runs it too, and play
    keepalived's part: alpha MASTER, beta BACKUP, until each sees the other in that role."""
    pair(alpha, beta)
    beta.login("admin")
    alpha.post("/vip-groups", FRONT_GROUP, expect=201)
    alpha.post("/services", service, expect=201)
    alpha.commit()
    wait_until(lambda: in_sync(alpha, beta), WAIT_DEADLINE, what="beta in sync")
    alpha.vrrp("front", "MASTER")
    beta.vrrp("front", "BACKUP")
    wait_until(lambda: beta.ha_status()["peer"]["role"] == "active", WAIT_DEADLINE, what="beta to see alpha active")
    wait_until(lambda: alpha.ha_status()["peer"]["role"] == "standby", WAIT_DEADLINE, what="alpha to see beta standby")
