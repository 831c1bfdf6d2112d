"""Round trip through the importer: the original set-up and Fulcrum's rendering of its import
produce the same IPVS table (`ipvsadm -S -n`), each in a namespace of its own.

The seed thesis's ten scheduler scripts are restored with `ipvsadm -R` as the thesis did; the
keepalived samples run under keepalived itself. Fulcrum's side is the keepalived.conf that the
apply engine would write for the imported configuration, run by the same keepalived.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fulcrum.config.snapshot import ConfigSnapshot, Node
from fulcrum.importer import ImportFormat, import_text
from fulcrum.render.keepalived import RuntimePaths, render_keepalived
import lab
from lab import ipvs, keepalived
from lab.netns import NetNS
from lab.wait import wait_until

pytestmark = pytest.mark.kernel

FIXTURES = Path(__file__).parents[1] / "unit" / "importer" / "fixtures"
SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq"]


def saved(ns: NetNS) -> list[str]:
    return sorted(ipvs.ipvsadm(ns, "-S", "-n").splitlines())


@dataclass(frozen=True)
class Pair:
    """The two namespaces every test compares: the original set-up's and Fulcrum's."""

    original: NetNS
    fulcrum: NetNS


@pytest.fixture(scope="module")
def namespaces() -> Iterator[Pair]:
    """One pair of namespaces for the whole module (creating and deleting them per test was most
    of its time in the VM); deleted when the module ends, pass or fail."""
    with lab.scope("import round trip"):
        yield Pair(NetNS("original"), NetNS("fulcrum"))


@pytest.fixture
def pair(namespaces: Pair) -> Pair:
    """The shared pair, empty at the start of each test and emptied again after it (the test's own
    cleanup scope: keepalived stops first, then its IPVS table and the addresses on lo go)."""
    for ns in (namespaces.original, namespaces.fulcrum):
        assert saved(ns) == [], f"{ns} still holds a previous test's IPVS table"
        lab.defer(ipvs.ipvsadm, ns, "-C")
        lab.defer(ns.ip, "address", "flush", "dev", "lo", "scope", "global")
    return namespaces


def add_local(ns: NetNS, local: list[str]) -> None:
    """`local` addresses on lo, there before keepalived's first check."""
    for address in local:
        ns.ip("address", "add", address, "dev", "lo")


def run_fulcrum(ns: NetNS, text: str, tmp_path: Path, local: list[str] | None = None) -> ConfigSnapshot:
    """keepalived with Fulcrum's rendering of the imported `text`, in namespace `ns`."""
    result = import_text(ImportFormat.AUTO, text)
    snapshot = ConfigSnapshot(services=result.services, vip_groups=result.vip_groups, node=Node.model_validate(result.node))
    workdir = tmp_path / "fulcrum"
    workdir.mkdir()
    conf = workdir / "keepalived.conf"
    conf.write_text(render_keepalived(snapshot, RuntimePaths()))
    add_local(ns, local or [])
    keepalived.start(ns, conf)
    return snapshot


def run_original(ns: NetNS, conf_text: str, tmp_path: Path, local: list[str]) -> None:
    workdir = tmp_path / "original"
    workdir.mkdir()
    conf = workdir / "keepalived.conf"
    conf.write_text(conf_text)
    add_local(ns, local)
    keepalived.start(ns, conf)


def assert_same_tables(original: NetNS, fulcrum: NetNS, expect_real_servers: bool) -> None:
    """Equal once both have settled: checkers run on their own timers in each namespace, and the
    original starts its real servers up (no alpha) where Fulcrum's wait for a first passed check,
    so the tables may agree for a moment on the way (both without servers, say)."""

    def settled() -> list[str] | None:
        table, other = saved(original), saved(fulcrum)
        has_servers = any(line.startswith("-a ") for line in table)
        return table if table and table == other and has_servers == expect_real_servers else None

    wait_until(settled, 90, what="the two IPVS tables to be equal and settled", interval=1)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_seed_script(scheduler: str, pair: Pair, tmp_path: Path) -> None:
    script = (FIXTURES / "seed" / f"{scheduler}.sh").read_text()
    ipvs.restore(pair.original, [line for line in script.splitlines() if line.startswith(("-A", "-a"))])
    run_fulcrum(pair.fulcrum, script, tmp_path)
    assert_same_tables(pair.original, pair.fulcrum, expect_real_servers=True)
    assert f"-A -t 202.103.106.5:80 -s {scheduler}" in saved(pair.fulcrum)


# Real servers exist only as addresses on lo, where given: PING_CHECK then passes, so both tables
# keep the server; the inhibit sample's HTTP_GET fails, so both keep it at weight 0; the others'
# SSL_GET checks fail, so both tables hold the service without servers.
SAMPLES = {
    "keepalived.conf.PING_CHECK": (["192.168.200.6/32"], True),
    "keepalived.conf.inhibit": ([], True),
    "keepalived.conf.HTTP_GET.port": ([], False),
    "keepalived.conf.virtualhost": ([], False),
}


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_keepalived_sample(sample: str, pair: Pair, tmp_path: Path) -> None:
    text = (FIXTURES / "keepalived" / sample).read_text()
    local, expect_real_servers = SAMPLES[sample]
    run_original(pair.original, text, tmp_path, local)
    snapshot = run_fulcrum(pair.fulcrum, text, tmp_path, local)
    assert snapshot.services
    assert_same_tables(pair.original, pair.fulcrum, expect_real_servers)
