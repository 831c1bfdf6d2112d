"""Forwarding methods, UDP, firewall-mark services with persistence, and a failed apply, all
configured through Fulcrum's API on one single-segment lab:

    c1 10.77.0.10 ─┐
    lb1 10.77.0.2 ─┤  VIP 10.77.0.100 and VIP2 10.77.0.101 on lb1 (static)
    b1..b3 .21-.23 ┘  backends: both VIPs on lo (DR), tunl0 up (TUN decapsulation), ARP sysctls;
                      no route back through the LB: a one-arm NAT reply only returns via SNAT.

Services: dr (VIP:80, DR), tun (VIP:8080, TUN ipip), gre (VIP:8083, TUN gre), gue (VIP:8084, TUN
gue to port 6080, decapsulated by a fou socket on the backends), resolver (VIP:5353/udp, DR, DNS
check; b3 answers UDP but not DNS), dr6 ([fd77::100]:8086, DR over IPv6), onearm (VIP:8081 NAT -> backends:80 with
nftables SNAT), dns (VIP:53/udp, DR, UDP check), multi (VIP2 80+443 fwmark, DR, persistence 5 s).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import lab
from lab import appliance, client, ipvs

# The module fixture starts the API (2-4 min in the emulated VM on a busy host) inside the
# first test's timeout.
pytestmark = [pytest.mark.kernel, pytest.mark.timeout(900)]

VIP2 = "10.77.0.101"
GUE_PORT = 6080
CLIENT6, LB6, VIP6 = "fd77::10", "fd77::2", "fd77::100"
BACKENDS6 = ["fd77::21", "fd77::22", "fd77::23"]
CHECK = {"type": "tcp", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5}
DNS_CHECK = {"type": "dns", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5,
             "dns_query_type": "A", "dns_query_name": "example.com"}
UDP_CHECK = {"type": "udp", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5,
             "udp_payload": "70696e67", "udp_require_reply": True}


class Env:
    def __init__(self, net, api, udp):
        self.net, self.api, self.udp = net, api, udp
        self.ids: dict[str, int] = {}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with lab.scope("api forwarding"):
        workdir = tmp_path_factory.mktemp("apifwd")
        # Before the namespaces exist, so that each gets the fallback devices tunl0 and gre0.
        lab.cmd(["modprobe", "-a", "ipip", "ip_gre", "fou"])
        net = lab.build("dr", backends=3, workdir=workdir)
        net.lb.add_address(VIP2)
        # IPv6 beside IPv4 on the same segment (nodad: usable at once, no duplicate detection wait).
        for host, address in ((net.client, CLIENT6), (net.lb, LB6), *zip(net.backends, BACKENDS6)):
            host.ip_batch([f"addr add {address}/64 dev eth0 nodad"])
        # Deprecated (preferred_lft 0), as the renderer adds IPv6 VIPs: otherwise the /128 wins
        # source selection and the health checks leave from the VIP, whose replies the DR
        # backends keep for themselves (found here: every IPv6 check failed).
        net.lb.ip_batch([f"addr add {VIP6}/128 dev eth0 nodad preferred_lft 0"])
        for backend in net.backends:
            # Decapsulation for every tunnel type: tunl0 (ipip, and GUE's inner packets, which
            # the fou socket on GUE_PORT hands to ipip) and gre0 (plain GRE).
            backend.ip_batch([f"addr add {VIP2}/32 dev lo", "link set tunl0 up", "link set gre0 up",
                              f"fou add port {GUE_PORT} gue"])
            for dev in ("all", "tunl0", "gre0", "eth0"):
                backend.sysctl(f"net.ipv4.conf.{dev}.rp_filter", 0)
            backend.ip_batch([f"addr add {VIP6}/128 dev lo nodad"])
            for port in (80, 443, 8080, 8083, 8084):
                net.start_http(backend, port=port)
            net.start_http(backend, port=8086, bind="::")
        udp = [net.start_udp_echo(backend, port=53) for backend in net.backends]
        # The resolver service: b1 and b2 answer DNS; b3 answers every datagram, but not in DNS.
        dns = [net.start_dns(backend, port=5353) for backend in net.backends[:2]]
        not_dns = net.start_udp_echo(net.backends[2], port=5353)
        api = appliance.start(net.lb, workdir / "appliance")
        api.setup()
        api.put_node(name="lb1", vrrp_interface="eth0")
        e = Env(net, api, udp)
        e.dns, e.not_dns = dns, not_dns
        backends = [{"address": a} for a in net.backend_addresses()]
        specs = {
            "dr": dict(address=net.vip, ports=[80], forwarding="dr"),
            "tun": dict(address=net.vip, ports=[8080], forwarding="tun", tunnel_type="ipip"),
            "gre": dict(address=net.vip, ports=[8083], forwarding="tun", tunnel_type="gre"),
            "gue": dict(address=net.vip, ports=[8084], forwarding="tun", tunnel_type="gue", tunnel_port=GUE_PORT),
            "onearm": dict(address=net.vip, ports=[8081], forwarding="nat", one_arm=True,
                           backends=[{"address": a, "port": 80} for a in net.backend_addresses()]),
            "dns": dict(address=net.vip, ports=[53], protocol="udp", forwarding="dr", health_check=UDP_CHECK),
            # A fwmark service's backends have no port; with no check port set, the renderer
            # checks the service's first port (keepalived would otherwise probe port 0).
            "dr6": dict(address=VIP6, ports=[8086], forwarding="dr",
                        backends=[{"address": a} for a in BACKENDS6]),
            "resolver": dict(address=net.vip, ports=[5353], protocol="udp", forwarding="dr", health_check=DNS_CHECK),
            "multi": dict(address=VIP2, ports=[80, 443], forwarding="dr", persistence_timeout=5,
                          health_check=CHECK),
        }
        for name, spec in specs.items():
            spec = {"scheduler": "rr", "health_check": CHECK, "backends": backends, **spec}
            e.ids[name] = api.create_service(name=name, **spec)["id"]
        revision = api.commit("forwarding methods")
        assert revision["state"] == "applied"
        for port in (80, 8080, 8083, 8084):
            ipvs.wait_for_real_servers(net.lb, net.vip, port, net.backend_addresses(), timeout=60)
        ipvs.wait_for_real_servers(net.lb, VIP6, 8086, BACKENDS6, timeout=60)
        ipvs.wait_for_real_servers(net.lb, net.vip, 8081, [f"{a}:80" for a in net.backend_addresses()], timeout=60)
        ipvs.wait_for_real_servers(net.lb, net.vip, 53, net.backend_addresses(), proto="udp", timeout=60)
        yield e


def counters(e: Env, port: int, proto: str = "tcp") -> dict:
    table = ipvs.read_ipvs(e.net.lb)
    (service,) = [s for s in table.services if (s.key.protocol, s.key.address, s.key.port) == (proto, e.net.vip, port)]
    return {real.key[0]: real for real in service.real_servers}


@pytest.mark.parametrize(
    "name, port, method", [("dr", 80, "dr"), ("tun", 8080, "tun"), ("gre", 8083, "tun"), ("gue", 8084, "tun")]
)
def test_dr_and_tun_replies_bypass_the_lb(env, name, port, method):
    e = env
    ipvs.read_ipvs(e.net.lb)  # the first read imports Fulcrum's models: not inside a wait
    tally = client.http_requests(e.net.client, e.net.vip, port, count=9)
    assert tally.failures == [] and tally.counts == {"b1": 3, "b2": 3, "b3": 3}

    def seen():
        reals = counters(e, port)
        return reals if all(r.counters.conns == 3 for r in reals.values()) else None

    reals = lab.wait_until(seen, 30, what=f"{name}: 3 connections per backend in IPVS")
    for real in reals.values():
        assert real.forwarding == method
        if name in ("gre", "gue"):
            assert real.tunnel_type == name
        assert real.counters.inpkts > 0 and real.counters.outpkts == 0, f"{method}: replies go straight to the client"


def test_ipv6_dr_service_spreads_over_its_backends(env):
    e = env
    tally = client.http_requests(e.net.client, VIP6, 8086, count=9)
    assert tally.failures == [] and tally.counts == {"b1": 3, "b2": 3, "b3": 3}
    table = ipvs.read_ipvs(e.net.lb)
    (service,) = [s for s in table.services if s.key.address == VIP6]
    assert service.key.family == 6 and {r.key[0] for r in service.real_servers} == set(BACKENDS6)
    assert {r.forwarding for r in service.real_servers} == {"dr"}

    # IPVS folds its per-CPU counters into what netlink reports every 2 s (the estimator): poll.
    def counted():
        (svc,) = [s for s in ipvs.read_ipvs(e.net.lb).services if s.key.address == VIP6]
        seen = {r.key[0]: (r.counters.conns, r.counters.outpkts) for r in svc.real_servers}
        return seen if all(conns >= 3 for conns, _ in seen.values()) else None

    seen = lab.wait_until(counted, 30, what="3 connections per IPv6 backend in IPVS's counters")
    assert all(outpkts == 0 for _, outpkts in seen.values()), f"DR: replies go straight to the client: {seen}"


def test_one_arm_nat_returns_replies_through_the_lb_by_snat(env):
    e = env
    for backend in e.net.backends:
        assert "default" not in backend.cmd(["ip", "route"]).stdout, "backends have no route via the LB"
    tally = client.http_requests(e.net.client, e.net.vip, 8081, count=6)
    assert tally.failures == [] and tally.counts == {"b1": 2, "b2": 2, "b3": 2}
    ruleset = e.net.lb.cmd(["nft", "list", "table", "inet", "fulcrum"]).stdout
    assert f"ct original ip daddr {e.net.vip}" in ruleset and "masquerade" in ruleset, ruleset
    conntrack = e.net.lb.cmd(["sysctl", "-n", "net.ipv4.vs.conntrack"]).stdout.strip()
    assert conntrack == "1", "the engine sets net.ipv4.vs.conntrack=1 for one-arm services"
    # The backends saw the LB's address as the client (SNAT), not the real client.
    log = e.net.backends[0].workdir / "http-80.log"
    assert f"{e.net.lb.address}:" in log.read_text()
    # NAT: the replies come back through the LB (counters lag up to 2 s: poll).
    reals = lab.wait_until(lambda: (r := counters(e, 8081)) and all(x.counters.outpkts > 0 for x in r.values()) and r,
                           30, what="one-arm replies counted by IPVS")
    assert all(r.forwarding == "nat" for r in reals.values())


def test_udp_dr_service_and_udp_health_check(env):
    e = env
    answers = [client.udp_request(e.net.client, e.net.vip, 53) for _ in range(6)]
    assert sorted(answers) == ["b1", "b1", "b2", "b2", "b3", "b3"]
    b1, b2, b3 = e.net.backend_addresses()
    e.udp[0].stop()
    stopped = time.monotonic()
    ipvs.wait_for_real_servers(e.net.lb, e.net.vip, 53, [b2, b3], proto="udp", timeout=60)
    print(f"MEASURED udp check: removed after {time.monotonic() - stopped:.1f} s")
    assert sorted(client.udp_request(e.net.client, e.net.vip, 53) for _ in range(4)) == ["b2", "b2", "b3", "b3"]
    e.udp[0].start()
    ipvs.wait_for_real_servers(e.net.lb, e.net.vip, 53, [b1, b2, b3], proto="udp", timeout=60)


def test_dns_check_keeps_only_backends_that_answer_dns(env):
    """b3 answers every datagram (a UDP check would pass it) but not with DNS: the DNS check
    keeps it out of IPVS until a real DNS server answers there."""
    e = env
    b1, b2, b3 = e.net.backend_addresses()
    ipvs.wait_for_real_servers(e.net.lb, e.net.vip, 5353, [b1, b2], proto="udp", timeout=60)
    e.not_dns.stop()
    e.net.start_dns(e.net.backends[2], port=5353)
    ipvs.wait_for_real_servers(e.net.lb, e.net.vip, 5353, [b1, b2, b3], proto="udp", timeout=60)


def test_fwmark_service_shares_persistence_across_ports(env):
    e = env
    (svc,) = [s for s in ipvs.services(e.net.lb) if s.proto == "fwm"]
    lab.wait_until(lambda: len([s for s in ipvs.services(e.net.lb) if s.proto == "fwm"][0].real_servers) == 3, 60,
                   what="the fwmark service's three real servers")
    assert "persistent 5" in svc.flags
    assert f"ip daddr {VIP2} tcp dport {{ 80, 443 }} meta mark set" in e.net.lb.cmd(
        ["nft", "list", "table", "inet", "fulcrum"]).stdout
    answers = []
    for port in (80, 443, 80, 443, 80, 443):
        reply = client.http_get(e.net.client, VIP2, port)
        assert reply.status == 200
        answers.append(reply.backend)
    assert len(set(answers)) == 1, f"one client, one backend for both ports while persistent: {answers}"
    templates = ipvs.ipvsadm(e.net.lb, "-Lnc")
    # The persistence template (for a fwmark service: "IP 00:04 ASSURED 10.77.0.10:0 0.0.0.1:0
    # 10.77.0.22:0", the mark shown as an address), pointing at the backend that answered,
    # expiring within the 5 s timeout.
    found = re.search(rf"^IP\s+00:0(\d)\s+\S+\s+{re.escape(e.net.client.address)}:0\s+\S+:0\s+(\S+):0\s*$",
                      templates, re.MULTILINE)
    assert found, f"no persistence template:\n{templates}"
    assert int(found[1]) <= 5
    assert found[2] == e.net.backend_addresses()[int(answers[0][1:]) - 1]


def test_a_scheduler_the_kernel_lacks_fails_the_apply_and_the_previous_config_keeps_serving(env):
    """The model and `keepalived -t` accept `twos`, but a kernel without ip_vs_twos (Linux < 6.2,
    or a trimmed build) cannot create the service: the engine's read-back times out and it rolls
    back. The module is made unloadable for this test (modprobe's `install … /bin/false`)."""
    unloadable = Path("/run/modprobe.d/fulcrum-test-no-twos.conf")
    unloadable.parent.mkdir(parents=True, exist_ok=True)
    unloadable.write_text("install ip_vs_twos /bin/false\n")
    lab.defer(unloadable.unlink)
    if Path("/sys/module/ip_vs_twos").exists():
        lab.cmd(["rmmod", "ip_vs_twos"])  # loaded by the scheduler tests; nothing uses it now
    e = env
    before = ipvs.services(e.net.lb)
    running = e.api.revisions()[0]
    e.api.update_service(e.ids["dr"], scheduler="twos")

    body = e.api.commit_failure("twos without ip_vs_twos")

    assert (body["failed_step"], body["failed_daemon"]) == ("verify", "keepalived"), body
    assert body["apply_result"]["rolled_back"] is True, body
    revisions = e.api.revisions()
    assert revisions[0]["state"] == "failed" and revisions[1]["number"] == running["number"]
    lab.wait_until(lambda: ipvs.services(e.net.lb) == before or None, 60, what="the previous IPVS table back")
    tally = client.http_requests(e.net.client, e.net.vip, 80, count=3)
    assert tally.failures == [] and len(tally.counts) == 3
    e.api.update_service(e.ids["dr"], scheduler="rr")
    assert e.api.get("/changes")["has_changes"] is False
