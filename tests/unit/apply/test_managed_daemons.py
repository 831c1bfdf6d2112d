"""Adding a daemon touches no engine code: two small daemons registered with the engine are
rendered, validated by real tools (`sh -n`, `python -m json.tool`), installed, loaded, verified, and
rolled back when a later daemon fails, through the same steps and reports as keepalived and nftables.

Neither needs IPVS, so the whole apply runs on this host.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import threading
from pathlib import Path

from fulcrum.apply.daemons import Checked, ManagedDaemon, standard_daemons
from fulcrum.apply.daemons.owned_files import OwnedFiles
from fulcrum.apply.engine import ApplyEngine, EngineConfig
from fulcrum.apply.files import failed_path, new_path, prev_path
from fulcrum.apply.result import ApplyOutcome, ApplyStep
from fulcrum.apply.state import StateFile
from fulcrum.apply.tools import ToolError, run_tool
from fulcrum.config.snapshot import ConfigSnapshot

from applytest import Netns, Paths, engine_config, make_snapshot


class GreeterDaemon:
    """A daemon configured by a shell script: `load` runs it, and it writes the node's name to a
    state file, which `verify` reads back."""

    name = "greeter"

    def __init__(self, script: Path, output: Path) -> None:
        self.script = script
        self.output = output
        self.files = OwnedFiles(script)

    def render(self, snapshot: ConfigSnapshot) -> str:
        body = f"NODE={shlex.quote(snapshot.node.name)}\nprintf '%s\\n' \"$NODE\" > \"$1\"\n"
        return self.files.stage({self.script: body})

    def validate(self) -> Checked:
        run = run_tool(["sh", "-n", str(new_path(self.script))])
        if run.returncode != 0:
            raise ToolError(f"sh -n rejected {self.script.name}: {run.output.strip()}")
        return Checked(f"sh -n accepted {self.script.name}")

    def reject(self) -> None:
        self.files.reject()

    def discard(self) -> None:
        self.files.discard()

    def precondition(self) -> tuple[bool, str]:
        return True, "needs only sh"

    def install(self) -> str:
        return self.files.install()

    def load(self, snapshot: ConfigSnapshot) -> str:
        return self._run()

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        greeted = self.output.read_text().strip()
        if greeted != snapshot.node.name:
            raise ToolError(f"greeter says {greeted!r}, not {snapshot.node.name!r}")
        return Checked(f"greeter says {greeted}")

    def undo(self, loaded: bool) -> str:
        restored, done = self.files.restore()
        if loaded and restored.get(self.script):
            done += "; " + self._run()
        elif loaded:
            self.output.unlink(missing_ok=True)
        return done

    def _run(self) -> str:
        run = run_tool(["sh", str(self.script), str(self.output)])
        if run.returncode != 0:
            raise ToolError(f"sh {self.script} failed: {run.output.strip()}")
        return f"ran {self.script}"


class InventoryDaemon:
    """A daemon configured by a JSON document listing the services, which it can hold only so many
    of: `load` hands it the document, `verify` reads back what it holds and fails over capacity."""

    name = "inventory"

    def __init__(self, document: Path, held: Path, capacity: int) -> None:
        self.document = document
        self.held = held
        self.capacity = capacity
        self.files = OwnedFiles(document)

    def render(self, snapshot: ConfigSnapshot) -> str:
        services = [service.name for service in snapshot.services]
        return self.files.stage({self.document: json.dumps({"services": services}) + "\n"})

    def validate(self) -> Checked:
        run = run_tool([sys.executable, "-m", "json.tool", str(new_path(self.document))])
        if run.returncode != 0:
            raise ToolError(f"json.tool rejected {self.document.name}: {run.output.strip()}")
        return Checked(f"json.tool accepted {self.document.name}")

    def reject(self) -> None:
        self.files.reject()

    def discard(self) -> None:
        self.files.discard()

    def precondition(self) -> tuple[bool, str]:
        return True, "needs nothing"

    def install(self) -> str:
        return self.files.install()

    def load(self, snapshot: ConfigSnapshot) -> str:
        return self._hand_over()

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        held = json.loads(self.held.read_text())["services"]
        if len(held) > self.capacity:
            raise ToolError(f"holds {len(held)} services, can run only {self.capacity}")
        return Checked(f"holds {len(held)} services")

    def undo(self, loaded: bool) -> str:
        restored, done = self.files.restore()
        if loaded and restored.get(self.document):
            done += "; " + self._hand_over()
        return done

    def _hand_over(self) -> str:
        shutil.copyfile(self.document, self.held)
        return f"handed {self.document} over"


class MisspeltGreeterDaemon(GreeterDaemon):
    """Renders a script with a syntax error, as a renderer bug would."""

    def render(self, snapshot: ConfigSnapshot) -> str:
        return self.files.stage({self.script: "if then fi\n"})


def _engine(tmp_path: Path, daemons: list[ManagedDaemon]) -> ApplyEngine:
    config = EngineConfig(
        state_dir=tmp_path / "state",
        keepalived_conf=tmp_path / "keepalived.conf",
        nftables_file=tmp_path / "fulcrum.nft",
        keepalived_pidfile=tmp_path / "keepalived.pid",
        keepalived_start=("false",),
    )
    return ApplyEngine(config, daemons)


def test_a_registered_daemon_is_applied_and_rolled_back_when_a_later_daemon_fails(tmp_path: Path) -> None:
    greeter = GreeterDaemon(tmp_path / "etc" / "greet.sh", tmp_path / "run" / "greeting")
    etc, run = tmp_path / "etc", tmp_path / "run"
    inventory = InventoryDaemon(etc / "inventory.json", run / "held.json", capacity=1)
    (tmp_path / "run").mkdir()
    engine = _engine(tmp_path, [greeter, inventory])
    first = make_snapshot(node={"name": "lb-one", "vrrp_interface": "eth0"}, services=[])

    applied = engine.apply(first, 1)

    assert applied.outcome == ApplyOutcome.APPLIED, applied.message
    assert [(step.step, step.daemon, step.ok) for step in applied.steps if step.daemon == "greeter"] == [
        (ApplyStep.RENDER, "greeter", True),
        (ApplyStep.VALIDATE, "greeter", True),
        (ApplyStep.DATAPLANE, "greeter", True),
        (ApplyStep.INSTALL, "greeter", True),
        (ApplyStep.LOAD, "greeter", True),
        (ApplyStep.VERIFY, "greeter", True),
    ]
    assert greeter.output.read_text() == "lb-one\n"
    installed = greeter.script.read_text()

    # The second revision: the greeter takes it and is verified, then the inventory cannot run it.
    second = make_snapshot(node={"name": "lb-two", "vrrp_interface": "eth0"})
    failed = engine.apply(second, 2)

    assert failed.outcome == ApplyOutcome.FAILED and failed.rolled_back
    assert (failed.failed_step, failed.failed_daemon) == (ApplyStep.VERIFY, "inventory")
    assert failed.message.startswith("verify failed for inventory: holds 2 services, can run only 1")
    reports = {(step.step, step.daemon): step for step in failed.steps}
    assert reports[ApplyStep.VERIFY, "greeter"].ok
    assert reports[ApplyStep.VERIFY, "greeter"].detail == "greeter says lb-two"
    rollback = [(step.daemon, step.ok) for step in failed.steps if step.step == ApplyStep.ROLLBACK]
    assert rollback == [("inventory", True), ("greeter", True), (None, True)]
    # The greeter runs the first revision again, from its restored script.
    assert greeter.script.read_text() == installed
    assert "lb-two" in failed_path(greeter.script).read_text()
    assert greeter.output.read_text() == "lb-one\n"
    assert json.loads(inventory.held.read_text()) == {"services": []}
    assert not new_path(greeter.script).exists() and not prev_path(greeter.script).exists()
    state = StateFile(tmp_path / "state" / "state.json").load()
    assert state.applied is not None and state.applied.revision == 1 and state.pending is None


def test_a_rejected_config_of_a_registered_daemon_changes_nothing(tmp_path: Path) -> None:
    greeter = MisspeltGreeterDaemon(tmp_path / "etc" / "greet.sh", tmp_path / "run" / "greeting")
    engine = _engine(tmp_path, [greeter])

    result = engine.apply(make_snapshot(), 3)

    assert (result.failed_step, result.failed_daemon) == (ApplyStep.VALIDATE, "greeter")
    assert result.message.startswith("validate failed for greeter: sh -n rejected greet.sh: ")
    assert not greeter.script.exists() and failed_path(greeter.script).read_text() == "if then fi\n"
    assert [step.step for step in result.steps] == [ApplyStep.RENDER, ApplyStep.VALIDATE]


class MeetingGreeterDaemon(GreeterDaemon):
    """Validates only once every other such daemon is validating too (a barrier with a deadline)."""

    def __init__(self, name: str, root: Path, meeting: threading.Barrier, rendered: str = "") -> None:
        super().__init__(root / "etc" / f"{name}.sh", root / "run" / name)
        self.name = name
        self.meeting = meeting
        self.rendered = rendered

    def render(self, snapshot: ConfigSnapshot) -> str:
        return self.files.stage({self.script: self.rendered}) if self.rendered else super().render(snapshot)

    def validate(self) -> Checked:
        self.meeting.wait()  # BrokenBarrierError after its timeout when validators run one at a time
        return super().validate()


def test_the_validators_run_side_by_side_and_report_in_order(tmp_path: Path) -> None:
    meeting = threading.Barrier(3, timeout=10)
    daemons = [
        MeetingGreeterDaemon(f"greeter{i}", tmp_path, meeting, text)
        for i, text in enumerate(["", "if then fi\n", "fi\n"])
    ]
    result = _engine(tmp_path, list[ManagedDaemon](daemons)).apply(make_snapshot(), 4)

    # All three met at the barrier (one at a time, the first would have waited alone and failed);
    # the second and third refused, both reported in the daemons' order, and nothing was installed.
    validations = [(step.daemon, step.ok) for step in result.steps if step.step == ApplyStep.VALIDATE]
    assert validations == [("greeter0", True), ("greeter1", False), ("greeter2", False)]
    assert (result.failed_step, result.failed_daemon) == (ApplyStep.VALIDATE, "greeter1")
    assert result.message.startswith("validate failed for greeter1 and greeter2: sh -n rejected greeter1.sh")
    assert not any(daemon.script.exists() for daemon in daemons)


def test_a_registered_daemon_is_validated_beside_the_appliance_daemons(paths: Paths, netns: Netns) -> None:
    config = engine_config(paths, netns)
    greeter = GreeterDaemon(paths.root / "etc" / "greet.sh", paths.root / "run" / "greeting")
    engine = ApplyEngine(config, [*standard_daemons(config), greeter])

    result = engine.validate(make_snapshot(), 4)

    assert result.outcome == ApplyOutcome.VALIDATED, result.message
    validated = [step.daemon for step in result.steps if step.step == ApplyStep.VALIDATE and step.ok]
    assert validated == ["nftables", "keepalived", "ipvs_sync", "greeter"]
    assert not greeter.script.exists() and not new_path(greeter.script).exists()  # validated, not installed
