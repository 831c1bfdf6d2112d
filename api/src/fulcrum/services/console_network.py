"""The console menu's "management address", through the network model and the engine.

The console (tty1, serial) is where an admin goes when the dashboard cannot be reached, so its
change must win over whatever configures the management interface. It used to write a networkd
file of its own, which the managed network's files outrank: once the dashboard had taken the
network over, the console's change silently did nothing. Now the console asks the API (over
loopback, with the console token, services.console_token) and the change is made to the model:

- the network is managed (in the running revision): the management interface's IPv4 addressing,
  the IPv4 default gateway and the DNS servers change; nothing else does;
- it is not managed yet: it is taken over from the kernel first, as the dashboard's take-over is
  (services.network_takeover), the management interface being the NIC the console names by its
  MAC address.

It is committed at once as a revision of its own: the running configuration with the running
network so changed, so uncommitted edits in the candidate are neither applied nor lost (the
candidate's network gets the same change on top of its own pending edits). The operator at the
console answered "yes" to the change, and the console does not depend on the address it changes,
so the commit is confirmed at once rather than left to the management move's commit-confirmed
deadline.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from fulcrum.apply.client import Applier
from fulcrum.config.network import NetworkConfig
from fulcrum.config.snapshot import WRITTEN, ConfigSnapshot
from fulcrum.errors import ConfigInvalid
from fulcrum.models import Revision, RevisionState
from fulcrum.schemas.console import ConsoleManagementChange
from fulcrum.services import audit, network_takeover, revisions
from fulcrum.services.candidate import network_settings, store_network
from fulcrum.services.events import EventRecorder
from fulcrum.services.validation import validated


def change_management_address(
    session: Session,
    actor: audit.Actor,
    applier: Applier,
    events: EventRecorder,
    change: ConsoleManagementChange,
    network_dir: Path | None,
) -> tuple[Revision, str]:
    """Commit the change; the revision (confirmed) and the management interface's name."""
    _check_answers(change)
    running = revisions.snapshot_of(revisions.running(session)) or ConfigSnapshot()
    base = running.network or take_over(change.mac, network_dir)
    network = _with_console_fields(base, change)
    # Validated whole: the rules between the network and the rest (a VIP group's interface, the
    # sync interface's address) hold for the running configuration with this network too.
    document = {**running.model_dump(mode="json"), "network": network.model_dump(mode="json")}
    snapshot = validated(lambda: ConfigSnapshot.model_validate(document, context=WRITTEN))
    summary = (
        "DHCP" if change.dhcp else f"{change.address}" + (f" via {change.gateway}" if change.gateway else "")
    )
    revision = revisions.commit(
        session,
        actor,
        applier,
        events,
        f"console: management address of {network.management_interface} set to {summary}",
        None,
        snapshot=snapshot,
        candidate_follows=False,
    )
    # Into the candidate only now: the commit ends the request's transaction before it applies,
    # and a commit that failed leaves the candidate as it was. The network's own uncommitted edits
    # stay pending with the console's change on top, unless the two do not fit together.
    current = network_settings(session)
    candidate = network
    if current is not None and current != network.model_dump(mode="json"):
        with contextlib.suppress(ConfigInvalid):
            candidate = _with_console_fields(NetworkConfig.model_validate(current), change)
    store_network(session, candidate)
    audit.record(
        session,
        actor,
        "network.update",
        candidate.hostname,
        {"before": current, "after": candidate.model_dump(mode="json")},
    )
    if revision.state == RevisionState.AWAITING_CONFIRM.value:
        revision = revisions.confirm(session, actor, revision.number)
    return revision, network.management_interface


def _with_console_fields(network: NetworkConfig, change: ConsoleManagementChange) -> NetworkConfig:
    """with_management_address, its errors located at the console's own fields."""
    try:
        return validated(lambda: with_management_address(network, change))
    except ConfigInvalid as exc:
        raise ConfigInvalid([_as_console_field(error) for error in exc.errors]) from exc


def with_management_address(network: NetworkConfig, change: ConsoleManagementChange) -> NetworkConfig:
    """`network` with the management interface's IPv4 addressing, gateway and DNS as the console set
    them (its IPv6 addresses, every other interface and route unchanged). Raises ValidationError."""
    name = network.management_interface
    document: dict[str, Any] = network.model_dump(mode="json")
    found = False
    for kind in ("nics", "bonds", "vlans"):
        for interface in document[kind]:
            if interface["name"] == name:
                found = True
                ipv6 = [a for a in interface["addresses"] if ":" in a]
                interface["addresses"] = ipv6 if change.dhcp else [str(change.address), *ipv6]
                interface["dhcp4"] = change.dhcp
                interface["enabled"] = True
    if not found:
        raise ConfigInvalid(
            [_error(["body"], f"the management interface {name} is not in this node's network")]
        )
    document["gateway4"] = None if change.dhcp or change.gateway is None else str(change.gateway)
    if not change.dhcp:
        document["dns_servers"] = [str(server) for server in change.dns]
    return NetworkConfig.model_validate(document)


def take_over(mac: str | None, network_dir: Path | None) -> NetworkConfig:
    """A first network from what the kernel runs now, managed on the NIC with MAC `mac`; the host
    name and the NTP servers (`network_dir`'s timesyncd.conf, the image's own) are kept."""
    if mac is None:
        raise ConfigInvalid(
            [
                _error(
                    ["body", "mac"],
                    "this node's network is not managed yet: name the management NIC by its MAC address",
                )
            ]
        )
    nics, routes = network_takeover.read_kernel()
    management = next((nic for nic in nics if nic.kind == "physical" and nic.mac.lower() == mac), None)
    if management is None:
        raise ConfigInvalid(
            [_error(["body", "mac"], f"no network interface of this node has the MAC address {mac}")]
        )
    return network_takeover.document(nics, routes, management.name, network_dir)


def _check_answers(change: ConsoleManagementChange) -> None:
    if change.dhcp:
        given = [field for field in ("address", "gateway") if getattr(change, field) is not None]
        given += ["dns"] if change.dns else []
        if given:
            raise ConfigInvalid(
                [_error(["body", field], "DHCP brings this; leave it out") for field in given]
            )
    elif change.address is None:
        raise ConfigInvalid([_error(["body", "address"], "a static management address needs one")])
    elif change.address.network.prefixlen < 32 and change.address.ip in (
        change.address.network.network_address,
        change.address.network.broadcast_address,
    ):
        raise ConfigInvalid(
            [
                _error(
                    ["body", "address"],
                    f"{change.address.ip} is the network or broadcast address of {change.address.network}",
                )
            ]
        )


# Where an error in the network the console's answers make belongs, among those answers.
_CONSOLE_FIELDS = {"gateway4": "gateway", "dns_servers": "dns", "addresses": "address", "dhcp4": "dhcp"}


def _as_console_field(error: dict[str, Any]) -> dict[str, Any]:
    field = next((_CONSOLE_FIELDS[part] for part in error["loc"] if part in _CONSOLE_FIELDS), None)
    return {**error, "loc": ["body", field] if field else error["loc"]}


def _error(loc: list[str | int], msg: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": "value_error"}
