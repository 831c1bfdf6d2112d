"""Starting, reloading and stopping a real keepalived, inside a throwaway namespace."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from fulcrum.apply.keepalived_control import KeepalivedControl, keepalived_argv, pid_of
from fulcrum.apply.tools import ToolError
from fulcrum.render import RuntimePaths, render_keepalived

from applytest import Netns, Paths, vrrp_only_snapshot


def _control(paths: Paths, netns: Netns, **overrides: object) -> KeepalivedControl:
    settings: dict[str, object] = {
        "pidfile": paths.pidfile,
        "start_argv": keepalived_argv(paths.conf, paths.pidfile, paths.pidfile.parent),
        "prefix": netns.prefix,
        **overrides,
    }
    return KeepalivedControl(**settings)  # type: ignore[arg-type]


def test_start_reload_stop(paths: Paths, netns: Netns) -> None:
    paths.conf.write_text(render_keepalived(vrrp_only_snapshot(), RuntimePaths()))
    control = _control(paths, netns)
    assert control.running_pid() is None

    started = control.reload()  # not running: reload starts it
    pid = control.running_pid()
    assert pid is not None and started == f"started keepalived (pid {pid})"
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "keepalived"

    assert control.reload() == f"sent SIGHUP to keepalived (pid {pid})"
    assert control.running_pid() == pid

    assert control.stop() == f"stopped keepalived (pid {pid})"
    assert control.running_pid() is None
    assert control.stop() == "keepalived was not running"


def test_a_start_command_that_fails_reports_its_status_and_output(paths: Paths, netns: Netns) -> None:
    control = _control(paths, netns, start_argv=("sh", "-c", "echo no keepalived for you >&2; exit 3"))
    with pytest.raises(ToolError, match=r"exited with status 3: no keepalived for you"):
        control.start()


def test_a_start_that_never_writes_the_pidfile_times_out_and_is_cleaned_up(paths: Paths, netns: Netns) -> None:
    duration = f"59.{secrets.randbelow(900_000) + 100_000}"  # identifies this very process
    control = _control(paths, netns, start_argv=("sleep", duration), start_timeout=0.5)
    with pytest.raises(ToolError, match=r"did not write a live pid to .*keepalived\.pid within 0\.5 s"):
        control.start()
    assert not _running(["sleep", duration]), "the launcher was left running"


def test_a_pidfile_naming_another_program_is_not_keepalived(paths: Paths) -> None:
    paths.pidfile.write_text("1\n")  # init: alive, but not keepalived
    assert pid_of(paths.pidfile) is None
    paths.pidfile.write_text("not a pid\n")
    assert pid_of(paths.pidfile) is None


def test_version(paths: Paths, netns: Netns) -> None:
    version = _control(paths, netns).version()
    assert version is not None and version.split(".")[0].isdigit()


def _running(argv: list[str]) -> bool:
    """Whether a process with exactly this command line exists (a read-only look at /proc)."""
    wanted = "".join(f"{arg}\0" for arg in argv).encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                return True
        except OSError:  # the process exited meanwhile
            continue
    return False
