"""A real systemd-networkd in private namespaces on this host, for the network daemon's tests.

networkd runs in its own network, mount and UTS namespaces: a private system bus (networkctl talks
D-Bus), sysfs mounted read-only (networkd then does not wait for udev, as in a container), and its
runtime directory bind-mounted from the test's temporary directory, where the daemon copies its
files as it copies them to /run/systemd/network on the appliance. Commands (networkctl, ip,
hostname) reach it through `nsenter` (`Networkd.prefix`). Veth pairs stand in for NICs
(nic0, nic1, ...; their peers are up so they have a carrier). The peers stay in networkd's
namespace, or go to a named one (`peers_netns`: the far end of the links, e.g. a switch or a
gateway), which must exist before networkd starts (its mount namespace is a copy of this one).

The same harness runs in the kernel VM (tests/kernel/test_network.py), where bonding and 8021q
exist. networkd is ready once it owns its bus name: `networkctl list` answers without it (it reads
rtnetlink), and a later `networkctl reload` would then make dbus-daemon try to activate it
("Launch helper exited"). If networkd exits first, its own words say why.
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

from fulcrum.apply.daemons.networkd import NetworkdDaemon
from fulcrum.apply.engine import ApplyEngine, EngineConfig
from fulcrum.config.snapshot import ConfigSnapshot

from lab.wait import StopWaiting, wait_until

NETWORKD = Path("/usr/lib/systemd/systemd-networkd")
# Asks the bus, without activating anything, whether networkd holds its name.
_NAME_HAS_OWNER = ("busctl", "--system", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                   "org.freedesktop.DBus", "NameHasOwner", "s", "org.freedesktop.network1")

# Runs inside the new namespaces: $1 is the runtime directory to bind onto /run/systemd/network,
# $2 the number of veth NICs (nic0, nic1, ...), $3 the namespace for their peers ("": this one).
_SETUP = """
set -e
mount -t sysfs -o ro sysfs /sys
for dir in /run/systemd /run/udev /run/dbus; do mkdir -p "$dir"; mount -t tmpfs tmpfs "$dir"; done
mkdir -p /run/systemd/netif /run/systemd/network
mount --bind "$1" /run/systemd/network
chown systemd-network:systemd-network /run/systemd/netif
ip link set lo up
n=0
while [ "$n" -lt "$2" ]; do
    if [ -n "$3" ]; then
        ip link add "nic$n" type veth peer name "peer$n" netns "$3"
        ip -n "$3" link set "peer$n" up
    else
        ip link add "nic$n" type veth peer name "peer$n"
        ip link set "peer$n" up
    fi
    n=$((n + 1))
done
dbus-daemon --system --fork --nopidfile
exec /usr/lib/systemd/systemd-networkd
"""


@dataclass
class Networkd:
    prefix: tuple[str, ...]
    runtime: Path
    directory: Path
    macs: dict[str, str]
    log: Path  # networkd's own output (and the bus's)

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
def private_networkd(tmp_path: Path, nics: int = 2, peers_netns: str = "") -> Iterator[Networkd]:
    runtime, directory, log_path = tmp_path / "run-network", tmp_path / "data-network", tmp_path / "networkd.log"
    runtime.mkdir()
    log = log_path.open("w")  # networkd's own words, for a failing test
    process = subprocess.Popen(
        ["unshare", "--net", "--mount", "--uts", "--propagation", "private", "sh", "-c", _SETUP, "sh", str(runtime),
         str(nics), peers_netns],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        prefix = ("nsenter", "--target", str(process.pid), "--net", "--mount", "--uts")

        def on_the_bus() -> bool:
            if process.poll() is not None:
                raise StopWaiting(f"networkd's namespace exited ({process.returncode}): {log_path.read_text()[-2000:]}")
            owner = subprocess.run([*prefix, *_NAME_HAS_OWNER], capture_output=True, text=True, check=False)
            return owner.stdout.strip() == "b true"

        wait_until(on_the_bus, 60, what="networkd owning org.freedesktop.network1 on its private bus", interval=0.3)
        probe = Networkd(prefix, runtime, directory, {}, log_path)
        macs = {link["ifname"]: link["address"] for link in probe.ip("link", "show")}
        yield Networkd(prefix, runtime, directory, macs, log_path)
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # networkd and the bus it started, in their group
        process.wait(timeout=30)
        log.close()


def snapshot(network: dict[str, Any] | None) -> ConfigSnapshot:
    """A snapshot holding `network` (None: not managed), as the API's commit would hand it over."""
    vrrp = network["management_interface"] if network else "nic0"
    return ConfigSnapshot.model_validate({"node": {"vrrp_interface": vrrp}, "network": network})


def engine(workdir: Path, daemon: NetworkdDaemon) -> ApplyEngine:
    """The apply engine with networkd as its only daemon (keepalived's paths unused)."""
    config = EngineConfig(
        state_dir=workdir / "state",
        keepalived_conf=workdir / "keepalived.conf",
        nftables_file=workdir / "fulcrum.nft",
        keepalived_pidfile=workdir / "keepalived.pid",
        keepalived_start=("false",),
    )
    return ApplyEngine(config, [daemon])
