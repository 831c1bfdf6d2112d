"""This node's own network: never replicated, so a standby changes its own too."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, status

from fulcrum.config.types import InterfaceName
from fulcrum.db import SessionDep
from fulcrum.deps import ActorDep, Admin, SettingsDep, Viewer
from fulcrum.openapi import NOT_FOUND, error
from fulcrum.routers.one_writer import any_node
from fulcrum.schemas.network import ClockStatus, KernelInterface, KernelRoute, NetworkSettings
from fulcrum.services import network, network_takeover

router = APIRouter(prefix="/network", tags=["network"])

_UNREADABLE: dict[int | str, dict[str, Any]] = {503: error("This node's interfaces cannot be read now")}


@router.get("", summary="This node's network as Fulcrum manages it (null: not managed)")
def get_network(session: SessionDep, _: Viewer) -> NetworkSettings | None:
    return network.get_network(session)


@router.put(
    "", summary="Replace this node's network (a change of the management address is commit-confirmed)"
)
@any_node
def put_network(body: NetworkSettings, session: SessionDep, _: Admin, actor: ActorDep) -> NetworkSettings:
    return network.set_network(session, actor, body)


@router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Stop managing this node's network (at commit its files go: the console's network applies)",
    responses=NOT_FOUND,
)
@any_node
def delete_network(session: SessionDep, _: Admin, actor: ActorDep) -> None:
    network.stop_managing(session, actor)


@router.get(
    "/takeover",
    summary="A first network from what the kernel runs now, to review before managing it (nothing is saved)",
    responses={**_UNREADABLE, 409: error("The kernel runs something the model refuses: where, and why")},
)
def get_takeover(
    settings: SettingsDep,
    _: Viewer,
    address: Annotated[
        str | None,
        Query(max_length=64, description="The management interface is the one holding it (the dashboard's)"),
    ] = None,
) -> NetworkSettings:
    return network_takeover.proposal(address, settings.network_dir)


@router.get(
    "/clock",
    summary="The system clock's synchronisation as the kernel has it, and the NTP servers it uses",
    responses={503: error("This node's clock cannot be read now")},
)
def get_clock(session: SessionDep, settings: SettingsDep, _: Viewer) -> ClockStatus:
    return network.clock(session, settings.network_dir)


@router.get(
    "/interfaces",
    summary="The kernel's interfaces now: link state, addresses, counters",
    responses=_UNREADABLE,
)
def list_interfaces(session: SessionDep, _: Viewer) -> list[KernelInterface]:
    return network.kernel_interfaces(session)


@router.get(
    "/routes",
    summary="The kernel's routes now: destination, gateway, interface, table, who made them",
    responses=_UNREADABLE,
)
def list_routes(_: Viewer) -> list[KernelRoute]:
    return network.kernel_routes()


@router.get(
    "/interfaces/{name}",
    summary="One interface as the kernel has it now",
    responses={**NOT_FOUND, **_UNREADABLE},
)
def get_interface(name: Annotated[InterfaceName, Path()], session: SessionDep, _: Viewer) -> KernelInterface:
    return network.kernel_interface(session, name)
