"""Alerts that reach people, in the VM lab: a real service with health-checked backends behind
the appliance's API (keepalived, IPVS), one backend killed, and exactly one e-mail, one webhook
and one syslog line arrive at real servers (an SMTP sink, an HTTP receiver checking the HMAC, a
syslog receiver over TCP) in the LB's namespace; then the recovery, once each, when it is back.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, TypeVar

import pytest

import lab
from lab import appliance, ipvs
from lab.alert_receivers import smtp_sink, syslog_receiver, webhook_receiver
from lab.netns import run_in

# The API starts inside the first (only) test's timeout: 2-4 minutes in the emulated VM.
pytestmark = [pytest.mark.kernel, pytest.mark.timeout(900)]

FAST_CHECK = {"type": "tcp", "interval": 1, "timeout": 1, "retries": 1, "retry_delay": 0.5}
KINDS = ["backend_down", "backend_up"]
T = TypeVar("T")


def started_in(ns: Any, receiver: AbstractContextManager[T]) -> T:
    """Start a receiver from a thread inside `ns` (its own threads stay there); stopped at the end."""
    value = run_in(ns, receiver.__enter__)
    lab.defer(receiver.__exit__, None, None, None)
    return value


def test_a_killed_backend_alerts_once_by_email_webhook_and_syslog_then_recovers(tmp_path):
    net = lab.build("nat", backends=2, workdir=tmp_path)
    http = [net.start_http(b) for b in net.backends]
    here = net.lb.address  # the receivers listen on the LB's own address, inside its namespace
    mail = started_in(net.lb, smtp_sink(host=here))
    hook = started_in(net.lb, webhook_receiver("lab-hook-key", host=here))
    log = started_in(net.lb, syslog_receiver("tcp", host=here))

    api = appliance.start(net.lb, tmp_path / "appliance")
    print(f"API answered {api.start_seconds:.1f} s after launch")
    api.setup()
    api.put_node(name="lb1")
    channels = [
        api.post("/alerts/channels", {"name": "mail", "config": {
            "type": "smtp", "host": here, "port": mail.port, "security": "none",
            "from_address": "lb1@example.org", "to_addresses": ["ops@example.org"]}}, expect=201),
        api.post("/alerts/channels", {"name": "hook", "config": {"type": "webhook", "url": hook.url},
                                      "secret": "lab-hook-key"}, expect=201),
        api.post("/alerts/channels", {"name": "log", "config": {
            "type": "syslog", "host": here, "port": log.port, "transport": "tcp"}}, expect=201),
    ]  # fmt: skip
    for channel in channels:
        api.post("/alerts/rules", {"channel_id": channel["id"], "kinds": KINDS}, expect=201)
    b1, b2 = net.backend_addresses()
    api.create_service(name="web", address=net.vip, ports=[80], scheduler="rr", health_check=FAST_CHECK,
                       backends=[{"address": b1}, {"address": b2}])  # fmt: skip
    api.commit("web with two checked backends")
    ipvs.wait_for_real_servers(net.lb, net.vip, 80, [b1, b2], timeout=60)

    def delivered() -> tuple[int, int, int]:
        return len(mail.messages), len(hook.bodies), len(log.lines)

    http[1].stop()
    ipvs.wait_for_real_servers(net.lb, net.vip, 80, [b1], timeout=60)
    down = lab.wait_until(lambda: api.events(kind="backend_down", service="web"), 60,
                          what="a backend_down event")  # fmt: skip
    lab.wait_until(lambda: min(delivered()) >= 1, 60, what="an alert on each channel")
    assert down[0]["backend"] == f"{b2}:80"
    text = f"backend {b2}:80 of web failed its health check"
    assert mail.messages[0]["Subject"].replace("\r\n", "") == f"[lb1] CRITICAL: {text}"
    assert mail.envelopes == [("lb1@example.org", ["ops@example.org"])]
    assert hook.bad_signatures == 0 and hook.bodies[0]["kind"] == "backend_down"
    assert hook.bodies[0]["backend"] == f"{b2}:80" and hook.bodies[0]["node"] == "lb1"
    line = log.lines[0].decode()
    assert line.startswith("<130>1 ") and f" lb1 fulcrum - backend_down - {text}" in line  # local0.crit

    http[1].start()
    ipvs.wait_for_real_servers(net.lb, net.vip, 80, [b1, b2], timeout=60)
    lab.wait_until(lambda: min(delivered()) >= 2, 60, what="the recovery on each channel")
    # Events go out in order: with the recovery delivered, any second "down" would be here too.
    assert delivered() == (2, 2, 2), "exactly one alert per channel for the outage, one for the recovery"
    assert [b["kind"] for b in hook.bodies] == ["backend_down", "backend_up"]
    assert " backend_up - " in log.lines[1].decode()
    assert "passes its health check again" in mail.messages[1]["Subject"].replace("\r\n", "")
