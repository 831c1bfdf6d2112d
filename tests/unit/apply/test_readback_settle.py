"""Which real servers the read-back waits for when they are absent: only those keepalived has not
checked as they are now (new in the revision, or changed). One it checked before keeps its checker's
state across the reload, so its absence means down, not "not yet checked"."""

from __future__ import annotations

from fulcrum.apply.daemons.keepalived import checked_real_servers, new_to_keepalived
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.ipvs_table import expected_ipvs


def snapshot(services: list[dict]) -> ConfigSnapshot:
    return ConfigSnapshot.model_validate({"services": services})


def web(backends: list[dict], **changes) -> dict:
    return {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": backends, **changes}


def awaited(before: ConfigSnapshot | None, after: ConfigSnapshot) -> set[str]:
    known = checked_real_servers(before, expected_ipvs(before)) if before else {}
    expected = expected_ipvs(after)
    table = new_to_keepalived(known, expected, checked_real_servers(after, expected))
    return {f"{service.name} {real.address}" for service in table.services for real in service.real_servers}


A, B, C = {"address": "198.51.100.1"}, {"address": "198.51.100.2"}, {"address": "198.51.100.3"}


def test_after_a_restart_every_real_server_is_awaited() -> None:
    assert awaited(None, snapshot([web([A, B])])) == {"web 198.51.100.1", "web 198.51.100.2"}


def test_only_new_and_changed_real_servers_are_awaited() -> None:
    before = snapshot([web([A, B])])
    assert awaited(before, before) == set()
    assert awaited(before, snapshot([web([A, B, C])])) == {"web 198.51.100.3"}
    assert awaited(before, snapshot([web([A, {**B, "weight": 5}])])) == {"web 198.51.100.2"}
    assert awaited(before, snapshot([web([A, {**B, "health_check": {"type": "http"}}])])) == {"web 198.51.100.2"}


def test_a_changed_service_check_awaits_its_real_servers_again() -> None:
    before = snapshot([web([A, B])])
    after = snapshot([web([A, B], health_check={"type": "tcp", "interval": 2})])
    assert awaited(before, after) == {"web 198.51.100.1", "web 198.51.100.2"}


def test_a_moved_service_is_new() -> None:
    before = snapshot([web([A])])
    assert awaited(before, snapshot([web([A], ports=[81])])) == {"web 198.51.100.1"}
