"""System → Diagnostics against real IPVS: a client's connection through the VIP appears in the
API's connection table with the backend IPVS chose, and a capture on the load balancer's back
interface downloads the packets sent to that backend."""

from __future__ import annotations

import struct
import threading

import pytest

import lab
from lab import appliance, client
from lab.topo import GATEWAY
from lab.wait import wait_until

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(900)]

FAST_CHECK = {"type": "tcp", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with lab.scope("api diagnostics appliance"):
        workdir = tmp_path_factory.mktemp("apidiag")
        net = lab.build("nat", backends=2, workdir=workdir, static_vips=False)
        net.lb.add_address(GATEWAY, dev=net.lb.interfaces["back"])
        for backend in net.backends:
            net.start_tcp_echo(backend, port=7)
        api = appliance.start(net.lb, workdir / "appliance")
        api.setup()
        api.put_node(name="lb1", vrrp_interface=net.lb.interfaces["front"])
        api.create_vip_group(name="front", virtual_router_id=51, addresses=[f"{net.vip}/32"])
        api.create_service(
            name="echo", address=net.vip, ports=[7], scheduler="rr", health_check=FAST_CHECK,
            backends=[{"address": a} for a in net.backend_addresses()],
        )  # fmt: skip
        api.commit("echo")
        wait_until(lambda: _echo_works(net), 60, what="the echo service through the VIP")
        yield net, api


def _echo_works(net) -> bool:
    try:
        return client.tcp_echo(net.client, net.vip, 7, b"hello") == b"hello"
    except OSError:
        return False


def test_a_held_connection_shows_in_the_table_with_its_backend(env):
    net, api = env
    held = client.hold_tcp(net.client, net.vip, 7)
    source, source_port = held.getsockname()[:2]
    page = api.get("/diagnostics/connections", params={"client": source, "service": f"{net.vip}:7"})
    assert page["available"] is True
    rows = [row for row in page["data"] if row["client_port"] == source_port]
    assert len(rows) == 1, page
    row = rows[0]
    assert (row["protocol"], row["virtual"], row["virtual_port"], row["state"]) == ("TCP", net.vip, 7, "ESTABLISHED")
    assert row["backend"] in net.backend_addresses() and row["backend_port"] == 7
    # The backend IPVS chose is the one that sees the connection: its address answers on this socket's
    # echo, and the table filtered by that backend lists the connection.
    assert client.exchange(held, b"which") == b"which"
    by_backend = api.get("/diagnostics/connections", params={"backend": f"{row['backend']}:7", "client": source})
    assert [r["client_port"] for r in by_backend["data"]] == [source_port]
    assert by_backend["states"] == {"ESTABLISHED": 1}


def test_a_capture_on_the_back_interface_holds_packets_to_a_backend(env):
    net, api = env
    backend = net.backend_addresses()[0]
    interface = net.lb.interfaces["back"]
    assert interface in api.get("/diagnostics/interfaces")["names"]
    done = threading.Event()

    def traffic() -> None:  # until the capture has its packets, whenever tcpdump started listening
        while not done.is_set():
            _echo_works(net)
            done.wait(0.3)

    sender = threading.Thread(target=traffic)
    sender.start()
    try:
        response = api.request(
            "POST",
            "/diagnostics/capture",
            json={"interface": interface, "count": 3, "seconds": 30, "filter": f"host {backend} and tcp port 7"},
            timeout=60,
        )
    finally:
        done.set()
        sender.join()
    assert response.status_code == 200, response.text
    packets = _pcap_ipv4_packets(response.content)
    assert len(packets) == 3
    assert all(backend in (src, dst) for src, dst in packets)


def _pcap_ipv4_packets(pcap: bytes) -> list[tuple[str, str]]:
    """(source, destination) of each Ethernet/IPv4 record of a classic little-endian pcap."""
    assert struct.unpack("<I", pcap[:4])[0] == 0xA1B2C3D4
    packets, offset = [], 24
    while offset + 16 <= len(pcap):
        captured = struct.unpack("<I", pcap[offset + 8 : offset + 12])[0]
        frame = pcap[offset + 16 : offset + 16 + captured]
        ip = frame[14:]
        packets.append((".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))))
        offset += 16 + captured
    return packets
