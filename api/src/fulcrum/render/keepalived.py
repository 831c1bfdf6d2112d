"""keepalived.conf from a snapshot: VRRP for the VIP groups, IPVS virtual servers with checkers.

Python flattens the snapshot into sorted lists of strings and numbers; the template only lays
them out. Every string placed in the file is a restricted type of fulcrum.config.types (names,
host names, HTTP paths, hex, interface names), an address or number formatted here, or a
RuntimePaths value checked below, so no value can open a block, start a comment, quote, or
substitute a parameter. Nothing that runs a program is ever rendered (no notify scripts,
MISC_CHECK, quorum_up/down): a path there would be code execution as root.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from fulcrum.config.snapshot import Backend, ConfigSnapshot, HealthCheck, Node, Service, VipGroup
from fulcrum.config.types import CheckType, FailureAction, Forwarding, IPAddress, TunnelType
from fulcrum.render.jinja import template

# An absolute path of plain components: nothing keepalived could read as syntax.
_PATH = re.compile(r"(?:/[A-Za-z0-9_.-]+)+")

SYNC_GROUP = "fulcrum"
MAINTENANCE_TRACK = "maintenance"

_CHECKERS = {
    CheckType.TCP: "TCP_CHECK",
    CheckType.HTTP: "HTTP_GET",
    CheckType.HTTPS: "SSL_GET",
    CheckType.DNS: "DNS_CHECK",
    CheckType.SMTP: "SMTP_CHECK",
    CheckType.UDP: "UDP_CHECK",
    CheckType.PING: "PING_CHECK",
}

_TEMPLATE = template("keepalived.conf.j2")


@dataclass(frozen=True)
class RuntimePaths:
    """Paths from the appliance's settings (never from users) that keepalived.conf refers to.

    notify_fifo: VRRP state changes. Rendered as `vrrp_notify_fifo`, because keepalived's plain
        `notify_fifo` would receive the checker events as well.
    lvs_notify_fifo: real and virtual server up/down events from the checkers.
    maintenance_file: a track_file; a non-zero number in it puts every VRRP instance in FAULT.
    """

    notify_fifo: str | None = None
    lvs_notify_fifo: str | None = None
    maintenance_file: str | None = None

    def __post_init__(self) -> None:
        for field, path in vars(self).items():
            if path is not None and not _PATH.fullmatch(path):
                raise ValueError(f"{field}: {path!r} is not an absolute path of [A-Za-z0-9_.-] components")
        if self.notify_fifo is not None and self.notify_fifo == self.lvs_notify_fifo:
            raise ValueError("notify_fifo and lvs_notify_fifo must differ: keepalived needs one FIFO each")


def render_keepalived(snapshot: ConfigSnapshot, runtime: RuntimePaths) -> str:
    """The whole keepalived.conf for the snapshot; the same input always gives the same text."""
    node = snapshot.node
    groups = sorted(snapshot.vip_groups, key=lambda group: group.name)
    instances = [_vrrp_instance(group, node, runtime) for group in groups]
    return _TEMPLATE.render(
        router_id=node.name,
        notify_fifo=runtime.notify_fifo,
        lvs_notify_fifo=runtime.lvs_notify_fifo,
        # The sync daemon follows the first instance; the sync group keeps the others with it.
        sync_interface=node.sync_interface if instances else None,
        sync_instance=instances[0]["name"] if instances else None,
        maintenance_file=runtime.maintenance_file if instances else None,
        maintenance_track=MAINTENANCE_TRACK,
        # keepalived rejects a sync group of one instance.
        sync_group=SYNC_GROUP,
        sync_members=[instance["name"] for instance in instances] if len(instances) > 1 else [],
        vrrp_instances=instances,
        virtual_servers=[_virtual_server(service) for service in balanced_services(snapshot)],
    )


def balanced_services(snapshot: ConfigSnapshot) -> list[Service]:
    """The services keepalived puts in IPVS, by name: enabled ones with an enabled backend.

    keepalived refuses a virtual_server without real servers, so a service whose backends are all
    disabled stays out of IPVS (and out of the nftables rules) until one is enabled again.
    """
    active = (s for s in snapshot.services if s.enabled and any(b.enabled for b in s.backends))
    return sorted(active, key=lambda service: service.name)


def instance_name(group: VipGroup) -> str:
    """The vrrp_instance of a group; the prefix keeps a group name from reading as a keyword."""
    return f"VG_{group.name}"


def _vrrp_instance(group: VipGroup, node: Node, runtime: RuntimePaths) -> dict[str, object]:
    unicast = node.peer_address is not None
    return {
        "name": instance_name(group),
        "interface": node.vrrp_interface,
        "virtual_router_id": group.virtual_router_id,
        "priority": node.priority,
        "advert_int": _seconds(group.advert_interval),
        # Both nodes start BACKUP; without preempt the MASTER keeps the addresses until it fails.
        "nopreempt": not group.preempt,
        # No peer: keepalived's default multicast, also what a lone node runs (it becomes MASTER).
        "unicast_src_ip": str(node.unicast_source) if unicast and node.unicast_source else None,
        "unicast_peer": str(node.peer_address) if unicast else None,
        "addresses": sorted(group.addresses, key=ipaddress.ip_interface),
        "track_maintenance": runtime.maintenance_file is not None,
    }


def _virtual_server(service: Service) -> dict[str, object]:
    backends = sorted(
        (backend for backend in service.backends if backend.enabled),
        key=lambda backend: (backend.address, _backend_port(service, backend) or 0),
    )
    real_servers = [_real_server(service, backend) for backend in backends]
    sorry = service.sorry_server
    sorry_endpoint = None
    if sorry is not None:
        sorry_endpoint = _endpoint(sorry.address, None if service.is_fwmark else sorry.port or service.ports[0])
    return {
        "name": service.name,
        "endpoint": f"fwmark {service.fwmark}" if service.is_fwmark else _endpoint(service.address, service.ports[0]),
        # A fwmark has no address: state its family rather than leave keepalived to infer it from
        # the real servers. keepalived ignores (and warns about) a protocol on a fwmark service.
        "ip_family": ("inet6" if service.family == 6 else "inet") if service.is_fwmark else None,
        "protocol": None if service.is_fwmark else service.protocol.value.upper(),
        "scheduler": service.scheduler.value,
        "scheduler_flags": [
            f"{service.scheduler.value}-{flag}"
            for flag, wanted in (("fallback", service.scheduler_fallback), ("port", service.scheduler_port))
            if wanted
        ],
        "ops": service.one_packet_scheduling,
        "lvs_method": _lvs_method(service),
        "persistence_timeout": service.persistence_timeout,
        "persistence_granularity": _granularity(service),
        # keepalived reduces a quorum above the enabled weight to that weight, with a warning that
        # fails `keepalived -t`; do the same reduction here, without the warning.
        "quorum": max(1, min(service.quorum, sum(b.weight for b in service.backends if b.enabled))),
        "sorry_server": sorry_endpoint,
        # keepalived insists a sorry server that is also a real server shares its inhibit setting.
        "sorry_server_inhibit": any(
            rs["endpoint"] == sorry_endpoint and rs["inhibit_on_failure"] for rs in real_servers
        ),
        "real_servers": real_servers,
    }


def _real_server(service: Service, backend: Backend) -> dict[str, object]:
    check = backend.health_check or service.health_check
    # A fwmark real server has no port, so keepalived would probe port 0: check the service's first
    # port unless the check names its own.
    default_port = service.ports[0] if service.is_fwmark else None
    checker = None if check.type == CheckType.NONE else _checker(check, default_port)
    return {
        "endpoint": _endpoint(backend.address, _backend_port(service, backend)),
        "weight": backend.weight,
        "uthreshold": backend.upper_threshold or None,
        "lthreshold": backend.lower_threshold or None,
        "inhibit_on_failure": checker is not None and check.on_failure == FailureAction.WEIGHT_ZERO,
        "checker": checker,
    }


def _checker(check: HealthCheck, default_port: int | None) -> dict[str, object]:
    http = check.type in (CheckType.HTTP, CheckType.HTTPS)
    return {
        "kind": _CHECKERS[check.type],
        "connect_port": None if check.type == CheckType.PING else (check.port or default_port),
        "connect_timeout": _seconds(check.timeout),
        "delay_loop": _seconds(check.interval),
        "retry": check.retries,
        "delay_before_retry": _seconds(check.retry_delay),
        "url": {
            "path": check.http_path,
            "status_codes": " ".join(str(code) for code in sorted(set(check.http_status_codes))),
            "digest": check.http_digest,
        }
        if http
        else None,
        "virtualhost": check.http_host if http else None,
        "enable_sni": check.tls_sni,
        "dns": {"type": check.dns_query_type.value, "name": check.dns_query_name}
        if check.type == CheckType.DNS
        else None,
        "helo_name": check.smtp_helo_name if check.type == CheckType.SMTP else None,
        "payload": check.udp_payload if check.type == CheckType.UDP else None,
        "require_reply": check.type == CheckType.UDP and check.udp_require_reply,
    }


def _backend_port(service: Service, backend: Backend) -> int | None:
    """None for fwmark services: IPVS then keeps the port each client connected to."""
    return None if service.is_fwmark else backend.port or service.ports[0]


def _lvs_method(service: Service) -> str:
    if service.forwarding != Forwarding.TUN:
        return service.forwarding.value.upper()
    if service.tunnel_type == TunnelType.GUE:
        return f"TUN type gue port {service.tunnel_port}"
    if service.tunnel_type == TunnelType.GRE:
        return "TUN type gre"
    return "TUN"  # ipip, the kernel's default tunnel


def _granularity(service: Service) -> str | None:
    """keepalived reads an IPv4 granularity as a netmask and an IPv6 one as a prefix length."""
    prefix = service.persistence_prefix
    if prefix is None:
        return None
    if service.family == 4:
        return str(ipaddress.IPv4Network(f"0.0.0.0/{prefix}").netmask)
    return str(prefix)


def _endpoint(address: IPAddress, port: int | None) -> str:
    return str(address) if port is None else f"{address} {port}"


def _seconds(value: float) -> str:
    """keepalived timers take at most six decimals (microseconds): 1.0 -> '1', 0.5 -> '0.5'."""
    return f"{value:.6f}".rstrip("0").rstrip(".")
