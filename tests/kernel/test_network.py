"""The appliance's own network on real bonds and VLANs: the networkd daemon (the class
fulcrum-applyd runs, through the apply engine) against a real systemd-networkd (lab.networkd) in
the kernel VM, whose kernel has bonding and 8021q (this host's has neither).

What the kernel holds is read independently of the daemon's own read-back: /proc/net/bonding,
`ip -d -j link`, `ip -j route`, and a ping through the bond and the VLAN to the gateway's far side.

    networkd's namespace                           gateway (a lab namespace)
    nic0 ─┐                                      ┌─ peer0
          ├─ bond0 802.3ad layer3+4   veth x 2   ├─ bond0 802.3ad layer3+4
    nic1 ─┘  └─ front: VLAN 100                  └─ peer1  └─ VLAN 100: 10.80.0.254/24
                 10.80.0.1/24                                 lo: 10.90.0.1, 10.91.0.1
                 10.90.0.0/16 via 10.80.0.254 (main)
                 10.91.0.0/16 via 10.80.0.254 (table 100)
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fulcrum.apply.daemons.networkd import NetworkdDaemon, NetworkPaths
from fulcrum.apply.result import ApplyOutcome, ApplyStep
from lab.cmd import cmd
from lab.netns import NetNS
from lab.networkd import Networkd, available, engine, private_networkd, snapshot
from lab.wait import wait_until

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]

GATEWAY, FAR_MAIN, FAR_TABLE = "10.80.0.254", "10.90.0.1", "10.91.0.1"


@pytest.fixture
def networkd(tmp_path: Path) -> Iterator[Networkd]:
    if not available():
        pytest.skip("needs root, systemd-networkd and dbus-daemon")
    gateway = NetNS("gw")
    with private_networkd(tmp_path, nics=2, peers_netns=gateway.name) as running:
        far_end(gateway, vlan_id=100)
        try:
            yield running
        finally:
            print(f"--- networkd's log\n{running.log.read_text()[-4000:]}")  # shown when the test fails


def far_end(gateway: NetNS, vlan_id: int) -> None:
    """The other side of the two links: a bond of the peers, the VLAN, the gateway's addresses."""
    gateway.ip_batch([
        "link add bond0 type bond mode 802.3ad xmit_hash_policy layer3+4 lacp_rate fast miimon 100",
        "link set peer0 down", "link set peer0 master bond0",
        "link set peer1 down", "link set peer1 master bond0",
        "link set bond0 up", "link set peer0 up", "link set peer1 up",
        f"link add link bond0 name vlan{vlan_id} type vlan id {vlan_id}",
        f"link set vlan{vlan_id} up",
        f"addr add {GATEWAY}/24 dev vlan{vlan_id}",
        f"addr add {FAR_MAIN}/32 dev lo", f"addr add {FAR_TABLE}/32 dev lo",
    ])


def network(macs: dict[str, str], *, members: tuple[str, ...] = ("nic0", "nic1"), vlan_id: int = 100,
            **changes: Any) -> dict[str, Any]:
    return {
        "hostname": "lb-bond",
        "management_interface": "front",
        "nics": [{"name": name, "mac": macs[name], "permanent_mac": False} for name in ("nic0", "nic1")],
        "bonds": [{"name": "bond0", "members": list(members), "mode": "802.3ad", "xmit_hash_policy": "layer3+4"}],
        "vlans": [{"name": "front", "parent": "bond0", "vlan_id": vlan_id, "addresses": ["10.80.0.1/24"]}],
        "routes": [
            {"destination": "10.90.0.0/16", "gateway": GATEWAY},
            {"destination": "10.91.0.0/16", "gateway": GATEWAY, "table": 100},
        ],
        **changes,
    }


def daemon(networkd: Networkd, readback_timeout: float = 30) -> NetworkdDaemon:
    paths = NetworkPaths(networkd.directory, networkd.runtime, readback_timeout=readback_timeout)
    return NetworkdDaemon(paths, networkd.prefix)


# --- the kernel, read without the daemon -----------------------------------------------------------


def proc_bonding(networkd: Networkd, bond: str) -> dict[str, Any]:
    """/proc/net/bonding/BOND in networkd's namespace: mode, hash policy and member names."""
    text = cmd([*networkd.prefix, "cat", f"/proc/net/bonding/{bond}"]).stdout
    fields = [line.partition(": ") for line in text.splitlines() if ": " in line]
    return {
        "mode": next(value for key, _, value in fields if key == "Bonding Mode"),
        "hash": next((value for key, _, value in fields if key == "Transmit Hash Policy"), None),
        "members": sorted(value for key, _, value in fields if key == "Slave Interface"),
    }


def links(networkd: Networkd) -> dict[str, dict[str, Any]]:
    return {link["ifname"]: link for link in networkd.ip("-d", "link", "show")}


def vlan_of(link: dict[str, Any]) -> tuple[str | None, int | None, str | None]:
    """(kind, VLAN id, parent) of a link as `ip -d -j link` shows it."""
    info = link.get("linkinfo", {})
    return info.get("info_kind"), info.get("info_data", {}).get("id"), link.get("link")


def routes(networkd: Networkd, table: str) -> set[tuple[str, str, str]]:
    return {(r["dst"], r.get("gateway", ""), r.get("dev", "")) for r in networkd.ip("route", "show", "table", table)}


def reaches(networkd: Networkd, address: str) -> bool:
    return cmd([*networkd.prefix, "ping", "-c", "1", "-W", "1", address], check=False).returncode == 0


def kernel_state(networkd: Networkd) -> dict[str, Any]:
    """Everything the tests compare, from the kernel's own interfaces (IPv4 addresses: the VLAN's
    IPv6 link-local one is networkd's default)."""
    current = links(networkd)
    return {
        "bond": proc_bonding(networkd, "bond0"),
        "front": vlan_of(current["front"]) if "front" in current else None,
        "addresses": sorted(a for a in networkd.addresses("front") if "." in a) if "front" in current else [],
        "main": sorted(r for r in routes(networkd, "main") if r[0] == "10.90.0.0/16"),
        "table100": sorted(routes(networkd, "100")),
    }


APPLIED = {
    "bond": {"mode": "IEEE 802.3ad Dynamic link aggregation", "hash": "layer3+4 (1)", "members": ["nic0", "nic1"]},
    "front": ("vlan", 100, "bond0"),
    "addresses": ["10.80.0.1/24"],
    "main": [("10.90.0.0/16", GATEWAY, "front")],
    "table100": [("10.91.0.0/16", GATEWAY, "front")],
}


# --- the tests -------------------------------------------------------------------------------------


def test_a_bond_with_a_vlan_is_applied_changed_and_taken_apart(tmp_path: Path, networkd: Networkd) -> None:
    networkd_daemon = daemon(networkd)
    result = engine(tmp_path, networkd_daemon).apply(snapshot(network(networkd.macs)), 1)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert kernel_state(networkd) == APPLIED
    bond = links(networkd)["bond0"]["linkinfo"]["info_data"]
    assert (bond["mode"], bond["xmit_hash_policy"], bond["miimon"]) == ("802.3ad", "layer3+4", 100)
    # Traffic crosses the bond tagged with VLAN 100 (the far end only has the gateway on its
    # VLAN 100) and takes the static route to the gateway's far side.
    wait_until(lambda: reaches(networkd, FAR_MAIN), 30, what=f"{FAR_MAIN} through bond0, VLAN 100 and the gateway")

    # A member leaves the bond: networkd takes nic1 out of it (nic1 stays a NIC without addresses).
    result = engine(tmp_path, networkd_daemon).apply(snapshot(network(networkd.macs, members=("nic0",))), 2)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert proc_bonding(networkd, "bond0")["members"] == ["nic0"]
    assert "master" not in links(networkd)["nic1"]
    wait_until(lambda: reaches(networkd, FAR_MAIN), 30, what=f"{FAR_MAIN} over nic0 alone")

    # The VLAN goes: the link is deleted and its address and routes with it; the bond stays.
    without_vlan = network(networkd.macs, members=("nic0",), vlans=[], routes=[], management_interface="bond0")
    without_vlan["bonds"][0]["addresses"] = ["10.81.0.1/24"]
    result = engine(tmp_path, networkd_daemon).apply(snapshot(without_vlan), 3)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    assert "front" not in links(networkd)
    assert routes(networkd, "100") == set() and not [r for r in routes(networkd, "main") if r[0] == "10.90.0.0/16"]
    assert "10.81.0.1/24" in networkd.addresses("bond0")


def test_a_vlan_id_change_is_not_applied_and_rolled_back(tmp_path: Path, networkd: Networkd) -> None:
    """networkd (252) changes no netdev that exists, and keeps a deleted one's old definition
    until it restarts: a new VLAN id fails the read-back, and the VLAN keeps working as before.
    (Changing a VLAN's id takes a new VLAN name today.)"""
    networkd_daemon = daemon(networkd, readback_timeout=8)
    assert engine(tmp_path, networkd_daemon).apply(snapshot(network(networkd.macs)), 1).outcome == ApplyOutcome.APPLIED
    result = engine(tmp_path, networkd_daemon).apply(snapshot(network(networkd.macs, vlan_id=200)), 2)
    assert result.outcome == ApplyOutcome.FAILED and result.rolled_back, result.message
    assert result.failed_step == ApplyStep.VERIFY and "front: not VLAN 200" in result.message
    assert "Id=100" in (networkd.directory / "20-fulcrum-front.netdev").read_text()
    wait_until(lambda: kernel_state(networkd), 30, what="VLAN 100 with its address and routes", expect=APPLIED)
    wait_until(lambda: reaches(networkd, FAR_MAIN), 30, what=f"{FAR_MAIN} through VLAN 100")


def test_a_bond_with_other_settings_replaces_the_running_one_under_a_new_name(tmp_path: Path,
                                                                           networkd: Networkd) -> None:
    """networkd never changes a running bond's settings (nor a VLAN's): a new link monitoring
    interval fails the read-back and rolls back (the API refuses it up front), and the way the API's
    refusal names works in one commit: the bond under a new name with the new mode, its VLAN under a
    new name on it, the old bond and VLAN removed."""
    networkd_daemon = daemon(networkd, readback_timeout=8)
    assert engine(tmp_path, networkd_daemon).apply(snapshot(network(networkd.macs)), 1).outcome == ApplyOutcome.APPLIED
    slower = network(networkd.macs)
    slower["bonds"][0]["miimon"] = 250
    result = engine(tmp_path, networkd_daemon).apply(snapshot(slower), 2)
    assert result.outcome == ApplyOutcome.FAILED and result.rolled_back, result.message
    assert "bond0: link monitoring every 100 ms, not 250" in result.message

    swapped = network(networkd.macs, management_interface="front1")
    swapped["bonds"] = [{"name": "bond1", "members": ["nic0", "nic1"], "mode": "active-backup", "miimon": 250}]
    swapped["vlans"] = [{"name": "front1", "parent": "bond1", "vlan_id": 100, "addresses": ["10.80.0.1/24"]}]
    # Rolled back first (a member that is not plugged in): the new bond and its VLAN go (the VLAN
    # first: deleting the bond takes it along), the old ones come back.
    broken = copy.deepcopy(swapped)
    broken["bonds"][0]["members"].append("ghost")
    broken["nics"].append({"name": "ghost", "mac": "52:54:00:de:ad:02", "permanent_mac": False})
    result = engine(tmp_path, networkd_daemon).apply(snapshot(broken), 3)
    assert result.outcome == ApplyOutcome.FAILED and result.rolled_back, result.message
    assert "bond1" not in links(networkd) and "front1" not in links(networkd)
    wait_until(lambda: kernel_state(networkd), 30, what="bond0 and its VLAN back", expect=APPLIED)

    result = engine(tmp_path, networkd_daemon).apply(snapshot(swapped), 4)
    assert result.outcome == ApplyOutcome.APPLIED, result.message
    current = links(networkd)
    assert "bond0" not in current and "front" not in current
    assert proc_bonding(networkd, "bond1") == {"mode": "fault-tolerance (active-backup)", "hash": None,
                                               "members": ["nic0", "nic1"]}
    assert current["bond1"]["linkinfo"]["info_data"]["miimon"] == 250
    assert vlan_of(current["front1"]) == ("vlan", 100, "bond1")
    assert "10.80.0.1/24" in networkd.addresses("front1")
    assert routes(networkd, "100") == {("10.91.0.0/16", GATEWAY, "front1")}


def test_a_network_that_fails_read_back_is_rolled_back(tmp_path: Path, networkd: Networkd) -> None:
    networkd_daemon = daemon(networkd, readback_timeout=8)
    assert engine(tmp_path, networkd_daemon).apply(snapshot(network(networkd.macs)), 1).outcome == ApplyOutcome.APPLIED
    before = sorted(p.name for p in networkd.runtime.iterdir())
    # The bond gets a third member whose NIC is not plugged in, and the VLAN a new id and address:
    # valid, rendered and loaded, but the kernel cannot hold it.
    broken = network(networkd.macs, members=("nic0", "nic1", "ghost"), vlan_id=300)
    broken["nics"].append({"name": "ghost", "mac": "52:54:00:de:ad:02", "permanent_mac": False})
    broken["vlans"][0]["addresses"] = ["10.80.0.2/24"]
    result = engine(tmp_path, networkd_daemon).apply(snapshot(broken), 2)
    assert result.outcome == ApplyOutcome.FAILED and result.rolled_back, result.message
    assert result.failed_step == ApplyStep.VERIFY and "ghost: no such link" in result.message
    assert sorted(p.name for p in networkd.runtime.iterdir()) == before
    wait_until(lambda: kernel_state(networkd), 30, what="the previous network back in the kernel", expect=APPLIED)
    wait_until(lambda: reaches(networkd, FAR_MAIN), 30, what=f"{FAR_MAIN} reachable again")
    assert "Address=10.80.0.1/24" in (networkd.directory / "30-fulcrum-front.network").read_text()
