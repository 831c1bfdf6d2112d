"""Where the VM's CPU went during a run: the whole VM (/proc/stat) and named processes
(/proc/PID/stat), as a share of one CPU. In the emulated VM the CPUs are the scarce resource, so a
figure is only readable next to how busy they were and who kept them busy."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fulcrum.apply.keepalived_control import pid_of

TICK = os.sysconf("SC_CLK_TCK")


def _process_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def _vm() -> tuple[int, int]:
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


class Meter:
    """meter = Meter({"api": pid, ...}); ...; meter.read() -> {"vm_busy": 0.93, "api": 0.41, ...}"""

    def __init__(self, pids: dict[str, int | None]):
        self.pids = {name: pid for name, pid in pids.items() if pid}
        self.started = time.monotonic()
        self.vm = _vm()
        self.processes = {name: _process_seconds(pid) for name, pid in self.pids.items()}

    def read(self) -> dict[str, float]:
        elapsed = time.monotonic() - self.started
        busy, total = _vm()
        shares = {"vm_busy": (busy - self.vm[0]) / max(1, total - self.vm[1])}
        for name, pid in self.pids.items():
            now, before = _process_seconds(pid), self.processes[name]
            if now is not None and before is not None and elapsed > 0:
                shares[name] = (now - before) / elapsed  # 1.0 = one CPU
        return shares


def pids(env) -> dict[str, int | None]:
    """The appliance's processes: the API, and keepalived's parent and checker child."""
    found: dict[str, int | None] = {"api": env.api.pid}
    for name in ("keepalived", "keepalived-checkers"):
        found[name] = pid_of(env.api.state_dir / f"{name}.pid")
    return found
