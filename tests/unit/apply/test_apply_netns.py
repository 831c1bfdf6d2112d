"""nftables load, read-back and rollback, and the engine's rollback, for real in a namespace.

This kernel has no IPVS, so `ApplyEngine.apply` stops at the data-plane check by design. The
rollback tests therefore drive the go-live half of an apply (steps 4-8) directly: keepalived and
nft really run in the namespace, and the real absence of IPVS makes the read-back fail, which
triggers the real rollback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fulcrum.apply.engine import ApplyEngine, _Steps
from fulcrum.apply.files import failed_path, promote, restore_previous, write_new
from fulcrum.apply.keepalived_control import KeepalivedControl
from fulcrum.apply.nftables_control import delete_table, load_ruleset, read_table, verify_loaded
from fulcrum.apply.result import ApplyOutcome, ApplyResult, ApplyStep
from fulcrum.apply.state import StateFile
from fulcrum.apply.tools import ToolError
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import RuntimePaths, render_keepalived, render_nftables

from applytest import IPVS_PRESENT, Netns, Paths, make_snapshot, vrrp_only_snapshot

A = make_snapshot(firewall={"management_ports": [22], "management_allow": ["10.1.0.0/16"]})
B = make_snapshot(firewall={"management_ports": [22, 8080], "management_allow": ["10.2.0.0/16"]})


def _listing(netns: Netns) -> str:
    """The table as the kernel holds it (without -a, so no handles, which change on every load)."""
    return netns.run("nft", "list", "table", "inet", "fulcrum")


def _load(netns: Netns, path: Path, snapshot: ConfigSnapshot) -> None:
    path.write_text(render_nftables(snapshot))
    load_ruleset(path, netns.prefix)


def test_load_and_read_back(netns: Netns, tmp_path: Path) -> None:
    assert read_table(netns.prefix) is None
    _load(netns, tmp_path / "fulcrum.nft", A)
    summary = verify_loaded(netns.prefix)
    assert summary.startswith("table inet fulcrum: 4 chains,")
    assert "10.1.0.0/16" in _listing(netns)


def test_a_rejected_load_changes_nothing_in_the_kernel(netns: Netns, tmp_path: Path) -> None:
    _load(netns, tmp_path / "fulcrum.nft", A)
    before = _listing(netns)
    broken = tmp_path / "broken.nft"
    broken.write_text(render_nftables(B).replace("policy accept;", "policy acept;", 1))
    with pytest.raises(ToolError, match=r"nft -f .*broken\.nft failed: .*Error: syntax error"):
        load_ruleset(broken, netns.prefix)
    assert _listing(netns) == before


def test_reloading_the_previous_file_restores_the_previous_rules(netns: Netns, tmp_path: Path) -> None:
    live = tmp_path / "fulcrum.nft"
    _load(netns, live, A)
    before = _listing(netns)
    write_new(live, render_nftables(B))
    promote(live)
    load_ruleset(live, netns.prefix)
    assert "10.2.0.0/16" in _listing(netns)
    assert restore_previous(live)
    load_ruleset(live, netns.prefix)
    assert _listing(netns) == before


def test_delete_table(netns: Netns, tmp_path: Path) -> None:
    assert delete_table(netns.prefix) is False
    _load(netns, tmp_path / "fulcrum.nft", A)
    assert delete_table(netns.prefix) is True
    assert read_table(netns.prefix) is None


needs_missing_ipvs = pytest.mark.skipif(
    IPVS_PRESENT, reason="uses the kernel's lack of IPVS as the read-back failure that triggers a rollback"
)


def _go_live(engine: ApplyEngine, snapshot: ConfigSnapshot, revision: int) -> ApplyResult:
    steps = _Steps()
    warnings = engine._stage_and_validate(snapshot, steps)
    return engine._go_live(snapshot, revision, steps, warnings)


@needs_missing_ipvs
def test_a_failed_first_apply_is_undone_completely(engine: ApplyEngine, paths: Paths, netns: Netns) -> None:
    result = _go_live(engine, vrrp_only_snapshot(), 1)

    assert result.outcome == ApplyOutcome.FAILED
    assert (result.failed_step, result.failed_daemon) == (ApplyStep.VERIFY, "keepalived")
    assert result.rolled_back
    assert result.message.startswith("verify failed for keepalived: ")
    assert "this kernel has no IPVS" in result.message
    assert result.message.endswith("the previous configuration was restored")
    reports = {(step.step, step.daemon): step for step in result.steps}
    assert reports[ApplyStep.LOAD, "nftables"].ok and reports[ApplyStep.LOAD, "keepalived"].ok
    assert reports[ApplyStep.VERIFY, "nftables"].ok
    assert reports[ApplyStep.LOAD, "keepalived"].detail.startswith("started keepalived (pid ")
    assert reports[ApplyStep.ROLLBACK, "keepalived"].ok and reports[ApplyStep.ROLLBACK, "nftables"].ok
    assert "stopped keepalived" in reports[ApplyStep.ROLLBACK, "keepalived"].detail
    assert "deleted table inet fulcrum" in reports[ApplyStep.ROLLBACK, "nftables"].detail
    assert reports[ApplyStep.ROLLBACK, None].ok
    # There was nothing before: no live files (the candidates are kept), no table, no keepalived.
    assert not paths.conf.exists() and not paths.nft.exists()
    assert failed_path(paths.conf).exists() and failed_path(paths.nft).exists()
    assert read_table(netns.prefix) is None
    assert engine.keepalived.running_pid() is None
    state = StateFile(paths.state / "state.json").load()
    assert state.applied is None and state.pending is None


@needs_missing_ipvs
def test_a_failed_apply_restores_the_previous_revision(engine: ApplyEngine, paths: Paths, netns: Netns) -> None:
    previous = vrrp_only_snapshot(router_id=51)
    paths.conf.write_text(render_keepalived(previous, RuntimePaths()))
    _load(netns, paths.nft, A)
    listing = _listing(netns)
    live = {path: path.read_bytes() for path in (paths.conf, paths.nft)}
    control = KeepalivedControl(paths.pidfile, engine.config.keepalived_start, netns.prefix)
    control.start()
    pid = control.running_pid()
    StateFile(paths.state / "state.json").commit(1, previous.digest())

    candidate = vrrp_only_snapshot(router_id=52).model_copy(update={"firewall": B.firewall})
    result = _go_live(engine, candidate, 2)

    assert result.outcome == ApplyOutcome.FAILED
    assert (result.failed_step, result.failed_daemon) == (ApplyStep.VERIFY, "keepalived")
    assert result.rolled_back
    rollbacks = [(step.daemon, step.ok) for step in result.steps if step.step == ApplyStep.ROLLBACK]
    assert rollbacks == [("ipvs_sync", True), ("keepalived", True), ("nftables", True), (None, True)]
    assert f"reloaded nftables from {paths.nft}" in result.steps[-2].detail
    for path, content in live.items():
        assert path.read_bytes() == content, f"{path} was not restored"
    assert "virtual_router_id 52" in failed_path(paths.conf).read_text()
    assert _listing(netns) == listing
    assert control.running_pid() == pid, "keepalived should have been reloaded, not restarted"
    state = StateFile(paths.state / "state.json").load()
    assert state.applied is not None and state.applied.revision == 1
    assert state.pending is None
