"""IPVS programmed by hand (ipvsadm) in the lab: each forwarding method carries real traffic."""

import pytest

import lab
from fulcrum.dataplane.ipvs_table import ServiceKey
from lab import client, ipvs

pytestmark = pytest.mark.kernel

FORWARD_FLAG = {"nat": "-m", "dr": "-g", "tun": "-i"}


def add_service(net, scheduler="rr", port=80, proto="-t"):
    """A service on the VIP over every backend, with the lab's forwarding method."""
    service = f"{proto} {net.vip}:{port}"
    ipvs.restore(net.lb, [f"-A {service} -s {scheduler}"] + [
        f"-a {service} -r {address}:{port} {FORWARD_FLAG[net.mode]}" for address in net.backend_addresses()
    ])


def wait_for_conns(net, expected: list[int]):
    """The one service, once its real servers' connection counters read `expected`.

    The kernel sums its per-CPU counters into what netlink reports every 2 s (the rate
    estimator's timer), so fresh counters lag behind the traffic.
    """

    def conns():
        (service,) = ipvs.read_ipvs(net.lb).services
        return service if [real.counters.conns for real in service.real_servers] == expected else None

    ipvs.read_ipvs(net.lb)  # the first read imports Fulcrum's models (seconds here): not on the clock
    return lab.wait_until(conns, 30, what=f"IPVS connection counters {expected}")


def test_rr_nat_spreads_new_connections_exactly_evenly(tmp_path):
    net = lab.build("nat", backends=3, workdir=tmp_path)
    for backend in net.backends:
        net.start_http(backend)
    add_service(net)

    tally = client.http_requests(net.client, net.vip, 80, count=30)

    assert tally.failures == []
    assert tally.counts == {"b1": 10, "b2": 10, "b3": 10}
    # The same table, read back over netlink by Fulcrum's own reader.
    service = wait_for_conns(net, [10, 10, 10])
    assert (service.key.protocol, service.key.address, service.key.port) == ("tcp", net.vip, 80)
    assert service.scheduler == "rr"
    assert sorted(real.key for real in service.real_servers) == [(a, 80) for a in net.backend_addresses()]
    for real in service.real_servers:
        assert real.forwarding == "nat"
        assert real.counters.outpkts > 0, "NAT replies go back through the LB"


def test_a_read_of_some_services_leaves_the_others_out(tmp_path):
    """The apply's read-back polls only the services a revision changes (fulcrum.apply.daemons.keepalived)."""
    net = lab.build("nat", backends=2, workdir=tmp_path)
    for port in (80, 81, 82):
        add_service(net, port=port)
    whole = ipvs.read_ipvs(net.lb)
    assert sorted(service.key.port for service in whole.services) == [80, 81, 82]
    wanted = {service.key for service in whole.services if service.key.port != 81}
    absent = ServiceKey(family=4, protocol="tcp", address=net.vip, port=83)

    some = ipvs.read_ipvs(net.lb, only=wanted | {absent})

    assert some.services == tuple(service for service in whole.services if service.key in wanted)
    assert ipvs.read_ipvs(net.lb, only=set()).services == ()


@pytest.mark.parametrize("mode", ["dr", "tun"])
def test_rr_replies_bypass_the_lb(tmp_path, mode):
    net = lab.build(mode, backends=3, workdir=tmp_path)
    for backend in net.backends:
        net.start_http(backend)
    add_service(net)

    tally = client.http_requests(net.client, net.vip, 80, count=9)

    assert tally.failures == []
    assert tally.counts == {"b1": 3, "b2": 3, "b3": 3}
    service = wait_for_conns(net, [3, 3, 3])
    for real in service.real_servers:
        assert real.forwarding == mode
        assert real.counters.inpkts > 0
        assert real.counters.outpkts == 0, f"{mode}: backends answer the client directly"


def test_udp_rr_schedules_each_new_source_port(tmp_path):
    net = lab.build("nat", backends=2, workdir=tmp_path)
    for backend in net.backends:
        net.start_udp_echo(backend, port=53)
    add_service(net, port=53, proto="-u")

    answers = [client.udp_request(net.client, net.vip, 53) for _ in range(4)]

    assert answers in (["b1", "b2", "b1", "b2"], ["b2", "b1", "b2", "b1"])


def test_lc_avoids_the_backend_holding_a_connection(tmp_path):
    net = lab.build("nat", backends=2, workdir=tmp_path)
    for backend in net.backends:
        net.start_tcp_echo(backend, port=7)
    add_service(net, scheduler="lc", port=7)

    def active() -> dict[str, int]:
        return {endpoint: real.active for endpoint, real in ipvs.real_servers(net.lb, net.vip, 7).items()}

    def one_held() -> dict[str, int] | None:
        counts = active()
        return counts if sorted(counts.values()) == [0, 1] else None

    held = client.hold_tcp(net.client, net.vip, 7)
    counts = lab.wait_until(one_held, 30, what="the held connection to be active in IPVS")
    busy = next(endpoint for endpoint, count in counts.items() if count == 1)
    for _ in range(4):
        assert client.tcp_echo(net.client, net.vip, 7, b"ping") == b"ping"
        # lc counts active connections: let IPVS see this one close before the next.
        lab.wait_until(lambda: sum(active().values()) == 1, 30, what="the short connection to close in IPVS")

    reals = ipvs.real_servers(net.lb, net.vip, 7)
    idle = next(endpoint for endpoint in reals if endpoint != busy)
    assert (reals[busy].active, reals[busy].inactive) == (1, 0)
    assert (reals[idle].active, reals[idle].inactive) == (0, 4), "every short connection went to the idle backend"
    held.sendall(b"still here")
    assert held.recv(100) == b"still here"


def test_sh_keeps_each_source_address_on_one_backend(tmp_path):
    net = lab.build("nat", backends=3, workdir=tmp_path)
    for backend in net.backends:
        net.start_http(backend)
    add_service(net, scheduler="sh")
    sources = [f"10.77.0.{n}" for n in range(50, 56)]
    for source in sources:
        net.client.add_address(source)

    chosen = {}
    for source in sources:
        tally = client.http_requests(net.client, net.vip, 80, count=3, source=source)
        assert tally.failures == []
        assert len(tally.counts) == 1, f"{source} was spread over {dict(tally.counts)}"
        chosen[source] = next(iter(tally.counts))
    assert len(set(chosen.values())) > 1, f"six sources all hashed to one backend: {chosen}"
