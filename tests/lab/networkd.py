"""A real systemd-networkd in private namespaces on this host, for the network daemon's tests.

networkd runs in its own network, mount and UTS namespaces: a private system bus (networkctl talks
D-Bus), sysfs mounted read-only (networkd then does not wait for udev, as in a container), and its
runtime directory bind-mounted from the test's temporary directory, where the daemon copies its
files as it copies them to /run/systemd/network on the appliance. Commands (networkctl, ip,
hostname) reach it through `nsenter` (`Networkd.prefix`). Veth pairs stand in for NICs
(nic0, nic1, ...; their peers are up so they have a carrier).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.wait import wait_until

NETWORKD = Path("/usr/lib/systemd/systemd-networkd")

# Runs inside the new namespaces: $1 is the runtime directory to bind onto /run/systemd/network,
# $2 the number of veth NICs (nic0, nic1, ...).
_SETUP = """
set -e
mount -t sysfs -o ro sysfs /sys
for dir in /run/systemd /run/udev /run/dbus; do mkdir -p "$dir"; mount -t tmpfs tmpfs "$dir"; done
mkdir -p /run/systemd/netif /run/systemd/network
mount --bind "$1" /run/systemd/network
chown systemd-network:systemd-network /run/systemd/netif
ip link set lo up
n=0
while [ "$n" -lt "$2" ]; do ip link add "nic$n" type veth peer name "peer$n"; ip link set "peer$n" up; n=$((n + 1)); done
dbus-daemon --system --fork --nopidfile
exec /usr/lib/systemd/systemd-networkd
"""


@dataclass
class Networkd:
    prefix: tuple[str, ...]
    runtime: Path
    directory: Path
    macs: dict[str, str]

    def ip(self, *argv: str) -> list[dict[str, Any]]:
        done = subprocess.run([*self.prefix, "ip", "-j", *argv], capture_output=True, text=True, check=True)
        parsed: list[dict[str, Any]] = json.loads(done.stdout or "[]")
        return parsed

    def addresses(self, name: str) -> set[str]:
        return {f"{a['local']}/{a['prefixlen']}" for e in self.ip("addr", "show", "dev", name) for a in e["addr_info"]}

    def networkctl(self, *argv: str) -> str:
        return subprocess.run([*self.prefix, "networkctl", *argv], capture_output=True, text=True, check=True).stdout

    def hostname(self) -> str:
        return subprocess.run([*self.prefix, "hostname"], capture_output=True, text=True, check=True).stdout.strip()


def available() -> bool:
    return NETWORKD.exists() and shutil.which("dbus-daemon") is not None and os.geteuid() == 0


@contextmanager
def private_networkd(tmp_path: Path, nics: int = 2) -> Iterator[Networkd]:
    runtime, directory = tmp_path / "run-network", tmp_path / "data-network"
    runtime.mkdir()
    log = (tmp_path / "networkd.log").open("w")  # networkd's own words, for a failing test
    process = subprocess.Popen(
        ["unshare", "--net", "--mount", "--uts", "--propagation", "private", "sh", "-c", _SETUP, "sh", str(runtime), str(nics)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        prefix = ("nsenter", "--target", str(process.pid), "--net", "--mount", "--uts")
        wait_until(
            lambda: subprocess.run([*prefix, "networkctl", "list"], capture_output=True, check=False).returncode == 0,
            30,
            what="networkd answering networkctl in its namespace",
        )
        probe = Networkd(prefix, runtime, directory, {})
        macs = {link["ifname"]: link["address"] for link in probe.ip("link", "show")}
        yield Networkd(prefix, runtime, directory, macs)
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # networkd and the bus it started, in their group
        process.wait(timeout=30)
        log.close()
