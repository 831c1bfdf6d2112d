"""Real FRR daemons (zebra, bgpd, bfdd) in private namespaces on this host, for the BGP tests.

Each `FrrHost` is a network namespace with its own mount namespace, where FRR's runtime directory
(/var/run/frr: vty sockets, zserv.api, pid files) is a fresh tmpfs and /etc/frr is bind-mounted
from the test's directory, so vtysh and frr-reload.py reach exactly this host's daemons with their
default paths, as on the appliance. Commands reach it through `nsenter` (`FrrHost.prefix`). The
daemons run in the foreground under one shell in a process group of its own, which cleanup ends.
BGP needs no IPVS, so this runs on the host, not in the kernel VM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.wait import wait_until

FRR_BIN = Path("/usr/lib/frr")
DAEMONS = ("zebra", "bgpd", "bfdd")

# Runs inside the new namespaces: $1 is the directory to bind onto /etc/frr.
_SETUP = """
set -e
mkdir -p /var/run/frr
mount -t tmpfs tmpfs /var/run/frr
chown frr:frr /var/run/frr
mount --bind "$1" /etc/frr
ip link set lo up
for daemon in {daemons}; do /usr/lib/frr/$daemon -A 127.0.0.1 -f /etc/frr/frr.conf --log stdout & done
wait
""".format(daemons=" ".join(DAEMONS))


@dataclass
class FrrHost:
    name: str
    pid: int
    prefix: tuple[str, ...]
    etc: Path

    def run(self, *argv: str) -> str:
        done = subprocess.run([*self.prefix, *argv], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, f"{self.name}: {' '.join(argv)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def vtysh_json(self, command: str) -> Any:
        return json.loads(self.run("vtysh", "-c", command) or "{}")

    def routes(self, destination: str) -> list[dict[str, Any]]:
        parsed: list[dict[str, Any]] = json.loads(self.run("ip", "-j", "route", "show", destination) or "[]")
        return parsed


def available() -> bool:
    return all((FRR_BIN / d).exists() for d in DAEMONS) and shutil.which("vtysh") is not None and os.geteuid() == 0


@contextmanager
def frr_host(directory: Path, name: str, netns: str | None = None) -> Iterator[FrrHost]:
    """A namespace running zebra, bgpd and bfdd with no configuration yet: a new network namespace,
    or the named one (`ip netns`) of a lab host, which then runs FRR beside its other processes."""
    etc = directory / name
    etc.mkdir()
    shutil.copy("/etc/frr/vtysh.conf", etc / "vtysh.conf")
    (etc / "frr.conf").write_text("")
    shutil.chown(etc, "frr", "frr")
    for item in etc.iterdir():
        shutil.chown(item, "frr", "frr")
    log = (directory / f"{name}.log").open("w")  # the daemons' own words, for a failing test
    network = ["--net"] if netns is None else []
    enter = [] if netns is None else ["nsenter", f"--net=/run/netns/{netns}"]
    process = subprocess.Popen(
        [*enter, "unshare", *network, "--mount", "--propagation", "private", "sh", "-c", _SETUP, "sh", str(etc)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        prefix = ("nsenter", "--target", str(process.pid), "--net", "--mount")
        host = FrrHost(name, process.pid, prefix, etc)

        def all_daemons_answer() -> bool:
            done = subprocess.run([*prefix, "vtysh", "-c", "show daemons"], capture_output=True, text=True, check=False)
            return done.returncode == 0 and all(d in done.stdout.split() for d in DAEMONS)

        def bgpd_and_bfdd_joined_zebra() -> bool:
            # bgpd asks bfdd for its sessions through zebra: a neighbor configured before bfdd
            # has joined zebra got no BFD session at all in about one run in three here.
            done = subprocess.run(
                [*prefix, "vtysh", "-c", "show zebra client summary"], capture_output=True, text=True, check=False
            )
            clients = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
            return done.returncode == 0 and {"bgp", "bfd"} <= clients

        wait_until(all_daemons_answer, 30, what=f"{name}: zebra, bgpd and bfdd answering vtysh")
        wait_until(bgpd_and_bfdd_joined_zebra, 30, what=f"{name}: bgpd and bfdd connected to zebra")
        yield host
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the shell and the daemons, in their group
        process.wait(timeout=30)
        log.close()


def link(a: FrrHost, a_name: str, a_address: str, b: FrrHost, b_name: str, b_address: str) -> None:
    """A veth between two hosts, both ends addressed (e.g. "10.0.1.254/24") and up."""
    a.run("ip", "link", "add", a_name, "type", "veth", "peer", "name", b_name, "netns", str(b.pid))
    a.run("ip", "address", "add", a_address, "dev", a_name)
    a.run("ip", "link", "set", a_name, "up")
    b.run("ip", "address", "add", b_address, "dev", b_name)
    b.run("ip", "link", "set", b_name, "up")


@contextmanager
def frr_hosts(directory: Path, *names: str, netns: Mapping[str, str] | None = None) -> Iterator[dict[str, FrrHost]]:
    """Several hosts (`netns`: a lab host's namespace for some of them), started side by side:
    each waits seconds for its daemons to answer, most of it idle. Every one that started is
    stopped at the end, even if another failed to start (the pool waits for every start before
    the stack unwinds)."""
    with ExitStack() as stack:

        def start(name: str) -> FrrHost:
            return stack.enter_context(frr_host(directory, name, netns=(netns or {}).get(name)))

        with ThreadPoolExecutor(len(names)) as pool:
            started = list(pool.map(start, names))
        yield dict(zip(names, started, strict=True))
