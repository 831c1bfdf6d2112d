"""Joining the kernel's IPVS table with the running configuration (pure; tables built here)."""

from __future__ import annotations

from datetime import UTC, datetime

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.ipvs_table import Counters, IpvsTable, RealServer, ServiceKey, VirtualService
from fulcrum.schemas.telemetry import BackendState
from fulcrum.telemetry.stats import history_samples, summarize

SNAPSHOT = ConfigSnapshot.model_validate(
    {
        "services": [
            {
                "name": "web",
                "address": "192.0.2.10",
                "ports": [80],
                "backends": [
                    {"address": "198.51.100.1", "weight": 3},
                    {"address": "198.51.100.2", "weight": 2},
                    {"address": "198.51.100.3", "weight": 0},
                    {"address": "198.51.100.4", "weight": 1, "enabled": False},
                    {"address": "198.51.100.5", "weight": 1},
                ],
            },
            {"name": "site", "address": "192.0.2.11", "ports": [80, 443], "fwmark": 1, "backends": [{"address": "198.51.100.9"}]},
        ]
    }
)


def rs(address: str, weight: int, port: int = 80, cps: int = 0) -> RealServer:
    return RealServer(address=address, port=port, weight=weight, forwarding="nat", counters=Counters(cps=cps, activeconns=cps * 2))


def test_backend_states_follow_the_kernel_and_the_configuration() -> None:
    table = IpvsTable(
        services=(
            VirtualService(
                key=ServiceKey(family=4, protocol="tcp", address="192.0.2.10", port=80),
                scheduler="wlc",
                real_servers=(rs("198.51.100.1", 3, cps=5), rs("198.51.100.2", 0), rs("198.51.100.3", 0)),
                counters=Counters(cps=5, conns=100),
            ),
        )
    )
    stats = summarize(SNAPSHOT, table, at=datetime.now(UTC), ipvs_available=True, detail="", revision=4)
    web = stats.services[0]
    states = {b.address: b.state for b in web.backends}
    assert states == {
        "198.51.100.1": BackendState.UP,
        "198.51.100.2": BackendState.DOWN,  # configured 2, held at 0: its check failed
        "198.51.100.3": BackendState.DRAINED,  # configured 0
        "198.51.100.4": BackendState.DISABLED,
        "198.51.100.5": BackendState.DOWN,  # configured, absent: removed by its check
    }
    assert (web.backends_up, web.backends_total) == (1, 4)
    assert web.counters is not None and web.counters.conns == 100
    site = stats.services[1]
    assert site.key == "fwmark 1 (IPv4)" and not site.in_kernel
    assert site.backends[0].state == BackendState.UNKNOWN and site.backends[0].endpoint == "198.51.100.9"
    keys = [key for key, _ in history_samples(stats)]
    assert keys == [("web", None), ("web", "198.51.100.1:80"), ("web", "198.51.100.2:80"), ("web", "198.51.100.3:80")]


def test_without_a_data_plane_nothing_claims_to_be_up() -> None:
    stats = summarize(SNAPSHOT, None, at=datetime.now(UTC), ipvs_available=False, detail="no IPVS", revision=1)
    assert {b.state for s in stats.services for b in s.backends} == {BackendState.UNKNOWN, BackendState.DISABLED}
    assert history_samples(stats) == []


def test_backends_are_matched_to_real_servers_by_address_and_port_in_a_large_service():
    backends = [{"address": f"10.88.{n // 250}.{n % 250 + 1}", "weight": 1 + n % 7} for n in range(1000)]
    snapshot = ConfigSnapshot.model_validate(
        {"services": [{"name": "big", "address": "192.0.2.20", "ports": [80], "backends": backends}]}
    )
    key = ServiceKey(family=4, protocol="tcp", address="192.0.2.20", port=80)
    # The kernel's order is not the configuration's; one real server listens on another port.
    reals = [RealServer(address=b["address"], port=80, weight=b["weight"], forwarding="nat") for b in reversed(backends[1:])]
    reals.append(RealServer(address=backends[0]["address"], port=8080, weight=5, forwarding="nat"))
    table = IpvsTable((VirtualService(key=key, scheduler="wlc", real_servers=tuple(reals)),))
    stats = summarize(snapshot, table, at=datetime.now(UTC), ipvs_available=True, detail="", revision=1)
    found = {b.address: b for b in stats.services[0].backends}
    assert found[backends[0]["address"]].kernel_weight is None
    assert found[backends[0]["address"]].state == BackendState.DOWN
    assert all(found[b["address"]].kernel_weight == b["weight"] for b in backends[1:])
