"""Schemathesis over every operation of the real API: uvicorn on a fresh database, as an admin.

`python tests/fuzz/run_fuzz.py --max-examples N` runs it (make fuzz: the full budget); the test
in test_schemathesis.py runs it with a short one. Exit status: schemathesis's (0: no failure).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/, for lab
from lab.passwords import FAST_PASSWORD_HASHING  # noqa: E402

PASSWORD = "fuzzer's own passphrase"
SEED = 1313

# Excluded operations, each for a reason other than passing:
# - GET /stream is a Server-Sent Events stream that never ends: a fuzzer waits for its body.
# - POST /ha/pair connects to the peer_url in the body: the fuzzer would make the appliance
#   open connections to any address it generates (this machine may reach only itself).
# - POST /alerts/channels/{id}/test sends to the channel's server, for the same reason.
# - GET /logs/stream is the journal's live tail, an event stream like /stream.
# - The diagnostics tools (ping, traceroute, TCP connect, HTTP GET) reach the address in the body,
#   for the same reason as /ha/pair, and run for seconds each (a traceroute up to a minute); a
#   capture runs tcpdump for up to a minute. tests/api/test_diagnostics.py sends them every kind
#   of hostile argument instead.
EXCLUDED = [
    "telemetry-stream", "ha-pair", "alerts-test_channel", "logs-tail_logs",
    "diagnostics-ping", "diagnostics-traceroute", "diagnostics-tcp_connect", "diagnostics-http_get",
    "diagnostics-capture",
]  # operation ids


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_api(data: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "FULCRUM_DATA_DIR": str(data),
        "FULCRUM_APPLY_MODE": "local",
        "FULCRUM_COOKIE_SECURE": "false",
        "FULCRUM_STATS_INTERVAL": "0",
        "FULCRUM_HA_SYNC_INTERVAL": "0",
        "FULCRUM_REAPPLY_ON_START": "false",
        "FULCRUM_ALERT_POLL_SECONDS": "0",  # no alerts sent to the addresses the fuzzer makes up
        **FAST_PASSWORD_HASHING,
    }
    command = [sys.executable, "-m", "uvicorn", "fulcrum.main:create_app", "--factory",
               "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(command, env=env, cwd=data)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError("the API did not start")
        time.sleep(0.2)


def admin_token(base: str) -> tuple[str, str, str]:
    """First-run setup, then an API token: logging out (fuzzed too) ends sessions, not tokens."""
    setup = httpx.post(f"{base}/setup", json={"username": "fuzzer", "password": PASSWORD}, timeout=30)
    setup.raise_for_status()
    session = {"Authorization": f"Bearer {setup.json()['token']}"}
    created = httpx.post(f"{base}/tokens", json={"name": "fuzzer"}, headers=session, timeout=30)
    created.raise_for_status()
    return created.json()["token"], str(setup.json()["user"]["id"]), str(created.json()["id"])


def run(max_examples: int, report_dir: Path, extra: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="fulcrum-fuzz-") as temp:
        port = free_port()
        server = start_api(Path(temp), port)
        try:
            base = f"http://127.0.0.1:{port}/api/v1"
            token, user_id, token_id = admin_token(base)
            exclusions = [arg for operation in EXCLUDED for arg in ("--exclude-operation-id", operation)]
            command = [
                str(Path(sys.executable).with_name("schemathesis")), "run", f"{base}/openapi.json",
                "--url", f"http://127.0.0.1:{port}",
                "--checks", "all",
                # Not positive_data_acceptance: it expects every schema-valid request to succeed,
                # and this API has rules across fields and objects that OpenAPI cannot state (a
                # backend's family must match its service's, a listener may be served once, the
                # current password must be right); those are a 422 naming the field.
                "--exclude-checks", "positive_data_acceptance",
                "--phases", "examples,coverage,fuzzing,stateful",
                "--max-examples", str(max_examples),
                "--seed", str(SEED),
                "--generation-deterministic",
                "--request-timeout", "60",
                "--workers", "1",
                "--report", "junit,ndjson",
                "--report-dir", str(report_dir),
                "--no-color",
                *exclusions,
                *extra,
            ]
            env = {**os.environ, "SCHEMATHESIS_HOOKS": "fuzz_hooks", "PYTHONPATH": str(HERE),
                   "FULCRUM_FUZZ_USER_ID": user_id, "FULCRUM_FUZZ_TOKEN_ID": token_id, "FULCRUM_FUZZ_ADMIN_TOKEN": token,
                   "FULCRUM_FUZZ_CONSOLE_TOKEN": (Path(temp) / "console-token").read_text().strip()}
            result = subprocess.run(command, env=env, check=False)
            # The fuzzer must still be itself at the end, or the later checks proved nothing.
            me = httpx.get(f"{base}/auth/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
            if me.status_code != 200 or me.json()["role"] != "admin":
                print(f"fuzz: the fuzzer lost its admin access ({me.status_code} {me.text[:200]})", file=sys.stderr)
                return 1
            return result.returncode
        finally:
            server.terminate()
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--report-dir", type=Path, default=Path("fuzz-report"))
    args, extra = parser.parse_known_args()
    sys.exit(run(args.max_examples, args.report_dir, extra))


if __name__ == "__main__":
    main()
