"""Which real servers the read-back waits for when they are absent: only those keepalived has not
checked as they are now (new in the revision, or changed). One it checked before keeps its checker's
state across the reload, so its absence means down, not "not yet checked"."""

from __future__ import annotations

from fulcrum.apply.daemons.keepalived import changed_services, checked_real_servers, new_to_keepalived
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


# --- which services are polled until keepalived has applied the reload ---------------------------


def changed(before: ConfigSnapshot | None, after: ConfigSnapshot) -> set[str] | None:
    known = checked_real_servers(before, expected_ipvs(before)) if before else {}
    expected = expected_ipvs(after)
    awaited = new_to_keepalived(known, expected, checked_real_servers(after, expected))
    keys = changed_services(expected_ipvs(before) if before else None, expected, awaited)
    return None if keys is None else {str(key) for key in keys}


def api(backends: list[dict], **changes) -> dict:
    return {"name": "api", "address": "192.0.2.11", "ports": [443], "backends": backends, **changes}


def test_nothing_verified_or_everything_changed_polls_everything() -> None:
    assert changed(None, snapshot([web([A]), api([B])])) is None
    assert changed(snapshot([]), snapshot([web([A]), api([B])])) is None
    assert changed(snapshot([web([A]), api([B])]), snapshot([web([B]), api([A])])) is None


def test_only_the_changed_services_are_polled() -> None:
    before = snapshot([web([A, B]), api([A])])
    assert changed(before, before) == set()
    assert changed(before, snapshot([web([A, {**B, "weight": 5}]), api([A])])) == {"tcp 192.0.2.10:80"}
    assert changed(before, snapshot([web([A, B]), api([A], scheduler="lc")])) == {"tcp 192.0.2.11:443"}


def test_added_removed_and_moved_services_are_polled() -> None:
    before = snapshot([web([A])])
    assert changed(before, snapshot([web([A]), api([B])])) == {"tcp 192.0.2.11:443"}
    assert changed(snapshot([web([A]), api([B])]), before) == {"tcp 192.0.2.11:443"}
    two = snapshot([web([A]), api([B])])
    moved = snapshot([web([A], ports=[81]), api([B])])
    assert changed(two, moved) == {"tcp 192.0.2.10:80", "tcp 192.0.2.10:81"}


def test_a_new_check_polls_its_service_though_ipvs_holds_the_same() -> None:
    before = snapshot([web([A]), api([B])])
    after = snapshot([web([{**A, "health_check": {"type": "http"}}]), api([B])])
    assert expected_ipvs(before).services[0] == expected_ipvs(after).services[0]
    assert changed(before, after) == {"tcp 192.0.2.10:80"}
