"""The FRR renderer: golden files checked by FRR itself (`vtysh -C`), the withdrawal, and hostile
text in every BGP field that either the model refuses or cannot change the rendered structure."""

from __future__ import annotations

import copy
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fulcrum.apply.validators import validate_frr
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import render_frr

# What a service whose VIP BGP announces must be (fulcrum.config.cluster).
CLUSTERED: dict[str, Any] = {"forwarding": "dr", "scheduler": "mh", "scheduler_fallback": True}
KEEP_ON_FAILURE = {"on_failure": "weight_zero"}
SERVICES = [
    {"name": "web", "address": "192.0.2.10", "ports": [80, 443], "fwmark": 1, **CLUSTERED,
     "health_check": KEEP_ON_FAILURE, "backends": [{"address": "10.0.0.11"}]},
    {"name": "dns", "address": "192.0.2.20", "ports": [53], "protocol": "udp", **CLUSTERED,
     "health_check": {"type": "dns", **KEEP_ON_FAILURE}, "backends": [{"address": "10.0.0.12"}]},
    {"name": "web6", "address": "2001:db8::10", "ports": [80], **CLUSTERED, "health_check": KEEP_ON_FAILURE,
     "backends": [{"address": "2001:db8:1::11"}]},
    {"name": "off", "enabled": False, "address": "192.0.2.30", "ports": [80], "backends": [{"address": "10.0.0.13"}]},
]

FULL_BGP: dict[str, Any] = {
    "asn": 4200000001,
    "router_id": "192.0.2.5",
    "neighbors": [
        {
            "address": "192.0.2.1",
            "remote_asn": 65000,
            "password": "s3cret-$Key{1}",
            "timers": {"keepalive": 1, "hold": 3},
            "description": "core router A, rack 4",
        },
        {"address": "192.0.2.2", "remote_asn": 65000, "bfd": False},
        {"address": "2001:db8::1", "remote_asn": 65000, "description": "core-v6"},
    ],
    "communities": ["65000:100", "0:65535"],
    "large_communities": ["4200000001:7:8"],
}

CASES: dict[str, tuple[dict[str, Any], bool]] = {
    # Every field; the default announcement: every enabled service's VIP.
    "full": ({"services": SERVICES, "bgp": FULL_BGP}, True),
    # The same node withdrawn (unhealthy or in maintenance): sessions kept, no `network` line.
    "withdrawn": ({"services": SERVICES, "bgp": FULL_BGP}, False),
    # One IPv4 router, no BFD, no communities, an explicit list of VIPs.
    "minimal": (
        {
            "services": SERVICES,
            "bgp": {
                "asn": 65001,
                "router_id": "10.0.0.1",
                "neighbors": [{"address": "10.0.0.254", "remote_asn": 65000, "bfd": False}],
                "announce": ["192.0.2.30"],
            },
        },
        True,
    ),
    # BGP configured but turned off: FRR runs none.
    "disabled": ({"services": SERVICES, "bgp": {**FULL_BGP, "enabled": False}}, True),
}

GOLDEN_DIR = Path(__file__).parent / "golden" / "frr"


@pytest.fixture(scope="module")
def vtysh_accepts(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], None]:
    if shutil.which("vtysh") is None:
        pytest.skip("FRR is not installed (scripts/setup-host installs it)")
    directory = tmp_path_factory.mktemp("frr")

    def check(config: str) -> None:
        path = directory / "frr.conf"
        path.write_text(config)
        result = validate_frr(path)
        assert result.ok and not result.message, f"vtysh -C refused or warned:\n{result.message}\n{config}"

    return check


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_files_are_what_frr_accepts(
    name: str, assert_golden: Callable[[str, str], None], vtysh_accepts: Callable[[str], None]
) -> None:
    raw, announce = CASES[name]
    rendered = render_frr(ConfigSnapshot.model_validate(raw), announce=announce)
    assert_golden(rendered, f"frr/{name}.conf")
    vtysh_accepts(rendered)


def test_a_withdrawal_drops_only_the_network_statements() -> None:
    snapshot = ConfigSnapshot.model_validate(CASES["full"][0])
    announced = render_frr(snapshot).splitlines()
    withdrawn = render_frr(snapshot, announce=False).splitlines()
    dropped = [line for line in announced if line not in withdrawn]
    assert dropped == ["  network 192.0.2.10/32", "  network 192.0.2.20/32", "  network 2001:db8::10/128"]
    assert all(line in announced for line in withdrawn)


def test_without_bgp_frr_gets_only_the_header() -> None:
    assert render_frr(ConfigSnapshot()).splitlines() == [GOLDEN_HEADER]


GOLDEN_HEADER = "! Written by Fulcrum from this node's BGP settings; changes here are overwritten."


def test_the_checker_refuses_what_an_injection_would_make(vtysh_accepts: Callable[[str], None], tmp_path: Path) -> None:
    """The validator the apply engine runs is not a rubber stamp: a line FRR does not know fails
    it, naming the line (what a description ending in a newline and a command would produce)."""
    rendered = render_frr(ConfigSnapshot.model_validate(CASES["full"][0]))
    injected = rendered.replace("rack 4\n", "rack 4\n neighbor 192.0.2.1 update-source evil0 sneaky\n")
    path = tmp_path / "frr.conf"
    path.write_text(injected)
    result = validate_frr(path)
    assert not result.ok and "sneaky" in result.message and "line" in result.message


# ---------------------------------------------------------------------------------------------
# Hostile text: refused by the model, or placed where it cannot change a line's meaning
# ---------------------------------------------------------------------------------------------

# Every line frr.conf can have, values as the model allows them. A line that matches none, or a
# different number of lines than the reference rendering, is an injection.
_WORD = r"[^\s!#\"'\\?]+"
LINE_GRAMMAR = [
    re.compile(p)
    for p in (
        r"! Written by Fulcrum from this node's BGP settings; changes here are overwritten\.",
        r"!",
        r"ip prefix-list fulcrum-vips-v4 seq \d+ (?:permit [0-9.]+/32|deny any)",
        r"ipv6 prefix-list fulcrum-vips-v6 seq \d+ (?:permit [0-9a-f:]+/128|deny any)",
        r"route-map fulcrum-export permit (?:10|20)",
        r"route-map fulcrum-import deny 10",
        r" match (?:ip|ipv6) address prefix-list fulcrum-vips-v[46]",
        r" set community \d{1,5}:\d{1,5}(?: \d{1,5}:\d{1,5})*",
        r" set large-community \d+:\d+:\d+(?: \d+:\d+:\d+)*",
        r"exit",
        r"interface lo",
        r" ip address [0-9.]+/32",
        r" ipv6 address [0-9a-f:]+/128",
        r"bfd",
        r" profile fulcrum",
        r"  (?:receive-interval 100|transmit-interval 100)",
        r" exit",
        r"router bgp \d+",
        r" bgp router-id [0-9.]+",
        r" no bgp default ipv4-unicast",
        r" no bgp network import-check",
        r" timers bgp 3 9",
        r" neighbor [0-9a-f.:]+ remote-as \d+",
        rf" neighbor [0-9a-f.:]+ description {_WORD}(?: {_WORD})*",
        rf" neighbor [0-9a-f.:]+ password {_WORD}",
        r" neighbor [0-9a-f.:]+ timers \d+ \d+",
        r" neighbor [0-9a-f.:]+ bfd(?: profile fulcrum)?",
        r" address-family ipv[46] unicast",
        r"  network [0-9a-f.:]+/(?:32|128)",
        r"  neighbor [0-9a-f.:]+ (?:activate|route-map fulcrum-import in|route-map fulcrum-export out)",
        r" exit-address-family",
    )
]

HOSTILE = st.one_of(
    st.text(max_size=40),
    # Printable ASCII, which the free-text fields mostly accept: what they accept must stay harmless.
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40),
    st.from_regex(r"\A[0-9]{1,10}:[0-9]{1,10}(?::[0-9]{1,10})?\Z"),
    st.sampled_from(
        [
            "x\n neighbor 192.0.2.66 remote-as 666",
            "x\rrouter bgp 1",
            "x ! comment",
            "x # comment",
            'x"y',
            "x'y",
            "x\\",
            "x?",
            "x\x00y",
            "x\u2028y",
            "x\u00a0y",
            " leading",
            "trailing ",
            "a  b",
            "65000:100\n",
            "65000:100 65000:200",
            "1:2:3 4:5:6",
            "192.0.2.1\n",
            "10.0.0.1 remote-as 1",
        ]
    ),
)


def _field_setters() -> list[Callable[[dict[str, Any], str], None]]:
    def neighbor(key: str) -> Callable[[dict[str, Any], str], None]:
        return lambda bgp, value: bgp["neighbors"][0].__setitem__(key, value)

    return [
        neighbor("description"),
        neighbor("password"),
        neighbor("address"),
        lambda bgp, value: bgp.__setitem__("router_id", value),
        lambda bgp, value: bgp.__setitem__("communities", [value]),
        lambda bgp, value: bgp.__setitem__("large_communities", [value]),
        lambda bgp, value: bgp.__setitem__("announce", [value]),
    ]


SETTERS = _field_setters()


def _rules(rendered: str) -> list[str]:
    """Each line's grammar rule; a line no rule matches fails the test."""
    rules = []
    for line in rendered.splitlines():
        rule = next((r.pattern for r in LINE_GRAMMAR if r.fullmatch(line)), None)
        assert rule is not None, f"a line frr.conf never has: {line!r}"
        rules.append(rule)
    return rules


def _structure_holds(snapshot: ConfigSnapshot, rendered: str) -> None:
    """Every line is one frr.conf may have, and as many of each as the model says: a value that
    smuggled in a line of the grammar (a neighbor, a network) would change a count."""
    _rules(rendered)
    lines = rendered.splitlines()
    bgp = snapshot.bgp
    assert bgp is not None

    def count(pattern: str) -> int:
        return sum(1 for line in lines if re.fullmatch(pattern, line))

    assert count(r"router bgp \d+") == 1 and count(r" bgp router-id .*") == 1
    assert count(r" neighbor \S+ remote-as \d+") == len(bgp.neighbors)
    assert count(r" neighbor \S+ description .*") == sum(n.description is not None for n in bgp.neighbors)
    assert count(r" neighbor \S+ password .*") == sum(n.password is not None for n in bgp.neighbors)
    assert count(r" neighbor \S+ timers .*") == sum(n.timers is not None for n in bgp.neighbors)
    assert count(r"  network \S+") == len(snapshot.announced_vips())
    assert count(r" ipv?6? address \S+") == len(snapshot.announced_vips())
    assert count(r"  neighbor \S+ activate") == len(bgp.neighbors)
    assert count(r" set community .*") == 2 * bool(bgp.communities)
    assert count(r" set large-community .*") == 2 * bool(bgp.large_communities)


@settings(max_examples=3000, deadline=None, database=None)
@given(field=st.integers(0, len(SETTERS) - 1), value=HOSTILE)
def test_hostile_text_is_refused_or_harmless(field: int, value: str) -> None:
    raw = copy.deepcopy(CASES["full"][0])
    SETTERS[field](raw["bgp"], value)
    try:
        snapshot = ConfigSnapshot.model_validate(raw)
    except ValidationError:
        event("refused by the model")
        return
    event("accepted and rendered")
    _structure_holds(snapshot, render_frr(snapshot))


@pytest.mark.parametrize("name", sorted(set(CASES) - {"disabled"}))
def test_the_golden_cases_have_the_structure_the_property_checks(name: str) -> None:
    raw, announce = CASES[name]
    snapshot = ConfigSnapshot.model_validate(raw)
    if announce:
        _structure_holds(snapshot, render_frr(snapshot))
