"""keepalived.conf rendering: golden files, keepalived -t, and the decisions the goldens encode."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import NodeHealth, RuntimePaths, render_keepalived
from fulcrum.services.lineage import shared_part


def test_matches_golden(golden_case: Any, assert_golden: Callable[[str, str], None]) -> None:
    assert_golden(render_keepalived(golden_case.snapshot, golden_case.runtime), f"{golden_case.name}.conf")


def test_keepalived_accepts(golden_case: Any, keepalived_accepts: Callable[[str, ConfigSnapshot], None]) -> None:
    keepalived_accepts(render_keepalived(golden_case.snapshot, golden_case.installed_runtime), golden_case.snapshot)


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


# --- VRRP for a pair ----------------------------------------------------------------------------

HEALTH = NodeHealth(program="/usr/bin/fulcrum-node-health", url="http://127.0.0.1:8080/api/v1/health",
                    checker_pidfile="/run/fulcrum/keepalived-checkers.pid")


def _pair(**node: Any) -> dict[str, Any]:
    return {
        "node": {"name": "lb1", "vrrp_interface": "eth0", "peer_address": "10.0.0.3", **node},
        "vip_groups": [
            {"name": "front", "virtual_router_id": 51, "addresses": ["10.0.0.100/32", "10.0.0.101/32"]},
            {"name": "gateway", "virtual_router_id": 52, "addresses": ["10.1.0.1/24"]},
        ],
    }


def test_a_lone_node_runs_no_node_health_script() -> None:
    """Stepping down helps only when a peer can take over; alone it would just drop the VIPs."""
    raw = _pair()
    del raw["node"]["peer_address"]
    rendered = render_keepalived(ConfigSnapshot.model_validate(raw), RuntimePaths(node_health=HEALTH))
    assert "vrrp_script" not in rendered and "track_script" not in rendered and "script_user" not in rendered
    assert "vrrp_garp_master_refresh 60" in rendered  # a lone node still re-announces its VIPs


def test_node_health_names_the_peer_and_the_checker_only_when_there_are_services() -> None:
    snapshot = ConfigSnapshot.model_validate(_pair())
    no_services = render_keepalived(snapshot, RuntimePaths(node_health=HEALTH))
    assert (
        '    script "/usr/bin/fulcrum-node-health --url http://127.0.0.1:8080/api/v1/health --timeout 1 '
        '--peer 10.0.0.3"\n' in no_services
    )
    with_service = ConfigSnapshot.model_validate(
        {**_pair(), "services": [{"name": "web", "address": "10.0.0.100", "ports": [80], "backends": [{"address": "10.1.0.21"}]}]}
    )
    assert "--checker-pidfile /run/fulcrum/keepalived-checkers.pid --peer 10.0.0.3" in render_keepalived(
        with_service, RuntimePaths(node_health=HEALTH)
    )
    # Every instance tracks it: any of them failing would take the sync group to FAULT anyway.
    assert no_services.count("    track_script {\n        node_health\n    }\n") == 2


def test_vips_live_on_their_interface_which_is_tracked_but_the_vrrp_interface_is_not_listed() -> None:
    snapshot = ConfigSnapshot.model_validate(
        _pair(vip_interfaces={"gateway": "eth1", "deleted-group": "eth7"}, track_interfaces=["eth0", "eth2"])
    )
    rendered = render_keepalived(snapshot, RuntimePaths())
    assert "        10.1.0.1/24 dev eth1\n" in rendered and "        10.0.0.100/32 dev eth0\n" in rendered
    assert "    track_interface {\n        eth1\n        eth2\n    }\n" in rendered  # gateway
    assert "    track_interface {\n        eth2\n    }\n" in rendered  # front: eth0 is its own
    assert "eth7" not in rendered


def test_the_sync_daemon_follows_the_first_instance_and_the_sync_group_holds_all() -> None:
    rendered = render_keepalived(ConfigSnapshot.model_validate(_pair(sync_interface="eth2")), RuntimePaths())
    assert "    lvs_sync_daemon eth2 inst VG_front\n" in rendered
    assert "vrrp_sync_group fulcrum {\n    group {\n        VG_front\n        VG_gateway\n    }\n}\n" in rendered


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("url", "http://127.0.0.1/api\"; include /etc/x"),
        ("url", "http://127.0.0.1/$X"),
        ("url", "ftp://127.0.0.1/"),
        ("url", "http://127.0.0.1/a b"),
        ("program", "fulcrum-node-health"),
        ("program", "/usr/bin/x --evil"),
        ("checker_pidfile", "/run/x\"y"),
        ("verdict_file", "/run/x --log-socket /tmp/y"),
        ("interval", 0),
        ("interval", 1.5),
        ("fall", 61),
        ("timeout", 0),
    ],
)
def test_node_health_settings_are_plain(field: str, value: object) -> None:
    settings = {"program": "/usr/bin/fulcrum-node-health", "url": "https://127.0.0.1/api/v1/health", field: value}
    with pytest.raises(ValueError, match=f"node_health.{field}"):
        NodeHealth(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"vip_interfaces": {"front": "lo"}}, "vip_interfaces"),
        ({"vip_interfaces": {"bad name": "eth1"}}, "vip_interfaces"),
        ({"track_interfaces": ["lo"]}, "track_interfaces"),
        ({"track_interfaces": ["eth1", "eth1"]}, "track_interfaces"),
        ({"track_interfaces": ["eth1 {"]}, "track_interfaces"),
    ],
)
def test_node_interfaces_are_checked(node: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ConfigSnapshot.model_validate(_pair(**node))


def test_every_cluster_member_renders_the_writers_virtual_servers_alike(clustered_snapshot: ConfigSnapshot) -> None:
    """A member runs the writer's shared part with its own node and BGP settings (as
    fulcrum.ha.replication merges them): mh picks the same backend on every node only if every node
    lists the same real servers in the same order, whatever its own name, priority or router ID."""
    member = ConfigSnapshot.model_validate(
        {
            **shared_part(clustered_snapshot),
            "node": {"name": "lb2", "priority": 50},
            "bgp": {**clustered_snapshot.model_dump(mode="json")["bgp"], "router_id": "10.0.1.2"},
        }
    )
    runtime = RuntimePaths(maintenance_file="/m")
    writer_file, member_file = (render_keepalived(s, runtime) for s in (clustered_snapshot, member))
    assert "router_id lb2" in member_file and "router_id lb2" not in writer_file  # each its own node

    def virtual_servers(rendered: str) -> str:
        return rendered[rendered.index("# service ") :]

    assert virtual_servers(member_file) == virtual_servers(writer_file)
    web = virtual_servers(writer_file).split("# service web")[1]
    assert [line.split()[1] for line in web.splitlines() if "real_server" in line] == [
        "10.0.0.13", "10.0.0.11", "10.0.0.12",
    ]  # fmt: skip
