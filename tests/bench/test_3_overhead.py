"""Part 3: what the load balancer costs. Requests/s and latency through the VIP vs straight to the
backend, for each forwarding method, and IPVS vs a user-space proxy (HAProxy, TCP mode).

Every service here has exactly one backend, so the ratio isolates the extra hop:

    direct d1        c1 -> d1:80 on the same segment (the baseline for DR, TUN and one-arm)
    dr               VIP2:80   DR      -> d1:80    (replies go straight back to c1)
    tun              VIP2:8080 TUN/ipip -> d1:8080 (same)
    one-arm          VIP:8081  NAT + nftables SNAT -> d1:80 (both ways through the LB, one NIC)
    direct b1        c1 -> b1:80 routed by the LB (the baseline for NAT: b1 sits behind it)
    nat              VIP:8082  NAT -> b1:80
    haproxy          lb1:8090  HAProxy `mode tcp` -> b1:80

wrk runs from c1, once with keep-alive and once with a new connection per request, REPS times per
target, the targets interleaved so that drift in the shared host spreads over all of them.
"""

from __future__ import annotations

import pytest

import lab
from bench import benchlab, clients, results
from bench.results import spread
from lab.cmd import bkg
from lab.netns import listening

pytestmark = [pytest.mark.kernel, pytest.mark.bench_part("overhead"), pytest.mark.timeout(1800)]

REPS = 3
SECONDS = 4
CONNECTIONS = 16
HAPROXY_PORT = 8090

HAPROXY_CONF = """\
global
    maxconn 20000
    pidfile {pidfile}
defaults
    mode tcp
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend bench
    bind {address}:{port}
    default_backend one
backend one
    server b1 {backend}:80
"""


@pytest.fixture(scope="module")
def paths(env):
    """The one-backend services and HAProxy; {target: (host to reach, port)}."""
    with lab.scope("overhead"):
        targets = benchlab.one_backend_services(env)
        b1 = env.nat[0]
        conf = env.lb.workdir / "haproxy.cfg"
        conf.write_text(HAPROXY_CONF.format(pidfile=env.lb.workdir / "haproxy.pid", address=env.lb.address,
                                            port=HAPROXY_PORT, backend=b1.address))
        lab.cmd(["haproxy", "-c", "-f", conf], ns=env.lb)
        proxy = bkg(["haproxy", "-db", "-f", conf], env.lb, log_path=env.lb.workdir / "haproxy.log")
        lab.wait_until(lambda: proxy.check_running() or listening(env.lb, HAPROXY_PORT), 30, what="haproxy to listen")
        yield {**targets, "haproxy": (env.lb.address, HAPROXY_PORT)}


BASELINE = {"dr": "direct d1", "tun": "direct d1", "one-arm": "direct d1", "nat": "direct b1",
            "haproxy": "direct b1"}


def test_overhead_ratios(env, paths):
    client = env.clients[0]
    data = {"reps": REPS, "seconds": env.seconds(SECONDS), "connections": CONNECTIONS, "runs": {}}
    for mode in ("keepalive", "close"):
        runs = {target: [] for target in paths}
        data["runs"][mode] = runs
        for _ in range(REPS):
            for target, (address, port) in paths.items():
                argv = clients.wrk_argv(f"http://{address}:{port}/", connections=CONNECTIONS,
                                        seconds=env.seconds(SECONDS), close=mode == "close")
                (run,) = clients.run_parallel([clients.Run(client, argv)], timeout=env.seconds(SECONDS) + 120)
                runs[target].append(clients.parse_wrk(run.stdout, client=client.role, connections=CONNECTIONS).to_json())
            results.save(env.out, "overhead", data)
    data["summary"] = {}
    for mode, runs in data["runs"].items():
        summary = {target: {"requests_per_s": spread([r["requests_per_s"] for r in reps]),
                            "latency_ms_p50": spread([r["latency_ms"].get("50") for r in reps]),
                            "latency_ms_p99": spread([r["latency_ms"].get("99") for r in reps]),
                            "errors": sum(sum(r["errors"].values()) for r in reps)}
                   for target, reps in runs.items()}
        for target, baseline in BASELINE.items():
            summary[target]["vs"] = baseline
            summary[target]["rps_ratio"] = _ratio(summary[target], summary[baseline], "requests_per_s")
            summary[target]["p50_ratio"] = _ratio(summary[target], summary[baseline], "latency_ms_p50")
        summary["haproxy"]["rps_vs_ipvs_nat"] = _ratio(summary["haproxy"], summary["nat"], "requests_per_s")
        summary["haproxy"]["p50_vs_ipvs_nat"] = _ratio(summary["haproxy"], summary["nat"], "latency_ms_p50")
        data["summary"][mode] = summary
    results.save(env.out, "overhead", data)


def _ratio(a: dict, b: dict, key: str) -> float | None:
    x, y = a[key].get("mean"), b[key].get("mean")
    return x / y if x is not None and y else None
