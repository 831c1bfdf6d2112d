"""Benchmarks in the kernel-rig VM (tests/bench/run-bench): real IPVS, keepalived and Fulcrum's API.

Like tests/kernel: tests/ on sys.path (so `lab` imports), a cleanup scope around every test, and a
session-wide lab and appliance that every benchmark module shares (the API takes minutes to start
in the emulated VM). Each benchmark writes its measurements as JSON into --bench-out; the host
turns them into report.md and plots (tests/bench/report.py).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: lab and bench

import lab  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "bench_part(name): which part of the benchmark a test is (--bench-only)")
    for setting in config.getoption("--bench-env"):
        key, _, value = setting.partition("=")
        os.environ[key] = value


def pytest_addoption(parser):
    parser.addoption("--bench-out", default=None, help="folder for the benchmarks' JSON results")
    parser.addoption("--bench-scale", type=float, default=1.0,
                     help="multiply every measured duration (1.0: the stated budget; 0.2: a quick check)")
    parser.addoption("--bench-only", default="", help="comma-separated parts to run (schedulers,health,...)")
    parser.addoption("--bench-schedulers", default="", help="comma-separated schedulers (default: all of them)")
    parser.addoption("--bench-env", action="append", default=[], metavar="KEY=VALUE",
                     help="set an environment variable in the VM before the benchmarks are imported "
                          "(the VM does not inherit the host's environment; ha_failover.py reads its settings there)")


@pytest.fixture(scope="session", autouse=True)
def raised_fd_limit():
    """Clients inherit this: 1,048,576 open files, so a client never runs out of descriptors
    (httperf still stops at FD_SETSIZE, 1024 per process, which its fd-unavail count proves)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1 << 20
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(hard, wanted)))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture(autouse=True)
def cleanup_scope(request):
    with lab.scope(request.node.nodeid) as scope:
        yield scope


@pytest.fixture(scope="session")
def bench_out(request) -> Path:
    out = request.config.getoption("--bench-out")
    if not out:
        pytest.skip("no --bench-out: run the benchmarks with tests/bench/run-bench (make bench)")
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def env(request, bench_out, tmp_path_factory, raised_fd_limit):
    """One lab and one appliance for every benchmark (the API's start-up costs minutes here)."""
    from bench import benchlab, results

    with lab.scope("bench session"):
        started = time.monotonic()
        setup = benchlab.start(tmp_path_factory.mktemp("bench"), bench_out, request.config.getoption("--bench-scale"))
        setup.schedulers = [s for s in request.config.getoption("--bench-schedulers").split(",") if s]
        results.save(bench_out, "conditions", {
            **benchlab.conditions(),
            "scale": setup.scale,
            "api_start_seconds": round(setup.api_start_seconds, 1),
            "api_settings": {"FULCRUM_STATS_INTERVAL": benchlab.STATS_INTERVAL,
                             "FULCRUM_READBACK_TIMEOUT": benchlab.READBACK_TIMEOUT},
            "lab_and_api_seconds": round(time.monotonic() - started, 1),
        })
        yield setup


def pytest_collection_modifyitems(config, items):
    """Keep the benchmarks in file order (their priority) and honour --bench-only."""
    only = {part for part in config.getoption("--bench-only").split(",") if part}
    if not only:
        return
    skip = pytest.mark.skip(reason="not in --bench-only")
    for item in items:
        part = item.get_closest_marker("bench_part")
        if part and part.args[0] not in only:
            item.add_marker(skip)
