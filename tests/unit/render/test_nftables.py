"""nftables rendering: golden files, nft -c (and a real load in a private namespace), semantics."""

from __future__ import annotations

import random
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import render_nftables


def test_matches_golden(golden_case: Any, assert_golden: Callable[[str, str], None]) -> None:
    assert_golden(render_nftables(golden_case.snapshot), f"{golden_case.name}.nft")


def test_nft_accepts(golden_case: Any, nft_accepts: Callable[[str], None]) -> None:
    nft_accepts(render_nftables(golden_case.snapshot))


def test_validator_reports_rejected_rules(nft_accepts: Callable[[str], None]) -> None:
    """A NAT statement outside a nat chain passes `nft -c` but not the kernel's commit."""
    ruleset = (
        render_nftables(ConfigSnapshot())
        .replace("type nat hook postrouting priority srcnat", "type filter hook postrouting priority srcnat")
        .replace("policy accept;\n\t}\n}", "policy accept;\n\t\tmasquerade\n\t}\n}")
    )
    with pytest.raises(AssertionError, match="Operation not supported"):
        nft_accepts(ruleset)


def test_order_of_input_does_not_matter(raw_full: dict[str, Any], full_snapshot: ConfigSnapshot) -> None:
    shuffled = dict(raw_full)
    shuffler = random.Random(3)
    shuffled["services"] = shuffler.sample(raw_full["services"], len(raw_full["services"]))
    for service in shuffled["services"]:
        service["ports"] = shuffler.sample(service["ports"], len(service["ports"]))
    firewall = dict(raw_full["firewall"])
    firewall["management_ports"] = list(reversed(firewall["management_ports"]))
    firewall["management_allow"] = list(reversed(firewall["management_allow"]))
    shuffled["firewall"] = firewall
    assert render_nftables(ConfigSnapshot.model_validate(shuffled)) == render_nftables(full_snapshot)


def _management_rules(firewall: dict[str, Any], services: list[dict[str, Any]] | None = None) -> list[str]:
    snapshot = ConfigSnapshot.model_validate({"firewall": firewall, "services": services or []})
    rendered = render_nftables(snapshot)
    chain = [line.strip() for line in rendered[rendered.index("chain input {") :].splitlines()]
    return chain[chain.index('iif "lo" accept') + 1 : chain.index("}")]


def test_no_allow_list_means_no_guard() -> None:
    assert _management_rules({"management_allow": []}) == []


def test_ipv4_allow_list_shuts_ipv6_out() -> None:
    assert _management_rules({"management_ports": [443, 22], "management_allow": ["10.0.0.0/8"]}) == [
        "tcp dport { 22, 443 } ip saddr { 10.0.0.0/8 } accept",
        'tcp dport { 22, 443 } drop comment "management from elsewhere"',
    ]


def test_overlapping_networks_are_merged() -> None:
    rules = _management_rules({"management_ports": [22], "management_allow": ["10.1.0.0/16", "10.0.0.0/8"]})
    assert rules[0] == "tcp dport { 22 } ip saddr { 10.0.0.0/8 } accept"


def test_a_service_on_a_management_port_stays_reachable() -> None:
    services: list[dict[str, Any]] = [
        {"name": "https", "address": "192.0.2.10", "ports": [443], "backends": [{"address": "10.0.0.1"}]},
        {
            "name": "dns",
            "address": "192.0.2.10",
            "ports": [22],
            "protocol": "udp",
            "health_check": {"type": "dns"},
            "backends": [{"address": "10.0.0.1"}],
        },
        {
            "name": "down",
            "address": "192.0.2.11",
            "ports": [443],
            "backends": [{"address": "10.0.0.1", "enabled": False}],
        },
    ]
    rules = _management_rules({"management_ports": [22, 443], "management_allow": ["10.0.0.0/8"]}, services)
    # Only TCP is guarded, and a service IPVS does not hold must not open the port.
    assert rules[0] == 'ip daddr . tcp dport { 192.0.2.10 . 443 } accept comment "balanced service"'
    assert len(rules) == 3


def test_vrrp_is_never_filtered(full_snapshot: ConfigSnapshot) -> None:
    rendered = render_nftables(full_snapshot)
    assert "vrrp" not in rendered
    assert [line for line in rendered.splitlines() if " drop " in line and not line.lstrip().startswith("#")] == [
        '\t\ttcp dport { 22, 443, 8443 } drop comment "management from elsewhere"'
    ]


def _announced_rules(rendered: str) -> list[str]:
    chain = rendered.split("chain announced_unbalanced {", 1)[1].split("}\n", 1)[0]
    return [line.strip() for line in chain.splitlines() if line.strip().endswith('"announced VIP, not taken by IPVS"')]


def test_only_announced_services_are_dropped_when_ipvs_leaves_them(nft_accepts: Callable[[str], None]) -> None:
    """Every port and protocol of a balanced service whose VIP BGP announces, per family; not a
    service on a VIP it does not announce, nor one that is not in IPVS at all (no enabled backend)."""
    backend = [{"address": "10.0.0.11"}]
    cluster = {"forwarding": "dr", "scheduler": "mh", "scheduler_fallback": True,
               "health_check": {"on_failure": "weight_zero"}, "backends": backend}
    snapshot = ConfigSnapshot.model_validate({
        "services": [
            {"name": "web", "address": "192.0.2.10", "ports": [443, 80], "fwmark": 10, **cluster},
            {"name": "dns", "address": "192.0.2.10", "ports": [53], "protocol": "udp", **cluster,
             "health_check": {"type": "udp", "on_failure": "weight_zero"}},
            {"name": "web6", "address": "2001:db8::10", "ports": [80], **cluster, "backends": [{"address": "2001:db8::11"}]},
            {"name": "off", "address": "192.0.2.11", "ports": [80], **cluster,
             "backends": [{"address": "10.0.0.11", "enabled": False}]},
            {"name": "intranet", "address": "192.0.2.20", "ports": [80], "backends": backend},
        ],
        "bgp": {"asn": 65001, "router_id": "10.0.1.1", "neighbors": [{"address": "10.0.1.254", "remote_asn": 65000}],
                "announce": ["192.0.2.10", "192.0.2.11", "2001:db8::10"]},
    })
    rendered = render_nftables(snapshot)
    nft_accepts(rendered)
    assert _announced_rules(rendered) == [
        'ip daddr . meta l4proto . th dport { 192.0.2.10 . udp . 53, 192.0.2.10 . tcp . 80, 192.0.2.10 . tcp . 443 } '
        'drop comment "announced VIP, not taken by IPVS"',
        'ip6 daddr . meta l4proto . th dport { 2001:db8::10 . tcp . 80 } drop comment "announced VIP, not taken by IPVS"',
    ]
    assert _announced_rules(render_nftables(ConfigSnapshot.model_validate({}))) == []


def test_what_ipvs_leaves_of_an_announced_vip_is_dropped_and_the_rest_reset(
    clustered_snapshot: ConfigSnapshot, config_files: Callable[[str, str], Path], in_private_netns: Callable[..., str]
) -> None:
    """The real kernel, in a private namespace without IPVS (so IPVS takes nothing): a connection to
    the announced VIP's port gets no answer (its SYN dropped, as a flow's segments would be while
    the node's withdrawal travels), one to the same port of a VIP not announced is refused at once
    by the host's reset, as before."""
    if shutil.which("nft") is None:
        pytest.skip("nft is not installed")
    path = config_files(render_nftables(clustered_snapshot), ".nft")
    probe = (
        "import socket\n"
        "for vip in ('192.0.2.10', '192.0.2.20'):\n"
        "    try:\n"
        "        socket.create_connection((vip, 80), timeout=2).close(); print(vip, 'connected')\n"
        "    except TimeoutError: print(vip, 'no answer')\n"
        "    except ConnectionRefusedError: print(vip, 'refused')\n"
    )
    output = in_private_netns(
        f'ip link set lo up; ip addr add 192.0.2.10/32 dev lo; ip addr add 192.0.2.20/32 dev lo; nft -f "$file"; '
        f"{sys.executable} -c \"$PROBE\"",
        path,
        [],
        env={"PROBE": probe},
    )
    assert output.splitlines() == ["192.0.2.10 no answer", "192.0.2.20 refused"], output
