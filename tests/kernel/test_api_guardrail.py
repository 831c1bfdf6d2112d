"""The DR/TUN guardrail: a backend that passes its health checks but lacks the VIP is flagged.

    c1 10.77.0.10 ─┐
    lb1 10.77.0.2 ─┤  VIP 10.77.0.100 on lb1
    b1 .21         │  correct: VIP on lo (arp_ignore/arp_announce), tunl0 up
    b2 .22         │  correct, but its port-8082 server listens on 10.77.0.22 only
    b3 .23        ─┘  no VIP at all: keepalived's checks (to 10.77.0.23) still pass

Services: dr (VIP:80, DR), tun (VIP:8080, TUN ipip), bound (VIP:8082, DR). Each module run starts
its own API; the first test commits the configuration the others use.
"""

from __future__ import annotations

import pytest

import lab
from lab import appliance, ipvs
from lab.wait import wait_until

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(900)]

CHECK = {"type": "tcp", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5}
# The guard probes every 10 s and at once after an apply; allow a few rounds on a loaded VM.
GUARD_TIMEOUT = 60


class Env:
    def __init__(self, net, api):
        self.net, self.api = net, api


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with lab.scope("api guardrail"):
        workdir = tmp_path_factory.mktemp("guardrail")
        net = lab.build("dr", backends=3, workdir=workdir)
        b1, b2, b3 = net.backends
        for backend in net.backends:
            backend.ip_batch(["link set tunl0 up"])
            for dev in ("all", "tunl0", "eth0"):
                backend.sysctl(f"net.ipv4.conf.{dev}.rp_filter", 0)
            for port in (80, 8080):
                net.start_http(backend, port=port)
        net.start_http(b1, port=8082)
        net.start_http(b2, port=8082, bind=b2.address)
        net.start_http(b3, port=8082)
        b3.ip_batch([f"addr del {net.vip}/32 dev lo"])
        api = appliance.start(net.lb, workdir / "appliance")
        api.setup()
        api.put_node(name="lb1", vrrp_interface="eth0")
        backends = [{"address": a} for a in net.backend_addresses()]
        for name, spec in {
            "dr": dict(ports=[80], forwarding="dr"),
            "tun": dict(ports=[8080], forwarding="tun", tunnel_type="ipip"),
            "bound": dict(ports=[8082], forwarding="dr"),
        }.items():
            api.create_service(name=name, address=net.vip, scheduler="rr", health_check=CHECK, backends=backends, **spec)
        assert api.commit("guardrail")["state"] == "applied"
        for port in (80, 8080, 8082):
            ipvs.wait_for_real_servers(net.lb, net.vip, port, net.backend_addresses(), timeout=60)
        yield Env(net, api)


def warnings_by_backend(api) -> dict[tuple[str, str], list[str]]:
    """{(service, backend address): [warning codes]} for every backend in /stats/current."""
    return {
        (service["name"], backend["address"]): sorted(w["code"] for w in backend["warnings"])
        for service in api.stats()["services"]
        for backend in service["backends"]
    }


def test_backends_without_the_vip_are_flagged_and_correct_ones_are_not(env):
    b1, b2, b3 = env.net.backend_addresses()
    expected = {
        ("dr", b1): [], ("dr", b2): [], ("dr", b3): ["vip_missing"],
        ("tun", b1): [], ("tun", b2): [], ("tun", b3): ["vip_missing"],
        ("bound", b1): [], ("bound", b2): ["vip_port_closed"], ("bound", b3): ["vip_missing"],
    }
    wait_until(lambda: warnings_by_backend(env.api), GUARD_TIMEOUT, what="the guardrail's warnings", expect=expected)
    # The point of the guardrail: the flagged backends pass keepalived's checks.
    states = {(s["name"], b["address"]): b["state"] for s in env.api.stats()["services"] for b in s["backends"]}
    assert all(state == "up" for state in states.values()), states
    message = next(
        b["warnings"][0]["message"]
        for s in env.api.stats()["services"] if s["name"] == "dr"
        for b in s["backends"] if b["address"] == b3
    )
    assert env.net.vip in message and "lo" in message


def test_each_warning_is_an_event(env):
    b3 = env.net.backend_addresses()[2]
    events = env.api.events(kind="backend_warning")
    flagged = {(e["service"], e["backend"].rsplit(":", 1)[0]) for e in events}
    assert {("dr", b3), ("tun", b3), ("bound", b3)} <= flagged, events


def test_warnings_clear_once_the_backend_is_fixed(env):
    b3_host = env.net.backends[2]
    b3 = b3_host.address
    b3_host.ip_batch([f"addr add {env.net.vip}/32 dev lo"])
    wait_until(
        lambda: {k: v for k, v in warnings_by_backend(env.api).items() if k[1] == b3},
        GUARD_TIMEOUT,
        what="b3's warnings to clear",
        expect={("dr", b3): [], ("tun", b3): [], ("bound", b3): []},
    )
    cleared = env.api.events(kind="backend_warning_cleared")
    assert {e["service"] for e in cleared if e["backend"].startswith(b3)} == {"dr", "tun", "bound"}
