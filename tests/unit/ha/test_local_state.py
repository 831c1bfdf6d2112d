"""A VIP group's state read from the data plane (fulcrum.ha.local.read_state): the addresses the
node holds, keepalived's VRRP process, maintenance and the tracked interfaces decide; keepalived's
last notification only where the data plane cannot tell (FAULT from node health) or where
nothing was applied (no IPVS)."""

from __future__ import annotations

import pytest

from fulcrum.apply.result import InterfaceView, VrrpView
from fulcrum.config.snapshot import Node, VipGroup
from fulcrum.ha.local import GroupState, read_state, role_of

GATEWAY = VipGroup(name="gateway", virtual_router_id=52, addresses=["10.77.1.1/24"])
FRONT = VipGroup(name="front", virtual_router_id=51, addresses=["10.77.0.100/32", "10.77.0.101/32"])
NODE = Node(name="lb2", vrrp_interface="eth0", vip_interfaces={"gateway": "eth1"}, track_interfaces=["eth3"])


def view(*, holds: tuple[str, ...] = (), down: tuple[str, ...] = (), vrrp: bool = True, ipvs: bool = True) -> VrrpView:
    interfaces = [
        InterfaceView(name=name, up=name not in down, addresses=[f"10.77.9.{i}", *(a for a in holds if name == "eth0")])
        for i, name in enumerate(("eth0", "eth1", "eth3"))
    ]
    return VrrpView(ipvs_available=ipvs, vrrp_running=vrrp, interfaces=interfaces)


@pytest.mark.parametrize("reported", ["UNKNOWN", "BACKUP", "MASTER", "FAULT"])
def test_a_node_holding_an_address_of_the_group_is_its_master(reported: str) -> None:
    assert read_state(FRONT, NODE, reported, view(holds=("10.77.0.101",)), False) == ("MASTER", ("10.77.0.101",))


@pytest.mark.parametrize("reported", ["UNKNOWN", "BACKUP", "MASTER"])
def test_a_node_holding_none_is_backup_whatever_was_reported(reported: str) -> None:
    assert read_state(FRONT, NODE, reported, view(), False) == ("BACKUP", ())


def test_fault_from_keepalived_stands_when_nothing_contradicts_it() -> None:
    """Node health is invisible in the data plane: keepalived's FAULT is kept while no address is held."""
    assert read_state(FRONT, NODE, "FAULT", view(), False) == ("FAULT", ())


def test_fault_in_maintenance_with_a_tracked_interface_down_or_without_vrrp() -> None:
    assert read_state(FRONT, NODE, "BACKUP", view(), True) == ("FAULT", ())
    assert read_state(FRONT, NODE, "BACKUP", view(down=("eth3",)), False) == ("FAULT", ())  # track_interfaces
    assert read_state(GATEWAY, NODE, "BACKUP", view(down=("eth1",)), False) == ("FAULT", ())  # its VIP interface
    assert read_state(FRONT, NODE, "BACKUP", view(down=("eth1",)), False) == ("BACKUP", ())  # not front's
    # A killed keepalived leaves its addresses behind: not MASTER (it cannot defend them).
    assert read_state(FRONT, NODE, "MASTER", view(holds=("10.77.0.100",), vrrp=False), False) == ("FAULT", ("10.77.0.100",))


def test_without_a_data_plane_the_notification_is_all_there_is() -> None:
    assert read_state(FRONT, NODE, "MASTER", None, False) == ("MASTER", ())
    assert read_state(FRONT, NODE, "UNKNOWN", view(ipvs=False), False) == ("UNKNOWN", ())


def test_the_role_follows_the_groups() -> None:
    def role(*states: str, maintenance: bool = False) -> str:
        return role_of([GroupState(str(i), state, None) for i, state in enumerate(states)], maintenance)

    assert role("MASTER", "MASTER") == "active"
    assert role("BACKUP", "BACKUP") == "standby"
    assert role("BACKUP", "FAULT") == "fault"
    assert role("FAULT", "FAULT", maintenance=True) == "maintenance"
    assert role("BACKUP", "UNKNOWN") == "unknown"
