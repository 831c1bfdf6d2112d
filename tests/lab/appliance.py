"""Fulcrum's real API driving a lab LB, as a user would run it: uvicorn with the app factory,
the apply engine in-process (FULCRUM_APPLY_MODE=local), keepalived started by the engine.

    api = appliance.start(net.lb, workdir)              # ready when GET /api/v1/setup answers
    api.setup()                                         # first admin; the client is logged in
    api.put_node(vrrp_interface="eth0")                 # the LB's real interface
    service = api.create_service(name="web", address=net.vip, ports=[80], backends=[...])
    revision = api.commit("web")                        # 201 and state "applied", or AssertionError
    api.stats(), api.events(kind="backend_down"), api.metrics(), api.revisions()

Where things run. The API process runs inside the LB's namespace, so everything it does acts
there: the engine's `nft -f`, keepalived (started by the engine, inheriting the namespace), the
IPVS reads of the statistics collector and the apply read-back. Its *listening socket*, though,
is created here, in the VM's own namespace (127.0.0.1 and a free port by default), and handed to
uvicorn with `--fd`: a socket keeps the namespace it was created in. So the tests (and the
demo's qemu port forward) reach the API with plain httpx at 127.0.0.1:PORT, like a management
interface kept apart from the data plane, with no proxy process. `listen_ns=` puts the socket
in another namespace (the LB's own, for instance) instead.

The API process is forked from this one (lab.child) after its modules were imported here once,
because the import alone takes a minute in the emulated VM; `preloaded=False` executes a fresh
`python -m uvicorn --factory fulcrum.main:create_app` instead (the benchmarks measure the API's
memory, which a forked child would share with this process).

Everything lives in `workdir`: the database, the engine's state directory (keepalived.conf,
fulcrum.nft, state.json, keepalived's pid files), the notify FIFOs and the API's log.
Stopping (explicitly, or when the cleanup scope ends, pass or fail) ends uvicorn and then the
keepalived the engine started, which is not in the API's process group (the engine starts it in
a session of its own, as a daemon outlives the API on the appliance).
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
import socket
import time
from pathlib import Path

import httpx

from fulcrum.apply.keepalived_control import pid_of
from lab.api_client import API, ApiClient
from lab.child import fork_into
from lab.cmd import Exec, lab_env, python_argv
from lab.defer import defer
from lab.netns import run_in
from lab.passwords import FAST_PASSWORD_HASHING
from lab.wait import StopWaiting, WaitTimeout, wait_until

# uvicorn + FastAPI + SQLAlchemy + Alembic + pyroute2 imported over 9p in the emulated VM, then
# the migrations: a minute or two there.
START_TIMEOUT = 300
UVICORN_ARGS = ("--factory", "fulcrum.main:create_app", "--log-level", "info", "--no-access-log")
KEEPALIVED_PIDFILES = ("keepalived.pid", "keepalived-vrrp.pid", "keepalived-checkers.pid", "keepalived-bfd.pid")

# The API's modules, and what it imports only once it has work for them: Alembic, for the fresh
# database every lab API migrates (an appliance's is usually at its head already), and pyroute2,
# for the probes of DR and TUN backends.
PRELOADED = ("fulcrum.main", "alembic.command", "alembic.script", "pyroute2")


class Appliance(Exec, ApiClient):
    def __init__(
        self,
        ns,
        workdir: Path,
        *,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        listen_ns=None,
        env: dict[str, str] | None = None,
        preloaded: bool = True,
    ):
        self.ns = ns
        self.preloaded = preloaded
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.state_dir = self.data_dir / "state"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.listen = listen
        self.listen_ns = listen_ns
        self.env = {
            "FULCRUM_DATA_DIR": str(self.data_dir),
            "FULCRUM_APPLY_MODE": "local",
            "FULCRUM_COOKIE_SECURE": "false",
            "FULCRUM_NOTIFY_FIFO": str(self.data_dir / "vrrp.fifo"),
            "FULCRUM_LVS_NOTIFY_FIFO": str(self.data_dir / "lvs.fifo"),
            **FAST_PASSWORD_HASHING,
            **(env or {}),
        }
        self._socket: socket.socket | None = None
        self.port = 0
        ApiClient.__init__(self)
        # Placeholder argv: the listening socket's fd number is known only at start().
        super().__init__(["true"], ns, log_path=self.workdir / "api.log")
        # Deferred after stop(), so it runs first (LIFO): keepalived goes, then the API.
        defer(self.stop_keepalived)

    # --- process ----------------------------------------------------------------------------

    def _listening_socket(self) -> socket.socket:
        def make() -> socket.socket:
            sock = socket.socket(socket.AF_INET6 if ":" in self.listen[0] else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.listen[0], self.listen[1] or self.port))
            sock.listen(128)
            return sock

        return run_in(self.listen_ns, make) if self.listen_ns is not None else make()

    def _launch(self) -> int:
        sock = self._listening_socket()
        self.port = sock.getsockname()[1]
        self.description = f"fulcrum API in {self.ns} on {self.listen[0]}:{self.port}"
        try:
            if self.preloaded:
                for module in PRELOADED:  # here, once: every API forked later has them
                    importlib.import_module(module)
                return fork_into(self.ns, self.log_path, functools.partial(_serve_api, sock.fileno()),
                                 env={**lab_env(), **self.env}, keep_fd=sock.fileno())
            sock.set_inheritable(True)
            env = [f"{key}={value}" for key, value in self.env.items()]
            uvicorn = python_argv("-m", "uvicorn", *UVICORN_ARGS, "--fd", str(sock.fileno()))
            self.argv = ["ip", "netns", "exec", self.ns.name, "env", *env, *uvicorn]
            return super()._launch()
        finally:
            sock.close()  # uvicorn has its copy; ours would keep accepting into a dead queue

    def start(self, timeout: float = START_TIMEOUT) -> Appliance:
        return self.launch().wait_ready(timeout)

    def launch(self) -> Appliance:
        """Start the process without waiting for it to answer (wait_ready does): several
        appliances then start side by side."""
        super().start()
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT) -> Appliance:
        # With listen_ns the socket lives in that namespace: connect from there too.
        transport = _NamespacedTransport(self.listen_ns) if self.listen_ns is not None else None
        self.connect(f"http://{_host(self.listen[0])}:{self.port}", timeout=120, transport=transport)
        started = time.monotonic()

        def ready() -> bool:
            if not self.running:
                raise ApiExited(f"{self.description} exited ({self._exit}):\n{self.log()[-4000:]}")
            return self.http.get(f"{API}/setup", timeout=5).status_code == 200

        try:
            wait_until(ready, timeout, what=f"{self.description} to answer", interval=0.5)
        except WaitTimeout as timeout_error:
            raise WaitTimeout(f"{timeout_error}\n--- API log ---\n{self.log()[-4000:]}") from None
        self.start_seconds = time.monotonic() - started
        return self

    def stop(self, timeout: float = 20) -> int | None:
        self.disconnect()
        return super().stop(timeout)

    def restart(self) -> Appliance:
        """Stop and start the API (same port, same data); keepalived keeps running meanwhile."""
        self.stop()
        return self.start()

    def keepalived_pid(self) -> int | None:
        return pid_of(self.state_dir / "keepalived.pid")

    def stop_keepalived(self, timeout: float = 15) -> None:
        """SIGTERM the keepalived the engine started (it removes its IPVS services and VIPs);
        SIGKILL it and its children if it does not exit."""
        pid = self.keepalived_pid()
        if pid is not None:
            _signal(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self.keepalived_pid() == pid and time.monotonic() < deadline:
                time.sleep(0.1)
        for name in KEEPALIVED_PIDFILES:  # whatever is left, children included
            if (pid := pid_of(self.state_dir / name)) is not None:
                _signal(pid, signal.SIGKILL)


def _serve_api(fd: int) -> None:
    """In the forked child: what `python -m uvicorn UVICORN_ARGS --fd FD` runs."""
    import uvicorn.main
    from fulcrum.settings import get_settings

    get_settings.cache_clear()  # settings this process may have read with the parent's environment
    uvicorn.main.main([*UVICORN_ARGS, "--fd", str(fd)], standalone_mode=True)


class ApiExited(StopWaiting, AssertionError):
    pass


class _NamespacedTransport(httpx.HTTPTransport):
    """Opens its connections inside namespace `ns` (a socket keeps the namespace it was made in)."""

    def __init__(self, ns, **kwargs):
        super().__init__(**kwargs)
        self._ns = ns

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return run_in(self._ns, super().handle_request, request)


def start(ns, workdir: Path, **kwargs) -> Appliance:
    """The API for namespace `ns`, answering; stopped (with its keepalived) when the scope ends."""
    return Appliance(ns, workdir, **kwargs).start()


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else ("127.0.0.1" if address in ("0.0.0.0", "") else address)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
