"""keepalived.conf from a snapshot: VRRP for the VIP groups, IPVS virtual servers with checkers.

Python flattens the snapshot into sorted lists of strings and numbers; the template only lays
them out. Every string placed in the file is a restricted type of fulcrum.config.types (names,
host names, HTTP paths, hex, interface names), an address or number formatted here, or a
RuntimePaths value checked below, so no value can open a block, start a comment, quote, or
substitute a parameter. The one program keepalived runs is Fulcrum's own node-health check,
whose path, URL and timers come from the appliance settings (NodeHealth), never from users; no
notify scripts, MISC_CHECK or quorum_up/down: a path there would be code execution as root.

VRRP for a pair: every VIP group is an instance (one sync group, so they move together), both
nodes start BACKUP and never preempt (fulcrum.ha.failback carries out a group's preempt once the
connection table is synced), adverts go unicast to the peer; the node-health script
and the maintenance track file put a sick or drained node in FAULT, which sends a priority-0
advert so the peer takes over at once; the interfaces holding VIPs are tracked; every VIP is
re-announced (gratuitous ARP / unsolicited NA) on takeover, a second time a second later, when a
lower-priority master shows up (the end of a split brain) and every minute while MASTER; the IPVS
connection-sync daemon follows the VRRP state.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass

from fulcrum.config.snapshot import (
    Backend,
    ConfigSnapshot,
    HealthCheck,
    Node,
    Service,
    VipGroup,
    programmed_backends,
)
from fulcrum.config.types import CheckType, FailureAction, Forwarding, IPAddress, TunnelType
from fulcrum.render.jinja import template

# An absolute path of plain components: nothing keepalived could read as syntax.
_PATH = re.compile(r"(?:/[A-Za-z0-9_.-]+)+")
# An http(s) URL of the same plain characters: host name or address, optional port, plain path.
_URL = re.compile(r"https?://(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?(?:/[A-Za-z0-9_.~-]*)*")

SYNC_GROUP = "fulcrum"
INSTANCE_PREFIX = "VG_"  # keeps a group name from reading as a keyword
MAINTENANCE_TRACK = "maintenance"
NODE_HEALTH_SCRIPT = "node_health"
# keepalived kills a script that outlives its timeout and counts a failure. The probes bound the
# check itself; this allows for Python's start-up on a slow or busy box (seconds in an emulated
# VM), so that a slow start is not mistaken for a sick API.
NODE_HEALTH_START_SECONDS = 10

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


def _check_path(field: str, path: str | None) -> None:
    if path is not None and not _PATH.fullmatch(path):
        raise ValueError(f"{field}: {path!r} is not an absolute path of [A-Za-z0-9_.-] components")


@dataclass(frozen=True)
class NodeHealth:
    """The node-health vrrp_script (fulcrum.ha.node_health), from the appliance's settings.

    program: the fulcrum-node-health executable (root-owned, as enable_script_security demands).
    url: this node's API health endpoint as seen from keepalived's network namespace.
    checker_pidfile: keepalived's checker process pid file (checked when there are services).
    verdict_file: where the script keeps its last verdict, and sends a changed one to the journal.
    interval, fall, rise: keepalived's script timers (whole seconds; failures / successes in a row).
    timeout: seconds per HTTP probe (the local API, then the peer's when the local one fails).
    """

    program: str
    url: str
    checker_pidfile: str | None = None
    verdict_file: str | None = None
    interval: int = 1
    timeout: float = 1.0
    fall: int = 2
    rise: int = 2

    def __post_init__(self) -> None:
        _check_path("node_health.program", self.program)
        _check_path("node_health.checker_pidfile", self.checker_pidfile)
        _check_path("node_health.verdict_file", self.verdict_file)
        if not _URL.fullmatch(self.url):
            raise ValueError(f"node_health.url: {self.url!r} is not a plain http(s) URL")
        for field in ("interval", "fall", "rise"):
            value = getattr(self, field)
            if not isinstance(value, int) or not 1 <= value <= 60:
                raise ValueError(f"node_health.{field}: {value!r} is not a whole number from 1 to 60")
        if not 0 < self.timeout <= 30:
            raise ValueError(f"node_health.timeout: {self.timeout!r} is not in (0, 30] seconds")


@dataclass(frozen=True)
class RuntimePaths:
    """Paths from the appliance's settings (never from users) that keepalived.conf refers to.

    notify_fifo: VRRP state changes. Rendered as `vrrp_notify_fifo`, because keepalived's plain
        `notify_fifo` would receive the checker events as well.
    lvs_notify_fifo: real and virtual server up/down events from the checkers.
    maintenance_file: a track_file; a non-zero number in it puts every VRRP instance in FAULT.
    node_health: the node-health script, rendered for a node with a peer (unicast or multicast).
    """

    notify_fifo: str | None = None
    lvs_notify_fifo: str | None = None
    maintenance_file: str | None = None
    node_health: NodeHealth | None = None

    def __post_init__(self) -> None:
        for field in ("notify_fifo", "lvs_notify_fifo", "maintenance_file"):
            _check_path(field, getattr(self, field))
        if self.notify_fifo is not None and self.notify_fifo == self.lvs_notify_fifo:
            raise ValueError("notify_fifo and lvs_notify_fifo must differ: keepalived needs one FIFO each")


def render_keepalived(snapshot: ConfigSnapshot, runtime: RuntimePaths) -> str:
    """The whole keepalived.conf for the snapshot; the same input always gives the same text."""
    node = snapshot.node
    groups = sorted(snapshot.vip_groups, key=lambda group: group.name)
    clustered = snapshot.clustered_services()
    virtual_servers = [
        _virtual_server(service, service.name in clustered) for service in snapshot.balanced_services()
    ]
    # A lone node has nobody to hand over to: stepping down would only drop its VIPs.
    has_peer = node.peer_address is not None or node.multicast
    node_health = (
        _node_health(runtime.node_health, node, bool(virtual_servers)) if groups and has_peer else None
    )
    instances = [_vrrp_instance(group, node, runtime, node_health is not None) for group in groups]
    return _TEMPLATE.render(
        router_id=node.name,
        notify_fifo=runtime.notify_fifo,
        lvs_notify_fifo=runtime.lvs_notify_fifo,
        vrrp=bool(instances),
        # The sync daemon follows the first instance; the sync group keeps the others with it.
        sync_interface=node.sync_interface if instances else None,
        sync_instance=instances[0]["name"] if instances else None,
        maintenance_file=runtime.maintenance_file if instances else None,
        maintenance_track=MAINTENANCE_TRACK,
        node_health=node_health,
        # keepalived rejects a sync group of one instance.
        sync_group=SYNC_GROUP,
        sync_members=[instance["name"] for instance in instances] if len(instances) > 1 else [],
        vrrp_instances=instances,
        virtual_servers=virtual_servers,
    )


def instance_name(group: VipGroup) -> str:
    """The vrrp_instance of a group."""
    return f"{INSTANCE_PREFIX}{group.name}"


def _node_health(health: NodeHealth | None, node: Node, has_checker: bool) -> dict[str, object] | None:
    if health is None:
        return None
    command = [health.program, "--url", health.url, "--timeout", _seconds(health.timeout)]
    if has_checker and health.checker_pidfile:  # keepalived runs no checker process without virtual servers
        command += ["--checker-pidfile", health.checker_pidfile]
    if node.peer_address is not None:
        command += ["--peer", str(node.peer_address)]
    if health.verdict_file:
        command += ["--verdict-file", health.verdict_file]
    return {
        "name": NODE_HEALTH_SCRIPT,
        "command": " ".join(command),
        "interval": health.interval,
        # The local probe, the peer's when the local one fails, and the interpreter's start-up.
        "timeout": math.ceil(2 * health.timeout) + NODE_HEALTH_START_SECONDS,
        "fall": health.fall,
        "rise": health.rise,
    }


def _vrrp_instance(
    group: VipGroup, node: Node, runtime: RuntimePaths, node_health: bool
) -> dict[str, object]:
    unicast = node.peer_address is not None
    vip_interface = node.vip_interfaces.get(group.name, node.vrrp_interface)
    # keepalived tracks the instance's own interface by itself (and warns when it is listed).
    tracked = sorted(({vip_interface} | set(node.track_interfaces)) - {node.vrrp_interface})
    return {
        "name": instance_name(group),
        "interface": node.vrrp_interface,
        "virtual_router_id": group.virtual_router_id,
        "priority": node.priority,
        "advert_int": _seconds(group.advert_interval),
        # No peer: keepalived's default multicast, also what a lone node runs (it becomes MASTER).
        "unicast_src_ip": str(node.unicast_source) if unicast and node.unicast_source else None,
        "unicast_peer": str(node.peer_address) if unicast else None,
        # IPv6 VIPs deprecated (preferred_lft 0): still served, never picked as the source of the
        # node's own traffic, which would otherwise prefer a /128 VIP by longest-prefix match and
        # send health checks from the VIP, whose replies DR backends keep (they hold the VIP).
        "addresses": [
            {"address": str(address), "deprecated": ipaddress.ip_interface(address).version == 6}
            for address in sorted(group.addresses, key=ipaddress.ip_interface)
        ],
        "vip_interface": vip_interface,
        "track_interfaces": tracked,
        "track_maintenance": runtime.maintenance_file is not None,
        "track_node_health": node_health,
    }


def _virtual_server(service: Service, clustered: bool) -> dict[str, object]:
    backends = programmed_backends(service, clustered)
    if not clustered:
        # Sorted, so that a list reordered by the API renders the same file. A clustered service
        # keeps the order IPVS holds on every node, which its mh table depends on.
        backends.sort(key=lambda backend: (backend.address, _backend_port(service, backend) or 0))
    real_servers = [_real_server(service, backend) for backend in backends]
    sorry = service.sorry_server
    sorry_endpoint = None
    if sorry is not None:
        sorry_endpoint = _endpoint(
            sorry.address, None if service.is_fwmark else sorry.port or service.ports[0]
        )
    return {
        "name": service.name,
        "endpoint": f"fwmark {service.fwmark}"
        if service.is_fwmark
        else _endpoint(service.address, service.ports[0]),
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
