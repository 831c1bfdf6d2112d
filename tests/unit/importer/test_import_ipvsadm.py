"""ipvsadm rules into Fulcrum's model: the seed thesis's ten scripts and the rule syntax."""

from __future__ import annotations

from pathlib import Path

import pytest

from fulcrum.importer import ImportFormat, Outcome, import_text

SEED = Path(__file__).parent / "fixtures" / "seed"
SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq"]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_seed_script_imports_as_one_nat_service(scheduler: str) -> None:
    result = import_text(ImportFormat.AUTO, (SEED / f"{scheduler}.sh").read_text())
    assert result.format == "ipvsadm"
    [service] = result.services
    assert (service.name, str(service.address), service.ports) == ("202.103.106.5-80", "202.103.106.5", [80])
    assert service.scheduler.value == scheduler
    assert service.forwarding.value == "nat"
    assert service.health_check.type.value == "none"  # ipvsadm checks nothing; neither does the import
    assert [(str(b.address), b.port, b.weight) for b in service.backends] == [
        ("172.16.0.2", None, 1), ("172.16.0.3", None, 1), ("172.16.0.4", None, 1)
    ]
    outcomes = {(line.line, line.outcome) for line in result.report}
    assert (3, Outcome.CHANGED) in outcomes  # the name made from the address
    assert {line.line for line in result.report} == {2, 3, 4, 5, 6, 7}  # every non-comment line


SAVED = """\
-A -t 192.0.2.10:80 -s wrr -p 600 -M 255.255.255.0
-a -t 192.0.2.10:80 -r 198.51.100.1:8080 -m -w 3 -x 100 -y 50
-a -t 192.0.2.10:80 -r 198.51.100.2:8080 -m -w 0
-A -u [2001:db8::53]:53 -s sh -b sh-port,sh-fallback -o
-a -u [2001:db8::53]:53 -r [2001:db8:1::1]:53 -g -w 1
-A -t 192.0.2.20:443 -s rr
-a -t 192.0.2.20:443 -r 198.51.100.7:8443 -i
-E -t 192.0.2.20:443 -s lc
-e -t 192.0.2.20:443 -r 198.51.100.7:8443 -w 5
-A -f 7 -s rr
-A -t www.example.com:http -s rr
-D -t 192.0.2.10:80
"""


def test_saved_rules_import_with_every_option() -> None:
    result = import_text(ImportFormat.AUTO, SAVED)
    web, dns, tls = result.services
    assert web.name == "192.0.2.10-80"
    assert (web.scheduler.value, web.persistence_timeout, web.persistence_prefix) == ("wrr", 600, 24)
    assert [(b.port, b.weight, b.upper_threshold, b.lower_threshold) for b in web.backends] == [
        (8080, 3, 100, 50), (8080, 0, 0, 0)
    ]
    assert (dns.name, dns.protocol.value, dns.forwarding.value) == ("2001-db8--53-53-udp", "udp", "dr")
    assert dns.scheduler_port and dns.scheduler_fallback and dns.one_packet_scheduling
    # -E and -e edit what -A and -a added; TUN keeps the service port.
    assert (tls.scheduler.value, tls.forwarding.value) == ("lc", "tun")
    assert [(b.port, b.weight) for b in tls.backends] == [(None, 5)]
    skipped = {line.line: line.detail for line in result.report if line.outcome == Outcome.NOT_IMPORTED}
    assert set(skipped) == {10, 11, 12}
    assert "fwmark" in skipped[10]
    assert "ipvsadm -S -n" in skipped[11]
    assert "only rules that add or edit" in skipped[12]
    changed = {line.line: line.detail for line in result.report if line.outcome == Outcome.CHANGED}
    assert "port 8443 dropped" in changed[7]


def test_a_server_of_an_unknown_service_is_reported() -> None:
    result = import_text(ImportFormat.IPVSADM, "-a -t 192.0.2.1:80 -r 198.51.100.1 -m\n")
    assert result.services == []
    [line] = result.report
    assert (line.line, line.outcome) == (1, Outcome.NOT_IMPORTED)
    assert "no earlier -A rule" in line.detail


def test_ipvsadm_default_forwarding_is_direct_routing() -> None:
    result = import_text(ImportFormat.IPVSADM, "ipvsadm -A -t 192.0.2.1:80\nipvsadm -a -t 192.0.2.1:80 -r 198.51.100.1\n")
    [service] = result.services
    assert (service.forwarding.value, service.scheduler.value) == ("dr", "wlc")
