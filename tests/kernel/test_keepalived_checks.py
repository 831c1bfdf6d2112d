"""keepalived health checks driving IPVS in the lab: the pattern the API-driven tests reuse."""

import pytest

import lab
from lab import client, ipvs, keepalived

pytestmark = pytest.mark.kernel

CONF = """
global_defs {{
    router_id {router_id}
}}

virtual_server {vip} 80 {{
    delay_loop 1
    lb_algo rr
    lb_kind NAT
    protocol TCP
{real_servers}
}}
"""

REAL_SERVER = """
    real_server {address} 80 {{
        weight 1
        TCP_CHECK {{
            connect_timeout 2
            retry 1
            delay_before_retry 1
        }}
    }}
"""


def test_tcp_check_removes_a_dead_backend_and_restores_it(tmp_path):
    net = lab.build("nat", backends=3, workdir=tmp_path)
    servers = [net.start_http(backend) for backend in net.backends]
    b1, b2, b3 = net.backend_addresses()
    conf = tmp_path / "keepalived.conf"
    conf.write_text(CONF.format(
        router_id=net.lb.role,
        vip=net.vip,
        real_servers="".join(REAL_SERVER.format(address=address) for address in (b1, b2, b3)),
    ))

    keepalived.start(net.lb, conf)
    ipvs.wait_for_real_servers(net.lb, net.vip, 80, [b1, b2, b3])

    servers[1].stop()
    ipvs.wait_for_real_servers(net.lb, net.vip, 80, [b1, b3], timeout=60)
    tally = client.http_requests(net.client, net.vip, 80, count=6)
    assert tally.failures == []
    assert tally.counts == {"b1": 3, "b3": 3}

    servers[1].start()
    ipvs.wait_for_real_servers(net.lb, net.vip, 80, [b1, b2, b3], timeout=60)
    tally = client.http_requests(net.client, net.vip, 80, count=6)
    assert tally.failures == []
    assert tally.counts == {"b1": 2, "b2": 2, "b3": 2}
