"""The VM rig itself: IPVS, every scheduler, keepalived, and the lab's cleanup."""

import os
import re
from pathlib import Path

import pytest

import lab
from lab import client, ipvs, keepalived
from lab.cmd import bkg, cmd, python_argv
from lab.netns import listening

pytestmark = pytest.mark.kernel

SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos"]


def test_ipvs_is_in_the_kernel():
    assert Path("/proc/net/ip_vs").read_text().startswith("IP Virtual Server version")
    assert "IP Virtual Server version" in cmd(["ipvsadm", "-Ln"]).stdout


@pytest.fixture(scope="module")
def scheduler_ns():
    """One namespace for all scheduler tests (a module-scoped cleanup scope of its own)."""
    with lab.scope("scheduler namespace"):
        yield lab.NetNS("sched")


def module_in_kernel(module: str) -> bool:
    dep = Path(f"/lib/modules/{os.uname().release}/modules.dep").read_text()
    return re.search(rf"/{module}\.ko(\.\w+)?:", dep) is not None


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_scheduler_is_loaded_and_serves_a_service(scheduler_ns, scheduler):
    module = f"ip_vs_{scheduler}"
    if not module_in_kernel(module):
        pytest.skip(f"{module} is not in kernel {os.uname().release}")
    assert Path(f"/sys/module/{module}").is_dir(), f"vm-guest should have loaded {module}"
    ipvs.ipvsadm(scheduler_ns, "-A", "-t", f"{lab.VIP}:80", "-s", scheduler)
    try:
        (service,) = ipvs.services(scheduler_ns)
        assert (service.proto, service.address, service.port, service.scheduler) == ("tcp", lab.VIP, 80, scheduler)
    finally:
        ipvs.ipvsadm(scheduler_ns, "--clear")


def test_keepalived_runs_and_programs_ipvs(tmp_path):
    assert cmd(["keepalived", "--version"]).stderr.startswith("Keepalived v2.")
    ns = lab.NetNS("kad")
    conf = tmp_path / "keepalived.conf"
    # No health check: keepalived adds the real server as is.
    conf.write_text(f"""
virtual_server {lab.VIP} 80 {{
    lb_algo wlc
    lb_kind NAT
    protocol TCP
    real_server 10.77.1.21 80 {{
        weight 3
    }}
}}
""")
    kad = keepalived.start(ns, conf)
    (real,) = ipvs.wait_for_real_servers(ns, lab.VIP, 80, ["10.77.1.21"]).values()
    assert (real.forward, real.weight) == ("Masq", 3)
    assert kad.stop() == 0
    assert ipvs.services(ns) == [], "keepalived removes its virtual servers when it stops"


def test_cleanup_scope_removes_namespaces_and_processes(tmp_path):
    with lab.scope("inner"):
        net = lab.build("nat", backends=1, workdir=tmp_path)
        server = net.start_http(net.backends[0])
        names = [host.name for host in net.hosts.values()] + [net.switch.name]
        assert set(names) <= set(os.listdir("/run/netns"))
    assert not server.running
    assert not set(names) & set(os.listdir("/run/netns"))


def test_servers_also_run_standalone(tmp_path):
    """`python -m lab.servers`, e.g. by hand in the VM, serves like the lab's forked servers."""
    server_ns, client_ns = lab.NetNS("srv"), lab.NetNS("cli")
    cmd(["ip", "link", "add", "veth0", "netns", server_ns.name, "type", "veth", "peer", "name", "veth0", "netns", client_ns.name])
    server_ns.ip_batch(["addr add 10.77.9.1/24 dev veth0", "link set veth0 up"])
    client_ns.ip_batch(["addr add 10.77.9.2/24 dev veth0", "link set veth0 up"])
    server = bkg(python_argv("-m", "lab.servers", "udp-echo", "--name", "solo", "--port", "5353"), server_ns,
                 log_path=tmp_path / "solo.log")
    lab.wait_until(lambda: server.check_running() or listening(server_ns, 5353, "udp"), 60, what="python -m lab.servers")
    assert client.udp_request(client_ns, "10.77.9.1", 5353) == "solo"
