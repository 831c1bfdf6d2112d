"""The benchmark's readers of httperf, wrk and /proc/net/ip_vs, on the tools' real output.

outputs/: httperf-ok.txt and wrk-ok.txt come from a `make bench` run in the VM lab
(bench-results/20261122T003317Z/data/raw); httperf-refused.txt is httperf against a closed port,
wrk-errors.txt wrk against a server that resets every fifth request and answers 503 to every
third; ip_vs.txt is /proc/net/ip_vs of the VM lab's LB (TCP, fwmark and IPv6 services).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the bench package

from bench import ipvsproc  # noqa: E402
from bench.clients import parse_httperf, parse_wrk, percentile  # noqa: E402

OUTPUTS = Path(__file__).with_name("outputs")


def output(name: str) -> str:
    return (OUTPUTS / name).read_text()


def test_httperf_totals_errors_and_latency_from_its_histogram() -> None:
    result = parse_httperf(output("httperf-ok.txt"), client="c1", rate=6.66667)
    assert (result.connections, result.requests, result.replies, result.status_2xx) == (20, 20, 20, 20)
    assert result.duration == pytest.approx(2.996)
    assert result.reply_rate == pytest.approx(20 / 2.996)
    assert result.net_io_kbs == pytest.approx(0.9)
    assert result.reply_ms_mean == pytest.approx(155.8)
    assert result.errors["fd-unavail"] == 0 and result.errors["total"] == 0
    # 20 lifetimes in 1 ms bins (the colon lines are runs of empty bins): the 10th is 80.5 ms,
    # read as its bin's upper edge; the 20th, the p99, 819.5 ms.
    assert sum(result.histogram.values()) == 20
    assert result.histogram[3] == 2 and result.histogram[819] == 1
    assert (result.conn_ms_median, result.conn_ms_p99) == (81.0, 820.0)


def test_httperf_counts_refused_connections_and_has_no_latency_without_replies() -> None:
    result = parse_httperf(output("httperf-refused.txt"))
    assert (result.connections, result.replies) == (10, 0)
    assert result.errors["connrefused"] == 10 and result.errors["total"] == 10 and result.errors["fd-unavail"] == 0
    assert result.conn_ms_median is None and result.conn_ms_p99 is None


def test_httperf_output_without_its_error_lines_is_refused() -> None:
    # The fd-unavail count is the seed's flaw this benchmark exists to rule out: never assume 0.
    text = "\n".join(line for line in output("httperf-ok.txt").splitlines() if not line.startswith("Errors:"))
    with pytest.raises(ValueError, match="fd-unavail"):
        parse_httperf(text)
    with pytest.raises(ValueError, match="Total: connections"):
        parse_httperf("httperf: connection failed\n")


def test_wrk_requests_rate_transfer_and_latency_percentiles() -> None:
    result = parse_wrk(output("wrk-ok.txt"), client="c1", connections=8)
    assert result.requests == 79 and result.duration == pytest.approx(2.73)
    assert result.requests_per_s == pytest.approx(79 / 2.73)
    assert result.transfer_kbs == pytest.approx(7.71 / 2.73)
    assert result.latency_ms == {"50": 52.13, "75": 177.71, "90": 459.20, "99": 787.61}
    assert result.errors == {"connect": 0, "read": 0, "write": 0, "timeout": 0, "non2xx": 0}


def test_wrk_socket_errors_non_2xx_and_microsecond_latencies() -> None:
    result = parse_wrk(output("wrk-errors.txt"))
    assert result.requests == 6338 and result.duration == pytest.approx(1.0)
    assert result.errors == {"connect": 0, "read": 1585, "write": 0, "timeout": 0, "non2xx": 2112}
    assert result.latency_ms["50"] == pytest.approx(0.284)
    with pytest.raises(ValueError, match="requests in"):
        parse_wrk("unable to connect to 127.0.0.1:9 Connection refused\n")


def test_percentile_of_merged_histograms_reads_the_upper_edge() -> None:
    assert percentile({1: 50, 9: 49, 99: 1}, 0.5) == 2.0
    assert percentile({1: 50, 9: 49, 99: 1}, 0.99) == 10.0
    assert percentile({}, 0.5) is None


def test_proc_net_ip_vs_services_real_servers_and_weights() -> None:
    table = ipvsproc.parse(output("ip_vs.txt"))
    assert table["TCP 10.77.0.100:80"] == {"10.77.1.21:80": 2, "10.77.1.22:80": 1, "10.77.1.23:80": 0}
    assert table["FWM 10"] == {"10.77.1.21:0": 1}
    assert table["TCP [fd77::100]:8086"] == {"[fd77::21]:8086": 1, "[fd77::22]:8086": 1}
    assert sum(len(reals) for reals in table.values()) == 6
    assert ipvsproc.count_real_servers(output("ip_vs.txt")) == 6


def test_one_real_servers_weight_is_found_in_its_own_service_only() -> None:
    text = output("ip_vs.txt")
    service = ("TCP", "10.77.0.100", 80)
    assert ipvsproc.weight_in(text, service, ("10.77.1.21", 80)) == 2
    assert ipvsproc.weight_in(text, service, ("10.77.1.23", 80)) == 0
    assert ipvsproc.weight_in(text, service, ("10.77.1.24", 80)) is None
    # 10.77.1.21 is also in the fwmark service listed after it, but not on port 80 there.
    assert ipvsproc.weight_in(text, ("TCP", "10.77.0.100", 443), ("10.77.1.21", 80)) is None
    assert ipvsproc.weight_in(text, ("TCP", "10.77.0.100", 80), ("10.77.1.21", 0)) is None
