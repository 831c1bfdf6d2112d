"""ipvsadm rules (`ipvsadm -S -n` / ipvsadm-save output, `ipvsadm -R` input) to Fulcrum's model.

One rule a line: -A/-E add or edit a virtual service, -a/-e add or edit a real server, in short
or long options, optionally prefixed with `ipvsadm`. A shell wrapper such as the seed thesis's
`echo "...rules..." | ipvsadm -R` is recognised and reported, so its scripts import as they are.
ipvsadm has no health checks: services import with checks off, exactly what the rules did.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from fulcrum.importer import limits
from fulcrum.importer.draft import Draft, ImportDraft, is_number, prefix_from_mask, service_name
from fulcrum.importer.limits import ImportRejected
from fulcrum.importer.report import Origin, Report

MAIN = "rules"
IPVSADM_PERSISTENCE = 300  # -p without a timeout
IPVSADM_SCHEDULER = "wlc"

_LONG = {
    "--add-service": "-A",
    "--edit-service": "-E",
    "--add-server": "-a",
    "--edit-server": "-e",
    "--tcp-service": "-t",
    "--udp-service": "-u",
    "--fwmark-service": "-f",
    "--scheduler": "-s",
    "--persistent": "-p",
    "--netmask": "-M",
    "--real-server": "-r",
    "--gatewaying": "-g",
    "--masquerading": "-m",
    "--ipip": "-i",
    "--weight": "-w",
    "--u-threshold": "-x",
    "--l-threshold": "-y",
    "--sched-flags": "-b",
    "--ops": "-o",
    "--pe": "--pe",
    "--delete-service": "-D",
    "--delete-server": "-d",
    "--clear": "-C",
    "--zero": "-Z",
}
_FORWARDING = {"-g": "dr", "-m": "nat", "-i": "tun"}
_FLAGS = {
    "sh-fallback": "scheduler_fallback",
    "mh-fallback": "scheduler_fallback",
    "flag-1": "scheduler_fallback",
    "sh-port": "scheduler_port",
    "mh-port": "scheduler_port",
    "flag-2": "scheduler_port",
}
_SHELL = ('echo "', '"', "echo '", "'")


class _RuleError(ValueError):
    pass


@dataclass
class _Service:
    origin: Origin
    data: dict[str, Any]
    servers: dict[tuple[str, int | None], dict[str, Any]] = field(default_factory=dict)
    forwarding: str | None = None


def map_ipvsadm(text: str, report: Report) -> tuple[ImportDraft, list[str]]:
    limits.check_text("text", MAIN, text)
    services: dict[tuple[str, str, int], _Service] = {}
    lines = text.splitlines()
    if len(lines) > limits.MAX_DIRECTIVES:
        raise ImportRejected("text", f"more than {limits.MAX_DIRECTIVES} lines")
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        origin = Origin(MAIN, number, line)
        if not line or line.startswith("#"):
            continue
        if (
            line in _SHELL
            or line.startswith(("echo ", "#!"))
            or (line.endswith("| ipvsadm -R") and line.startswith(('"', "'")))
        ):
            report.imported(origin, "shell wrapper of ipvsadm -R input; the rules inside are read")
            continue
        words = line.split()
        if words[0] in ("ipvsadm", "/sbin/ipvsadm", "/usr/sbin/ipvsadm"):
            words = words[1:]
        try:
            _rule(words, origin, services, report)
        except _RuleError as exc:
            report.skipped(origin, str(exc))
    draft = ImportDraft()
    for service in services.values():
        service.data["backends"] = list(service.servers.values())
        if service.forwarding:
            service.data["forwarding"] = service.forwarding
        draft.services.append(Draft(service.origin, service.data))
    return draft, [MAIN]


def _options(words: list[str]) -> list[tuple[str, str | None]]:
    """(option, value) pairs with long options made short; values where the option takes one."""
    takes_value = {
        "-t",
        "-u",
        "-f",
        "-s",
        "-M",
        "-r",
        "-w",
        "-x",
        "-y",
        "-b",
        "--pe",
        "--tun-type",
        "--tun-port",
    }
    pairs: list[tuple[str, str | None]] = []
    index = 0
    while index < len(words):
        word = words[index]
        option, _, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        option = _LONG.get(option, option)
        if option == "-p":
            # The timeout is optional: take the next word only if it is a number.
            nxt = words[index + 1] if index + 1 < len(words) else None
            if nxt is not None and is_number(nxt):
                pairs.append((option, nxt))
                index += 2
                continue
            pairs.append((option, inline or None))
        elif option in takes_value:
            value = inline or (words[index + 1] if index + 1 < len(words) else None)
            if value is None:
                raise _RuleError(f"{word} needs a value")
            pairs.append((option, value))
            index += 0 if inline else 1
        else:
            pairs.append((option, None))
        index += 1
    return pairs


def _endpoint(text: str, what: str) -> tuple[str, int | None]:
    """'192.0.2.1:80', '[2001:db8::1]:80' or an address alone -> (address, port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise _RuleError(
            f"{what} {text!r}: not a numeric address; save the rules with `ipvsadm -S -n`"
        ) from None
    if port_text and not is_number(port_text):
        raise _RuleError(
            f"{what} {text!r}: port {port_text!r} is not a number; save the rules with `ipvsadm -S -n`"
        )
    return str(address), int(port_text) if port_text else None


def _rule(
    words: list[str], origin: Origin, services: dict[tuple[str, str, int], _Service], report: Report
) -> None:
    pairs = _options(words)
    if not pairs:
        raise _RuleError("empty rule")
    command = pairs[0][0]
    options = dict(pairs[1:])
    if command in ("-D", "-d", "-C", "-Z", "--set", "--start-daemon", "--stop-daemon"):
        raise _RuleError(f"{command}: only rules that add or edit services and servers are imported")
    if command not in ("-A", "-E", "-a", "-e"):
        raise _RuleError(f"not an ipvsadm rule that adds or edits a service or server ({words[0]!r})")
    if "-f" in options:
        raise _RuleError(
            "a fwmark service takes its packets from firewall rules outside IPVS; "
            "create a multi-port service with the address and ports the mark covered"
        )
    protocol = "udp" if "-u" in options else "tcp"
    vip = options.get("-t") or options.get("-u")
    if vip is None:
        raise _RuleError("no service (-t or -u) given")
    address, port = _endpoint(vip, "service")
    if port is None or port == 0:
        raise _RuleError(
            f"service {vip}: a port-less (persistent all-ports) service has no place in Fulcrum's model"
        )
    key = (protocol, address, port)
    if command in ("-A", "-E"):
        _service(command, key, options, origin, services, report)
    else:
        _server(command, key, options, origin, services, report)


def _service(
    command: str,
    key: tuple[str, str, int],
    options: dict[str, str | None],
    origin: Origin,
    services: dict[tuple[str, str, int], _Service],
    report: Report,
) -> None:
    protocol, address, port = key
    if command == "-A":
        if key in services:
            raise _RuleError(
                f"the service {address}:{port}/{protocol} was added already at line "
                f"{services[key].origin.line}"
            )
        name = service_name(address, port, protocol)
        services[key] = _Service(
            origin,
            {
                "name": name,
                "address": address,
                "ports": [port],
                "protocol": protocol,
                "scheduler": IPVSADM_SCHEDULER,
                "health_check": {"type": "none"},
            },
        )
        notes = [
            f"service {name} (named after its address: IPVS services have no name)",
            "no health check (ipvsadm has none)",
        ]
    else:
        if key not in services:
            raise _RuleError(f"-E edits {address}:{port}/{protocol}, which no earlier rule added")
        notes = [f"edits service {services[key].data['name']}"]
    data = services[key].data
    for option, value in options.items():
        if option == "-s" and value:
            data["scheduler"] = value
        elif option == "-p":
            data["persistence_timeout"] = int(value) if value else IPVSADM_PERSISTENCE
        elif option == "-M" and value:
            prefix = prefix_from_mask(value, ipaddress.ip_address(address).version)
            if prefix is None:
                raise _RuleError(f"-M {value!r} is not a netmask")
            data["persistence_prefix"] = prefix
        elif option == "-b" and value:
            for flag in value.split(","):
                if flag not in _FLAGS:
                    notes.append(f"scheduler flag {flag} not imported: Fulcrum's model has no place for it")
                else:
                    data[_FLAGS[flag]] = True
        elif option == "-o":
            data["one_packet_scheduling"] = True
        elif option in ("-t", "-u"):
            continue
        else:
            notes.append(f"option {option} not imported: Fulcrum's model has no place for it")
    report.changed(origin, "; ".join(notes))


def _server(
    command: str,
    key: tuple[str, str, int],
    options: dict[str, str | None],
    origin: Origin,
    services: dict[tuple[str, str, int], _Service],
    report: Report,
) -> None:
    protocol, address, port = key
    service = services.get(key)
    if service is None:
        raise _RuleError(f"no earlier -A rule adds the service {address}:{port}/{protocol}")
    if "-r" not in options or options["-r"] is None:
        raise _RuleError("no real server (-r) given")
    server_address, server_port = _endpoint(options["-r"], "real server")
    server_key = (server_address, server_port or port)
    notes: list[str] = []
    # Built on a copy and stored last: a rule refused half-way changes nothing.
    if command == "-a":
        if server_key in service.servers:
            raise _RuleError(f"real server {options['-r']} was added already")
        backend: dict[str, Any] = {"address": server_address, "weight": 1}
        notes.append(f"backend {options['-r']} of {service.data['name']}")
    else:
        if server_key not in service.servers:
            raise _RuleError(f"-e edits real server {options['-r']}, which no earlier rule added")
        backend = dict(service.servers[server_key])
        notes.append(f"edits backend {options['-r']} of {service.data['name']}")
    for option, value in options.items():
        if option == "-w" and value is not None:
            backend["weight"] = _number(value, "-w")
        elif option == "-x" and value is not None:
            backend["upper_threshold"] = _number(value, "-x")
        elif option == "-y" and value is not None:
            backend["lower_threshold"] = _number(value, "-y")
        elif option in ("-t", "-u", "-r", *_FORWARDING):
            continue
        else:
            notes.append(f"option {option} not imported: Fulcrum's model has no place for it")
    method = next((_FORWARDING[o] for o in options if o in _FORWARDING), None)
    if command == "-a" and method is None:
        method = "dr"  # ipvsadm's default: gatewaying
    if method is not None:
        if service.forwarding is None:
            service.forwarding = method
        elif service.forwarding != method:
            notes.append(
                f"forwarding {method.upper()} not imported: Fulcrum forwards a whole service one way, "
                f"{service.forwarding.upper()} like its first server"
            )
    if server_port is not None and server_port != port:
        if (service.forwarding or "dr") in ("dr", "tun"):
            notes.append(
                f"port {server_port} dropped: {(service.forwarding or 'dr').upper()} forwarding keeps the "
                "service port"
            )
        else:
            backend["port"] = server_port
    service.servers[server_key] = backend
    changed = any("not imported" in n or "dropped" in n for n in notes)
    (report.changed if changed else report.imported)(origin, "; ".join(notes))


def _number(value: str, option: str) -> int:
    if not is_number(value):
        raise _RuleError(f"{option} {value!r} is not a number")
    return int(value)
