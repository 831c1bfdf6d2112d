"""System → Diagnostics: tools run from this node (operators and admins), read-only tables, a
packet capture and the support bundle. The tools change nothing, so a standby runs them too."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from fulcrum.apply.capture import kernel_interfaces
from fulcrum.db import SessionDep
from fulcrum.deps import Admin, ApplierDep, HaRuntimeDep, Operator, SettingsDep
from fulcrum.ha.view import ha_status
from fulcrum.routers.one_writer import any_node
from fulcrum.routers.params import Offset
from fulcrum.schemas.diagnostics import (
    CaptureRequest,
    HttpGetRequest,
    HttpGetResult,
    Interfaces,
    IpvsConnectionPage,
    NeighbourTable,
    PingRequest,
    TcpConnectRequest,
    TcpConnectResult,
    ToolRun,
    TracerouteRequest,
)
from fulcrum.services import diagnostics, support_bundle

router = APIRouter(prefix="/diagnostics", tags=["diagnostics"])

Endpoint = Annotated[str | None, Query(max_length=64, description="ADDRESS, ADDRESS:PORT or [IPv6]:PORT")]
PCAP = "application/vnd.tcpdump.pcap"


@router.post("/ping", summary="ping a host from this node (1-10 echo requests)")
@any_node
def ping(body: PingRequest, _: Operator) -> ToolRun:
    return diagnostics.ping(body)


@router.post("/traceroute", summary="The path to a host from this node (tracepath, up to 30 hops)")
@any_node
def traceroute(body: TracerouteRequest, _: Operator) -> ToolRun:
    return diagnostics.traceroute(body)


@router.post("/tcp-connect", summary="Open a TCP connection from this node and time it")
@any_node
def tcp_connect(body: TcpConnectRequest, _: Operator) -> TcpConnectResult:
    return diagnostics.tcp_connect(body)


@router.post("/http-get", summary="GET a URL from this node with timings (redirects on the same host only)")
@any_node
def http_get(body: HttpGetRequest, _: Operator) -> HttpGetResult:
    return diagnostics.http_get(body)


@router.get("/interfaces", summary="This node's network interfaces, as the kernel lists them")
def interfaces(_: Operator) -> Interfaces:
    return Interfaces(names=kernel_interfaces())


@router.get("/connections", summary="The IPVS connection table, filtered and paged, with counts per state")
def connections(
    settings: SettingsDep,
    _: Operator,
    service: Endpoint = None,
    backend: Endpoint = None,
    client: Annotated[str | None, Query(max_length=45, description="a client's IP address")] = None,
    state: Annotated[str | None, Query(pattern=r"^[A-Z_]{1,16}$", description="e.g. ESTABLISHED")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Offset = 0,
) -> IpvsConnectionPage:
    return diagnostics.connections(settings.ipvs_conn_file, service, backend, client, state, limit, offset)


@router.get("/neighbours", summary="The neighbour table (ARP and IPv6 neighbour discovery)")
def neighbours(_: Operator) -> NeighbourTable:
    return diagnostics.neighbour_table()


@router.post(
    "/capture",
    summary="Capture packets on an interface (at most 1000 packets and 60 s) and download them as pcap",
    response_class=Response,
    responses={200: {"content": {PCAP: {"schema": {"type": "string", "format": "binary"}}}}},
)
@any_node
async def capture(body: CaptureRequest, applier: ApplierDep, _: Operator) -> Response:
    pcap = await run_in_threadpool(diagnostics.capture, applier, body)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Response(
        pcap,
        media_type=PCAP,
        headers={"Content-Disposition": f'attachment; filename="fulcrum-{body.interface}-{stamp}.pcap"'},
    )


@router.get(
    "/support-bundle",
    summary="Versions, configuration (secrets removed), logs, IPVS, HA status and applies as one tar.gz",
    response_class=Response,
    responses={200: {"content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}}},
)
def download_support_bundle(
    session: SessionDep, settings: SettingsDep, applier: ApplierDep, runtime: HaRuntimeDep, _: Admin
) -> Response:
    assert settings.keepalived_conf is not None and settings.nftables_conf is not None
    bundle = support_bundle.build(
        session,
        applier,
        ha_status(session, runtime).model_dump(mode="json"),
        (settings.keepalived_conf, settings.nftables_conf),
        settings.journal_directory,
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Response(
        bundle,
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="fulcrum-support-{stamp}.tar.gz"'},
    )
