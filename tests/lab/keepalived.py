"""keepalived in a lab namespace: config-checked, started in the foreground, logs in a file.

    kad = keepalived.start(lb, conf_path)       # ready: its parent wrote its pid file
    ipvs.wait_for_real_servers(lb, VIP, 80, [...])
    kad.reload()                                # SIGHUP: re-read the configuration
    kad.stop()                                  # or left to the cleanup scope

Pid files and the log live next to the configuration (or in `workdir`), so several
keepalived processes can run in one VM, one per namespace.
"""

from __future__ import annotations

import signal
from pathlib import Path

from lab.cmd import CmdError, Exec, cmd
from lab.wait import wait_until


class Keepalived(Exec):
    def __init__(self, ns, conf_path: Path, workdir: Path):
        self.conf_path = conf_path
        self.pidfile = workdir / "keepalived.pid"
        argv = [
            "keepalived",
            "--dont-fork", "--log-console", "--log-detail", "--no-syslog",
            "--use-file", conf_path,
            "--pid", self.pidfile,
            "--checkers_pid", workdir / "checkers.pid",
            "--vrrp_pid", workdir / "vrrp.pid",
            "--bfd_pid", workdir / "bfd.pid",
        ]
        super().__init__(argv, ns, log_path=workdir / "keepalived.log")

    def reload(self) -> None:
        self.signal(signal.SIGHUP)


def check_config(ns, conf_path: Path) -> None:
    """keepalived --config-test, in the namespace (it checks interfaces there)."""
    result = cmd(["keepalived", "--config-test", "--use-file", conf_path], ns=ns, check=False)
    if result.returncode != 0:
        raise CmdError(f"keepalived rejects {conf_path}:\n{result.stderr}{result.stdout}\n--- config ---\n{Path(conf_path).read_text()}")


def start(ns, conf_path: Path, *, workdir: Path | None = None, timeout: float = 30) -> Keepalived:
    """Start keepalived in namespace `ns` with `conf_path`; stopped when the cleanup scope ends."""
    conf_path = Path(conf_path)
    check_config(ns, conf_path)
    workdir = Path(workdir or conf_path.parent)
    kad = Keepalived(ns, conf_path, workdir)
    kad.start()

    def started() -> bool:
        kad.check_running()
        return kad.pidfile.exists() and kad.pidfile.read_text().strip() == str(kad.pid)

    wait_until(started, timeout, what=f"keepalived in {ns} to write {kad.pidfile}")
    return kad
