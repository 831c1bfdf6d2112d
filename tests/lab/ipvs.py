"""The IPVS table of a namespace (IPVS is per network namespace): program it with ipvsadm,
read it with ipvsadm or with Fulcrum's own netlink reader."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lab.cmd import cmd
from lab.netns import proc_net, run_in
from lab.wait import wait_until

# The appliance's own sysctls (the image and the Buildroot build install this file).
APPLIANCE_SYSCTLS = Path(__file__).resolve().parents[2] / "overlay/usr/lib/sysctl.d/90-fulcrum.conf"

_SERVICE = re.compile(r"^(?P<proto>TCP|UDP|SCTP)\s+(?P<endpoint>\S+)\s+(?P<scheduler>\S+)(?P<flags>.*)$")
_FWMARK_SERVICE = re.compile(r"^FWM\s+(?P<fwmark>\d+)\s+(?P<scheduler>\S+)(?P<flags>.*)$")
_REAL = re.compile(r"^\s+->\s+(?P<endpoint>\S+)\s+(?P<forward>\w+)\s+(?P<weight>\d+)\s+(?P<active>\d+)\s+(?P<inactive>\d+)")


@dataclass(frozen=True)
class RealServer:
    address: str
    port: int
    forward: str  # as ipvsadm shows it: Masq, Route, Tunnel, Local
    weight: int
    active: int
    inactive: int

    @property
    def endpoint(self) -> str:
        return _endpoint(self.address, self.port)


@dataclass(frozen=True)
class Service:
    proto: str  # tcp, udp, sctp, fwm
    address: str | None  # None for a fwmark service
    port: int | None
    fwmark: int | None
    scheduler: str
    flags: str  # the rest of ipvsadm's line, e.g. "persistent 300"
    real_servers: tuple[RealServer, ...]


def ipvsadm(ns, *args) -> str:
    return cmd(["ipvsadm", *args], ns=ns).stdout


def restore(ns, rules: list[str]) -> None:
    """Several ipvsadm commands (without "ipvsadm", e.g. "-A -t 10.77.0.100:80 -s rr") in one process."""
    cmd(["ipvsadm", "--restore"], ns=ns, input="".join(f"{rule}\n" for rule in rules))


def services(ns) -> list[Service]:
    """`ipvsadm -Ln` in namespace `ns`, parsed."""
    found: list[Service] = []
    reals: list[RealServer] = []
    header = None
    for line in ipvsadm(ns, "-Ln").splitlines():
        if (match := _SERVICE.match(line)) or (match := _FWMARK_SERVICE.match(line)):
            if header:
                found.append(Service(**header, real_servers=tuple(reals)))
            header, reals = _service_fields(match), []
        elif (match := _REAL.match(line)) and header:
            address, port = _split_endpoint(match["endpoint"])
            reals.append(RealServer(address, port, match["forward"], int(match["weight"]),
                                    int(match["active"]), int(match["inactive"])))
    if header:
        found.append(Service(**header, real_servers=tuple(reals)))
    return found


def real_servers(ns, vip: str, port: int, proto: str = "tcp") -> dict[str, RealServer] | None:
    """The service's real servers by "address:port"; None if the service does not exist."""
    for service in services(ns):
        if (service.proto, service.address, service.port) == (proto, vip, port):
            return {real.endpoint: real for real in service.real_servers}
    return None


def wait_for_real_servers(
    ns, vip: str, port: int, expected, *, proto: str = "tcp", timeout: float = 30, enabled: bool = False
) -> dict[str, RealServer]:
    """Wait until the service vip:port has exactly the `expected` real servers.

    expected: addresses ("10.77.1.21", taking the service's port) or endpoints ("10.77.1.21:8080").
    Weight does not matter here unless `enabled`: a checker that sets weight 0 keeps the server
    listed. With `enabled`, each must also be above weight 0: keepalived adds a real server under
    an inhibiting checker (on_failure weight_zero) at weight 0 and enables it only when its first
    check passes, a second or more later.
    """
    want = sorted(e if _has_port(e) else _endpoint(e, port) for e in expected)

    def current() -> list[str] | None:
        reals = real_servers(ns, vip, port, proto)
        if reals is None:
            return None
        return sorted(endpoint for endpoint, real in reals.items() if real.weight > 0 or not enabled)

    what = f"real servers of {proto} {_endpoint(vip, port)}{' enabled' if enabled else ''} in {ns}"
    wait_until(current, timeout, expect=want, what=what)
    return real_servers(ns, vip, port, proto)


def read_ipvs(ns, only=None):
    """fulcrum.dataplane.ipvs_table.read_ipvs() inside `ns`: an IpvsTable with counters (of `only`
    those services, when given).

    Its netlink socket must be created in the namespace, so the whole call runs in a thread
    that joined it. The first call imports Fulcrum's models (pydantic): seconds in the emulated VM.
    """
    from fulcrum.dataplane.ipvs_table import read_ipvs as fulcrum_read_ipvs

    return run_in(ns, fulcrum_read_ipvs, True, only)


def _service_fields(match: re.Match) -> dict:
    groups = match.groupdict()
    if "fwmark" in groups:
        address, port, fwmark, proto = None, None, int(groups["fwmark"]), "fwm"
    else:
        (address, port), fwmark, proto = _split_endpoint(groups["endpoint"]), None, groups["proto"].lower()
    return {"proto": proto, "address": address, "port": port, "fwmark": fwmark,
            "scheduler": groups["scheduler"], "flags": groups["flags"].strip()}


def _split_endpoint(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]"), int(port)


def _endpoint(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _has_port(endpoint: str) -> bool:
    return endpoint.startswith("[") or (":" in endpoint and endpoint.count(":") == 1)


def appliance_settings() -> dict[str, str]:
    """The appliance's IPVS sysctls (net.ipv4.vs.*, per network namespace), for a lab node that
    should treat connections as the appliance does (e.g. expire_nodest_conn: a removed backend's
    connections end at their next packet instead of being black-holed)."""
    settings = {}
    for line in APPLIANCE_SYSCTLS.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip().startswith("net.ipv4.vs."):
            settings[key.strip()] = value.strip()
    return settings


def connection_ports(ns) -> set[int]:
    """The client source ports of the connections IPVS holds in `ns` (/proc/net/ip_vs_conn: hex
    addresses and ports), e.g. which of a client's flows this node has carried."""
    ports = set()
    for line in proc_net(ns, "ip_vs_conn").splitlines()[1:]:
        fields = line.split()
        if len(fields) > 2:
            ports.add(int(fields[2], 16))
    return ports
