"""Part 2: how long a dead backend stays in IPVS: Fulcrum's shipped check defaults vs keepalived's own.

Two services watch the same six backends (b1-b3, d1-d3): `hc-fulcrum` on port 81 with the check
Fulcrum ships (fulcrum.config.snapshot.HealthCheck's defaults), `hc-keepalived` on port 82 with
keepalived's own TCP_CHECK defaults from keepalived.conf(5) (delay_loop 60 s, connect_timeout 5 s,
retry 1, delay_before_retry 1 s). Every backend runs a server on each port.

Six failures, each at its own random moment within one keepalived delay_loop (so each lands at a
random phase of the checkers' timers): on three backends both server processes are SIGKILLed
(connections are then refused at once), three backends are blackholed (their link is set down:
nothing answers, not even ARP). Each failure is timed to the moment its real server leaves
/proc/net/ip_vs, for both services at once, polled every 50 ms from a thread inside the LB.
"""

from __future__ import annotations

import fcntl
import random
import socket
import struct
import time

import pytest

import lab
from bench import benchlab, ipvsproc, responder, results
from bench.results import spread
from fulcrum.config.snapshot import HealthCheck
from lab.netns import run_in
from lab.wait import StopWaiting

pytestmark = [pytest.mark.kernel, pytest.mark.bench_part("health"), pytest.mark.timeout(1800)]

PORTS = {"fulcrum": 81, "keepalived": 82}
# keepalived.conf(5), TCP_CHECK: "delay timer for checker polling (60 seconds if not specified)",
# "connect_timeout ... The default is 5 seconds", "retry ... Default: 1", "delay_before_retry ...
# 1 second otherwise".
KEEPALIVED_DEFAULTS = {"type": "tcp", "interval": 60, "timeout": 5, "retries": 1, "retry_delay": 1}
POLL = 0.05
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def set_link(host, dev: str, up: bool) -> None:
    """Set a host's interface up or down with one ioctl from inside its namespace (no process)."""

    def flip() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            request = struct.pack("16sH", dev.encode(), 0)
            flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
            flags = flags | IFF_UP if up else flags & ~IFF_UP
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", dev.encode(), flags))

    run_in(host, flip)


def test_failure_detection(env):
    hosts = [*env.nat, *env.direct]
    shipped = HealthCheck()
    profiles = {
        "fulcrum": {"type": shipped.type.value, "interval": shipped.interval, "timeout": shipped.timeout,
                    "retries": shipped.retries, "retry_delay": shipped.retry_delay},
        "keepalived": KEEPALIVED_DEFAULTS,
    }
    servers = {(h.role, port): responder.start(h, port) for h in hosts for port in PORTS.values()}
    for name, port in PORTS.items():
        check = None if name == "fulcrum" else KEEPALIVED_DEFAULTS  # omitted: the API's default
        spec = dict(name=f"hc-{name}", address=env.net.vip, ports=[port], scheduler="rr",
                    backends=[{"address": h.address} for h in hosts])
        if check:
            spec["health_check"] = check
        env.ids[f"hc-{name}"] = env.api.create_service(**spec)["id"]
    env.api.commit("bench: health-check services")
    vs = {name: f"TCP {env.net.vip}:{port}" for name, port in PORTS.items()}

    def all_up() -> bool:
        table = ipvsproc.read(env.lb)
        return all(len(table.get(vs[name], {})) == len(hosts) for name in PORTS)

    # keepalived's first check waits a random warm-up of up to one delay_loop (60 s) with alpha.
    lab.wait_until(all_up, 120, what="every health-check real server up", interval=0.5)

    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    kinds = ["kill", "blackhole"] * (len(hosts) // 2)
    window = KEEPALIVED_DEFAULTS["interval"]
    events = sorted(({"host": h.role, "kind": k, "at": rng.uniform(0, window)} for h, k in zip(hosts, kinds)),
                    key=lambda e: e["at"])
    by_role = {h.role: h for h in hosts}
    endpoint = {(h.role, name): f"{h.address}:{port}" for h in hosts for name, port in PORTS.items()}
    # Worst case for keepalived's defaults: a whole delay_loop, then connect_timeout, the retry
    # delay and connect_timeout again.
    limit = window + window + 5 + 1 + 5 + 20
    removed: dict[tuple[str, str], float] = {}
    fired: dict[str, float] = {}
    start = time.monotonic()
    pending = list(events)

    def fire(event: dict) -> None:
        host = by_role[event["host"]]
        try:
            if event["kind"] == "kill":
                for port in PORTS.values():
                    servers[(host.role, port)].kill()
            else:
                set_link(host, "eth0", up=False)
        except Exception as error:  # wait_until would take it for "not yet" and wait in vain
            raise StopWaiting(f"could not {event['kind']} {host.role}: {error!r}") from error
        fired[host.role] = time.monotonic() - start

    def step() -> bool:
        now = time.monotonic() - start
        while pending and pending[0]["at"] <= now:
            fire(pending.pop(0))
        table = ipvsproc.read(env.lb)
        seen = time.monotonic() - start
        for role in fired:
            for name in PORTS:
                if (role, name) not in removed and endpoint[(role, name)] not in table.get(vs[name], {}):
                    removed[(role, name)] = seen - fired[role]
        return not pending and len(removed) == len(hosts) * len(PORTS)

    try:
        lab.wait_until(step, limit, what="every failed backend removed from IPVS", interval=POLL)
    finally:
        record = {
            "seed": seed,
            "poll_seconds": POLL,
            "profiles": profiles,
            "events": [{**e, "fired": fired.get(e["host"]),
                        "removed_after": {name: removed.get((e["host"], name)) for name in PORTS}} for e in events],
            "summary": {name: {kind: spread([removed.get((e["host"], name)) for e in events if e["kind"] == kind])
                               for kind in ("kill", "blackhole")} for name in PORTS},
        }
        results.save(env.out, "health", record)
        # Put everything back, and leave the appliance as it was for the next parts.
        for host in hosts:
            set_link(host, "eth0", up=True)
        for host in env.nat:  # a link going down took their default route with it
            host.ip("route", "replace", "default", "via", benchlab.GATEWAY)
        for server in servers.values():
            server.stop()
        for name in PORTS:
            env.api.delete_service(env.ids.pop(f"hc-{name}"))
        env.api.commit("bench: health-check services removed")
