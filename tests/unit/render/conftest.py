"""Shared fixtures for the renderer tests: representative snapshots, golden files, real validators.

The validators run keepalived and nft in a private network namespace (`unshare --net`): it holds
exactly the interfaces a config names (keepalived -t refuses interfaces that do not exist) and
keeps the host's own ruleset out of reach. They need root, as keepalived and nft do on the
appliance and in CI.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import settings

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import NodeHealth, RuntimePaths

GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("FULCRUM_UPDATE_GOLDEN") == "1"

# deadline=None: rendering time varies with the generated size; database=None: no .hypothesis
# directory in the checkout.
settings.register_profile("fulcrum-render", max_examples=3000, deadline=None, database=None)

# Arguments: the config file, then the interfaces to create (a bridge: unlike dummy it needs no
# extra kernel module). The tool's command line follows this prologue.
_NETNS_PROLOGUE = """
set -e
file="$1"
shift
for name in "$@"; do
    ip link show dev "$name" >/dev/null 2>&1 || ip link add name "$name" type bridge
done
"""

# The appliance's paths, so that golden files do not depend on where this checkout lives.
NODE_HEALTH = NodeHealth(
    program="/opt/fulcrum/venv/bin/fulcrum-node-health",
    url="https://127.0.0.1/api/v1/health",
    checker_pidfile="/run/fulcrum/keepalived-checkers.pid",
    verdict_file="/run/fulcrum/node-health.verdict",
)
RUNTIME = RuntimePaths(
    notify_fifo="/run/fulcrum/vrrp.fifo",
    lvs_notify_fifo="/run/fulcrum/lvs.fifo",
    maintenance_file="/var/lib/fulcrum/maintenance",
    node_health=NODE_HEALTH,
)
# keepalived -t checks that the script exists and is safe to run as root: the one installed here.
INSTALLED_NODE_HEALTH = str(Path(sys.executable).parent / "fulcrum-node-health")


def installed(runtime: RuntimePaths) -> RuntimePaths:
    """`runtime` with the node-health program this checkout installed, for keepalived -t."""
    if runtime.node_health is None:
        return runtime
    return dataclasses.replace(runtime, node_health=dataclasses.replace(runtime.node_health, program=INSTALLED_NODE_HEALTH))


class GoldenCase(NamedTuple):
    name: str
    snapshot: ConfigSnapshot
    runtime: RuntimePaths  # for the golden file
    installed_runtime: RuntimePaths  # for keepalived -t


def _minimal() -> dict[str, Any]:
    return {
        "services": [
            {"name": "web", "address": "192.0.2.10", "ports": [80], "backends": [{"address": "10.0.0.11"}]},
        ],
    }


def _lone_node() -> dict[str, Any]:
    """One node, no peer, not multicast: it still runs VRRP and becomes MASTER on its own."""
    return {
        "node": {"name": "solo", "vrrp_interface": "eth0"},
        "vip_groups": [{"name": "v6", "virtual_router_id": 7, "addresses": ["2001:db8::10/64"]}],
        "services": [
            {
                "name": "web6",
                "address": "2001:db8::10",
                "ports": [443],
                "scheduler": "rr",
                "backends": [{"address": "2001:db8:1::11"}, {"address": "2001:db8:1::12", "port": 8443}],
            }
        ],
        "firewall": {"management_ports": [22], "management_allow": ["2001:db8:ffff::/48"]},
    }


def _multicast() -> dict[str, Any]:
    """Multicast VRRP carries both families, each group in its own."""
    return {
        "node": {"name": "lb-m", "vrrp_interface": "bond0.100", "priority": 90, "multicast": True},
        "vip_groups": [
            {"name": "v4", "virtual_router_id": 20, "addresses": ["198.51.100.20/24"], "advert_interval": 1},
            {"name": "v6", "virtual_router_id": 20, "addresses": ["2001:db8:20::20/64"], "preempt": True},
        ],
        "firewall": {"management_ports": [], "management_allow": []},  # no guard: management open from anywhere
    }


def _check(**fields: Any) -> dict[str, Any]:
    return {"interval": 2, "timeout": 1.5, "retries": 2, "retry_delay": 0.25, **fields}


def _full() -> dict[str, Any]:
    """Every renderer feature at once; services and backends listed out of order on purpose."""
    pools = [
        # The schedulers no other service below uses, one small NAT pool each.
        {
            "name": f"pool-{scheduler}",
            "address": "203.0.113.30",
            "ports": [9000 + index],
            "scheduler": scheduler,
            "health_check": {"type": "ping"} if index % 2 else {"type": "none"},
            "backends": [{"address": "10.20.0.31"}],
        }
        for index, scheduler in enumerate(["rr", "wrr", "lc", "sed", "nq", "fo", "ovf", "twos"])
    ]
    return {
        "node": {
            "name": "lb-a",
            "vrrp_interface": "eth0",
            "priority": 150,
            "unicast_source": "192.0.2.1",
            "peer_address": "192.0.2.2",
            "sync_interface": "eth1",
            "vip_interfaces": {"internal": "eth2", "gone": "eth9"},
            "track_interfaces": ["eth3"],
        },
        "vip_groups": [
            {"name": "public", "virtual_router_id": 51, "addresses": ["203.0.113.11/24", "203.0.113.10/24"]},
            {"name": "internal", "virtual_router_id": 52, "addresses": ["10.10.0.10/16"], "advert_interval": 0.25},
        ],
        "firewall": {
            "management_ports": [8443, 22, 443],
            "management_allow": ["192.168.0.0/24", "10.0.0.0/8", "10.20.0.0/16", "2001:db8:ffff::/48"],
        },
        "services": [
            *pools,
            {
                "name": "web",
                "description": "public site, 80 and 443 stick together",
                "address": "203.0.113.10",
                "ports": [443, 80],
                "fwmark": 10,
                "scheduler": "wlc",
                "one_arm": True,
                "persistence_timeout": 600,
                "persistence_prefix": 24,
                "health_check": _check(
                    type="http", http_path="/healthz?full=1", http_status_codes=[204, 200], http_host="www.example.com"
                ),
                "backends": [
                    {"address": "10.20.0.13", "weight": 0, "description": "draining"},
                    {"address": "10.20.0.11", "weight": 3, "upper_threshold": 1000, "lower_threshold": 800},
                    {"address": "10.20.0.12", "enabled": False},
                    {
                        "address": "10.20.0.14",
                        "health_check": _check(type="tcp", port=8081, on_failure="weight_zero"),
                    },
                ],
            },
            {
                "name": "web6",
                "address": "2001:db8:10::10",
                "ports": [80, 443],
                "fwmark": 11,
                "scheduler": "lblc",
                "one_arm": True,
                "snat_address": "2001:db8:10::2",
                "persistence_timeout": 300,
                "persistence_prefix": 64,
                "health_check": _check(type="tcp"),
                "backends": [{"address": "2001:db8:20::12"}, {"address": "2001:db8:20::11"}],
            },
            {
                "name": "api",
                "address": "203.0.113.11",
                "ports": [443],
                "scheduler": "sh",
                "scheduler_fallback": True,
                "scheduler_port": True,
                "one_arm": True,
                "snat_address": "10.10.0.10",
                "quorum": 2,
                "sorry_server": {"address": "10.20.0.99"},
                "health_check": _check(
                    type="https",
                    port=8443,
                    http_path="/status",
                    http_host="api.example.com",
                    tls_sni=True,
                    http_digest="9b3a0c85a887a256d6939da88aabd8cd",
                    on_failure="weight_zero",
                ),
                "backends": [
                    {"address": "10.20.0.22", "port": 8443, "weight": 2},
                    {"address": "10.20.0.21", "port": 8443},
                    {"address": "10.20.0.99", "port": 443, "description": "also the sorry server"},
                ],
            },
            {
                "name": "dns",
                "address": "203.0.113.10",
                "ports": [53],
                "protocol": "udp",
                "scheduler": "mh",
                "scheduler_fallback": True,
                "one_packet_scheduling": True,
                "forwarding": "dr",
                "health_check": _check(type="dns", dns_query_type="A", dns_query_name="example.com."),
                "backends": [
                    {"address": "10.20.0.41"},
                    {
                        "address": "10.20.0.42",
                        "health_check": _check(type="udp", udp_payload="0a0B", udp_require_reply=True),
                    },
                    {"address": "10.20.0.43", "health_check": {"type": "none"}},
                ],
            },
            {
                "name": "mail",
                "address": "203.0.113.10",
                "ports": [25],
                "scheduler": "lblcr",
                "forwarding": "tun",
                "tunnel_type": "gue",
                "tunnel_port": 6080,
                "health_check": _check(type="smtp", smtp_helo_name="lb-a.example.com"),
                "backends": [{"address": "10.20.0.51"}],
            },
            {
                "name": "sip",
                "address": "203.0.113.11",
                "ports": [5060],
                "protocol": "sctp",
                "scheduler": "dh",
                "forwarding": "tun",
                "tunnel_type": "gre",
                "sorry_server": {"address": "10.20.0.98", "port": 5060},
                "backends": [{"address": "10.20.0.61", "port": 5060}],
            },
            {
                "name": "legacy",
                "enabled": False,
                "address": "203.0.113.11",
                "ports": [8080],
                "forwarding": "tun",
                "backends": [{"address": "10.20.0.71"}],
            },
            {
                "name": "maintenance",
                "description": "every backend disabled: not in IPVS",
                "address": "203.0.113.11",
                "ports": [8443],
                "backends": [{"address": "10.20.0.81", "enabled": False}],
            },
        ],
    }


def _clustered() -> dict[str, Any]:
    """BGP announces one service's VIP (ECMP over several nodes): its real servers keep the order they
    were created in, a disabled one stays at weight 0 (fulcrum.config.cluster); the other service,
    not announced, is sorted and leaves its disabled backend out as ever."""
    keep = _check(on_failure="weight_zero")
    backends = [
        {"address": "10.0.0.13"},
        {"address": "10.0.0.11", "weight": 3},
        {"address": "10.0.0.12", "enabled": False},
    ]
    return {
        "services": [
            {"name": "web", "address": "192.0.2.10", "ports": [80], "forwarding": "dr", "scheduler": "mh",
             "scheduler_fallback": True, "scheduler_port": True, "health_check": keep, "backends": backends},
            {"name": "intranet", "address": "192.0.2.20", "ports": [80], "backends": backends},
        ],
        "bgp": {"asn": 65001, "router_id": "10.0.1.1", "neighbors": [{"address": "10.0.1.254", "remote_asn": 65000}],
                "announce": ["192.0.2.10"]},
    }


GOLDEN_CASES = {
    "clustered": (_clustered(), RuntimePaths()),
    "empty": ({}, RuntimePaths()),
    "minimal": (_minimal(), RuntimePaths()),
    "lone_node": (_lone_node(), RuntimePaths(maintenance_file="/var/lib/fulcrum/maintenance")),
    "multicast": (_multicast(), RUNTIME),
    "full": (_full(), RUNTIME),
}


@pytest.fixture(params=sorted(GOLDEN_CASES))
def golden_case(request: pytest.FixtureRequest) -> GoldenCase:
    raw, runtime = GOLDEN_CASES[request.param]
    return GoldenCase(request.param, ConfigSnapshot.model_validate(raw), runtime, installed(runtime))


@pytest.fixture
def full_snapshot() -> ConfigSnapshot:
    return ConfigSnapshot.model_validate(_full())


@pytest.fixture
def clustered_snapshot() -> ConfigSnapshot:
    return ConfigSnapshot.model_validate(GOLDEN_CASES["clustered"][0])


@pytest.fixture(scope="session")
def in_private_netns() -> Callable[..., str]:
    """`_in_private_netns`, for a test's own commands (skipped where unshare cannot make one)."""
    if os.geteuid() != 0:
        pytest.skip("a private network namespace needs root")
    return _in_private_netns


@pytest.fixture
def raw_full() -> dict[str, Any]:
    return _full()


@pytest.fixture(scope="session")
def assert_golden() -> Callable[[str, str], None]:
    """Compare a whole rendered file with tests/unit/render/golden/NAME.

    FULCRUM_UPDATE_GOLDEN=1 rewrites the file instead; review the diff before committing it.
    """

    def check(rendered: str, name: str) -> None:
        path = GOLDEN_DIR / name
        if UPDATE_GOLDEN:
            path.write_text(rendered)
        assert path.exists(), f"{path} is missing; create it with FULCRUM_UPDATE_GOLDEN=1 and review it"
        assert rendered == path.read_text(), f"rendering differs from {path}"

    return check


def _interfaces(snapshot: ConfigSnapshot) -> list[str]:
    node = snapshot.node
    named = {node.vrrp_interface, *node.vip_interfaces.values(), *node.track_interfaces}
    return sorted(named | ({node.sync_interface} - {None}))


def _in_private_netns(commands: str, path: Path, interfaces: list[str], env: dict[str, str] | None = None) -> str:
    """Run shell `commands` on "$file" in a new network namespace (with `env` added to the
    environment); return their output on success."""
    # keepalived -t passes when its file is missing: make sure it is not.
    assert path.is_file(), path
    result = subprocess.run(
        ["unshare", "--net", "sh", "-c", _NETNS_PROLOGUE + commands, "sh", str(path), *interfaces],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0, f"{commands} exited {result.returncode}:\n{output}"
    return output


@pytest.fixture(scope="session")
def config_files(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    directory = tmp_path_factory.mktemp("rendered")
    counter = itertools.count()

    def write(text: str, suffix: str) -> Path:
        path = directory / f"{next(counter)}{suffix}"
        path.write_text(text)
        return path

    return write


@pytest.fixture(scope="session")
def keepalived_accepts(config_files: Callable[[str, str], Path]) -> Callable[[str, ConfigSnapshot], None]:
    """Assert `keepalived -t` accepts a config silently: any output is a config error or warning."""
    if shutil.which("keepalived") is None:
        pytest.skip("keepalived is not installed")

    def check(config: str, snapshot: ConfigSnapshot) -> None:
        path = config_files(config, ".conf")
        output = _in_private_netns('keepalived -t -f "$file"', path, _interfaces(snapshot))
        assert not output, f"keepalived -t accepted {path} but said:\n{output}"

    return check


@pytest.fixture(scope="session")
def nft_accepts(config_files: Callable[[str, str], Path]) -> Callable[[str], None]:
    """Assert `nft -c -f` accepts a ruleset, and that loading it twice works (it replaces itself).

    The load catches what only the kernel checks on commit, e.g. NAT in a non-NAT chain.
    """
    if shutil.which("nft") is None:
        pytest.skip("nft is not installed")

    def check(ruleset: str) -> None:
        path = config_files(ruleset, ".nft")
        output = _in_private_netns('nft -c -f "$file"; nft -f "$file"; nft -f "$file"', path, [])
        assert not output, f"nft accepted {path} but said:\n{output}"

    return check
