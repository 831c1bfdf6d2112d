"""Two appliance images as an HA pair, wired to a client and backends on this host (make test-image).

    c1 10.77.0.10 ──┐ front 10.77.0.0/24    VIPs: 10.77.0.100 (front), 10.77.1.1/24 (gateway, back)
    A .2 ───────────┤ VRRP (unicast)
    B .3 ───────────┘
    A .2 ───────────┐ back 10.77.1.0/24
    B .3 ───────────┤ b1 .21, b2 .22: HTTP on 80, TCP echo on 7, default via 10.77.1.1
    b1, b2 ─────────┘                        b1 is the appliances' NTP server too (SNTP, port 123)
    A .2 ─── sync 10.77.2.0/24 ─── B .3: IPVS connection sync, the peer API (HTTPS, pinned)

The client and backends are namespaces of this host (lab.topo), the segments bridges in a switch
namespace; each appliance is a qemu VM booted from the image with four NICs: management (qemu's
user network: the test reaches its API through a forwarded port, as an admin's browser would)
and one tap on each segment's bridge (appliance.TapNic).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from appliance import Appliance, TapNic, new_disk
from lab import defer, scope
from lab.backends import HttpServer, NtpServer, TcpEchoServer
from lab.pair import BACK, ECHO_PORT, FRONT, GATEWAY, SYNC
from lab.topo import Host, Lab

SEGMENTS = {"front": FRONT, "back": BACK, "sync": SYNC}
FRONT_VIP = "10.77.0.100"
NODES = {"a": 2, "b": 3}  # each appliance's host number on every segment
# B boots with UEFI, A with BIOS: the UEFI boot and the firmware checks (firmware_checks.py) need a
# boot of their own otherwise, and under emulation each costs minutes.
FIRMWARE = {"a": "bios", "b": "uefi"}
BACKEND_NUMBERS = (21, 22)


def tap_mac(node: str, segment: str) -> str:
    """52:54:00:fc:<node>:<segment>: a locally unique MAC for every tap NIC."""
    return f"52:54:00:fc:{NODES[node]:02x}:{list(SEGMENTS).index(segment) + 1:02x}"


def node_address(node: str, segment: str) -> str:
    return str(ipaddress.ip_network(SEGMENTS[segment]).network_address + NODES[node])


@dataclass
class ImagePair:
    net: Lab
    client: Host
    backends: list[Host]
    a: Appliance
    b: Appliance

    @property
    def ntp_server(self) -> str:
        return self.backends[0].address

    @property
    def appliances(self) -> dict[str, Appliance]:
        return {"a": self.a, "b": self.b}


def _disk(image: Path, results: Path, node: str) -> Path:
    """One appliance's disk over the image; deleted at the end (it is large), with the UEFI
    variables image/run-vm keeps beside it."""
    defer(lambda: [scratch.unlink() for scratch in results.glob(f"disk-{node}.*")])
    return new_disk(image, results / f"disk-{node}.qcow2")


@contextmanager
def image_pair(image: Path, results: Path) -> Iterator[ImagePair]:
    """The network up, both appliances booting side by side; everything gone when the block ends."""
    with scope("image pair"):
        net = Lab(results / "lab")
        for name, subnet in SEGMENTS.items():
            net.add_segment(name, subnet)
        client = net.add_host("c1")
        net.connect(client, "front", 10)
        backends = []
        for number in BACKEND_NUMBERS:
            backend = net.add_host(f"b{number - 20}")
            net.connect(backend, "back", number)
            backend.setup(f"route add default via {GATEWAY}")
            backends.append(backend)
        net.start()
        for backend in backends:  # stopped when the scope ends (lab.cmd.Background)
            HttpServer(backend, 80, name=backend.role).start()
            TcpEchoServer(backend, ECHO_PORT).start()
        NtpServer(backends[0], 123).start()

        appliances = {}
        for node in NODES:
            taps = tuple(
                TapNic(net.switch, net.segments[segment].bridge, f"{node}-{segment}", tap_mac(node, segment))
                for segment in SEGMENTS
            )
            vm = Appliance(
                disk=_disk(image, results, node), results=results, firmware=FIRMWARE[node], tap_nics=taps, label=node
            )
            defer(vm.stop)
            vm.start()
            appliances[node] = vm
        yield ImagePair(net, client, backends, appliances["a"], appliances["b"])
