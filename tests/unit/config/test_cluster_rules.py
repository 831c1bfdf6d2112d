"""A service whose VIP BGP announces must let every node pick the same backend for a flow
(fulcrum.config.cluster): each broken rule is refused, naming the field; a service BGP does not
announce, or a disabled one, is free; the IPVS table programmed for it keeps every backend, in the
order they were created."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from fulcrum.config.snapshot import WRITTEN, ConfigSnapshot, parsed_snapshot, programmed_backends
from fulcrum.dataplane.ipvs_table import expected_ipvs

KEEP = {"on_failure": "weight_zero"}
GOOD: dict[str, Any] = {
    "name": "web",
    "address": "192.0.2.10",
    "ports": [80],
    "forwarding": "dr",
    "scheduler": "mh",
    "scheduler_fallback": True,
    "health_check": KEEP,
    "backends": [{"address": "10.0.0.12"}, {"address": "10.0.0.11"}, {"address": "10.0.0.13", "enabled": False}],
}
BGP: dict[str, Any] = {"asn": 65001, "router_id": "10.0.1.1", "neighbors": [{"address": "10.0.1.254", "remote_asn": 65000}]}


def snapshot(service: dict[str, Any], **bgp: Any) -> ConfigSnapshot:
    return ConfigSnapshot.model_validate({"services": [service], "bgp": {**BGP, **bgp}}, context=WRITTEN)


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"forwarding": "nat"}, "services[0].forwarding", "use dr or tun"),
        ({"scheduler": "wlc", "scheduler_fallback": False}, "services[0].scheduler", "only mh"),
        ({"scheduler": "sh", "scheduler_fallback": True}, "services[0].scheduler", "only mh"),
        ({"scheduler_fallback": False}, "services[0].scheduler_fallback", "drops the flows"),
        ({"health_check": {"on_failure": "remove"}}, "services[0].health_check.on_failure", "use weight_zero"),
        (
            {"backends": [{"address": "10.0.0.11", "health_check": {"type": "http", "on_failure": "remove"}}]},
            "services[0].backends[0].health_check.on_failure",
            "use weight_zero",
        ),
    ],
)
def test_each_rule_is_refused_by_its_field(change: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        snapshot({**GOOD, **change})
    message = str(refused.value)
    assert f"{field}: BGP announces this VIP" in message and words in message, message


NAT = {**GOOD, "name": "intranet", "address": "192.0.2.20", "forwarding": "nat", "scheduler": "wlc",
       "scheduler_fallback": False, "health_check": {}}


def test_what_bgp_does_not_announce_is_free() -> None:
    for config in (
        {"services": [GOOD, NAT], "bgp": {**BGP, "announce": ["192.0.2.10"]}},
        {"services": [NAT], "bgp": {**BGP, "enabled": False}},
        {"services": [{**NAT, "enabled": False}], "bgp": BGP},
        {"services": [NAT]},
    ):
        ConfigSnapshot.model_validate(config, context=WRITTEN)
    # A check that never runs never removes anything.
    snapshot({**GOOD, "health_check": {"type": "none", "on_failure": "remove"}})


def test_a_clustered_service_keeps_every_backend_in_creation_order() -> None:
    config = snapshot(GOOD)
    assert config.clustered_services() == {"web"}
    [service] = config.services
    kept = programmed_backends(service, clustered=True)
    assert [(str(b.address), b.weight) for b in kept] == [("10.0.0.12", 1), ("10.0.0.11", 1), ("10.0.0.13", 0)]
    assert [str(b.address) for b in programmed_backends(service, clustered=False)] == ["10.0.0.12", "10.0.0.11"]
    # The read-back expects what keepalived programs: the disabled one present, at weight 0.
    [expected] = expected_ipvs(config).services
    assert [(real.key[0], real.weight) for real in expected.real_servers] == [
        ("10.0.0.12", 1), ("10.0.0.11", 1), ("10.0.0.13", 0)
    ]
    unannounced = ConfigSnapshot.model_validate({"services": [GOOD]})
    assert unannounced.clustered_services() == set()
    [expected] = expected_ipvs(unannounced).services
    assert sorted(real.key[0] for real in expected.real_servers) == ["10.0.0.11", "10.0.0.12"]


def test_a_revision_stored_before_the_rules_still_parses() -> None:
    """The rules bind what is written; a node that already runs such a revision can still read,
    render and roll back to it (parsed without the WRITTEN context, as stored revisions are)."""
    stored = ConfigSnapshot.model_validate({"services": [NAT], "bgp": BGP}).canonical_json()
    assert parsed_snapshot(stored).clustered_services() == {"intranet"}
    with pytest.raises(ValidationError, match=r"services\[0\]\.forwarding"):
        ConfigSnapshot.model_validate_json(stored, context=WRITTEN)
