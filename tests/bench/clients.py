"""The load generators, run inside lab namespaces: httperf (the seed thesis's tool) and wrk.

Both are Debian's binaries, started with `ip netns exec` so they run in a client host's namespace
and inherit the raised open-file limit (conftest.py). Several clients run at once, one process per
client host (each host its own address), and their reports are parsed from the tools' own output:
nothing here measures time itself.

httperf is open-loop: it opens --rate new connections per second whatever the server does, one
request each (--num-calls 1, as the seed did), and reports its own errors, fd-unavail among them.
Run with --verbose twice it prints a histogram of connection lifetimes in 1 ms bins, from which the
median and p99 come (its "Reply time" line is only a mean).

wrk is closed-loop: a fixed number of connections, each sending the next request as soon as the
last is answered. With `Connection: close` every request is a new connection (what a scheduler
decides on); without it, connections are kept alive (the seed dissertation's wrk runs). --latency
prints its latency percentiles.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from functools import partial

from lab.cmd import lab_env
from lab.netns import enter

# --- httperf -------------------------------------------------------------------------------------


@dataclass
class HttperfResult:
    client: str
    rate: float  # offered connections per second (this process)
    duration: float  # test-duration [s], httperf's own
    connections: int
    requests: int
    replies: int
    reply_rate: float  # replies per second over the test duration
    net_io_kbs: float  # "Net I/O" [KB/s], the seed's throughput figure
    reply_ms_mean: float  # "Reply time [ms]: response"
    conn_ms_median: float | None  # from the lifetime histogram
    conn_ms_p99: float | None
    status_2xx: int
    errors: dict[str, int]  # total, client-timo, socket-timo, connrefused, connreset, fd-unavail, ...
    histogram: dict[int, int] = field(default_factory=dict)  # connection lifetime ms bin -> count

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("histogram")
        return data


_NUM = r"([-\d.]+)"


def parse_httperf(text: str, *, client: str = "", rate: float = 0.0) -> HttperfResult:
    """httperf's report (with --verbose) as numbers; ValueError naming the line that is missing."""

    def find(pattern: str) -> re.Match:
        found = re.search(pattern, text, re.MULTILINE)
        if not found:
            raise ValueError(f"httperf output lacks /{pattern}/:\n{text[-2000:]}")
        return found

    total = find(rf"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration {_NUM} s")
    errors = {}
    for line in re.findall(r"^Errors: (.*)$", text, re.MULTILINE):
        for name, value in re.findall(r"([a-z-]+) (\d+)", line):
            errors[name] = int(value)
    if "fd-unavail" not in errors:
        raise ValueError(f"httperf output lacks its fd-unavail count:\n{text[-2000:]}")
    histogram = _lifetime_histogram(text)
    duration = float(total[4])
    replies = int(total[3])
    return HttperfResult(
        client=client,
        rate=rate,
        duration=duration,
        connections=int(total[1]),
        requests=int(total[2]),
        replies=replies,
        reply_rate=replies / duration if duration > 0 else 0.0,
        net_io_kbs=float(find(rf"^Net I/O: {_NUM} KB/s")[1]),
        reply_ms_mean=float(find(rf"^Reply time \[ms\]: response {_NUM}")[1]),
        conn_ms_median=_percentile(histogram, 0.50),
        conn_ms_p99=_percentile(histogram, 0.99),
        status_2xx=int(find(r"^Reply status: 1xx=\d+ 2xx=(\d+)")[1]),
        errors=errors,
        histogram=histogram,
    )


def _lifetime_histogram(text: str) -> dict[int, int]:
    """The "Connection lifetime histogram (time in ms)" block: lines of "<ms> <count>"."""
    start = text.find("Connection lifetime histogram")
    if start < 0:
        return {}
    histogram: dict[int, int] = {}
    for line in text[start:].splitlines()[1:]:
        parts = line.split()
        if parts == [":"]:  # httperf marks a run of empty bins with a colon
            continue
        if len(parts) != 2 or not all(p.replace(".", "", 1).isdigit() for p in parts):
            break
        histogram[int(float(parts[0]))] = int(parts[1])  # the bin's centre, e.g. 12.5 for 12-13 ms
    return histogram


def _percentile(histogram: dict[int, int], q: float) -> float | None:
    """The q-quantile of a 1 ms-bin histogram (the bin's upper edge, a conservative read)."""
    total = sum(histogram.values())
    if not total:
        return None
    seen = 0
    for ms in sorted(histogram):
        seen += histogram[ms]
        if seen >= q * total:
            return float(ms + 1)
    return float(max(histogram) + 1)


def merge_histograms(histograms: list[dict[int, int]]) -> dict[int, int]:
    merged: dict[int, int] = {}
    for histogram in histograms:
        for ms, count in histogram.items():
            merged[ms] = merged.get(ms, 0) + count
    return merged


def percentile(histogram: dict[int, int], q: float) -> float | None:
    return _percentile(histogram, q)


HTTPERF_NICE = 10


def httperf_argv(server: str, port: int, *, rate: float, seconds: float, timeout: float = 5, uri: str = "/") -> list[str]:
    """The seed's command line (--hog, one call per connection, --timeout 5), for `seconds` at `rate`.

    httperf polls in a busy loop (the seed's runs show it at 90 % system CPU): on the VM's two
    emulated CPUs three of them would take the CPU from the LB and the backends they measure. At
    nice 10 they take every idle cycle but get about a tenth of a contended CPU; at nice 19 they were
    starved outright while the API polled IPVS, and timed their own waiting.
    """
    return [
        "httperf", "--hog", "--verbose", "--verbose", "--server", server, "--port", str(port), "--uri", uri,
        "--rate", f"{rate:g}", "--num-conns", str(max(1, round(rate * seconds))), "--num-calls", "1",
        "--timeout", f"{timeout:g}",
    ]  # fmt: skip


# --- wrk -----------------------------------------------------------------------------------------


@dataclass
class WrkResult:
    client: str
    connections: int
    duration: float  # seconds, wrk's own
    requests: int
    requests_per_s: float
    transfer_kbs: float
    latency_ms: dict[str, float]  # "50", "75", "90", "99" -> ms
    errors: dict[str, int]  # connect, read, write, timeout, non2xx

    def to_json(self) -> dict:
        return asdict(self)


_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
_UNIT_KB = {"B": 1 / 1024, "KB": 1.0, "MB": 1024.0, "GB": 1024.0 * 1024}


def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()  # type: ignore[union-attr]
    return float(number) * _UNIT_MS[unit]


def parse_wrk(text: str, *, client: str = "", connections: int = 0) -> WrkResult:
    total = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)(B|KB|MB|GB) read", text, re.MULTILINE)
    if not total:
        raise ValueError(f"wrk output lacks its 'N requests in T' line:\n{text[-2000:]}")
    latency = {q: _ms(v) for q, v in re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", text, re.MULTILINE)}
    errors = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "non2xx": 0}
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if socket_errors:
        errors.update(zip(("connect", "read", "write", "timeout"), map(int, socket_errors.groups()), strict=True))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if non2xx:
        errors["non2xx"] = int(non2xx[1])
    duration = float(total[2]) * _UNIT_MS[total[3]] / 1000
    requests = int(total[1])
    return WrkResult(
        client=client,
        connections=connections,
        duration=duration,
        requests=requests,
        requests_per_s=requests / duration if duration else 0.0,
        transfer_kbs=float(total[4]) * _UNIT_KB[total[5]] / duration if duration else 0.0,
        latency_ms=latency,
        errors=errors,
    )


def wrk_argv(url: str, *, connections: int, seconds: float, threads: int = 1, close: bool = False,
             timeout: float = 5, script: str | None = None) -> list[str]:
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds:g}s", "--latency",
            "--timeout", f"{timeout:g}s"]
    if close:
        argv += ["-H", "Connection: close"]
    if script:
        argv += ["-s", script]
    return [*argv, url]


# --- running them in parallel ----------------------------------------------------------------------


@dataclass
class Run:
    host: object
    argv: list[str]
    nice: int = 0
    process: subprocess.Popen | None = None
    started: float = 0.0
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


def _enter(host, nice: int) -> None:
    enter(host)
    if nice:
        os.nice(nice)


def run_parallel(runs: list[Run], *, timeout: float) -> list[Run]:
    """Start every run (each in its host's namespace) at once; wait for all; RuntimeError on a
    non-zero exit (with its output) or after `timeout`."""
    for run in runs:
        run.started = time.monotonic()
        # Join the namespace and lower the priority between fork and exec: one program start
        # instead of `ip netns exec` + `nice` + the tool (each start costs 0.3-1 s in the VM).
        run.process = subprocess.Popen(run.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       env=lab_env(), preexec_fn=partial(_enter, run.host, run.nice))
    deadline = time.monotonic() + timeout
    failures = []
    for run in runs:
        assert run.process is not None
        try:
            run.stdout, run.stderr = run.process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            run.process.kill()
            run.stdout, run.stderr = run.process.communicate()
            failures.append(f"timed out after {timeout:g} s: {' '.join(run.argv)}")
        run.seconds = time.monotonic() - run.started
        if run.process.returncode not in (0, None) and not failures:
            failures.append(f"exit {run.process.returncode}: {' '.join(run.argv)}\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
    if failures:
        raise RuntimeError("\n".join(failures))
    return runs
