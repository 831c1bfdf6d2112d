"""Lab topologies: hosts are namespaces, segments are bridges in a switch namespace.

build("nat"):  client, LB and backends on two segments; the LB routes between them.

    c1 ─────────┐ front 10.77.0.0/24            back 10.77.1.0/24 ┌───────── b1 .21
    10.77.0.10  ├──── eth0 [ lb1 ] eth1 ────────────────────────────┼───────── b2 .22
                │   10.77.0.2    10.77.1.2                          └───────── b3 .23
                │   VIP 10.77.0.100   gateway 10.77.1.1     backends: default via 10.77.1.1

build("dr" | "tun" | "one-arm"):  everyone on one segment.

    c1 10.77.0.10 ──┐
    lb1 10.77.0.2 ──┤ front 10.77.0.0/24, VIP 10.77.0.100 on lb1
    b1 10.77.0.21 ──┤ dr:      backends hold the VIP on lo, arp_ignore=1, arp_announce=2
    b2 10.77.0.22 ──┤ tun:     backends hold the VIP on tunl0 (ipip), rp_filter off, same ARP sysctls
    b3 10.77.0.23 ──┘ one-arm: backends untouched (NAT replies need SNAT on the LB to come back)

A second LB (lbs=2) is lb2 at .3 on each segment. Every lab has its own namespaces with
unique names, so addresses repeat between labs safely and nothing leaves them. Deleting the
namespaces at the end of the cleanup scope removes every veth, bridge and address.

Building is plan-then-start, like FRR's topotests: add_segment/add_host/connect and the
host's setup() record what to do; start() creates it all with a few `ip -batch` processes.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from lab.backends import DnsServer, HttpServer, TcpEchoServer, UdpEchoServer
from lab.netns import NetNS, create_namespaces

FRONT = "10.77.0.0/24"
BACK = "10.77.1.0/24"
VIP = "10.77.0.100"
GATEWAY = "10.77.1.1"  # the NAT backends' default route
MODES = ("nat", "one-arm", "dr", "tun")

# Host numbers within each /24.
_LB_FIRST, _CLIENT_FIRST, _BACKEND_FIRST = 2, 10, 21


@dataclass
class Segment:
    name: str
    subnet: ipaddress.IPv4Network
    bridge: str


class Host(NetNS):
    """A namespace playing a role (lb1, b1, c1) with one interface per segment: eth0, eth1, ..."""

    def __init__(self, role: str, workdir: Path):
        super().__init__(role, create=False)
        self.role = role
        self.workdir = workdir
        self.addresses: dict[str, str] = {}  # segment name -> address
        self.interfaces: dict[str, str] = {}  # segment name -> interface
        self._ip_lines: list[str] | None = ["link set lo up"]  # None once started
        self._sysctls: list[tuple[str, object]] = []

    @property
    def address(self) -> str:
        """The address on the first segment it was connected to."""
        return next(iter(self.addresses.values()))

    def setup(self, *ip_lines: str, sysctls: dict | None = None) -> None:
        """Record `ip` commands (without "ip") and sysctls to apply when the lab starts."""
        if self._ip_lines is None:
            raise RuntimeError(f"{self.role} is already started: use ip(), ip_batch() or sysctl()")
        self._ip_lines.extend(ip_lines)
        self._sysctls.extend((sysctls or {}).items())

    def _start(self) -> None:
        self.ip_batch(self._ip_lines)
        self._ip_lines = None
        for key, value in self._sysctls:
            self.sysctl(key, value)

    def add_address(self, address: str, dev: str = "eth0", prefix: int = 24) -> None:
        """An extra address, now (e.g. a second client source for source-hash tests)."""
        self.ip("addr", "add", f"{address}/{prefix}", "dev", dev)

    def __repr__(self) -> str:
        return f"Host({self.role}, {self.name}, {self.addresses})"


@dataclass
class Lab:
    workdir: Path
    mode: str = "custom"
    vip: str = VIP
    switch: NetNS = field(init=False)
    segments: dict[str, Segment] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    clients: list[Host] = field(default_factory=list)
    lbs: list[Host] = field(default_factory=list)
    backends: list[Host] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.switch = NetNS("sw", create=False)
        self._switch_lines: list[str] = []

    # --- plan -------------------------------------------------------------------------------

    def add_segment(self, name: str, subnet: str) -> Segment:
        bridge = f"br-{name}"
        self._switch_lines += [f"link add {bridge} type bridge", f"link set {bridge} up"]
        self.segments[name] = Segment(name, ipaddress.ip_network(subnet), bridge)
        return self.segments[name]

    def add_host(self, role: str) -> Host:
        host = Host(role, self.workdir / role)
        self.hosts[role] = host
        return host

    def connect(self, host: Host, segment: str, number: int) -> str:
        """A veth from `host` to the segment's bridge, address <subnet>.<number>; its name in host."""
        seg = self.segments[segment]
        dev = f"eth{len(host.interfaces)}"
        port = f"{host.role}-{dev}"  # the switch-side end; at most 15 characters
        address = str(seg.subnet.network_address + number)
        self._switch_lines += [
            f"link add {port} type veth peer name {dev} netns {host.name}",
            f"link set {port} master {seg.bridge} up",
        ]
        host.setup(f"addr add {address}/{seg.subnet.prefixlen} dev {dev}", f"link set {dev} up")
        host.addresses[segment] = address
        host.interfaces[segment] = dev
        return dev

    # --- create -----------------------------------------------------------------------------

    def start(self) -> Lab:
        create_namespaces([self.switch, *self.hosts.values()])
        self.switch.ip_batch(self._switch_lines)  # bridges, and veths into the hosts
        for host in self.hosts.values():
            host.workdir.mkdir(parents=True, exist_ok=True)
            host._start()
        return self

    # --- servers ----------------------------------------------------------------------------

    def start_http(self, host: Host, port: int = 80, **behaviour) -> HttpServer:
        """An HTTP server in `host` answering with the host's role; see HttpServer."""
        return HttpServer(host, port, name=host.role, **behaviour).start()

    def start_tcp_echo(self, host: Host, port: int = 7) -> TcpEchoServer:
        return TcpEchoServer(host, port).start()

    def start_udp_echo(self, host: Host, port: int = 53) -> UdpEchoServer:
        """Answers each datagram with the host's role."""
        return UdpEchoServer(host, port, name=host.role).start()

    def start_dns(self, host: Host, port: int = 53) -> DnsServer:
        return DnsServer(host, port).start()

    # --- shortcuts --------------------------------------------------------------------------

    @property
    def lb(self) -> Host:
        return self.lbs[0]

    @property
    def client(self) -> Host:
        return self.clients[0]

    def backend_addresses(self) -> list[str]:
        return [backend.address for backend in self.backends]


def build(
    mode: str,
    *,
    workdir: Path,
    backends: int = 3,
    clients: int = 1,
    lbs: int = 1,
    vip: str = VIP,
    static_vips: bool = True,
) -> Lab:
    """A started lab for one IPVS forwarding method (see the module docstring).

    static_vips puts the VIP (and, for NAT, the backends' gateway) on lb1; pass False when
    keepalived's VRRP is to own them.
    """
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {MODES}")
    lab = Lab(workdir=workdir, mode=mode, vip=vip)
    lab.add_segment("front", FRONT)
    backend_segment = "front"
    if mode == "nat":
        lab.add_segment("back", BACK)
        backend_segment = "back"

    for i in range(clients):
        client = lab.add_host(f"c{i + 1}")
        lab.connect(client, "front", _CLIENT_FIRST + i)
        lab.clients.append(client)

    for i in range(lbs):
        lb = lab.add_host(f"lb{i + 1}")
        for segment in lab.segments:
            lab.connect(lb, segment, _LB_FIRST + i)
        lb.setup(sysctls={"net.ipv4.ip_forward": 1})
        lab.lbs.append(lb)
    if static_vips and lbs:
        lab.lb.setup(f"addr add {vip}/32 dev eth0")
        if mode == "nat":
            lab.lb.setup(f"addr add {GATEWAY}/24 dev {lab.lb.interfaces['back']}")

    for i in range(backends):
        backend = lab.add_host(f"b{i + 1}")
        lab.connect(backend, backend_segment, _BACKEND_FIRST + i)
        _plan_backend(backend, mode, vip)
        lab.backends.append(backend)
    return lab.start()


def _plan_backend(backend: Host, mode: str, vip: str) -> None:
    if mode == "nat":
        backend.setup(f"route add default via {GATEWAY}")
    if mode in ("dr", "tun"):
        # The VIP is local but only the LB may answer ARP for it (1: reply only for addresses
        # of the asking interface; 2: never use the VIP as the source of own ARP requests).
        backend.setup(sysctls={"net.ipv4.conf.all.arp_ignore": 1, "net.ipv4.conf.all.arp_announce": 2})
    if mode == "dr":
        backend.setup(f"addr add {vip}/32 dev lo")
    if mode == "tun":
        # tunl0 is the ipip fallback device every namespace gets once ipip is loaded: it
        # decapsulates what the LB sends. The inner packet, from the client, arrives on tunl0,
        # where reverse-path filtering would drop it (the kernel uses the max of all and the device).
        backend.setup(
            "link set tunl0 up",
            f"addr add {vip}/32 dev tunl0",
            sysctls={f"net.ipv4.conf.{dev}.rp_filter": 0 for dev in ("all", "tunl0", "eth0")},
        )
