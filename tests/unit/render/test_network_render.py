"""The network renderer: golden files for a bonded two-arm node and a DHCP-only one, every file
parsed back by the grammar check the apply engine runs, and hostile input that cannot reach a file."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from fulcrum.apply.network_files import check_hostname, parse_config
from fulcrum.apply.tools import ToolError
from fulcrum.config.network import NetworkConfig
from fulcrum.render import render_network


def _two_arm() -> dict[str, Any]:
    """Management on its own NIC; two NICs bonded (LACP) with a VLAN per segment; a sync link."""
    return {
        "hostname": "lb-a",
        "management_interface": "mgmt",
        "nics": [
            {"name": "mgmt", "mac": "52:54:00:AA:00:01", "addresses": ["2001:db8::5/64", "192.0.2.5/24"]},
            {"name": "data0", "mac": "52:54:00:aa:00:02"},
            {"name": "data1", "mac": "52:54:00:aa:00:03"},
            {"name": "sync", "mac": "52:54:00:aa:00:04", "addresses": ["10.99.0.1/30"], "mtu": 9000},
            {"name": "spare", "mac": "52:54:00:aa:00:05", "enabled": False, "permanent_mac": False},
        ],
        "bonds": [{"name": "bond0", "members": ["data1", "data0"], "mode": "802.3ad", "miimon": 50, "mtu": 1500}],
        "vlans": [
            {"name": "front", "parent": "bond0", "vlan_id": 100, "addresses": ["203.0.113.2/24"]},
            {"name": "back", "parent": "bond0", "vlan_id": 200, "addresses": ["10.20.0.2/24", "fd20::2/64"]},
        ],
        "routes": [
            {"destination": "10.31.0.0/16", "gateway": "10.20.0.254", "table": 100, "metric": 10},
            {"destination": "10.30.0.0/16", "gateway": "10.20.0.254"},
            {"destination": "fd30::/48", "gateway": "fd20::1"},
        ],
        "gateway4": "203.0.113.1",
        "gateway6": "2001:db8::1",
        "dns_servers": ["192.0.2.53", "2001:db8::53"],
        "search_domains": ["example.net", "lab.example.net"],
        "ntp_servers": ["ntp1.example.net", "192.0.2.123"],
    }


def _dhcp() -> dict[str, Any]:
    """As shipped to a small office: one NIC, DHCP and SLAAC, an active-backup bond for the rest."""
    return {
        "nics": [
            {"name": "mgmt", "mac": "52:54:00:bb:00:01", "dhcp4": True, "ipv6_autoconf": True},
            {"name": "eth1", "mac": "52:54:00:bb:00:02"},
            {"name": "eth2", "mac": "52:54:00:bb:00:03"},
        ],
        "bonds": [{"name": "bond0", "members": ["eth1", "eth2"], "xmit_hash_policy": "layer2", "addresses": ["10.0.0.2/24"]}],
    }


CASES = {"two_arm": _two_arm, "dhcp": _dhcp}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_golden(case: str, assert_golden: Callable[[str, str], None]) -> None:
    files = render_network(NetworkConfig.model_validate(CASES[case]()))
    listing = "".join(f"{name}\n" for name in files)
    assert_golden(listing, f"network/{case}.files")
    for name, text in files.items():
        assert_golden(text, f"network/{case}/{name}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_file_parses_back(case: str) -> None:
    files = render_network(NetworkConfig.model_validate(CASES[case]()))
    for name, text in files.items():
        if name == "hostname":
            check_hostname(text)
        else:
            assert parse_config(name, text), name


def test_active_backup_has_no_hash_policy_and_members_no_addresses() -> None:
    files = render_network(NetworkConfig.model_validate(_dhcp()))
    assert "TransmitHashPolicy" not in files["20-fulcrum-bond0.netdev"]
    member = parse_config("eth1", files["30-fulcrum-eth1.network"])
    assert ("Network", "Bond", "bond0") in member and not [s for s in member if s[1] in ("Address", "DHCP")]


def test_order_of_input_does_not_matter() -> None:
    raw = _two_arm()
    shuffler = random.Random(5)
    for key in ("nics", "vlans", "routes"):
        raw[key] = shuffler.sample(raw[key], len(raw[key]))
    assert render_network(NetworkConfig.model_validate(raw)) == render_network(NetworkConfig.model_validate(_two_arm()))


def test_the_grammar_check_refuses_what_networkd_would_skip() -> None:
    with pytest.raises(ToolError, match="line 3: unknown section"):
        parse_config("x.network", "# c\n\n[Netwrok]\n")
    with pytest.raises(ToolError, match="'Adress' is not a key of \\[Network\\]"):
        parse_config("x.network", "[Network]\nAdress=10.0.0.1/24\n")
    with pytest.raises(ToolError, match="neither a section"):
        parse_config("x.network", "[Network]\nAddress 10.0.0.1/24\n")
    with pytest.raises(ToolError, match="characters no setting needs"):
        parse_config("resolved.conf", "[Resolve]\nDNS=1.1.1.1 ]\n")
    with pytest.raises(ToolError, match="not one host name label"):
        check_hostname("lb\nx\n")


# Text that would end a line, open a section or add a key, placed into every free-text field.
_HOSTILE = st.text(alphabet=st.sampled_from(list("ab0.-_:/\n\r\t []=#;\\\"'")), min_size=0, max_size=12)
_FIELDS: list[Callable[[dict[str, Any], str], None]] = [
    lambda n, v: n.update(hostname=v),
    lambda n, v: n["nics"][1].update(name=v),
    lambda n, v: n["nics"][1].update(mac=v),
    lambda n, v: n["bonds"][0].update(name=v),
    lambda n, v: n["vlans"][0].update(name=v),
    lambda n, v: n["routes"][0].update(destination=v),
    lambda n, v: n["routes"][0].update(gateway=v),
    lambda n, v: n.update(dns_servers=[v]),
    lambda n, v: n.update(search_domains=[v]),
    lambda n, v: n.update(ntp_servers=[v]),
    lambda n, v: n["vlans"][1]["addresses"].append(v),
]


@given(field=st.integers(0, len(_FIELDS) - 1), value=_HOSTILE)
def test_hostile_input_is_refused_or_renders_clean_files(field: int, value: str) -> None:
    raw = _two_arm()
    _FIELDS[field](raw, value)
    try:
        network = NetworkConfig.model_validate(raw)
    except ValidationError:
        return
    for name, text in render_network(network).items():
        assert "/" not in name and "\n" not in name
        if name == "hostname":
            check_hostname(text)
        else:
            parse_config(name, text)
