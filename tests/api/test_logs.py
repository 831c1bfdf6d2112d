"""System → Logs against a real journal: entries written into a journal file with
systemd-journal-remote (this host runs no journald), read back by the API through journalctl."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from apitest import login_as, serve

JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
BOOT = "0123456789abcdef0123456789abcdef"
BASE = 1_700_000_000  # 2023-11-14T22:13:20Z

pytestmark = pytest.mark.skipif(
    not JOURNAL_REMOTE.exists() or shutil.which("journalctl") is None,
    reason="needs journalctl and systemd-journal-remote (scripts/setup-host installs them)",
)


def write_journal(path: Path, entries: list[dict[str, str]]) -> None:
    """Appends entries (journal export format) to a journal file, as journald would have."""
    export = "".join("".join(f"{key}={value}\n" for key, value in entry.items()) + "\n" for entry in entries)
    subprocess.run(
        [str(JOURNAL_REMOTE), f"--output={path}", "-"],
        input=export.encode(),
        check=True,
        capture_output=True,
    )


def entry(second: int, unit: str | None, message: str, priority: int = 6, **fields: str) -> dict[str, str]:
    document = {
        "__REALTIME_TIMESTAMP": str((BASE + second) * 1_000_000),
        "__MONOTONIC_TIMESTAMP": str(second * 1_000_000 + 1),
        "_BOOT_ID": BOOT,
        "PRIORITY": str(priority),
        "MESSAGE": message,
        "_PID": "4242",
        **fields,
    }
    if unit:
        document["_SYSTEMD_UNIT"] = unit
    return document


ENTRIES = [
    entry(1, "fulcrum-keepalived.service", "VRRP_Instance(VI_1) Entering MASTER STATE"),
    entry(
        2,
        "fulcrum-keepalived.service",
        "TCP check on [198.51.100.1]:80 failed",
        priority=3,
    ),
    entry(3, "fulcrum-api.service", "start-up re-apply of the running revision: applied"),
    entry(4, "fulcrum-applyd.service", "revision 3: applied", priority=5),
    entry(5, None, "IPVS: Creating netns size=2048", _TRANSPORT="kernel"),
    entry(6, "cron.service", "not one of the appliance's units"),
    entry(7, "systemd-networkd.service", "eth0: Gained carrier"),
    entry(8, "fulcrum-keepalived.service", "Remote SMTP server [192.0.2.1]:25 connected"),
]


@pytest.fixture
def journal_dir(client: TestClient, tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "journal"
    directory.mkdir()
    write_journal(directory / "system.journal", ENTRIES)
    settings = client.app.state.settings
    client.app.state.settings = settings.model_copy(update={"journal_directory": directory})
    yield directory
    client.app.state.settings = settings


def messages(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["message"] for item in response.json()["entries"]]


def test_newest_first_from_the_appliance_units_and_the_kernel_only(
    client: TestClient, journal_dir: Path
) -> None:
    page = client.get("/api/v1/logs").json()
    assert page["available"] is True
    assert [item["message"] for item in page["entries"]] == [
        e["MESSAGE"] for e in ENTRIES if e is not ENTRIES[5]
    ][::-1]
    first = page["entries"][-1]
    assert first["source"] == "keepalived" and first["pid"] == 4242 and first["priority"] == 6
    assert first["time"].startswith("2023-11-14T22:13:21")
    assert {item["source"] for item in page["entries"]} == {
        "keepalived",
        "api",
        "applyd",
        "kernel",
        "networking",
    }


def test_filters_by_source_priority_time_and_text(client: TestClient, journal_dir: Path) -> None:
    assert messages(client.get("/api/v1/logs", params={"source": "kernel"})) == [
        "IPVS: Creating netns size=2048"
    ]
    both = client.get("/api/v1/logs", params={"source": ["api", "applyd"]})
    assert messages(both) == [
        "revision 3: applied",
        "start-up re-apply of the running revision: applied",
    ]
    assert messages(client.get("/api/v1/logs", params={"priority": 3})) == [
        "TCP check on [198.51.100.1]:80 failed"
    ]
    window = {
        "since": "2023-11-14T22:13:23Z",
        "until": "2023-11-14T22:13:25Z",
        "source": ["api", "applyd", "kernel"],
    }
    assert messages(client.get("/api/v1/logs", params=window)) == [
        "IPVS: Creating netns size=2048",
        "revision 3: applied",
        "start-up re-apply of the running revision: applied",
    ]
    # The text is a literal, case-insensitive: brackets and dots are not a pattern.
    assert messages(client.get("/api/v1/logs", params={"text": "[198.51.100.1]:80"})) == [
        "TCP check on [198.51.100.1]:80 failed"
    ]
    assert messages(client.get("/api/v1/logs", params={"text": "vrrp_instance(vi_1)"})) == [
        "VRRP_Instance(VI_1) Entering MASTER STATE"
    ]
    assert messages(client.get("/api/v1/logs", params={"text": "1.."})) == []


def test_pages_older_with_the_cursor_and_newer_after_it(client: TestClient, journal_dir: Path) -> None:
    first = client.get("/api/v1/logs", params={"limit": 3}).json()
    assert [e["message"] for e in first["entries"]] == [
        "Remote SMTP server [192.0.2.1]:25 connected",
        "eth0: Gained carrier",
        "IPVS: Creating netns size=2048",
    ]
    assert first["older_cursor"] == first["entries"][-1]["cursor"]
    second = client.get("/api/v1/logs", params={"limit": 3, "before": first["older_cursor"]}).json()
    assert [e["message"] for e in second["entries"]] == [
        "revision 3: applied",
        "start-up re-apply of the running revision: applied",
        "TCP check on [198.51.100.1]:80 failed",
    ]
    last = client.get("/api/v1/logs", params={"limit": 3, "before": second["older_cursor"]}).json()
    assert [e["message"] for e in last["entries"]] == ["VRRP_Instance(VI_1) Entering MASTER STATE"]
    assert last["older_cursor"] is None
    newer = client.get("/api/v1/logs", params={"after": second["entries"][0]["cursor"]}).json()
    assert [e["message"] for e in newer["entries"]] == [e["message"] for e in first["entries"]]


def test_download_is_text_oldest_first(client: TestClient, journal_dir: Path) -> None:
    response = client.get("/api/v1/logs/download", params={"source": "keepalived"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["content-disposition"].startswith('attachment; filename="fulcrum-logs-')
    lines = response.text.splitlines()
    assert lines == [
        "2023-11-14T22:13:21.000000+00:00 keepalived[4242] <6> VRRP_Instance(VI_1) Entering MASTER STATE",
        "2023-11-14T22:13:22.000000+00:00 keepalived[4242] <3> TCP check on [198.51.100.1]:80 failed",
        "2023-11-14T22:13:28.000000+00:00 keepalived[4242] <6> Remote SMTP server [192.0.2.1]:25 connected",
    ]


def test_the_live_tail_streams_new_entries(client: TestClient, journal_dir: Path) -> None:
    """Over a real socket (Starlette's TestClient buffers whole responses)."""
    with (
        serve(client.app) as base_url,
        httpx.Client(base_url=base_url, headers=client.headers, timeout=20) as http,
    ):
        with http.stream("GET", "/api/v1/logs/stream", params={"source": "applyd"}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            assert next(lines) == ": tailing"
            new = [
                entry(20, "fulcrum-api.service", "not asked for"),
                entry(21, "fulcrum-applyd.service", "revision 4"),
            ]
            threading.Timer(0.3, write_journal, [journal_dir / "system.journal", new]).start()
            data = next(line for line in lines if line.startswith("data:"))
    assert json.loads(data[5:])["message"] == "revision 4"


def test_no_journal_on_this_node_is_said_plainly(client: TestClient, tmp_path: Path) -> None:
    settings = client.app.state.settings
    client.app.state.settings = settings.model_copy(update={"journal_directory": tmp_path})
    try:
        page = client.get("/api/v1/logs").json()
        download = client.get("/api/v1/logs/download")
    finally:
        client.app.state.settings = settings
    assert page["available"] is False and page["entries"] == []
    assert page["reason"].startswith("no journal on this node")
    assert download.status_code == 200 and download.text.startswith("no journal on this node")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"source": "sshd"}, "source"),
        ({"source": "--file=/etc/shadow"}, "source"),
        ({"priority": 8}, "priority"),
        ({"priority": -1}, "priority"),
        ({"since": "yesterday"}, "since"),
        ({"until": "@0"}, "until"),
        ({"text": "a\nb"}, "text"),
        ({"text": "x" * 201}, "text"),
        ({"before": "--directory=/"}, "before"),
        ({"after": "s=1;i=2\n--file=/etc/shadow"}, "after"),
        ({"after": "$(reboot)"}, "after"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
    ],
)
def test_bad_filters_get_422_naming_the_field(
    client: TestClient, journal_dir: Path, params: dict[str, object], field: str
) -> None:
    response = client.get("/api/v1/logs", params=params)
    assert response.status_code == 422, response.text
    assert [problem["loc"][-1] for problem in response.json()["detail"]] == [field] or any(
        field in problem["loc"] for problem in response.json()["detail"]
    )


def test_a_cursor_the_journal_does_not_know_is_a_422(client: TestClient, journal_dir: Path) -> None:
    response = client.get("/api/v1/logs", params={"before": "s=0;i=1"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "before"]


LOG_ROUTES = ("/api/v1/logs", "/api/v1/logs/download", "/api/v1/logs/stream")


def test_viewers_cannot_read_the_logs(client: TestClient, journal_dir: Path) -> None:
    """Journal lines carry user names and client addresses: operators and admins only."""
    viewer = login_as(client, "vera", "viewer")
    for path in LOG_ROUTES:
        assert viewer.get(path).status_code == 403, path


def test_operators_can_read_the_logs(client: TestClient, journal_dir: Path) -> None:
    operator = login_as(client, "otto", "operator")
    with (
        serve(client.app) as base_url,
        httpx.Client(base_url=base_url, headers=operator.headers, timeout=20) as http,
    ):
        for path in LOG_ROUTES:  # over a real socket: the live tail never ends by itself
            with http.stream("GET", path) as response:
                assert response.status_code == 200, path
