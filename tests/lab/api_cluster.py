"""Three Fulcrum appliances as one cluster: lb1 the writer, lb2 and lb3 the members it adds, each
with its own API, apply engine and keepalived, on one LAN with three TCP echo backends.

    lb1 .2, lb2 .3, lb3 .4 ── lan 10.77.1.0/24 ── b1 .21, b2 .22, b3 .23 (TCP echo on 7)

What this lab proves is the configuration's path, writer → members → IPVS on every node, with the
same real servers in the same order (what mh needs to pick the same backend everywhere). The
traffic through a router's ECMP is lab.ecmp's, whose nodes are configured by the lab itself. Each
API listens in its node's namespace on 0.0.0.0:8080, so the writer reaches its members over the
LAN as an appliance would; the tests reach each through a namespaced client.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import appliance, ipvs
from lab.pair import API_START_TIMEOUT, NODE_HEALTH_ENV
from lab.topo import Host, Lab
from lab.wait import wait_until

LAN = "10.77.1.0/24"
NODES = {"lb1": 2, "lb2": 3, "lb3": 4}
BACKENDS = {"b1": 21, "b2": 22, "b3": 23}
VIP, PORT = "192.0.2.10", 7
API_PORT = 8080
# Joining: the code exchange, then the member commits, renders, validates and applies the writer's
# revision like any commit (tens of seconds in the emulated VM).
JOIN_DEADLINE = 300


def backend_address(name: str) -> str:
    return f"10.77.1.{BACKENDS[name]}"


def echo_service(backends: tuple[str, ...] = tuple(BACKENDS)) -> dict[str, Any]:
    """What a cluster announces (mh with fallback, DR, failed backends at weight 0)."""
    return {
        "name": "echo", "address": VIP, "ports": [PORT], "forwarding": "dr", "scheduler": "mh",
        "scheduler_fallback": True, "scheduler_port": True,
        "health_check": {"type": "tcp", "on_failure": "weight_zero"},
        "backends": [{"address": backend_address(name)} for name in backends],
    }  # fmt: skip


@dataclass
class Member:
    host: Host
    api: appliance.Appliance

    @property
    def name(self) -> str:
        return self.host.role

    @property
    def url(self) -> str:
        return f"http://10.77.1.{NODES[self.name]}:{API_PORT}"

    def real_servers(self) -> list[tuple[str, int]] | None:
        """The echo service's real servers in IPVS's own order, with their weights."""
        reals = ipvs.real_servers(self.host, VIP, PORT)
        return None if reals is None else [(endpoint, real.weight) for endpoint, real in reals.items()]


@dataclass
class ApiCluster:
    net: Lab
    nodes: dict[str, Member]
    password: str

    @property
    def writer(self) -> Member:
        return self.nodes["lb1"]

    @classmethod
    def build(cls, workdir: Path) -> ApiCluster:
        net = Lab(workdir)
        net.add_segment("lan", LAN)
        hosts = {}
        for name, number in NODES.items():
            hosts[name] = net.add_host(name)
            net.connect(hosts[name], "lan", number)
            net.lbs.append(hosts[name])
        for name, number in BACKENDS.items():
            backend = net.add_host(name)
            net.connect(backend, "lan", number)
            backend.setup(f"addr add {VIP}/32 dev lo", sysctls={"net.ipv4.conf.all.arp_ignore": 1,
                                                                "net.ipv4.conf.all.arp_announce": 2})
            net.backends.append(backend)
        net.start()
        for backend in net.backends:
            net.start_tcp_echo(backend, port=PORT)
        nodes = {
            name: Member(host, appliance.Appliance(host, workdir / f"{name}-appliance", listen=("0.0.0.0", API_PORT),
                                                   listen_ns=host, env=dict(NODE_HEALTH_ENV)))
            for name, host in hosts.items()
        }  # fmt: skip
        for node in nodes.values():  # side by side: each start costs a minute or more here
            node.api.launch()
        for node in nodes.values():
            node.api.wait_ready(API_START_TIMEOUT)
        made = cls(net, nodes, secrets.token_urlsafe(18))
        for node in nodes.values():
            node.api.setup("admin", made.password)
            node.api.put("/node", {"name": node.name})
        return made

    def add_member(self, member: Member) -> dict[str, Any]:
        """The writer enters the member's pairing code; the member's accounts become the writer's
        (one password here, so the member's client logs in again with it)."""
        code = member.api.post("/ha/pairing-code", expect=201)["code"]
        joined = self.writer.api.post("/cluster/members", {"peer_url": member.url, "code": code},
                                      timeout=JOIN_DEADLINE)  # fmt: skip
        member.api.login("admin", self.password)
        return joined

    def tables(self) -> dict[str, list[tuple[str, int]] | None]:
        return {name: node.real_servers() for name, node in self.nodes.items()}

    def wait_for_tables(self, backends: tuple[str, ...], deadline: float) -> dict[str, list[tuple[str, int]] | None]:
        """Until every node's IPVS lists exactly these backends, enabled, in this order."""
        want = [(f"{backend_address(name)}:{PORT}", 1) for name in backends]
        def matched() -> dict[str, list[tuple[str, int]] | None] | None:
            tables = self.tables()
            return tables if all(table == want for table in tables.values()) else None

        return wait_until(matched, deadline, what=f"every node's IPVS to list {', '.join(backends)} in that order")
