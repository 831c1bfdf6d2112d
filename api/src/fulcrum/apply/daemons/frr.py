"""FRR (bgpd, bfdd, zebra) as a managed daemon: this node's BGP announcements of the VIPs.

render writes the integrated frr.conf (fulcrum.render.frr) as FILE.new; validate runs `vtysh -C`
on it, FRR's own parser with every daemon's grammar; install keeps FILE.prev; load sets IPVS's
sloppy TCP/SCTP (`_take_flows_mid_way`) and runs FRR's `frr-reload.py --reload`, which compares
the file with the daemons' running configuration and sends only the difference through vtysh, so
a change (a VIP more, a community, a withdrawal) leaves established BGP sessions and BFD up, where
restarting bgpd or replaying the whole file would drop or reset them; verify reads back from
bgpd, as JSON, the neighbors and the locally originated prefixes and compares them with the
snapshot, and finds the VIPs on the loopback (zebra puts them there); undo reloads FILE.prev (or
a file with no BGP when there was none).

Whether the VIPs are announced at all is `announcing()` (fulcrum.apply.fitness), asked at every
render: not fit (in maintenance, keepalived not running) renders the same file without `network`
statements, a withdrawal that the routers see within one update while the sessions stay up.
Between applies `AnnouncementWatch` asks it every second and runs these same steps when the
answer differs from `announced`, what the loaded file does.

FRR's daemons are started by their own service (frr.service on the appliance, the lab in tests);
`prefix` wraps every command, e.g. ("nsenter", "--target", PID, "--net", "--mount") in tests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fulcrum.apply.daemons.owned_files import OwnedFiles
from fulcrum.apply.daemons.protocol import Checked
from fulcrum.apply.files import new_path
from fulcrum.apply.fitness import Fitness
from fulcrum.apply.result import BgpNeighborView
from fulcrum.apply.tools import ToolError, run_tool, trim_lines
from fulcrum.apply.validators import validate_frr
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import render_frr

RELOAD_TIMEOUT = 120.0  # frr-reload.py reads the running config and applies the difference
# How long an apply with BGP waits for FRR's daemons to answer; with frr-reload.py after it, this
# stays inside the API's own wait for an apply (fulcrum.apply.client.DEFAULT_TIMEOUT, 120 s).
START_TIMEOUT = 75.0
NEEDED_DAEMONS = ("zebra", "bgpd", "bfdd")
QUERY_TIMEOUT = 30.0


@dataclass(frozen=True)
class FrrPaths:
    config: Path  # the integrated frr.conf FRR's daemons read (/etc/frr/frr.conf, or a link to it)
    reload_program: Path = Path("/usr/lib/frr/frr-reload.py")


class FrrDaemon:
    name = "frr"

    def __init__(
        self,
        paths: FrrPaths,
        announcing: Callable[[], Fitness],
        prefix: Sequence[str] = (),
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.paths = paths
        self.start_timeout = start_timeout
        self.announcing = announcing
        self.prefix = tuple(prefix)
        self.files = OwnedFiles(paths.config)
        self._announce = True  # what the staged file does
        self._staged = ""  # the staged file's text
        # The text FRR's daemons last took in from us (None: unknown, e.g. after an undo).
        self._loaded: str | None = None
        self.announced: bool | None = None  # what the loaded file does (None: not loaded by us yet)

    def render(self, snapshot: ConfigSnapshot) -> str:
        fitness = self.announcing()
        self._announce = fitness.fit
        self._staged = render_frr(snapshot, announce=self._announce)
        staged = self.files.stage({self.paths.config: self._staged})
        return staged if self._announce else f"{staged}; VIPs withdrawn: {fitness.reason}"

    def validate(self) -> Checked:
        result = validate_frr(new_path(self.paths.config), self.prefix)
        if not result.ok:
            raise ToolError(f"vtysh -C rejected {self.paths.config.name}: {result.message}")
        return Checked(f"vtysh -C accepted {self.paths.config.name}")

    def reject(self) -> None:
        self.files.reject()

    def discard(self) -> None:
        self.files.discard()

    def precondition(self) -> tuple[bool, str]:
        return True, "FRR needs nothing beyond its running daemons"

    def install(self) -> str:
        return self.files.install()

    def load(self, snapshot: ConfigSnapshot) -> str:
        # Before the routes go out: the flows they bring may start mid-way on this node.
        sloppy = self._take_flows_mid_way(bool(snapshot.announced_vips()))
        if self._loaded == self._staged:
            # frr-reload.py costs seconds of Python even when nothing differs (15-20 s under
            # emulation), and every apply passes here: verify still reads bgpd back.
            self.announced = self._announce
            return f"{sloppy}; FRR already runs this {self.paths.config.name}: not reloaded"
        if not self._answering():
            if snapshot.bgp is None or not snapshot.bgp.enabled:
                # Nothing for FRR to run, and when it starts it reads this very file itself.
                self._loaded = None
                self.announced = self._announce
                return f"{sloppy}; FRR is not running: it reads {self.paths.config} when it starts"
            self._wait_until_answering()
        self.announced = None  # unknown while the daemons take the file in
        self._loaded = None
        reloaded = self._reload(self.paths.config)
        self._loaded = self._staged
        self.announced = self._announce
        return f"{sloppy}; {reloaded}"

    def _take_flows_mid_way(self, on: bool) -> str:
        """IPVS's sloppy TCP and SCTP, on while this node announces VIPs, off otherwise.

        A router re-hashes flows when a node joins or leaves, so a node gets packets of connections
        it never saw begin. Without sloppy mode IPVS schedules only a connection's first packet (a
        SYN, an INIT) and hands the rest to the local stack, which answers with a reset; with it
        IPVS schedules any packet, and mh picks the backend the connection already has. The
        settings belong to the network namespace, hence through the command prefix; they exist
        only while IPVS is loaded (always on an appliance, where keepalived runs first)."""
        value = int(on)
        run = run_tool(
            ["sysctl", "-q", "-w", f"net.ipv4.vs.sloppy_tcp={value}", f"net.ipv4.vs.sloppy_sctp={value}"],
            self.prefix,
            timeout=10,
        )
        if run.returncode != 0:
            if "cannot stat" in run.output:  # procps' words for a missing /proc/sys entry
                return "IPVS is not loaded here: no sloppy TCP/SCTP to set"
            raise ToolError(f"sysctl net.ipv4.vs.sloppy_tcp/sloppy_sctp={value} failed: {run.output.strip()}")
        return f"IPVS sloppy TCP/SCTP {'on: flows taken mid-way' if on else 'off'}"

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        bgp = snapshot.bgp
        if bgp is None or not bgp.enabled:
            return Checked("no BGP configured: FRR announces nothing")
        neighbors = self._query("show bgp vrf default neighbors json")
        wanted = {str(n.address) for n in bgp.neighbors}
        if set(neighbors) != wanted:
            raise ToolError(f"bgpd has neighbors {sorted(neighbors)}, the configuration {sorted(wanted)}")
        expected = {f"{v}/{v.max_prefixlen}" for v in snapshot.announced_vips()} if self._announce else set()
        originated = self.originated()
        if originated != expected:
            raise ToolError(
                f"bgpd originates {sorted(originated)}, the configuration says {sorted(expected)}"
            )
        missing = {f"{v}/{v.max_prefixlen}" for v in snapshot.announced_vips()} - self._loopback_addresses()
        if missing:
            raise ToolError(f"zebra has not put {sorted(missing)} on the loopback, where IPVS needs the VIPs")
        states = ", ".join(
            f"{address} {neighbors[address].get('bgpState', '?')}" for address in sorted(wanted)
        )
        what = f"announcing {len(expected)} VIP prefixes" if self._announce else "VIPs withdrawn"
        return Checked(f"bgpd {what}; sessions: {states or 'none'}")

    def undo(self, loaded: bool) -> str:
        restored, done = self.files.restore()
        self.announced = None  # the previous file's: the next watch round renders anew
        self._loaded = None
        if loaded and self.paths.config in restored:
            if restored[self.paths.config]:
                done += "; " + self._reload(self.paths.config)
            else:
                # frr-reload.py needs a file: one with no BGP takes it all out of the daemons.
                empty = self.paths.config.with_name(f"{self.paths.config.name}.none")
                empty.write_text(render_frr(ConfigSnapshot()))
                try:
                    done += "; " + self._reload(empty)
                finally:
                    empty.unlink()
        return done

    def _answering(self) -> bool:
        """Whether zebra, bgpd and bfdd answer vtysh, and bgpd and bfdd have joined zebra (FRR may
        still be starting, or not run): bgpd asks bfdd for its sessions through zebra, and a
        neighbor configured before bfdd had joined got no BFD session in the lab (tests/lab/frr.py)."""
        run = run_tool(["vtysh", "-c", "show daemons"], self.prefix, QUERY_TIMEOUT)
        if run.returncode != 0 or not set(run.output.split()) >= set(NEEDED_DAEMONS):
            return False
        run = run_tool(["vtysh", "-c", "show zebra client summary"], self.prefix, QUERY_TIMEOUT)
        clients = {line.split()[0] for line in run.output.splitlines() if line.strip()}
        return run.returncode == 0 and clients >= {"bgp", "bfd"}

    def _wait_until_answering(self) -> None:
        """FRR starting beside applyd at boot (frr.service took 22-67 s under emulation) is waited
        for here, by the apply that needs it, rather than by every boot before the API."""
        deadline = time.monotonic() + self.start_timeout
        while not self._answering():
            if time.monotonic() >= deadline:
                raise ToolError(
                    f"FRR's {', '.join(NEEDED_DAEMONS)} did not answer vtysh within "
                    f"{self.start_timeout:g} s: is frr.service running?"
                )
            time.sleep(1)

    def _reload(self, config: Path) -> str:
        argv = ["python3", str(self.paths.reload_program), "--reload", "--stdout", str(config)]
        run = run_tool(argv, self.prefix, RELOAD_TIMEOUT)
        if run.returncode != 0:
            message = trim_lines(
                [line for line in run.output.splitlines() if "ERROR" in line] or run.output.splitlines()
            )
            raise ToolError(f"frr-reload.py could not apply {config.name}: {message}")
        return f"frr-reload.py applied {config} to the running daemons"

    def _query(self, command: str) -> dict[str, Any]:
        parsed = self._json(["vtysh", "-c", command], f"vtysh -c '{command}'", "{}")
        if not isinstance(parsed, dict):
            raise ToolError(f"vtysh -c '{command}' answered {type(parsed).__name__}, not an object")
        return parsed

    def _loopback_addresses(self) -> set[str]:
        links = self._json(["ip", "-j", "address", "show", "dev", "lo"], "ip -j address show dev lo", "[]")
        return {f"{a['local']}/{a['prefixlen']}" for link in links for a in link.get("addr_info", [])}

    def _json(self, argv: list[str], what: str, empty: str) -> Any:
        """What `argv` prints as JSON (`empty` when it prints nothing); ToolError when it fails."""
        run = run_tool(argv, self.prefix, QUERY_TIMEOUT)
        if run.returncode != 0:
            raise ToolError(f"{what} failed: {trim_lines(run.output.splitlines())}")
        try:
            return json.loads(run.output or empty)
        except json.JSONDecodeError as error:
            raise ToolError(f"{what} did not answer JSON: {run.output[:200]}") from error

    def originated(self) -> set[str]:
        """The prefixes this node's bgpd originates (its `network` statements), IPv4 and IPv6."""
        return self._originated(4) | self._originated(6)

    def sessions(self) -> list[BgpNeighborView]:
        """Each neighbor's session as bgpd and bfdd see it now."""
        neighbors = self._query("show bgp vrf default neighbors json")
        peers = self._json(["vtysh", "-c", "show bfd peers json"], "vtysh -c 'show bfd peers json'", "[]")
        bfd = (
            {p.get("peer"): p.get("status") for p in peers if isinstance(p, dict)}
            if isinstance(peers, list)
            else {}
        )
        views = []
        for address, info in sorted(neighbors.items()):
            if not isinstance(info, dict) or "bgpState" not in info:
                continue  # not a neighbor (FRR adds a few top-level keys in some versions)
            families = info.get("addressFamilyInfo") or {}
            established = info["bgpState"] == "Established" and "bgpTimerUpMsec" in info
            views.append(
                BgpNeighborView(
                    address=address,
                    remote_asn=info.get("remoteAs"),
                    state=str(info["bgpState"]),
                    up_seconds=info["bgpTimerUpMsec"] / 1000 if established else None,
                    prefixes_sent=sum(int(f.get("sentPrefixCounter", 0)) for f in families.values()),
                    last_reset=info.get("lastResetDueTo"),
                    bfd=bfd.get(address),
                )
            )
        return views

    def _originated(self, family: int) -> set[str]:
        """The prefixes this node's bgpd originates itself (its `network` statements) in `family`."""
        table = self._query(f"show bgp vrf default ipv{family} unicast json")
        routes: dict[str, list[dict[str, Any]]] = table.get("routes", {})
        # A path learned from no peer is bgpd's own (FRR prints its peer as "(unspec)").
        return {
            prefix for prefix, paths in routes.items() if any(p.get("peerId") == "(unspec)" for p in paths)
        }
