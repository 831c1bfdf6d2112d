"""Starting and reloading keepalived.

keepalived re-reads its config file on SIGHUP; the parent process forwards the reload to the VRRP
and checker children. When it is not running it is started with a configured command line (a
direct `keepalived -f ... -p ...`, or `systemctl start keepalived`), and is considered up once
its pidfile names a live keepalived process.

A successful reload only means keepalived accepted the signal: it applies the config
asynchronously. The IPVS read-back (the keepalived daemon's verify step) is what confirms the result.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fulcrum.apply.tools import ToolError, poll, run_tool, trim_lines


def keepalived_argv(config: Path, pidfile: Path, run_dir: Path) -> tuple[str, ...]:
    """A direct keepalived command line whose pidfiles do not clash with a packaged keepalived."""
    return (
        "keepalived",
        "--use-file", str(config),
        "--pid", str(pidfile),
        "--vrrp_pid", str(run_dir / "keepalived-vrrp.pid"),
        "--checkers_pid", str(run_dir / "keepalived-checkers.pid"),
        "--bfd_pid", str(run_dir / "keepalived-bfd.pid"),
    )  # fmt: skip


def pid_of(pidfile: Path) -> int | None:
    """The pid in `pidfile` if that process is alive and is keepalived, else None."""
    try:
        pid = int(pidfile.read_text().split()[0])
        command = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError, IndexError):
        return None
    return pid if command == "keepalived" else None


@dataclass(frozen=True)
class KeepalivedControl:
    pidfile: Path
    start_argv: tuple[str, ...]
    prefix: tuple[str, ...] = ()  # wraps the start command, e.g. ("ip", "netns", "exec", NS)
    start_timeout: float = 15.0
    stop_timeout: float = 15.0

    def running_pid(self) -> int | None:
        return pid_of(self.pidfile)

    def reload(self) -> str:
        """SIGHUP a running keepalived, or start it. Returns what was done; raises ToolError."""
        pid = self.running_pid()
        if pid is None:
            return self.start()
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:  # exited between the pidfile check and the signal
            return self.start()
        return f"sent SIGHUP to keepalived (pid {pid})"

    def start(self) -> str:
        command = [*self.prefix, *self.start_argv]
        # A file, not a pipe: a daemonising keepalived could keep a pipe open after its parent exits.
        with tempfile.TemporaryFile(mode="w+", errors="replace") as output:
            try:
                launcher = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # keepalived must outlive this helper's process group
                    close_fds=True,
                )
            except OSError as error:
                raise ToolError(f"cannot run {command[0]} to start keepalived: {error.strerror}") from error

            def settled() -> bool | None:
                up = self.running_pid() is not None
                return True if up or launcher.poll() not in (None, 0) else None

            poll(settled, self.start_timeout, interval=0.05)
            pid = self.running_pid()
            if pid is not None:
                return f"started keepalived (pid {pid})"
            if launcher.poll() is None:  # still running but no keepalived: do not leave it behind
                launcher.kill()
                launcher.wait()
                failure = (
                    f"keepalived did not write a live pid to {self.pidfile} within "
                    f"{self.start_timeout:g} s of {' '.join(command)}"
                )
            else:
                failure = f"{' '.join(command)} exited with status {launcher.returncode}"
            output.seek(0)
            said = trim_lines([line for line in output.read().splitlines() if line.strip()])
        raise ToolError(f"{failure}: {said}" if said else failure)

    def stop(self) -> str:
        """SIGTERM keepalived and wait for it to exit (it removes its IPVS services and VIPs)."""
        pid = self.running_pid()
        if pid is None:
            return "keepalived was not running"
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return "keepalived was not running"
        if poll(lambda: True if self.running_pid() != pid else None, self.stop_timeout) is None:
            raise ToolError(f"keepalived (pid {pid}) did not exit within {self.stop_timeout:g} s of SIGTERM")
        return f"stopped keepalived (pid {pid})"

    def version(self) -> str | None:
        """'2.2.7' from "Keepalived v2.2.7 (01/16,2022)" (printed on stderr); None if unavailable."""
        try:
            run = run_tool(["keepalived", "--version"], self.prefix, timeout=10)
        except ToolError:
            return None
        found = re.search(r"Keepalived v(\S+)", run.output)
        return found.group(1) if found else None
