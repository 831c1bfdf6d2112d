"""systemd-networkd (with timesyncd, resolved and the host name) as a managed daemon: the
appliance's own network.

The files live in the persistent network directory (/data/network on the appliance: the root is
read-only); networkd reads its runtime directory (/run/systemd/network), which the load step
(and fulcrum-firstboot at boot) fills from it. There is no `networkd --check`: validate parses
every staged file back with the grammar check of fulcrum.apply.network_files; load runs
`networkctl reload`, which reconfigures the links whose files changed, and `networkctl delete`
for the bonds and VLANs that went (networkd never removes a netdev itself); verify reads back
links, addresses, routes, bond and VLAN state with `ip -j` (rtnetlink) until they match.

A snapshot without a network (not managed) stages and checks nothing; Fulcrum's networkd files of
an earlier network are removed (networkd then applies the console's management network), and
where there are none, nothing of the host's network changes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fulcrum.apply.daemons.owned_files import OwnedFiles
from fulcrum.apply.daemons.protocol import Checked
from fulcrum.apply.files import CONFIG_MODE, fsync_dir, new_path, prev_path
from fulcrum.apply.network_files import check_hostname, parse_config
from fulcrum.apply.tools import ToolError, poll, run_tool, trim_lines
from fulcrum.config.network import HASHING_MODES, Bond, NetworkConfig, Nic, Vlan
from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render.network import (
    HOSTNAME,
    NETDEV_PREFIX,
    RESOLVED,
    TIMESYNCD,
    is_networkd_file,
    render_network,
)


@dataclass(frozen=True)
class NetworkPaths:
    directory: Path  # persistent: where the files are written (/data/network)
    runtime: Path | None  # what networkd reads (/run/systemd/network); None: it reads `directory`
    restart_services: bool = False  # restart timesyncd and resolved through systemctl when theirs change
    readback_timeout: float = 15.0


class NetworkdDaemon:
    name = "networkd"

    def __init__(self, paths: NetworkPaths, prefix: Sequence[str] = ()) -> None:
        self.paths = paths
        self.prefix = tuple(prefix)
        self.files = OwnedFiles()
        self._retired: list[Path] = []  # networkd files of the previous network that the new one lacks
        self._changed: set[str] = set()  # file names whose text changes

    def render(self, snapshot: ConfigSnapshot) -> str:
        self._retired, self._changed = [], set()
        if snapshot.network is None:
            # Not (or no longer) managed: Fulcrum's networkd files go, so the console's
            # management network applies again (a commit-confirmed take-over that nobody confirmed
            # lands here); time, DNS and the host name keep their last files.
            self.files = OwnedFiles()
            self._retired = [path for path in self._owned() if is_networkd_file(path.name)]
            return f"this node's network is not managed: {len(self._retired)} networkd files of Fulcrum's go"
        contents = {
            self.paths.directory / name: text for name, text in render_network(snapshot.network).items()
        }
        self.files = OwnedFiles(*contents)
        self._changed = {path.name for path, text in contents.items() if _text(path) != text}
        self._retired = [path for path in self._owned() if path not in contents]
        return self.files.stage(contents)

    def validate(self) -> Checked:
        if not self.files.paths:
            return Checked("nothing to check: the network is not managed")
        for path in self.files.paths:
            text = new_path(path).read_text()
            if path.name == HOSTNAME:
                check_hostname(text)
            else:
                parse_config(path.name, text)
        return Checked(
            f"parsed back {len(self.files.paths)} network files: every section and key is one networkd reads"
        )

    def reject(self) -> None:
        self.files.reject()

    def discard(self) -> None:
        self.files.discard()

    def precondition(self) -> tuple[bool, str]:
        if not self.files.paths and not self._retired:
            return True, "the network is not managed"
        if shutil.which("networkctl") is None and not self.prefix:
            return False, "networkctl is not installed: systemd-networkd cannot manage this node's network"
        return True, "networkctl is installed"

    def install(self) -> str:
        done = self.files.install() if self.files.paths else "nothing to install"
        for path in self._retired:
            os.replace(path, prev_path(path))
        if self._retired:
            fsync_dir(self.paths.directory)
            done += "; retired " + ", ".join(p.name for p in self._retired) + " (kept as .prev)"
        return done

    def load(self, snapshot: ConfigSnapshot) -> str:
        if snapshot.network is None and not self._retired:
            return "the network is not managed: nothing loaded"
        links = self._links()
        steps = [self._sync_runtime()]
        removed = self._delete_netdevs(_netdevs(self._retired), links)
        if removed:
            steps.append("deleted " + ", ".join(removed))
        steps.append(self._reload())
        if snapshot.network is not None and HOSTNAME in self._changed:
            self._tool("hostname", snapshot.network.hostname)
            steps.append(f"host name {snapshot.network.hostname}")
        return "; ".join(steps + self._restart_services())

    def verify(self, snapshot: ConfigSnapshot) -> Checked:
        network = snapshot.network
        if network is None:
            return Checked("the network is not managed: nothing to read back")
        poll(lambda: None if self._mismatches(network) else True, self.paths.readback_timeout, 0.5)
        problems = self._mismatches(network)
        if problems:
            raise ToolError("the kernel does not hold the network as configured: " + trim_lines(problems))
        return Checked(f"read back {len(list(network.interfaces()))} interfaces, their addresses and routes")

    def undo(self, loaded: bool) -> str:
        rejected = [p for p in self.files.paths if p.name in self._changed]
        created = [
            n
            for n in _netdevs(rejected)
            if not prev_path(self.paths.directory / f"{NETDEV_PREFIX}{n}.netdev").exists()
        ]
        _, done = self.files.restore()
        for path in self._retired:
            if prev_path(path).exists():
                os.replace(prev_path(path), path)
        if self._retired:
            fsync_dir(self.paths.directory)
            done += "; put back " + ", ".join(p.name for p in self._retired)
        if not loaded:
            return done
        self._changed |= {p.name for p in self._retired}
        steps = [done, self._sync_runtime()]
        self._delete_netdevs(created, self._links())
        steps.append(self._reload())
        hostname = self.paths.directory / HOSTNAME
        if HOSTNAME in self._changed and hostname.exists():
            self._tool("hostname", check_hostname(hostname.read_text()))
            steps.append("host name put back")
        return "; ".join(steps + self._restart_services())

    # --- loading ---------------------------------------------------------------------------------

    def _reload(self) -> str:
        # networkd (since v246) reconfigures every link whose .network file appeared, changed or
        # went away on reload, and creates the netdevs of new .netdev files. A `networkctl
        # reconfigure` on top would drop and re-add the same addresses a second time.
        self._tool("networkctl", "reload")
        return "networkctl reload (links whose .network changed are reconfigured)"

    def _delete_netdevs(self, names: Sequence[str], links: dict[str, dict[str, Any]]) -> list[str]:
        """`networkctl delete` the bonds and VLANs named that exist, VLANs first: deleting a bond
        takes the VLANs on it away with it, and a delete of a link that is gone fails."""
        present = [name for name in names if name in links]
        present.sort(key=lambda name: links[name].get("linkinfo", {}).get("info_kind") != "vlan")
        for name in present:
            self._tool("networkctl", "delete", name)
        return present

    def _sync_runtime(self) -> str:
        """Make the runtime directory hold exactly the networkd files of the persistent one."""
        runtime = self.paths.runtime
        if runtime is None:
            return f"networkd reads {self.paths.directory}"
        runtime.mkdir(parents=True, exist_ok=True)
        wanted = {path.name: path for path in self._owned() if is_networkd_file(path.name)}
        for stale in runtime.iterdir():
            if is_networkd_file(stale.name) and stale.name not in wanted:
                stale.unlink()
        for name, path in wanted.items():
            temporary = runtime / f".{name}.tmp"
            shutil.copyfile(path, temporary)
            # networkd runs as systemd-network: a copy made under the helper's umask (0027 on the
            # appliance) is root's alone, and networkd skips it ("Permission denied").
            os.chmod(temporary, CONFIG_MODE)
            os.replace(temporary, runtime / name)
        fsync_dir(runtime)
        return f"copied {len(wanted)} networkd files to {runtime}"

    def _restart_services(self) -> list[str]:
        if not self.paths.restart_services:
            return []
        services = ((TIMESYNCD, "systemd-timesyncd"), (RESOLVED, "systemd-resolved"))
        units = [unit for name, unit in services if name in self._changed]
        for unit in units:
            self._tool("systemctl", "try-restart", f"{unit}.service")
        return [f"restarted {unit}" for unit in units]

    def _owned(self) -> list[Path]:
        directory = self.paths.directory
        if not directory.is_dir():
            return []
        return sorted(
            p
            for p in directory.iterdir()
            if is_networkd_file(p.name) or p.name in (TIMESYNCD, RESOLVED, HOSTNAME)
        )

    # --- reading back ----------------------------------------------------------------------------

    def _links(self) -> dict[str, dict[str, Any]]:
        return {link["ifname"]: link for link in self._ip_json("-d", "link", "show")}

    def _ip_json(self, *argv: str) -> list[dict[str, Any]]:
        run = run_tool(["ip", "-j", *argv], self.prefix)
        if run.returncode != 0:
            raise ToolError(f"ip -j {' '.join(argv)} failed: {run.output.strip()[:500]}")
        parsed: list[dict[str, Any]] = json.loads(run.output or "[]")
        return parsed

    def _mismatches(self, network: NetworkConfig) -> list[str]:
        links = self._links()
        addresses = {
            entry["ifname"]: {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])}
            for entry in self._ip_json("addr", "show")
        }
        routes = self._ip_json("route", "show", "table", "all") + self._ip_json(
            "-6", "route", "show", "table", "all"
        )
        problems: list[str] = []
        for _, interface in network.interfaces():
            if not interface.enabled:
                continue
            kernel = _kernel_name(interface, links)
            if kernel is None:
                problems.append(f"{interface.name}: no such link")
                continue
            link = links[kernel]
            missing = sorted(set(interface.addresses) - addresses.get(kernel, set()))
            if missing:
                problems.append(f"{interface.name}: addresses {', '.join(missing)} missing")
            if interface.mtu is not None and link.get("mtu") != interface.mtu:
                problems.append(f"{interface.name}: MTU {link.get('mtu')}, not {interface.mtu}")
            problems += _kind_mismatches(interface, kernel, links, network)
        for route in network.routes:
            table = route.table or 254
            if not any(_route_matches(r, route.destination, str(route.gateway), table) for r in routes):
                problems.append(f"route {route.destination} via {route.gateway} (table {table}) missing")
        return problems

    def _tool(self, *argv: str) -> str:
        run = run_tool(list(argv), self.prefix)
        if run.returncode != 0:
            raise ToolError(f"{' '.join(argv)} failed: {run.output.strip()[:500]}")
        return run.output


def _kind_mismatches(
    interface: object, kernel: str, links: dict[str, dict[str, Any]], network: NetworkConfig
) -> list[str]:
    info = links[kernel].get("linkinfo", {})
    data = info.get("info_data", {})
    if isinstance(interface, Bond):
        problems = []
        if info.get("info_kind") != "bond":
            return [f"{interface.name}: not a bond"]
        if data.get("mode") != interface.mode.value:
            problems.append(f"{interface.name}: bond mode {data.get('mode')}, not {interface.mode.value}")
        if data.get("miimon") != interface.miimon:
            problems.append(
                f"{interface.name}: link monitoring every {data.get('miimon')} ms, not {interface.miimon}"
            )
        policy = interface.xmit_hash_policy.value
        if interface.mode in HASHING_MODES and data.get("xmit_hash_policy") != policy:
            problems.append(f"{interface.name}: hash policy {data.get('xmit_hash_policy')}, not {policy}")
        members = {name for name, link in links.items() if link.get("master") == kernel}
        wanted = {_kernel_name(network.interface(m), links) or m for m in interface.members}
        if members != wanted:
            now = ", ".join(sorted(members)) or "none"
            problems.append(f"{interface.name}: members {now}, not {', '.join(sorted(wanted))}")
        return problems
    if isinstance(interface, Vlan):
        if info.get("info_kind") != "vlan" or data.get("id") != interface.vlan_id:
            return [f"{interface.name}: not VLAN {interface.vlan_id}"]
        parent = _kernel_name(network.interface(interface.parent), links)
        if links[kernel].get("link") != parent:
            return [f"{interface.name}: on {links[kernel].get('link')}, not {parent}"]
    return []


def _kernel_name(interface: object, links: dict[str, dict[str, Any]]) -> str | None:
    """A NIC's kernel name found by its permanent MAC address; a bond's or VLAN's is its own."""
    if isinstance(interface, Nic):
        found = (
            name
            for name, link in links.items()
            if _permanent_mac(link) == interface.mac and not _virtual(link)
        )
        return next(found, None)
    name = getattr(interface, "name", None)
    return name if name in links else None


def _permanent_mac(link: dict[str, Any]) -> str | None:
    # ip prints permaddr only where it differs from the current address; a bond member whose
    # device has none (a veth) has its own address kept by the bond as perm_hwaddr.
    member = link.get("linkinfo", {}).get("info_slave_data", {})
    mac = link.get("permaddr") or member.get("perm_hwaddr") or link.get("address")
    return mac.lower() if isinstance(mac, str) else None


def _route_matches(route: dict[str, Any], destination: str, gateway: str, table: int) -> bool:
    dst = route.get("dst")
    if dst == "default":
        dst = "0.0.0.0/0" if ":" not in gateway else "::/0"
    elif dst is not None and "/" not in dst:
        dst += "/32" if ":" not in dst else "/128"
    in_table = str(route.get("table", "main")) in (
        str(table),
        {254: "main", 255: "local", 253: "default"}.get(table, ""),
    )
    return (
        dst == destination
        and route.get("gateway") == gateway
        and (in_table or ("table" not in route and table == 254))
    )


def _virtual(link: dict[str, Any]) -> bool:
    return link.get("linkinfo", {}).get("info_kind") in ("bond", "vlan")


def _netdevs(paths: Sequence[Path]) -> list[str]:
    return sorted(
        p.name.removeprefix(NETDEV_PREFIX).removesuffix(".netdev")
        for p in paths
        if p.name.startswith(NETDEV_PREFIX)
    )


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
