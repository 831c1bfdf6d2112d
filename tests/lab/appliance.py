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

Everything lives in `workdir`: the database, the engine's state directory (keepalived.conf,
fulcrum.nft, state.json, keepalived's pid files), the notify FIFOs and the API's log.
Stopping (explicitly, or when the cleanup scope ends, pass or fail) ends uvicorn and then the
keepalived the engine started, which is not in the API's process group (the engine starts it in
a session of its own, as a daemon outlives the API on the appliance).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import time
from pathlib import Path
from typing import Any

import httpx

from fulcrum.apply.keepalived_control import pid_of
from lab.cmd import Exec, python_argv
from lab.defer import defer
from lab.netns import run_in
from lab.wait import StopWaiting, WaitTimeout, wait_until

API = "/api/v1"
# uvicorn + FastAPI + SQLAlchemy + Alembic + pyroute2 imported over 9p in the emulated VM, then
# the migrations: a minute or two there.
START_TIMEOUT = 300
KEEPALIVED_PIDFILES = ("keepalived.pid", "keepalived-vrrp.pid", "keepalived-checkers.pid", "keepalived-bfd.pid")


class ApiError(AssertionError):
    """An API call answered with an unexpected status (an AssertionError: a failed expectation)."""

    def __init__(self, response: httpx.Response, expected):
        self.response = response
        self.status = response.status_code
        try:
            self.body = response.json()
        except ValueError:
            self.body = response.text
        super().__init__(
            f"{response.request.method} {response.request.url.path} answered {self.status}, "
            f"expected {expected}: {self.body}"
        )


class Appliance(Exec):
    def __init__(
        self,
        ns,
        workdir: Path,
        *,
        listen: tuple[str, int] = ("127.0.0.1", 0),
        listen_ns=None,
        env: dict[str, str] | None = None,
    ):
        self.ns = ns
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
            **(env or {}),
        }
        self._socket: socket.socket | None = None
        self.port = 0
        self.http: httpx.Client | None = None
        self.token: str | None = None
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
        sock.set_inheritable(True)
        env = [f"{key}={value}" for key, value in self.env.items()]
        uvicorn = python_argv("-m", "uvicorn", "--factory", "fulcrum.main:create_app", "--fd", str(sock.fileno()),
                              "--log-level", "info", "--no-access-log")
        self.argv = ["ip", "netns", "exec", self.ns.name, "env", *env, *uvicorn]
        self.description = f"fulcrum API in {self.ns} on {self.listen[0]}:{self.port}"
        try:
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
        self.http = httpx.Client(
            base_url=f"http://{_host(self.listen[0])}:{self.port}{API}", timeout=120, transport=transport
        )
        if self.token:
            self.http.headers["Authorization"] = f"Bearer {self.token}"
        started = time.monotonic()

        def ready() -> bool:
            if not self.running:
                raise ApiExited(f"{self.description} exited ({self._exit}):\n{self.log()[-4000:]}")
            return self.http.get("/setup", timeout=5).status_code == 200

        try:
            wait_until(ready, timeout, what=f"{self.description} to answer", interval=0.5)
        except WaitTimeout as timeout_error:
            raise WaitTimeout(f"{timeout_error}\n--- API log ---\n{self.log()[-4000:]}") from None
        self.start_seconds = time.monotonic() - started
        return self

    def stop(self, timeout: float = 20) -> int | None:
        if self.http is not None:
            self.http.close()
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

    # --- HTTP -------------------------------------------------------------------------------

    def call(self, method: str, path: str, *, expect=(200, 201, 204), **kwargs) -> Any:
        """One request; the decoded JSON (or text, or None); ApiError if the status is not `expect`."""
        assert self.http is not None, "not started"
        response = self.http.request(method, path, **kwargs)
        expected = (expect,) if isinstance(expect, int) else tuple(expect)
        if response.status_code not in expected:
            raise ApiError(response, expected)
        if response.status_code == 204 or not response.content:
            return None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def get(self, path: str, **kwargs) -> Any:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs) -> Any:
        return self.call("POST", path, json=body if body is not None else {}, **kwargs)

    def patch(self, path: str, body: Any, **kwargs) -> Any:
        return self.call("PATCH", path, json=body, **kwargs)

    def put(self, path: str, body: Any, **kwargs) -> Any:
        return self.call("PUT", path, json=body, **kwargs)

    def delete(self, path: str, **kwargs) -> Any:
        return self.call("DELETE", path, **kwargs)

    # --- what a user does -------------------------------------------------------------------

    def setup(self, username: str = "admin", password: str | None = None) -> str:
        """First-run setup: create the admin, keep its session token. Returns the password."""
        password = password or secrets.token_urlsafe(18)
        answer = self.post("/setup", {"username": username, "password": password}, expect=201)
        self.token = answer["token"]
        assert self.http is not None
        self.http.headers["Authorization"] = f"Bearer {self.token}"
        return password

    def login(self, username: str, password: str) -> None:
        """A new session (e.g. once pairing has replaced this node's users with the peer's)."""
        self.http.headers.pop("Authorization", None)
        self.token = self.post("/auth/login", {"username": username, "password": password})["token"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def put_node(self, **settings) -> dict:
        node = self.get("/node")
        return self.put("/node", {**node, **settings})

    def create_vip_group(self, **group) -> dict:
        return self.post("/vip-groups", group, expect=201)

    def create_service(self, **spec) -> dict:
        return self.post("/services", spec, expect=201)

    def update_service(self, service_id: int, **changes) -> dict:
        return self.patch(f"/services/{service_id}", changes)

    def delete_service(self, service_id: int) -> None:
        self.delete(f"/services/{service_id}", expect=204)

    def services(self) -> list[dict]:
        return self.get("/services")["data"]

    def add_backend(self, service_id: int, **backend) -> dict:
        return self.post(f"/services/{service_id}/backends", backend, expect=201)

    def update_backend(self, service_id: int, backend_id: int, **changes) -> dict:
        return self.patch(f"/services/{service_id}/backends/{backend_id}", changes)

    def delete_backend(self, service_id: int, backend_id: int) -> None:
        self.delete(f"/services/{service_id}/backends/{backend_id}", expect=204)

    def commit(self, message: str = "", *, expect_state: str | None = "applied", **body) -> dict:
        """Commit the candidate; the revision (201). With expect_state, assert its state."""
        revision = self.post("/revisions", {"message": message, **body}, expect=201)
        if expect_state is not None:
            assert revision["state"] == expect_state, f"revision {revision['number']}: {revision['apply_result']}"
        return revision

    def commit_failure(self, message: str = "", **body) -> dict:
        """Commit expecting refusal (409: failed and rolled back; 422: rejected); the error body."""
        return self.post("/revisions", {"message": message, **body}, expect=(409, 422))

    def rollback(self, number: int, **body) -> dict:
        return self.post(f"/revisions/{number}/rollback", body, expect=201)

    def revisions(self) -> list[dict]:
        return self.get("/revisions")["data"]

    def revision(self, number: int) -> dict:
        return self.get(f"/revisions/{number}")

    def status(self) -> dict:
        return self.get("/status")

    def stats(self) -> dict:
        return self.get("/stats/current")

    def service_stats(self, name: str) -> dict | None:
        return next((s for s in self.stats()["services"] if s["name"] == name), None)

    def history(self, service: str, backend: str | None = None, range: str = "5m") -> dict:  # noqa: A002
        params = {"service": service, "range": range} | ({"backend": backend} if backend else {})
        return self.get("/stats/history", params=params)

    def events(self, **params) -> list[dict]:
        return self.get("/events", params=params)["data"]

    def metrics(self) -> str:
        assert self.http is not None
        response = self.http.get(f"http://{_host(self.listen[0])}:{self.port}/metrics")
        if response.status_code != 200:
            raise ApiError(response, 200)
        return response.text


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
