"""Round trip through the importer: the original set-up and Fulcrum's rendering of its import
produce the same IPVS table (`ipvsadm -S -n`), each in a namespace of its own.

The seed thesis's ten scheduler scripts are restored with `ipvsadm -R` as the thesis did; the
keepalived samples run under keepalived itself. Fulcrum's side is the keepalived.conf that the
apply engine would write for the imported configuration, run by the same keepalived.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fulcrum.config.snapshot import ConfigSnapshot, Node
from fulcrum.importer import ImportFormat, import_text
from fulcrum.render.keepalived import RuntimePaths, render_keepalived
from lab import ipvs, keepalived
from lab.netns import NetNS
from lab.wait import wait_until

pytestmark = pytest.mark.kernel

FIXTURES = Path(__file__).parents[1] / "unit" / "importer" / "fixtures"
SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq"]


def saved(ns: NetNS) -> list[str]:
    return sorted(ipvs.ipvsadm(ns, "-S", "-n").splitlines())


def namespace(label: str, local: list[str]) -> NetNS:
    """A namespace with `local` addresses on lo, there before keepalived's first check."""
    ns = NetNS(label)
    for address in local:
        ns.ip("address", "add", address, "dev", "lo")
    return ns


def run_fulcrum(text: str, tmp_path: Path, local: list[str] | None = None) -> tuple[NetNS, ConfigSnapshot]:
    """keepalived with Fulcrum's rendering of the imported `text`, in a namespace of its own."""
    result = import_text(ImportFormat.AUTO, text)
    snapshot = ConfigSnapshot(services=result.services, vip_groups=result.vip_groups, node=Node.model_validate(result.node))
    workdir = tmp_path / "fulcrum"
    workdir.mkdir()
    conf = workdir / "keepalived.conf"
    conf.write_text(render_keepalived(snapshot, RuntimePaths()))
    ns = namespace("fulcrum", local or [])
    keepalived.start(ns, conf)
    return ns, snapshot


def run_original(conf_text: str, tmp_path: Path, local: list[str]) -> NetNS:
    workdir = tmp_path / "original"
    workdir.mkdir()
    conf = workdir / "keepalived.conf"
    conf.write_text(conf_text)
    ns = namespace("original", local)
    keepalived.start(ns, conf)
    return ns


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
def test_seed_script(scheduler: str, tmp_path: Path) -> None:
    script = (FIXTURES / "seed" / f"{scheduler}.sh").read_text()
    original = NetNS("seed")
    ipvs.restore(original, [line for line in script.splitlines() if line.startswith(("-A", "-a"))])
    fulcrum, _ = run_fulcrum(script, tmp_path)
    assert_same_tables(original, fulcrum, expect_real_servers=True)
    assert f"-A -t 202.103.106.5:80 -s {scheduler}" in saved(fulcrum)


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
def test_keepalived_sample(sample: str, tmp_path: Path) -> None:
    text = (FIXTURES / "keepalived" / sample).read_text()
    local, expect_real_servers = SAMPLES[sample]
    original = run_original(text, tmp_path, local)
    fulcrum, snapshot = run_fulcrum(text, tmp_path, local)
    assert snapshot.services
    assert_same_tables(original, fulcrum, expect_real_servers)
