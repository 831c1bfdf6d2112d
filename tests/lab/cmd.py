"""Run commands, in the VM or inside a lab namespace, and fail loudly with their output.

Every process start costs a fraction of a second in the emulated VM (binaries are read over
9p without a cache), so the lab batches `ip` commands and keeps the number of spawns low.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lab.defer import defer
from lab.wait import StopWaiting

# tests/, so that `python -m lab.servers` works inside a namespace.
LAB_PARENT = Path(__file__).resolve().parents[1]


class CmdError(RuntimeError):
    pass


class ProcessExited(CmdError, StopWaiting):
    """A background process is gone: waiting for it to become ready cannot succeed."""


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def ns_name(ns) -> str | None:
    """The namespace name of a NetNS (or Host), a name, or None for the VM's own namespace."""
    return ns if ns is None or isinstance(ns, str) else ns.name


def in_ns(argv: list, ns) -> list[str]:
    name = ns_name(ns)
    argv = [str(arg) for arg in argv]
    return ["ip", "netns", "exec", name, *argv] if name else argv


def python_argv(*args: str) -> list[str]:
    """The venv's python; run with lab_env() the lab package is importable."""
    return [sys.executable, *args]


def lab_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LAB_PARENT), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the repo is read-only inside the VM
    return env


def cmd(argv: list, ns=None, *, check: bool = True, timeout: float = 60, input: str | None = None) -> Result:
    """Run argv (in namespace `ns`) to completion; raise CmdError with its output if it fails."""
    full = in_ns(argv, ns)
    shown = " ".join(full) + (f" <<EOF\n{input}EOF" if input else "")
    try:
        proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input, env=lab_env())
    except subprocess.TimeoutExpired as exc:
        raise CmdError(f"timed out after {timeout}s: {shown}\n{_output(exc.stdout, exc.stderr)}") from None
    if check and proc.returncode != 0:
        raise CmdError(f"exit {proc.returncode}: {shown}\n{_output(proc.stdout, proc.stderr)}")
    return Result(full, proc.returncode, proc.stdout, proc.stderr)


def _output(stdout, stderr) -> str:
    def text(data) -> str:
        return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")

    return f"--- stdout ---\n{text(stdout)}--- stderr ---\n{text(stderr)}"


class Background:
    """A long-running process in a process group of its own, its output in a log file.

    Stopped when the cleanup scope it was created in ends. Not started by the constructor,
    and startable again after stop(): a backend can go away and come back.
    """

    def __init__(self, description: str, log_path: Path):
        self.description = description
        self.log_path = Path(log_path)
        self._pid: int | None = None
        self._exit: int | None = None
        defer(self.stop)

    def _launch(self) -> int:
        """Start the process (its own session, stdout and stderr to the log); its pid."""
        raise NotImplementedError

    def start(self) -> Background:
        if self.running:
            raise CmdError(f"already running: {self.description}")
        self._pid, self._exit = self._launch(), None
        return self

    @property
    def pid(self) -> int:
        if self._pid is None:
            raise CmdError(f"never started: {self.description}")
        return self._pid

    def poll(self) -> int | None:
        """The exit code once the process has ended (reaping it), else None."""
        if self._pid is not None and self._exit is None:
            pid, status = os.waitpid(self._pid, os.WNOHANG)
            if pid:
                self._exit = os.waitstatus_to_exitcode(status)
        return self._exit

    @property
    def running(self) -> bool:
        return self._pid is not None and self.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def check_running(self) -> None:
        """Raise ProcessExited, with the log, if the process has ended."""
        if not self.running:
            raise ProcessExited(f"not running (exit {self._exit}): {self.description}\n--- log ---\n{self.log()}")

    def signal(self, sig: int) -> None:
        self.check_running()
        os.kill(self.pid, sig)

    def stop(self, timeout: float = 10) -> int | None:
        """SIGTERM, SIGKILL after `timeout`, then SIGKILL what is left of its process group.

        Only the leader gets SIGTERM: keepalived's parent stops its own children. Returns the
        exit code (negative: killed by that signal), None if it never started.
        """
        if self._pid is None:
            return None
        if self.poll() is None:
            os.kill(self._pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if self._exit is None:
                _kill_group(self._pid, signal.SIGKILL)
                self._exit = os.waitstatus_to_exitcode(os.waitpid(self._pid, 0)[1])
        _kill_group(self._pid, signal.SIGKILL)  # stragglers a leader left behind
        return self._exit

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.description!r}, running={self.running})"


class Exec(Background):
    """A command run in the background (in namespace `ns`)."""

    def __init__(self, argv: list, ns=None, *, log_path: Path):
        self.argv = in_ns(argv, ns)
        super().__init__(" ".join(self.argv), log_path)

    def _launch(self) -> int:
        return os.posix_spawnp(
            self.argv[0], self.argv, lab_env(), setsid=True,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, str(self.log_path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
        )


def bkg(argv: list, ns=None, *, log_path: Path) -> Exec:
    """Start argv in the background (in namespace `ns`); stopped when the cleanup scope ends."""
    return Exec(argv, ns, log_path=log_path).start()


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
