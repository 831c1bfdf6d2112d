"""keepalived as a managed daemon: keepalived.conf, checked by `keepalived -t`, reloaded by SIGHUP,
verified by reading IPVS back over netlink until it matches the snapshot."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fulcrum.apply.daemons.owned_files import OwnedFiles
from fulcrum.apply.daemons.protocol import Checked
from fulcrum.apply.files import new_path
from fulcrum.apply.keepalived_control import KeepalivedControl
from fulcrum.apply.tools import ToolError
from fulcrum.apply.validators import validate_keepalived
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.dataplane.ipvs_table import compare, down_real_servers, expected_ipvs, ipvs_available, read_ipvs
from fulcrum.render import RuntimePaths, render_keepalived

# Mismatches quoted in a failed read-back; the rest are counted.
MAX_QUOTED_MISMATCHES = 10


@dataclass(frozen=True)
class ReadbackTiming:
    timeout: float = 15.0  # seconds for IPVS to match after the reload
    # Once IPVS matches, how long to keep waiting for real servers that are still absent (not yet
    # checked) before reporting them as down: about one health-check cycle with default checks.
    settle: float = 3.0
    interval: float = 0.2


class KeepalivedDaemon:
    name = "keepalived"

    def __init__(
        self,
        conf: Path,
        control: KeepalivedControl,
        runtime: RuntimePaths,
        readback: ReadbackTiming,
        prefix: Sequence[str] = (),
    ) -> None:
        self.conf = conf
        self.control = control
        self.runtime = runtime
        self.readback = readback
        self.prefix = tuple(prefix)
        self.files = OwnedFiles(conf)

    def render(self, snapshot: ConfigSnapshot) -> str:
        return self.files.stage({self.conf: render_keepalived(snapshot, self.runtime)})

    def validate(self) -> Checked:
        result = validate_keepalived(new_path(self.conf), self.prefix)
        if not result.ok:
            raise ToolError(f"keepalived -t rejected {self.conf.name}: {result.message}")
        if result.message:
            warning = f"keepalived -t warned about {self.conf.name}: {result.message}"
            return Checked(result.message, (warning,))
        return Checked(f"keepalived -t accepted {self.conf.name}")

    def reject(self) -> None:
        self.files.reject()

    def discard(self) -> None:
        self.files.discard()

    def precondition(self) -> tuple[bool, str]:
        """keepalived's virtual servers are IPVS services: without IPVS there is nothing to apply to."""
        return ipvs_available()

    def install(self) -> str:
        return self.files.install()

    def load(self, snapshot: ConfigSnapshot) -> str:
        return self.control.reload()

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        """Poll IPVS until it matches the snapshot, then allow absent real servers time to appear.

        A reload only means keepalived accepted the signal; it applies the config asynchronously."""
        expected = expected_ipvs(snapshot)
        timing = self.readback
        deadline = time.monotonic() + timing.timeout
        matched_since: float | None = None
        while True:
            actual = read_ipvs()
            mismatches = compare(expected, actual)
            down = down_real_servers(expected, actual)
            now = time.monotonic()
            if not mismatches:
                matched_since = matched_since if matched_since is not None else now
                if not down or now - matched_since >= timing.settle or now >= deadline:
                    break
            else:
                matched_since = None
            if now >= deadline:
                quoted = mismatches[:MAX_QUOTED_MISMATCHES]
                more = len(mismatches) - len(quoted)
                raise ToolError(
                    f"IPVS did not match the configuration within {timing.timeout:g} s: "
                    + "; ".join(quoted)
                    + (f"; and {more} more" if more else "")
                )
            time.sleep(min(timing.interval, deadline - now))
        servers = sum(len(service.real_servers) for service in expected.services)
        summary = f"IPVS matches: {len(expected.services)} services, {servers} real servers"
        return Checked(summary + (f" ({len(down)} down or not yet checked)" if down else ""), tuple(down))

    def undo(self, loaded: bool) -> str:
        restored, done = self.files.restore()
        if loaded and self.conf in restored:
            if restored[self.conf]:
                done += f"; {self.control.reload()} (previous config)"
            else:
                done += f"; {self.control.stop()} (there was no previous config)"
        return done
