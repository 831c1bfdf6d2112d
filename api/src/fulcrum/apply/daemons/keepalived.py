"""keepalived as a managed daemon: keepalived.conf, checked by `keepalived -t`, reloaded by SIGHUP,
verified by reading IPVS back over netlink until it matches the snapshot."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from fulcrum.apply.daemons.owned_files import OwnedFiles
from fulcrum.apply.daemons.protocol import Checked
from fulcrum.apply.files import new_path
from fulcrum.apply.keepalived_control import KeepalivedControl
from fulcrum.apply.tools import ToolError
from fulcrum.apply.validators import validate_keepalived
from fulcrum.config.snapshot import ConfigSnapshot, HealthCheck, programmed_backends
from fulcrum.dataplane.ipvs_table import (
    IpvsTable,
    RealServer,
    ServiceKey,
    compare,
    down_real_servers,
    expected_ipvs,
    ipvs_available,
    read_ipvs,
)
from fulcrum.render import RuntimePaths, render_keepalived

# Mismatches quoted in a failed read-back; the rest are counted.
MAX_QUOTED_MISMATCHES = 10

# A real server as keepalived checks it: where, what IPVS should hold, and the check it runs.
RealServerId = tuple[ServiceKey, tuple[str, int]]
CheckedRealServer = tuple[RealServer, HealthCheck]


@dataclass(frozen=True)
class ReadbackTiming:
    timeout: float = 15.0  # seconds for IPVS to match after the reload
    # Once IPVS matches, how long to keep waiting for real servers that are still absent (not yet
    # checked) before reporting them as down: about one health-check cycle with default checks.
    # Only real servers new to keepalived (or changed) are waited for: one it checked before and
    # keeps checking across the reload is down, not "not yet checked".
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
        # The real servers of the last verified revision, as keepalived checks them: a reload keeps
        # their checkers' state, so a down one among them needs no settle. Empty until a verify
        # passes, and again whenever keepalived (re)starts, which checks every real server anew.
        self.checked: dict[RealServerId, CheckedRealServer] = {}
        # The table the last verify matched, as a base for the next one's changes; None until one
        # passes, and again whenever keepalived (re)starts, which programs IPVS anew.
        self.verified: IpvsTable | None = None

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
        running = self.control.running_pid()
        done = self.control.reload()
        if running is None or self.control.running_pid() != running:
            self.checked = {}
            self.verified = None
        return done

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        """Poll IPVS until it matches the snapshot, then allow absent real servers time to appear.

        A reload only means keepalived accepted the signal; it applies the config asynchronously.
        Until it has, only the services this revision changes are polled: a whole read at 10,000
        real servers takes seconds under emulation, and reading it again and again took the CPU
        keepalived needed for the reload. Whatever was polled, the verdict is a whole read that
        matches, as after a restart (nothing known to compare with), when everything is polled."""
        expected = expected_ipvs(snapshot)
        checked = checked_real_servers(snapshot, expected)
        awaited = new_to_keepalived(self.checked, expected, checked)
        deadline = time.monotonic() + self.readback.timeout
        focus = changed_services(self.verified, expected, awaited)
        if focus is not None:
            changing = IpvsTable(tuple(service for service in expected.services if service.key in focus))
            self._poll(changing, awaited, deadline, focus)
            awaited = IpvsTable()  # given their settle time above: not waited for twice
        down = self._poll(expected, awaited, deadline, None)
        self.checked = checked
        self.verified = expected
        servers = sum(len(service.real_servers) for service in expected.services)
        summary = f"IPVS matches: {len(expected.services)} services, {servers} real servers"
        return Checked(summary + (f" ({len(down)} down or not yet checked)" if down else ""), tuple(down))

    def _poll(
        self, expected: IpvsTable, awaited: IpvsTable, deadline: float, only: set[ServiceKey] | None
    ) -> list[str]:
        """Read IPVS (`only` those services) until it matches `expected` and `awaited`'s absent
        real servers have appeared or had their settle time; the real servers still down."""
        timing = self.readback
        matched_since: float | None = None
        while True:
            actual = read_ipvs(counters=False, only=only)
            mismatches = compare(expected, actual)
            down = down_real_servers(expected, actual)
            now = time.monotonic()
            if not mismatches:
                matched_since = matched_since if matched_since is not None else now
                settled = now - matched_since >= timing.settle
                if settled or now >= deadline or not down_real_servers(awaited, actual):
                    return down
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

    def undo(self, loaded: bool) -> str:
        restored, done = self.files.restore()
        if loaded and self.conf in restored:
            if restored[self.conf]:
                done += f"; {self.control.reload()} (previous config)"
            else:
                done += f"; {self.control.stop()} (there was no previous config)"
        return done


def checked_real_servers(
    snapshot: ConfigSnapshot, expected: IpvsTable
) -> dict[RealServerId, CheckedRealServer]:
    """Every real server of `expected` (built from `snapshot`) with the health check keepalived runs on it."""
    found: dict[RealServerId, CheckedRealServer] = {}
    # expected_ipvs keeps the order of balanced_services and of their programmed backends.
    clustered = snapshot.clustered_services()
    for service, virtual in zip(snapshot.balanced_services(), expected.services, strict=True):
        backends = programmed_backends(service, service.name in clustered)
        for backend, real in zip(backends, virtual.real_servers, strict=True):
            found[(virtual.key, real.key)] = (real, backend.health_check or service.health_check)
    return found


def new_to_keepalived(
    known: dict[RealServerId, CheckedRealServer],
    expected: IpvsTable,
    checked: dict[RealServerId, CheckedRealServer],
) -> IpvsTable:
    """`expected` with only the real servers that keepalived did not check as they are now."""
    return IpvsTable(
        tuple(
            replace(
                service,
                real_servers=tuple(
                    real
                    for real in service.real_servers
                    if known.get((service.key, real.key)) != checked[(service.key, real.key)]
                ),
            )
            for service in expected.services
        )
    )


def changed_services(
    verified: IpvsTable | None, expected: IpvsTable, awaited: IpvsTable
) -> set[ServiceKey] | None:
    """The services a reload from `verified` to `expected` changes, added or removed, with those
    holding a real server keepalived checks anew (`awaited`); None when nothing was verified or
    every service changes (a read of some would read them all)."""
    if verified is None:
        return None
    before = {service.key: service for service in verified.services}
    after = {service.key: service for service in expected.services}
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    changed |= {service.key for service in awaited.services if service.real_servers}
    return None if after and changed.issuperset(after) else changed
