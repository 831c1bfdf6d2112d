"""Fulcrum's own API driving a NAT lab: commits reach the kernel, traffic flows through the VIP,
health checks, drains, reloads, rollbacks, live statistics and events.

One appliance (uvicorn + in-process engine + keepalived) per module: starting the API costs a
minute or more in the emulated VM. Its VIP is brought up by keepalived's VRRP (a VIP group on a
single node), not added statically. Tests run in file order and each leaves the candidate
configuration as it found it (the `web` and `echo` services).
"""

from __future__ import annotations

import time

import pytest

import lab
from lab import appliance, client, ipvs
from lab.topo import GATEWAY

# The module fixture starts the API (2-4 min in the emulated VM on a busy host) inside the
# first test's timeout.
pytestmark = [pytest.mark.kernel, pytest.mark.timeout(900)]

FAST_CHECK = {"type": "tcp", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5}


class Env:
    """The module's lab, appliance and servers."""

    def __init__(self, net, api, http, echo):
        self.net, self.api, self.http, self.echo = net, api, http, echo
        self.web_id = self.echo_id = 0

    def web(self) -> dict:
        return self.api.get(f"/services/{self.web_id}")

    def backend_ids(self, service_id: int) -> dict[str, int]:
        return {b["address"]: b["id"] for b in self.api.get(f"/services/{service_id}")["backends"]}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with lab.scope("api nat appliance"):
        workdir = tmp_path_factory.mktemp("apinat")
        net = lab.build("nat", backends=3, workdir=workdir, static_vips=False)
        net.lb.add_address(GATEWAY, dev=net.lb.interfaces["back"])  # the backends' route stays static
        http = [net.start_http(b) for b in net.backends]
        echo = [net.start_tcp_echo(b, port=7) for b in net.backends]
        api = appliance.start(net.lb, workdir / "appliance")
        print(f"API answered {api.start_seconds:.1f} s after launch")
        api.setup()
        api.put_node(name="lb1", vrrp_interface=net.lb.interfaces["front"])
        api.create_vip_group(name="front", virtual_router_id=51, addresses=[f"{net.vip}/32"])
        e = Env(net, api, http, echo)
        e.web_id = api.create_service(
            name="web", address=net.vip, ports=[80], scheduler="rr", health_check=FAST_CHECK,
            backends=[{"address": a} for a in net.backend_addresses()],
        )["id"]
        e.echo_id = api.create_service(
            name="echo", address=net.vip, ports=[7], scheduler="rr", health_check=FAST_CHECK,
            backends=[{"address": a} for a in net.backend_addresses()],
        )["id"]
        yield e


def wait_web_backends(e: Env, expected, timeout: float = 60):
    return ipvs.wait_for_real_servers(e.net.lb, e.net.vip, 80, expected, timeout=timeout)


def vip_on_lb(e: Env) -> bool:
    return f"{e.net.vip}/32" in e.net.lb.cmd(["ip", "-o", "addr", "show", "dev", "eth0"]).stdout


def test_commit_reaches_the_kernel_and_vrrp_brings_up_the_vip(env):
    e = env
    revision = e.api.commit("web and echo")

    result = revision["apply_result"]
    assert result["outcome"] == "applied"
    steps = {(step["step"], step["daemon"]): step for step in result["steps"]}
    readback = steps["verify", "keepalived"]
    assert readback["ok"] and readback["detail"].startswith("IPVS matches: 2 services, 6 real servers")
    # keepalived (started by the engine, in the LB namespace) runs VRRP: alone, it becomes MASTER.
    lab.wait_until(lambda: vip_on_lb(e), 30, what="keepalived's VRRP to add the VIP on lb1")
    table = ipvs.read_ipvs(e.net.lb)
    found = sorted((s.key.protocol, s.key.address, s.key.port, s.scheduler,
                    tuple(sorted((r.key, r.forwarding, r.weight) for r in s.real_servers))) for s in table.services)
    assert found == [
        ("tcp", e.net.vip, port, "rr", tuple(((a, port), "nat", 1) for a in e.net.backend_addresses()))
        for port in (7, 80)
    ]
    vrrp = lab.wait_until(lambda: e.api.events(kind="vrrp_state"), 30, what="a vrrp_state event")
    assert any("MASTER" in event["message"] for event in vrrp), vrrp


def test_rr_through_the_vip_and_live_stats_match(env):
    e = env

    def all_up():
        backends = (e.api.service_stats("web") or {}).get("backends", [])
        return backends if backends and all(b["state"] == "up" and b["counters"] for b in backends) else None

    # Backends join IPVS after their first passing check, and /stats/current is refreshed once a
    # second: take the baseline only once every backend is in the statistics.
    before = {b["endpoint"]: b["counters"]["conns"] for b in lab.wait_until(all_up, 30, what="all 3 backends up in /stats/current")}

    tally = client.http_requests(e.net.client, e.net.vip, 80, count=30)

    assert tally.failures == []
    assert tally.counts == {"b1": 10, "b2": 10, "b3": 10}

    def grown():
        now = {b["endpoint"]: (b["counters"] or {}).get("conns", 0) for b in e.api.service_stats("web")["backends"]}
        return {k: now[k] - before.get(k, 0) for k in now}

    expected = {f"{a}:80": 10 for a in e.net.backend_addresses()}
    lab.wait_until(grown, 30, expect=expected, what="/stats/current per-backend conns +10 each")
    metrics = e.api.metrics()
    for address in e.net.backend_addresses():
        assert f'{address}:80' in metrics, f"/metrics lacks backend {address}:80"
    history = e.api.history("web")
    assert len(history["points"]) >= 2


def test_wrr_follows_weights_3_2_1(env):
    e = env
    ids = e.backend_ids(e.web_id)
    b1, b2, b3 = e.net.backend_addresses()
    e.api.update_service(e.web_id, scheduler="wrr")
    for address, weight in ((b1, 3), (b2, 2), (b3, 1)):
        e.api.update_backend(e.web_id, ids[address], weight=weight)
    e.api.commit("wrr 3:2:1")
    reals = ipvs.real_servers(e.net.lb, e.net.vip, 80)
    assert {r.address: r.weight for r in reals.values()} == {b1: 3, b2: 2, b3: 1}

    tally = client.http_requests(e.net.client, e.net.vip, 80, count=24)

    # wrr's sequence repeats every 6 connections (the sum of the weights): any 24 consecutive
    # new connections hold exactly 4 periods.
    assert tally.failures == []
    assert tally.counts == {"b1": 12, "b2": 8, "b3": 4}
    e.api.update_service(e.web_id, scheduler="rr")
    for address in (b1, b2, b3):
        e.api.update_backend(e.web_id, ids[address], weight=1)
    e.api.commit("back to rr")


def test_tcp_check_removes_a_dead_backend_within_its_budget_and_restores_it(env):
    e = env
    b1, b2, b3 = e.net.backend_addresses()
    wait_web_backends(e, [b1, b2, b3])
    e.api.events()  # warm
    stopped = time.monotonic()
    e.http[1].stop()
    wait_web_backends(e, [b1, b3], timeout=60)
    removed = time.monotonic() - stopped
    tally = client.http_requests(e.net.client, e.net.vip, 80, count=6)
    assert tally.failures == [] and tally.counts == {"b1": 3, "b3": 3}
    down = lab.wait_until(lambda: e.api.events(kind="backend_down", service="web"), 30, what="a backend_down event")
    assert down[0]["backend"] == f"{b2}:80" and down[0]["at"]

    started = time.monotonic()
    e.http[1].start()
    wait_web_backends(e, [b1, b2, b3], timeout=60)
    restored = time.monotonic() - started
    up = lab.wait_until(lambda: e.api.events(kind="backend_up", service="web"), 30, what="a backend_up event")
    assert up[0]["backend"] == f"{b2}:80"
    print(f"MEASURED tcp check: removed after {removed:.1f} s, restored after {restored:.1f} s")
    # Budget: interval 1 + timeout 1 + 1 retry (0.5 + 1) = 3.5 s nominal; the emulated VM gets 4x.
    assert removed < 15, f"removal took {removed:.1f} s"


def test_a_commit_waits_for_no_backend_that_was_down_already(env):
    """The read-back's settle (3 s for real servers not yet checked) is for real servers new to
    keepalived: one it already found down, untouched by the commit, adds no wait."""
    e = env
    b1, b2, b3 = e.net.backend_addresses()
    ids = e.backend_ids(e.echo_id)
    e.http[2].stop()
    try:
        # After this commit keepalived has checked web's b3 (down) under the running configuration.
        e.api.update_backend(e.echo_id, ids[b1], weight=2)
        e.api.commit("echo b1 at weight 2 while web's b3 is down")
        wait_web_backends(e, [b1, b2], timeout=60)
        e.api.update_backend(e.echo_id, ids[b1], weight=1)
        result = e.api.commit("echo b1 back at weight 1")["apply_result"]
        verify = next(s for s in result["steps"] if (s["step"], s["daemon"]) == ("verify", "keepalived"))
        print(f"MEASURED read-back with an unrelated backend down: {verify['seconds']:.2f} s")
        assert any(f"{b3}:80 is down" in warning for warning in result["warnings"]), result["warnings"]
        assert verify["seconds"] < 3.0, f"the read-back waited {verify['seconds']} s for b3, down before the commit"
    finally:
        e.http[2].start()
    wait_web_backends(e, [b1, b2, b3], timeout=60)


def test_weight_zero_drain_keeps_an_established_connection_and_takes_no_new_ones(env):
    e = env
    ids = e.backend_ids(e.echo_id)
    held = client.hold_tcp(e.net.client, e.net.vip, 7)
    held.sendall(b"who")
    assert held.recv(100) == b"who"
    busy = lab.wait_until(lambda: next((r.address for r in ipvs.real_servers(e.net.lb, e.net.vip, 7).values()
                                        if r.active == 1), None), 30, what="the held connection in IPVS")
    e.api.update_backend(e.echo_id, ids[busy], weight=0)
    e.api.commit(f"drain {busy}")
    assert ipvs.real_servers(e.net.lb, e.net.vip, 7)[f"{busy}:7"].weight == 0

    for _ in range(4):
        assert client.tcp_echo(e.net.client, e.net.vip, 7, b"new") == b"new"
    held.sendall(b"still here")
    assert held.recv(100) == b"still here", "the drained backend's established connection survives"
    reals = ipvs.real_servers(e.net.lb, e.net.vip, 7)
    drained = reals[f"{busy}:7"]
    assert (drained.active, drained.inactive) == (1, 0), "no new connection went to the drained backend"
    e.api.update_backend(e.echo_id, ids[busy], weight=1)
    e.api.commit(f"undrain {busy}")


def test_a_reload_for_an_unrelated_change_keeps_established_connections(env):
    e = env
    held = client.hold_tcp(e.net.client, e.net.vip, 7)
    held.sendall(b"before")
    assert held.recv(100) == b"before"
    extra = e.api.create_service(name="extra", address=e.net.vip, ports=[8080], scheduler="wlc",
                                 backends=[{"address": a} for a in e.net.backend_addresses()])
    revision = e.api.commit("add extra")
    assert any(s.port == 8080 for s in ipvs.services(e.net.lb))
    held.sendall(b"after the reload")
    assert held.recv(100) == b"after the reload"
    e.api.delete_service(extra["id"])
    e.api.commit("remove extra")
    held.sendall(b"after another")
    assert held.recv(100) == b"after another"
    assert revision["state"] == "applied"


def test_rollback_restores_an_earlier_revisions_ipvs_table(env):
    e = env
    good = e.api.revisions()[0]
    assert good["state"] == "applied"
    before = ipvs.services(e.net.lb)
    e.api.update_service(e.web_id, scheduler="sh")
    e.api.commit("sh")
    assert next(s for s in ipvs.services(e.net.lb) if s.port == 80).scheduler == "sh"

    revision = e.api.rollback(good["number"])

    assert revision["state"] == "applied" and revision["rollback_of"] == good["number"]
    # Applied means the services match; real servers keepalived re-adds once their checks pass
    # again may still be on the way on a loaded VM.
    lab.wait_until(lambda: ipvs.services(e.net.lb) == before or None, 60, what="the earlier IPVS table back")
    assert e.web()["scheduler"] == "rr", "the rollback also became the candidate"


def test_http_check_removes_a_backend_answering_500_or_404_on_the_checked_path(env):
    e = env
    b1, b2, b3 = e.net.backend_addresses()
    e.api.put(f"/services/{e.web_id}/health-check", {**FAST_CHECK, "type": "http", "http_path": "/health",
                                                      "http_status_codes": [200]})
    e.api.commit("http check")
    wait_web_backends(e, [b1, b2, b3])
    e.http[2].set(status=500)
    try:
        wait_web_backends(e, [b1, b2], timeout=60)
        assert client.http_requests(e.net.client, e.net.vip, 80, count=4).counts == {"b1": 2, "b2": 2}
    finally:
        e.http[2].set(status=200)
    wait_web_backends(e, [b1, b2, b3], timeout=60)
    # The path counts: b3 still answers 200 on "/" but 404 on the checked /health.
    e.http[2].set(paths=["/"])
    try:
        wait_web_backends(e, [b1, b2], timeout=60)
        assert client.http_get(e.net.lb, b3, 80, "/").status == 200
    finally:
        e.http[2].set()
    wait_web_backends(e, [b1, b2, b3], timeout=60)
    e.api.put(f"/services/{e.web_id}/health-check", FAST_CHECK)
    e.api.commit("tcp check again")


def test_sorry_server_takes_over_when_every_backend_is_down(env):
    e = env
    sorry_host = e.net.backends[2]
    b1, b2, b3 = e.net.backend_addresses()
    # b3's port 8081 is the sorry server; b1..b3's port 80 the backends.
    sorry = e.net.start_http(sorry_host, port=8081)
    sorry_host_name = sorry.name
    e.api.update_service(e.web_id, sorry_server={"address": b3, "port": 8081})
    e.api.commit("sorry server")
    for server in e.http:
        server.stop()
    try:
        wait_web_backends(e, [f"{b3}:8081"], timeout=60)
        answer = client.http_get(e.net.client, e.net.vip, 80)
        assert (answer.status, answer.backend) == (200, sorry_host_name)
    finally:
        for server in e.http:
            server.start()
    wait_web_backends(e, [b1, b2, b3], timeout=60)
    e.api.update_service(e.web_id, sorry_server=None)
    e.api.commit("no sorry server")
