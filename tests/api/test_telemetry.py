from __future__ import annotations

import json
import sqlite3
import threading
import time

import httpx

from fastapi.testclient import TestClient

from apitest import WEB, serve


def test_stats_say_plainly_that_there_is_no_data_plane(client: TestClient) -> None:
    client.post("/api/v1/services", json=WEB)
    client.post("/api/v1/revisions", json={})
    client.app.state.telemetry.collect()
    stats = client.get("/api/v1/stats/current").json()
    assert stats["ipvs_available"] is False and stats["revision"] == 1
    assert [b["state"] for b in stats["services"][0]["backends"]] == ["unknown", "unknown"]
    history = client.get("/api/v1/stats/history", params={"service": "web", "range": "1h"}).json()
    assert history["points"] == [] and history["resolution_seconds"] == 1


def test_history_resolution_follows_a_slower_collector(client: TestClient) -> None:
    """Collected every 5 s, fine points are 5 s apart: a resolution of 1 s would make a chart
    break the line between every two of them (found on the demo lab, FULCRUM_STATS_INTERVAL=5)."""
    client.post("/api/v1/services", json=WEB)
    client.app.state.telemetry.interval = 4.5
    resolutions = {
        range_: client.get("/api/v1/stats/history", params={"service": "web", "range": range_}).json()["resolution_seconds"]
        for range_ in ("5m", "1h", "24h")
    }
    assert resolutions == {"5m": 5, "1h": 5, "24h": 60}
    backend = client.get("/api/v1/stats/history", params={"service": "web", "backend": "198.51.100.1:80", "range": "1h"})
    assert backend.json()["resolution_seconds"] == 60


def test_a_backends_day_is_kept_on_disk_and_read_with_its_current_hour(client: TestClient) -> None:
    """Thousands of backends' day of minutes would not fit a small box's memory (issue 18): the
    finished hours are in the statistics history file, the current one in memory; a chart reads
    both as one series."""
    client.post("/api/v1/services", json=WEB)
    history = client.app.state.telemetry.history
    key = ("web", "198.51.100.1:80")
    start = (time.time() // 3600 - 2) * 3600  # two hours ago, on the hour
    minutes = int((time.time() - start) // 60)
    for minute in range(minutes + 1):
        history.add(start + minute * 60, [(key, (float(minute),) * 7)])
    history.minutes.flush()
    with sqlite3.connect(history.minutes.path) as stored:
        hours = stored.execute("SELECT hour FROM hour_block WHERE backend = ?", (key[1],)).fetchall()
    assert hours == [(int(start // 3600),), (int(start // 3600) + 1,)]
    series = client.get(
        "/api/v1/stats/history", params={"service": "web", "backend": key[1], "range": "24h"}
    ).json()
    assert series["resolution_seconds"] == 60
    cps = [point["cps"] for point in series["points"]]
    assert cps == [float(m) for m in range(minutes)]  # every closed minute, the file's and memory's


def test_keepalived_notices_become_stored_events_and_metrics(client: TestClient) -> None:
    client.post("/api/v1/services", json=WEB)
    client.post("/api/v1/revisions", json={})
    telemetry = client.app.state.telemetry
    telemetry.handle_line("RS [198.51.100.1]:tcp:80 [192.0.2.10]:tcp:80 DOWN")
    telemetry.handle_line('INSTANCE "VG_front" BACKUP 100')
    telemetry.handle_line('INSTANCE "VG_front" MASTER 100')
    events = client.get("/api/v1/events").json()
    assert events["count"] == 3
    down = client.get("/api/v1/events", params={"kind": "backend_down"}).json()["data"][0]
    assert down["service"] == "web" and down["backend"] == "198.51.100.1:80" and down["severity"] == "critical"
    assert "failed its health check" in down["message"]
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    text = metrics.text
    assert 'fulcrum_health_check_up{service="web",backend="198.51.100.1:80"} 0' in text
    assert 'fulcrum_vrrp_state{instance="VG_front",scope="instance"} 2' in text
    assert 'fulcrum_vrrp_transitions_total{instance="VG_front"} 1' in text
    assert 'fulcrum_revisions{state="validated"} 1' in text
    assert "fulcrum_dataplane_available 0" in text


def test_metrics_need_authentication(anon: TestClient) -> None:
    assert anon.get("/metrics").status_code == 401


def test_the_stream_delivers_events_as_they_happen(client: TestClient) -> None:
    """Over a real socket: Starlette's TestClient buffers whole responses, an event stream never ends."""
    client.post("/api/v1/services", json=WEB)
    client.post("/api/v1/revisions", json={})
    telemetry = client.app.state.telemetry
    with serve(client.app) as base_url, httpx.Client(base_url=base_url, headers=client.headers, timeout=10) as http:
        with http.stream("GET", "/api/v1/stream") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            assert next(lines).startswith("retry:")
            threading.Timer(0.2, telemetry.handle_line, ["RS [198.51.100.2]:tcp:80 [192.0.2.10]:tcp:80 UP"]).start()
            received = []
            for line in lines:
                received.append(line)
                if line.startswith("data:"):
                    break
    assert received[-2] == "event: event"
    assert json.loads(received[-1][5:])["kind"] == "backend_up"
