"""The DR/TUN guardrail: probe every direct-routing and tunnelled backend, keep per-backend warnings.

A background thread probes the running configuration's DR and TUN (IPIP) backends every
`interval` seconds, and at once after each apply; `warnings()` returns the latest findings
without blocking, so the stats path never waits for a probe.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from pydantic import BaseModel

from fulcrum.config.snapshot import ConfigSnapshot, Service
from fulcrum.config.types import Forwarding, Protocol, TunnelType
from fulcrum.dataplane.ipvs_table import endpoint
from fulcrum.dataplane.vip_probe import ProbeMethod, ProbeTarget, Verdict, probe, raw_sockets_available

log = logging.getLogger(__name__)


class BackendWarning(BaseModel):
    service: str
    backend: str  # "198.51.100.1:80", the endpoint stats and events use
    code: str
    message: str


@dataclass(frozen=True)
class GuardedBackend:
    service: str
    backend: str
    target: ProbeTarget


def guarded_backends(snapshot: ConfigSnapshot) -> list[GuardedBackend]:
    """The backends a probe can vouch for: enabled ones of enabled DR and IPIP-tunnel services."""
    guarded = []
    for service in snapshot.services:
        method = _method(service)
        if method is None or not service.enabled:
            continue
        port = service.ports[0]
        for backend in service.backends:
            if not backend.enabled or (method == ProbeMethod.IPIP and backend.address.version != 4):
                continue
            target = ProbeTarget(
                vip=service.address,
                port=port,
                backend=backend.address,
                method=method,
                tcp=service.protocol == Protocol.TCP,
            )
            # DR and TUN cannot change the port, so the backend's endpoint carries the service's.
            guarded.append(GuardedBackend(service.name, endpoint(str(backend.address), port), target))
    return guarded


def _method(service: Service) -> ProbeMethod | None:
    if service.forwarding == Forwarding.DR:
        return ProbeMethod.DIRECT
    if service.forwarding == Forwarding.TUN and service.tunnel_type == TunnelType.IPIP:
        return ProbeMethod.IPIP
    return None  # NAT needs no VIP on the backend; GUE and GRE probes are not built yet


def warning_for(guarded: GuardedBackend, verdict: Verdict) -> BackendWarning | None:
    vip = guarded.target.vip
    where = "a non-ARPing interface (e.g. lo, with arp_ignore=1 and arp_announce=2)"
    if guarded.target.method == ProbeMethod.IPIP:
        where = "its tunnel device (tunl0, with rp_filter off)"
    messages = {
        Verdict.NO_REPLY: (
            "vip_missing",
            f"does not answer packets addressed to the VIP {vip}: it passes its health checks, but "
            f"the traffic IPVS sends it is dropped. Add {vip} to {where}.",
        ),
        Verdict.PORT_CLOSED: (
            "vip_port_closed",
            f"holds the VIP {vip} but nothing listens on {endpoint(str(vip), guarded.target.port or 0)}: "
            "make the server listen on the VIP (or on all addresses).",
        ),
        Verdict.NOT_ON_LINK: (
            "not_on_link",
            "is not on a network directly attached to this appliance: direct routing needs the "
            "backend on the same layer-2 segment.",
        ),
    }
    if verdict not in messages:
        return None
    code, message = messages[verdict]
    return BackendWarning(service=guarded.service, backend=guarded.backend, code=code, message=message)


class VipGuard:
    def __init__(self, interval: float = 10.0, timeout: float = 1.0) -> None:
        self.interval = interval
        self.timeout = timeout
        self._guarded: list[GuardedBackend] = []
        self._warnings: list[BackendWarning] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, snapshot: ConfigSnapshot) -> None:
        """Probe this configuration from now on, starting at once."""
        guarded = guarded_backends(snapshot)
        with self._lock:
            self._guarded = guarded
            keys = {(g.service, g.backend) for g in guarded}
            self._warnings = [w for w in self._warnings if (w.service, w.backend) in keys]
        if guarded and self._thread is None:
            if not raw_sockets_available():
                log.warning("DR/TUN guardrail off: raw sockets need CAP_NET_RAW")
                return
            self._thread = threading.Thread(target=self._run, name="vip-guard", daemon=True)
            self._thread.start()
        self._wake.set()

    def warnings(self) -> list[BackendWarning]:
        with self._lock:
            return list(self._warnings)

    def probe_once(self) -> list[BackendWarning]:
        with self._lock:
            guarded = list(self._guarded)
        found = []
        for item in guarded:
            try:
                verdict = probe(item.target, self.timeout)
            except (OSError, ValueError) as error:
                log.warning("VIP probe of %s failed: %s", item.backend, error)
                continue
            warning = warning_for(item, verdict)
            if warning is not None:
                found.append(warning)
        with self._lock:
            if guarded == self._guarded:  # not superseded by a newer configuration meanwhile
                self._warnings = found
        return found

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                self.probe_once()
            except Exception:  # the guard must never die (logged with its traceback); the next round retries
                log.exception("VIP guard round failed")
