"""keepalived.conf rendering: golden files, keepalived -t, and the decisions the goldens encode."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import RuntimePaths, render_keepalived


def test_matches_golden(golden_case: Any, assert_golden: Callable[[str, str], None]) -> None:
    assert_golden(render_keepalived(golden_case.snapshot, golden_case.runtime), f"{golden_case.name}.conf")


def test_keepalived_accepts(golden_case: Any, keepalived_accepts: Callable[[str, ConfigSnapshot], None]) -> None:
    keepalived_accepts(render_keepalived(golden_case.snapshot, golden_case.runtime), golden_case.snapshot)


def test_validator_reports_unknown_keywords(keepalived_accepts: Callable[[str, ConfigSnapshot], None]) -> None:
    """keepalived -t exits non-zero and prints "(Line 5) Unknown keyword 'bogus'"; so must we fail."""
    config = render_keepalived(ConfigSnapshot(), RuntimePaths()).replace(
        "    enable_script_security\n", "    enable_script_security\n    bogus 1\n"
    )
    with pytest.raises(AssertionError, match="Unknown keyword 'bogus'"):
        keepalived_accepts(config, ConfigSnapshot())


def test_order_of_input_does_not_matter(raw_full: dict[str, Any], full_snapshot: ConfigSnapshot) -> None:
    shuffled = dict(raw_full)
    shuffler = random.Random(7)
    shuffled["services"] = shuffler.sample(raw_full["services"], len(raw_full["services"]))
    shuffled["vip_groups"] = list(reversed(raw_full["vip_groups"]))
    for service in shuffled["services"]:
        service["backends"] = shuffler.sample(service["backends"], len(service["backends"]))
    runtime = RuntimePaths(maintenance_file="/m")
    assert render_keepalived(ConfigSnapshot.model_validate(shuffled), runtime) == render_keepalived(
        full_snapshot, runtime
    )


def test_only_services_with_an_enabled_backend_are_rendered(full_snapshot: ConfigSnapshot) -> None:
    rendered = render_keepalived(full_snapshot, RuntimePaths())
    assert "# service legacy" not in rendered  # disabled service
    assert "# service maintenance" not in rendered  # every backend disabled: keepalived refuses it
    assert "10.20.0.12" not in rendered  # disabled backend of web


def test_descriptions_never_reach_the_file(raw_full: dict[str, Any]) -> None:
    for service in raw_full["services"]:
        service["description"] = "DESCRIPTION"
        for backend in service["backends"]:
            backend["description"] = "DESCRIPTION"
    assert "DESCRIPTION" not in render_keepalived(ConfigSnapshot.model_validate(raw_full), RuntimePaths())


def test_one_group_gets_no_sync_group() -> None:
    """keepalived rejects a vrrp_sync_group with a single member."""
    snapshot = ConfigSnapshot.model_validate(
        {"vip_groups": [{"name": "only", "virtual_router_id": 1, "addresses": ["192.0.2.5/24"]}]}
    )
    rendered = render_keepalived(snapshot, RuntimePaths())
    assert "vrrp_instance VG_only {" in rendered
    assert "vrrp_sync_group" not in rendered


def test_no_groups_means_no_sync_daemon_nor_track_file() -> None:
    snapshot = ConfigSnapshot.model_validate({"node": {"sync_interface": "eth1"}})
    rendered = render_keepalived(snapshot, RuntimePaths(maintenance_file="/var/lib/fulcrum/maintenance"))
    assert "lvs_sync_daemon" not in rendered
    assert "track_file" not in rendered


@pytest.mark.parametrize(
    ("seconds", "rendered"),
    [(1.0, "1"), (0.5, "0.5"), (2.25, "2.25"), (0.1 + 0.2, "0.3"), (3600.0, "3600"), (0.1234567, "0.123457")],
)
def test_timers_are_compact_with_at_most_six_decimals(seconds: float, rendered: str) -> None:
    snapshot = ConfigSnapshot.model_validate(
        {
            "services": [
                {
                    "name": "s",
                    "address": "192.0.2.10",
                    "ports": [80],
                    "health_check": {"interval": seconds},
                    "backends": [{"address": "10.0.0.1"}],
                }
            ]
        }
    )
    assert f"            delay_loop {rendered}\n" in render_keepalived(snapshot, RuntimePaths())


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("notify_fifo", "relative/fifo"),
        ("lvs_notify_fifo", "/run/fulcrum/a fifo"),
        ("maintenance_file", '/run/"quoted"'),
        ("maintenance_file", "/run/x}\ninclude /etc/shadow"),
        ("notify_fifo", "/run/"),
    ],
)
def test_runtime_paths_are_plain_absolute_paths(field: str, path: str) -> None:
    with pytest.raises(ValueError, match=field):
        RuntimePaths(**{field: path})


def test_runtime_fifos_differ() -> None:
    with pytest.raises(ValueError, match="must differ"):
        RuntimePaths(notify_fifo="/run/fulcrum/fifo", lvs_notify_fifo="/run/fulcrum/fifo")


def _udp_service(**check: Any) -> dict[str, Any]:
    return {
        "name": "dns",
        "address": "192.0.2.10",
        "ports": [53],
        "protocol": "udp",
        "health_check": {"type": "udp", **check},
        "backends": [{"address": "10.0.0.1"}],
    }


def _group(*addresses: str) -> dict[str, Any]:
    return {"name": "public", "virtual_router_id": 1, "addresses": list(addresses)}


def _bypass(model: Any, path: list[str], value: object) -> Any:
    """`model` with the field at `path` set to `value` unvalidated, as if a model rule were missing."""
    field, *rest = path
    if not rest:
        return model.model_copy(update={field: value})
    child = getattr(model, field)
    if isinstance(child, list):
        index, *rest = rest
        items = list(child)
        items[int(index)] = _bypass(items[int(index)], rest, value)
        return model.model_copy(update={field: items})
    return model.model_copy(update={field: _bypass(child, rest, value)})


def test_a_quorum_above_the_enabled_weight_is_reduced_as_keepalived_would(
    keepalived_accepts: Callable[[str, ConfigSnapshot], None],
) -> None:
    """keepalived reduces such a quorum itself, with a warning that fails `keepalived -t`; the
    renderer does the reduction, so draining a backend never makes a config invalid."""
    snapshot = ConfigSnapshot.model_validate(
        {"services": [{**_udp_service(), "quorum": 5, "backends": [{"address": "10.0.0.1", "weight": 2}, {"address": "10.0.0.2", "weight": 0}]}]}
    )
    config = render_keepalived(snapshot, RuntimePaths())
    assert "    quorum 2\n" in config
    keepalived_accepts(config, snapshot)


@pytest.mark.parametrize(
    ("raw", "path", "value", "keepalived_says"),
    [
        ({"vip_groups": [_group("192.0.2.5/24")]}, "vip_groups.0.advert_interval", 0.125, "units of 10ms"),
        (
            {"node": {"peer_address": "192.0.2.2"}, "vip_groups": [_group("192.0.2.5/24")]},
            "vip_groups.0.addresses",
            ["2001:db8::5/64"],
            "address family must match",
        ),
        ({"vip_groups": [_group("192.0.2.5/24")]}, "node.vrrp_interface", "lo", "loopback"),
        ({"services": [_udp_service(udp_payload="00fe")]}, "services.0.health_check.udp_payload", "00ff", "hex"),
    ],
)
def test_model_rules_stand_for_keepalived_refusals(
    raw: dict[str, Any],
    path: str,
    value: object,
    keepalived_says: str,
    keepalived_accepts: Callable[[str, ConfigSnapshot], None],
) -> None:
    """Each rule added to the model for the renderer: keepalived -t refuses what it rejects."""
    valid = ConfigSnapshot.model_validate(raw)
    keepalived_accepts(render_keepalived(valid, RuntimePaths()), valid)
    broken = _bypass(valid, path.split("."), value)
    with pytest.raises(AssertionError, match=keepalived_says):
        keepalived_accepts(render_keepalived(broken, RuntimePaths()), broken)
    with pytest.raises(ValidationError, match=path.rpartition(".")[2]):
        ConfigSnapshot.model_validate(broken.model_dump(mode="json"))
