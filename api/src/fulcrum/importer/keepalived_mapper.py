"""keepalived directives to Fulcrum's desired-state model, reporting each directive's fate.

Fulcrum's model is smaller than keepalived's on purpose: no scripts (MISC_CHECK, notify, vrrp_script
would run as root), one health check per backend, one path per HTTP check, VRRP settings that are
per node rather than per instance. What does not fit is reported with the reason, never dropped.
Where keepalived's default differs from Fulcrum's, the imported value is keepalived's, so the
imported configuration behaves as the original did.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from fulcrum.importer import limits
from fulcrum.importer.draft import Draft, ImportDraft, is_number, prefix_from_mask, safe_name, service_name
from fulcrum.importer.keepalived_parser import Directive, walk
from fulcrum.importer.report import Report

# keepalived's own checker defaults (keepalived.conf(5)), used where the input leaves them out.
KEEPALIVED_DELAY_LOOP = 60.0
KEEPALIVED_CONNECT_TIMEOUT = 5.0
KEEPALIVED_RETRY = 1
KEEPALIVED_DELAY_BEFORE_RETRY = 1.0

SCRIPT_REASON = "never imported: it names a program that keepalived would run as root"
CHECKERS = {
    "TCP_CHECK": "tcp",
    "HTTP_GET": "http",
    "SSL_GET": "https",
    "DNS_CHECK": "dns",
    "SMTP_CHECK": "smtp",
    "UDP_CHECK": "udp",
    "PING_CHECK": "ping",
    "ICMP_CHECK": "ping",
}
SCRIPT_KEYWORDS = {
    "MISC_CHECK",
    "misc_path",
    "notify",
    "notify_up",
    "notify_down",
    "notify_master",
    "notify_backup",
    "notify_fault",
    "notify_stop",
    "notify_deleted",
    "notify_master_rx_lower_pri",
    "quorum_up",
    "quorum_down",
    "vrrp_script",
    "track_script",
    "script",
    "script_user",
    "checker_script",
}
SCHEDULER_FLAGS = {
    "sh-fallback": "scheduler_fallback",
    "mh-fallback": "scheduler_fallback",
    "flag-1": "scheduler_fallback",
    "sh-port": "scheduler_port",
    "mh-port": "scheduler_port",
    "flag-2": "scheduler_port",
}
NOT_IN_MODEL = "Fulcrum's model has no place for it"
# Checker settings that may also be given for all checkers of a virtual or real server.
TIMER_KEYWORDS = (
    "delay_loop",
    "connect_timeout",
    "retry",
    "nb_get_retry",
    "delay_before_retry",
    "virtualhost",
)


class _Mapper:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.draft = ImportDraft()
        self.server_groups: dict[str, Directive] = {}
        self.virtual_servers: list[Directive] = []

    # -- reporting helpers ---------------------------------------------------------------------

    def done(self, d: Directive, detail: str) -> None:
        self.report.imported(d.origin, detail)

    def changed(self, d: Directive, detail: str) -> None:
        self.report.changed(d.origin, detail)

    def skip(self, d: Directive, detail: str, recursive: bool = True) -> None:
        self.report.skipped(d.origin, detail)
        if recursive:
            for child in walk(d.children()):
                self.report.skipped(child.origin, f"inside {d.keyword}: {detail}")

    def script(self, d: Directive) -> None:
        self.skip(d, f"{d.keyword}: {SCRIPT_REASON}")

    # -- top level -------------------------------------------------------------------------------

    def run(self, directives: list[Directive]) -> ImportDraft:
        self.server_groups = {
            d.args[0]: d for d in directives if d.keyword == "virtual_server_group" and d.args
        }
        self.virtual_servers = [d for d in directives if d.keyword == "virtual_server"]
        top: dict[str, Callable[[Directive], None]] = {
            "global_defs": self.global_defs,
            "virtual_server": self.virtual_server,
            "virtual_server_group": self.virtual_server_group,
            "vrrp_instance": self.vrrp_instance,
            "vrrp_sync_group": self.vrrp_sync_group,
        }
        for d in directives:
            if d.keyword in SCRIPT_KEYWORDS:
                self.script(d)
            elif d.keyword in top:
                top[d.keyword](d)
            elif d.keyword.startswith("@"):
                self.skip(d, "a conditional line (@host): import the configuration as that host reads it")
            elif d.keyword.startswith("$"):
                self.skip(d, "parameter substitution ($NAME) is not imported; substitute the values first")
            elif d.keyword in ("SSL", "ssl"):
                self.skip(
                    d,
                    "SSL client certificate options: Fulcrum's https check presents no certificate, and "
                    "keepalived's SSL_GET does not verify the server's, so there is nothing to carry over",
                )
            elif d.keyword in (
                "static_ipaddress",
                "static_routes",
                "static_rules",
                "virtual_routes",
                "virtual_rules",
            ):
                self.skip(d, f"{d.keyword}: Fulcrum manages the appliance's addresses and routes itself")
            else:
                self.skip(d, f"unknown or unsupported directive {d.keyword!r}")
        return self.draft

    def global_defs(self, d: Directive) -> None:
        self.done(d, "read for router_id and lvs_sync_daemon")
        for item in d.children():
            if item.keyword == "router_id" and item.args:
                self.node(item, "name", safe_name(item.args[0]), "node name (router_id)")
            elif item.keyword in ("lvs_sync_daemon", "lvs_sync_daemon_interface") and item.args:
                self.node(item, "sync_interface", item.args[0], "connection sync interface")
                if len(item.args) > 1:
                    self.changed(item, "imported the interface only; Fulcrum names the sync instance itself")
            elif item.keyword in SCRIPT_KEYWORDS:
                self.script(item)
            elif item.keyword.startswith(("notification_email", "smtp_")):
                self.skip(
                    item, "e-mail alerts: Fulcrum reports events in its API, dashboard and metrics instead"
                )
            else:
                self.skip(item, f"global setting {item.keyword!r}: Fulcrum sets keepalived's globals itself")

    def node(self, d: Directive, key: str, value: Any, what: str) -> None:
        if key in self.draft.node:
            first = self.draft.node[key]
            if first.data["value"] == value:
                self.done(d, f"node setting {key} = {value}, as at line {first.origin.line}")
            else:
                self.skip(
                    d,
                    f"{what} was set already at line {first.origin.line}; Fulcrum has one value per node",
                    recursive=False,
                )
            return
        self.draft.node[key] = Draft(d.origin, {"value": value})
        self.done(d, f"node setting {key} = {value}")

    # -- virtual servers -------------------------------------------------------------------------

    def virtual_server_group(self, d: Directive) -> None:
        used = any(
            v.keyword == "virtual_server" and v.args[:2] == ["group", d.args[0] if d.args else ""]
            for v in self.virtual_servers
        )
        self.done(d, "its entries become one service each" if used else "read; no virtual_server uses it")
        # Entries are reported when the virtual_server using them is mapped.
        if not used:
            for entry in d.children():
                self.skip(entry, "no virtual_server uses this group")

    def virtual_server(self, d: Directive) -> None:
        args = d.args
        if not args:
            self.skip(d, "virtual_server without an address")
            return
        if args[0] == "fwmark":
            self.skip(
                d,
                "a fwmark virtual server takes its packets from firewall rules outside keepalived; "
                "create a multi-port service with the address and ports the mark covered",
            )
            return
        if args[0] == "group":
            group = self.server_groups.get(args[1] if len(args) > 1 else "")
            if group is None:
                self.skip(d, f"virtual_server_group {args[1:2]} is not defined")
                return
            settings = self.vs_settings(d)
            endpoints = self.group_entries(group)
            self.done(d, f"settings for the {len(endpoints)} services of virtual_server_group {args[1]}")
        else:
            if len(args) != 2 or not is_number(args[1]):
                self.skip(d, "needs an address and a port (`virtual_server 192.0.2.10 80`)")
                return
            settings = self.vs_settings(d)
            endpoints = [(d, args[0], int(args[1]))]
        for origin, address, port in endpoints:
            data = {**settings, "address": address, "ports": [port]}
            data["name"] = service_name(address, port, data.get("protocol", "tcp"))
            self.changed(
                origin, f"service {data['name']} (named after its address: keepalived's have no name)"
            )
            data["backends"] = [self.fit_port(origin, b, data) for b in settings["backends"]]
            self.draft.services.append(Draft(origin.origin, data))

    def fit_port(self, origin: Directive, backend: dict[str, Any], service: dict[str, Any]) -> dict[str, Any]:
        """DR and TUN cannot change the destination port; IPVS ignores a different one, so does Fulcrum."""
        port = backend.get("port")
        if service.get("forwarding") in ("dr", "tun") and port is not None and port != service["ports"][0]:
            self.changed(
                origin,
                f"backend {backend['address']} port {port} dropped: {service.get('forwarding', '').upper()} "
                f"forwarding keeps the service port {service['ports'][0]}",
            )
            return {k: v for k, v in backend.items() if k != "port"}
        return backend

    def group_entries(self, group: Directive) -> list[tuple[Directive, str, int]]:
        entries: list[tuple[Directive, str, int]] = []
        for entry in group.children():
            if entry.keyword == "fwmark":
                self.skip(
                    entry,
                    "a fwmark entry takes its packets from firewall rules outside keepalived; "
                    "create a multi-port service with the address and ports the mark covered",
                )
                continue
            if len(entry.args) != 1 or not is_number(entry.args[0]):
                self.skip(entry, "a group entry is an address (or range a.b.c.d-e) and a port")
                continue
            addresses = _expand_range(entry.keyword)
            if addresses is None:
                self.skip(
                    entry, f"{entry.keyword!r} is not an address or a range of at most {limits.MAX_RANGE}"
                )
                continue
            entries += [(entry, a, int(entry.args[0])) for a in addresses]
        return entries

    def vs_settings(self, d: Directive) -> dict[str, Any]:
        data: dict[str, Any] = {"health_check": {"type": "none"}}
        check_defaults: dict[str, Any] = {}
        real_servers: list[Directive] = []
        for item in d.children():
            key, args = item.keyword, item.args
            if key in ("lb_algo", "lvs_sched") and args:
                data["scheduler"] = args[0].lower()
                self.done(item, f"scheduler {args[0].lower()}")
            elif key in SCHEDULER_FLAGS:
                data[SCHEDULER_FLAGS[key]] = True
                self.done(item, SCHEDULER_FLAGS[key].replace("_", " "))
            elif key == "ops":
                data["one_packet_scheduling"] = True
                self.done(item, "one-packet scheduling")
            elif key in ("lb_kind", "lvs_method") and args:
                self.forwarding(item, data)
            elif key == "protocol" and args:
                data["protocol"] = args[0].lower()
                self.done(item, f"protocol {args[0].lower()}")
            elif key == "persistence_timeout":
                data["persistence_timeout"] = int(args[0]) if args and is_number(args[0]) else 360
                self.done(item, f"persistence {data['persistence_timeout']} s")
            elif key == "persistence_granularity" and args:
                data["_granularity"] = (item, args[0])
            elif key == "quorum" and args and is_number(args[0]):
                data["quorum"] = int(args[0])
                self.done(item, f"quorum {args[0]}")
            elif key == "sorry_server" and args:
                data["sorry_server"] = {
                    "address": args[0],
                    "port": int(args[1]) if len(args) > 1 and is_number(args[1]) else None,
                }
                self.done(item, "sorry server")
            elif key == "sorry_server_inhibit":
                self.done(item, "Fulcrum sets sorry_server_inhibit itself where keepalived needs it")
            elif key in TIMER_KEYWORDS and args:
                check_defaults[key] = (item, args[0])
                self.done(item, "default for the checkers of its real servers")
            elif key == "alpha":
                self.done(item, "Fulcrum always runs alpha: a backend gets traffic once its check passes")
            elif key == "ip_family":
                self.done(item, "the family follows the address")
            elif key == "real_server":
                real_servers.append(item)
            elif key in SCRIPT_KEYWORDS:
                self.script(item)
            elif key == "hysteresis":
                self.skip(item, f"quorum hysteresis: {NOT_IN_MODEL} (it only matters with quorum scripts)")
            elif key == "omega":
                self.skip(item, "omega runs the quorum_down script at shutdown; scripts are never imported")
            elif key == "persistence_engine":
                self.skip(item, f"persistence engine {args[:1]}: {NOT_IN_MODEL}")
            else:
                self.skip(item, f"virtual_server setting {key!r}: {NOT_IN_MODEL}")
        self.granularity(d, data)
        data["backends"] = [self.real_server(rs, check_defaults) for rs in real_servers]
        if not real_servers:
            self.report.changed(
                d.origin, "no real_server: imported without backends; it stays out of IPVS until one is added"
            )
        checks = [b.pop("health_check") for b in data["backends"]]
        if checks:
            data["health_check"] = checks[0]
            for backend, check in zip(data["backends"], checks, strict=True):
                if check != checks[0]:
                    backend["health_check"] = check
        return data

    def forwarding(self, item: Directive, data: dict[str, Any]) -> None:
        method = item.args[0].upper()
        if method in ("NAT", "DR", "TUN"):
            data["forwarding"] = method.lower()
            rest = [a.lower() for a in item.args[1:]]
            if rest[:2] == ["type", "gue"] and len(rest) >= 4 and rest[2] == "port" and is_number(rest[3]):
                data["tunnel_type"], data["tunnel_port"] = "gue", int(rest[3])
            elif rest[:2] == ["type", "gre"]:
                data["tunnel_type"] = "gre"
            elif rest and rest[:2] != ["type", "ipip"]:
                self.changed(
                    item, f"forwarding {method}; tunnel options {' '.join(item.args[1:])} not imported"
                )
                return
            self.done(item, f"forwarding {method}")
        else:
            self.skip(item, f"forwarding method {item.args[0]!r} is not NAT, DR or TUN")

    def granularity(self, d: Directive, data: dict[str, Any]) -> None:
        if "_granularity" not in data:
            return
        item, mask = data.pop("_granularity")
        family = _family(d.args[0]) if d.args and d.args[0] not in ("group", "fwmark") else 4
        prefix = prefix_from_mask(mask, family or 4)
        if prefix is None:
            self.skip(item, f"persistence_granularity {mask!r} is not a netmask or prefix length")
            return
        data["persistence_prefix"] = prefix
        self.done(item, f"persistence groups clients by /{prefix}")

    # -- real servers and checkers ----------------------------------------------------------------

    def real_server(self, rs: Directive, defaults: dict[str, Any]) -> dict[str, Any]:
        backend: dict[str, Any] = {"address": rs.args[0] if rs.args else ""}
        if len(rs.args) > 1 and is_number(rs.args[1]):
            backend["port"] = int(rs.args[1])
        self.done(rs, f"backend {' '.join(rs.args)}")
        checkers: list[Directive] = []
        local = dict(defaults)
        inhibit = False
        for item in rs.children():
            key, args = item.keyword, item.args
            if key == "weight" and args and is_number(args[0]):
                backend["weight"] = int(args[0])
                self.done(item, f"weight {args[0]}")
            elif key in ("uthreshold", "lthreshold") and args and is_number(args[0]):
                backend["upper_threshold" if key == "uthreshold" else "lower_threshold"] = int(args[0])
                self.done(
                    item, f"{'upper' if key == 'uthreshold' else 'lower'} connection threshold {args[0]}"
                )
            elif key == "inhibit_on_failure":
                inhibit = True
                self.done(item, "a failed check sets the weight to 0 rather than removing the backend")
            elif key in CHECKERS:
                checkers.append(item)
            elif key in TIMER_KEYWORDS and args:
                local[key] = (item, args[0])
                self.done(item, "default for this backend's checker")
            elif key in SCRIPT_KEYWORDS:
                self.script(item)
            else:
                self.skip(item, f"real_server setting {key!r}: {NOT_IN_MODEL}")
        if not checkers:
            backend["health_check"] = {"type": "none"}
        else:
            backend["health_check"] = self.checker(checkers[0], local)
            for extra in checkers[1:]:
                self.skip(extra, "Fulcrum checks a backend with one checker; the first one was imported")
        if inhibit:
            backend["health_check"]["on_failure"] = "weight_zero"
        return backend

    def checker(self, c: Directive, defaults: dict[str, Any]) -> dict[str, Any]:
        kind = CHECKERS[c.keyword]
        check: dict[str, Any] = {
            "type": kind,
            "interval": KEEPALIVED_DELAY_LOOP,
            "timeout": KEEPALIVED_CONNECT_TIMEOUT,
            "retries": KEEPALIVED_RETRY,
            "retry_delay": KEEPALIVED_DELAY_BEFORE_RETRY,
        }
        if kind in ("http", "https"):
            check["http_status_codes"] = [200]
        values = dict(defaults)
        urls: list[Directive] = []
        for item in c.children():
            key, args = item.keyword, item.args
            if key in TIMER_KEYWORDS and args:
                values[key] = (item, args[0])
            elif key == "connect_port" and args and is_number(args[0]):
                check["port"] = int(args[0])
                self.done(item, f"check port {args[0]}")
            elif key == "url" and kind in ("http", "https"):
                urls.append(item)
            elif key == "enable_sni" and kind == "https":
                check["tls_sni"] = True
                self.done(item, "send SNI")
            elif key == "type" and kind == "dns" and args:
                check["dns_query_type"] = args[0].upper()
                self.done(item, f"DNS query type {args[0].upper()}")
            elif key == "name" and kind == "dns" and args:
                check["dns_query_name"] = args[0]
                self.done(item, f"DNS query name {args[0]}")
            elif key == "helo_name" and kind == "smtp" and args:
                check["smtp_helo_name"] = args[0]
                self.done(item, f"SMTP HELO {args[0]}")
            elif key == "payload" and kind == "udp" and args:
                check["udp_payload"] = args[0]
                self.done(item, "UDP payload")
            elif key == "require_reply" and kind == "udp":
                check["udp_require_reply"] = True
                if args:
                    self.changed(
                        item, "a reply is required; Fulcrum does not compare it with the given bytes"
                    )
                else:
                    self.done(item, "a reply is required")
            elif (
                key in ("verify_cert", "ca", "certificate", "key", "password", "ssl_options")
                and kind == "https"
            ):
                self.skip(
                    item,
                    "certificate options: keepalived's SSL_GET cannot verify certificates, so Fulcrum does "
                    "not pretend to",
                )
            elif key in SCRIPT_KEYWORDS:
                self.script(item)
            else:
                self.skip(item, f"{c.keyword} setting {key!r}: {NOT_IN_MODEL}")
        self.check_timers(check, values)
        if kind in ("http", "https"):
            self.url(c, urls, check)
        if "virtualhost" in values and kind in ("http", "https"):
            item, host = values["virtualhost"]
            check["http_host"] = host
            if not self.report.was_reported(item.origin):
                self.done(item, f"HTTP Host {host}")
        if check.get("tls_sni") and "http_host" not in check:
            check.pop("tls_sni")
            self.changed(c, "SNI not sent: no virtualhost names the host")
        self.done(c, f"health check {kind}")
        return check

    def check_timers(self, check: dict[str, Any], values: dict[str, Any]) -> None:
        fields = {
            "delay_loop": ("interval", float, 0.1, 3600.0),
            "connect_timeout": ("timeout", float, 0.1, 60.0),
            "delay_before_retry": ("retry_delay", float, 0.1, 3600.0),
            "retry": ("retries", int, 0, 10),
            "nb_get_retry": ("retries", int, 0, 10),
        }
        for key, (field, kind, low, high) in fields.items():
            if key not in values:
                continue
            item, text = values[key]
            try:
                number = kind(text)
            except ValueError:
                self.skip(item, f"{key} {text!r} is not a number")
                continue
            fitted = min(max(number, low), high)
            check[field] = fitted
            if fitted != number:
                self.changed(item, f"{field} {number} is outside {low}..{high}; imported as {fitted}")
            elif not self.report.was_reported(item.origin):
                self.done(item, f"check {field} {fitted}")

    def url(self, c: Directive, urls: list[Directive], check: dict[str, Any]) -> None:
        if not urls:
            return
        first, rest = urls[0], urls[1:]
        codes: list[int] = []
        for item in first.children():
            key, args = item.keyword, item.args
            if key == "path" and args:
                check["http_path"] = args[0]
                self.done(item, f"HTTP path {args[0]}")
            elif key == "digest" and args:
                check["http_digest"] = args[0]
                self.done(item, "body MD5 digest")
            elif key == "status_code" and args:
                codes += _status_codes(args)
                self.done(item, "expected status codes")
            else:
                self.skip(item, f"url setting {key!r}: {NOT_IN_MODEL}")
        if codes:
            if len(codes) > 20:
                self.changed(
                    first, f"{len(codes)} status codes; Fulcrum keeps at most 20: {codes[0]}..{codes[19]}"
                )
                codes = codes[:20]
            check["http_status_codes"] = codes
        elif "http_digest" not in check:
            self.changed(first, "no status_code: keepalived accepts any 2xx; Fulcrum checks for 200")
        self.done(first, "the check's URL")
        for extra in rest:
            self.skip(extra, "Fulcrum checks one URL per backend; the first one was imported")

    # -- VRRP ------------------------------------------------------------------------------------

    def vrrp_instance(self, d: Directive) -> None:
        name = safe_name(d.args[0]) if d.args else "vrrp"
        group: dict[str, Any] = {"name": name, "addresses": [], "preempt": True}
        if d.args and name != d.args[0]:
            self.changed(d, f"VIP group {name} (the instance's name made to fit)")
        else:
            self.done(d, f"VIP group {name}")
        for item in d.children():
            key, args = item.keyword, item.args
            if key == "virtual_router_id" and args and is_number(args[0]):
                group["virtual_router_id"] = int(args[0])
                self.done(item, f"VRID {args[0]}")
            elif key == "advert_int" and args:
                try:
                    group["advert_interval"] = float(args[0])
                    self.done(item, f"advert interval {args[0]} s")
                except ValueError:
                    self.skip(item, f"advert_int {args[0]!r} is not a number")
            elif key == "nopreempt":
                group["preempt"] = False
                self.done(item, "no preemption")
            elif key == "preempt":
                self.done(item, "preemption (keepalived's default too)")
            elif key in ("virtual_ipaddress", "virtual_ipaddress_excluded"):
                self.vips(item, group, name)
            elif key == "interface" and args:
                self.interface(item, name, args[0])
            elif key == "priority" and args and is_number(args[0]):
                self.node(item, "priority", min(max(int(args[0]), 1), 254), "priority")
            elif key == "unicast_src_ip" and args:
                self.node(item, "unicast_source", args[0], "unicast source")
            elif key == "unicast_peer":
                peers = item.children()
                if peers:
                    self.node(peers[0], "peer_address", peers[0].keyword, "peer address")
                    for extra in peers[1:]:
                        self.skip(extra, "Fulcrum pairs with one peer; the first was imported")
                self.done(item, "unicast VRRP")
            elif key == "track_interface":
                tracked = [t.keyword for t in item.children()]
                for t in item.children():
                    if t.args:
                        self.changed(t, "tracked; a weight is not imported (a lost interface moves the VIPs)")
                    else:
                        self.done(t, "tracked interface")
                merged = list(dict.fromkeys([*self._tracked(), *tracked]))
                self.draft.node["track_interfaces"] = Draft(item.origin, {"value": merged})
                self.done(item, "node setting track_interfaces")
            elif key == "state":
                self.skip(
                    item, "Fulcrum starts both nodes as BACKUP; the priority decides who becomes MASTER"
                )
            elif key == "authentication":
                self.skip(item, "VRRP authentication: Fulcrum runs VRRPv3, which has none")
            elif key in ("lvs_sync_daemon_interface",) and args:
                self.node(item, "sync_interface", args[0], "connection sync interface")
            elif key in SCRIPT_KEYWORDS:
                self.script(item)
            else:
                self.skip(item, f"vrrp_instance setting {key!r}: {NOT_IN_MODEL}")
        if "virtual_router_id" not in group:
            self.report.skipped(d.origin, "no virtual_router_id: the instance cannot be imported")
            return
        self.draft.vip_groups.append(Draft(d.origin, group))

    def interface(self, item: Directive, group: str, interface: str) -> None:
        """The node has one VRRP interface; an instance on another keeps its VIPs there."""
        first = self.draft.node.get("vrrp_interface")
        if first is None or first.data["value"] == interface:
            self.node(item, "vrrp_interface", interface, "VRRP interface")
            return
        self.node_vip_interface(item, group, interface)
        self.changed(
            item,
            f"VIP group {group}'s addresses live on {interface}; its adverts go out through "
            f"{first.data['value']}, the node's VRRP interface (line {first.origin.line})",
        )

    def _tracked(self) -> list[str]:
        current = self.draft.node.get("track_interfaces")
        return list(current.data["value"]) if current else []

    def vips(self, block: Directive, group: dict[str, Any], name: str) -> None:
        self.done(block, "the group's addresses")
        for vip in block.children():
            try:
                address = ipaddress.ip_interface(vip.keyword)
            except ValueError:
                self.skip(vip, f"{vip.keyword!r} is not an address")
                continue
            if address.with_prefixlen in group["addresses"]:
                self.changed(vip, f"address {address.with_prefixlen} is listed twice; imported once")
                continue
            group["addresses"].append(address.with_prefixlen)
            options = vip.args
            if len(options) >= 2 and options[0] == "dev":
                self.node_vip_interface(vip, name, options[1])
                options = options[2:]
            if options:
                self.changed(
                    vip, f"address {address.with_prefixlen}; options {' '.join(options)} not imported"
                )
            else:
                self.done(vip, f"address {address.with_prefixlen}")

    def node_vip_interface(self, vip: Directive, group: str, interface: str) -> None:
        current = self.draft.node.get("vip_interfaces")
        mapping = dict(current.data["value"]) if current else {}
        mapping.setdefault(group, interface)
        self.draft.node["vip_interfaces"] = Draft(vip.origin, {"value": mapping})

    def vrrp_sync_group(self, d: Directive) -> None:
        self.done(d, "Fulcrum keeps all its VIP groups in one sync group")
        for item in d.children():
            if item.keyword == "group":
                self.done(item, "members: " + " ".join(m.keyword for m in item.children()))
                for member in item.children():
                    self.done(member, "sync group member")
            elif item.keyword in SCRIPT_KEYWORDS:
                self.script(item)
            else:
                self.skip(item, f"vrrp_sync_group setting {item.keyword!r}: {NOT_IN_MODEL}")


def _family(address: str) -> int | None:
    try:
        return ipaddress.ip_address(address).version
    except ValueError:
        return None


def _expand_range(text: str) -> list[str] | None:
    """'192.0.2.3-10' -> the addresses .3 to .10; a plain address -> itself."""
    if "-" not in text:
        return [text] if _family(text) else None
    first, _, last = text.rpartition("-")
    try:
        start = ipaddress.ip_address(first)
        end_part = int(last, 16 if start.version == 6 else 10)
    except ValueError:
        return None
    low = int(start) & ~(0xFF if start.version == 4 else 0xFFFF)
    end = low + end_part
    if end < int(start) or end - int(start) >= limits.MAX_RANGE:
        return None
    return [str(ipaddress.ip_address(n)) for n in range(int(start), end + 1)]


def _status_codes(args: list[str]) -> list[int]:
    codes: list[int] = []
    for arg in args:
        low, _, high = arg.partition("-")
        if not is_number(low) or (high and not is_number(high)):
            continue
        top = int(high) if high else int(low)
        codes += range(int(low), min(top, int(low) + 500) + 1)
    return codes


def map_keepalived(directives: list[Directive], report: Report) -> ImportDraft:
    mapper = _Mapper(report)
    draft = mapper.run(directives)
    for d in walk(directives):
        if not report.was_reported(d.origin):
            report.skipped(d.origin, f"{d.keyword!r} was not read by the importer")
    return draft
