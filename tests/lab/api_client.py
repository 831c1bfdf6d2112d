"""One HTTP client for a test node's API, whoever runs the process: the kernel lab's appliances
(lab.appliance, uvicorn in a namespace) and the host's HA nodes (tests/api/hanode.py, forked by
a zygote) subclass it and add only their process management.

    node.connect("http://127.0.0.1:8080")          # (re)opens the client, keeping the session
    node.setup("admin", password)                   # first admin; the client is logged in
    node.post("/services", spec, expect=201)        # decoded JSON, or ApiError on another status
    node.request("DELETE", "/ha/pair")              # the raw response, for a test that reads it
    node.commit("web"), node.revisions(), node.ha_status()

Paths are under /api/v1. A session is the bearer token, so a cookie-less script's requests need
no CSRF token or Origin.
"""

from __future__ import annotations

import secrets
from typing import Any

import httpx

API = "/api/v1"
Expected = int | tuple[int, ...]


class ApiError(AssertionError):
    """An API call answered with an unexpected status (an AssertionError: a failed expectation)."""

    def __init__(self, response: httpx.Response, expected: tuple[int, ...]):
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


class ApiClient:
    def __init__(self) -> None:
        self._http: httpx.Client | None = None
        self.token: str | None = None

    @property
    def http(self) -> httpx.Client:
        """The httpx client (its base URL is the node's root: /metrics, /api/v1/...)."""
        assert self._http is not None, "not connected: the node has not been started"
        return self._http

    def connect(self, url: str, *, timeout: float = 120, **options: Any) -> None:
        """A new client to `url` (scheme://host:port; `options` go to httpx.Client, e.g. a
        transport or `verify`), closing the old one and its connections, keeping the session."""
        self.disconnect()
        self._http = httpx.Client(base_url=url, timeout=timeout, **options)
        if self.token:
            self._http.headers["Authorization"] = f"Bearer {self.token}"

    def disconnect(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    # --- requests ---------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request to API + `path`, whatever its status."""
        return self.http.request(method, API + path, **kwargs)

    def call(self, method: str, path: str, *, expect: Expected = (200, 201, 204), **kwargs: Any) -> Any:
        """One request; the decoded JSON (or text, or None); ApiError if the status is not `expect`."""
        response = self.request(method, path, **kwargs)
        expected = (expect,) if isinstance(expect, int) else tuple(expect)
        if response.status_code not in expected:
            raise ApiError(response, expected)
        if response.status_code == 204 or not response.content:
            return None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.call("POST", path, json=body if body is not None else {}, **kwargs)

    def put(self, path: str, body: Any, **kwargs: Any) -> Any:
        return self.call("PUT", path, json=body, **kwargs)

    def patch(self, path: str, body: Any, **kwargs: Any) -> Any:
        return self.call("PATCH", path, json=body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.call("DELETE", path, **kwargs)

    # --- a session --------------------------------------------------------------------------

    def _use_token(self, token: str) -> None:
        self.token = token
        self.http.headers["Authorization"] = f"Bearer {token}"

    def setup(self, username: str = "admin", password: str | None = None) -> str:
        """First-run setup: create the admin (with a generated password unless given); the
        client keeps its session. Returns the password."""
        password = password or secrets.token_urlsafe(18)
        self._use_token(
            self.post("/setup", {"username": username, "password": password}, expect=201)["token"]
        )
        return password

    def login(self, username: str, password: str) -> None:
        """A new session (e.g. once pairing has replaced this node's users with the peer's)."""
        self.http.headers.pop("Authorization", None)
        self._use_token(
            self.post("/auth/login", {"username": username, "password": password}, expect=200)["token"]
        )

    # --- configuration and state ------------------------------------------------------------

    def commit(
        self, message: str = "", *, expect_state: str | None = "applied", **body: Any
    ) -> dict[str, Any]:
        """Commit the candidate; the revision (201). With expect_state, assert its state."""
        revision: dict[str, Any] = self.post("/revisions", {"message": message, **body}, expect=201)
        if expect_state is not None:
            assert revision["state"] == expect_state, (
                f"revision {revision['number']}: {revision['apply_result']}"
            )
        return revision

    def revisions(self) -> list[dict[str, Any]]:
        return self.get("/revisions")["data"]

    def status(self) -> dict[str, Any]:
        """GET /status: the data plane as this node applied it."""
        return self.get("/status")

    def ha_status(self) -> dict[str, Any]:
        """GET /ha/status: this node's role and groups, the peer, the sync state."""
        return self.get("/ha/status")

    # --- what a user does -------------------------------------------------------------------

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

    def commit_failure(self, message: str = "", **body) -> dict:
        """Commit expecting refusal (409: failed and rolled back; 422: rejected); the error body."""
        return self.post("/revisions", {"message": message, **body}, expect=(409, 422))

    def rollback(self, number: int, **body) -> dict:
        return self.post(f"/revisions/{number}/rollback", body, expect=201)

    def revision(self, number: int) -> dict:
        return self.get(f"/revisions/{number}")

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
        response = self.http.get("/metrics")
        if response.status_code != 200:
            raise ApiError(response, (200,))
        return response.text
