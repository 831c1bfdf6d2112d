"""No text from a snapshot can change the structure of a rendered file.

Every field that can hold free text is drawn from hostile text (arbitrary unicode, keepalived and
nft syntax, directives). Either the model rejects the snapshot, or the rendered files, read the
way keepalived and nft read them, have exactly the structure of a reference rendering in which
those fields hold safe placeholders.
"""

from __future__ import annotations

import copy
import ipaddress
import itertools
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fulcrum.config.snapshot import ConfigSnapshot
from fulcrum.render import NodeHealth, RuntimePaths, render_keepalived, render_nftables

# The node-health program this checkout installed: keepalived -t checks that it exists.
NODE_HEALTH = NodeHealth(
    program=str(Path(sys.executable).parent / "fulcrum-node-health"),
    url="https://127.0.0.1/api/v1/health",
    checker_pidfile="/run/fulcrum/keepalived-checkers.pid",
)
RUNTIME = RuntimePaths(
    notify_fifo="/run/fulcrum/vrrp.fifo",
    lvs_notify_fifo="/run/fulcrum/lvs.fifo",
    maintenance_file="/var/lib/fulcrum/maintenance",
    node_health=NODE_HEALTH,
)

# ---------------------------------------------------------------------------------------------
# keepalived's reading of a file (keepalived 2.2.7, lib/parser.c)
# ---------------------------------------------------------------------------------------------

KEYWORDS = {
    "global_defs", "router_id", "vrrp_version", "enable_script_security", "vrrp_notify_fifo",
    "lvs_notify_fifo", "lvs_sync_daemon", "track_file", "file", "weight", "vrrp_sync_group", "group",
    "script_user", "vrrp_garp_master_delay", "vrrp_garp_master_repeat", "vrrp_garp_lower_prio_repeat",
    "vrrp_higher_prio_send_advert", "vrrp_garp_master_refresh", "vrrp_garp_master_refresh_repeat",
    "vrrp_script", "script", "interval", "timeout", "fall", "rise", "track_interface", "track_script",
    "vrrp_priority",
    "vrrp_instance", "state", "interface", "virtual_router_id", "priority", "advert_int", "nopreempt",
    "unicast_src_ip", "unicast_peer", "virtual_ipaddress", "virtual_server", "ip_family", "lvs_sched",
    "sh-fallback", "sh-port", "mh-fallback", "mh-port", "ops", "lvs_method", "protocol",
    "persistence_timeout", "persistence_granularity", "quorum", "alpha", "sorry_server",
    "sorry_server_inhibit", "real_server", "uthreshold", "lthreshold", "inhibit_on_failure",
    "TCP_CHECK", "HTTP_GET", "SSL_GET", "DNS_CHECK", "SMTP_CHECK", "UDP_CHECK", "PING_CHECK", "url",
    "path", "status_code", "digest", "virtualhost", "enable_sni", "type", "name", "helo_name",
    "payload", "require_reply", "connect_port", "connect_timeout", "delay_loop", "retry",
    "delay_before_retry",
}  # fmt: skip
# Blocks whose lines are values (instance names, addresses), not keywords: (parent, block).
VALUE_BLOCKS = {
    ("vrrp_sync_group", "group"),
    ("vrrp_instance", "unicast_peer"),
    ("vrrp_instance", "virtual_ipaddress"),
    ("vrrp_instance", "track_file"),
    ("vrrp_instance", "track_interface"),
    ("vrrp_instance", "track_script"),
}
WHITE_SPACE = " \t\f\n\r\v"


@dataclass(frozen=True)
class Statement:
    words: tuple[str, ...]
    block: tuple[Statement, ...] | None


def read_keepalived(text: str) -> tuple[Statement, ...]:
    """Statements as keepalived reads them: one per line; '!' and '#' start a comment outside
    double quotes ('\\' escapes them); '{' and '}' split a line; words split at white space, a
    double-quoted string is one word. A directive line (include, @id, $NAME, ~SEQ) is an error.
    """
    pieces = [piece for raw in text.split("\n") for piece in _split_braces(_decomment(raw))]
    stack: list[list[Statement]] = [[]]
    for piece in pieces:
        if re.match(r"include[rmwba]?\s|[@$~]", piece):
            raise AssertionError(f"directive line: {piece!r}")
        if piece == "{":
            if not stack[-1] or stack[-1][-1].block is not None:
                raise AssertionError("'{' opens no statement's block")
            stack.append([])
        elif piece == "}":
            if len(stack) == 1:
                raise AssertionError("extra '}'")
            block = tuple(stack.pop())
            stack[-1][-1] = Statement(stack[-1][-1].words, block)
        else:
            stack[-1].append(Statement(_words(piece), None))
    if len(stack) != 1:
        raise AssertionError("unclosed block")
    return tuple(stack[0])


def _decomment(line: str) -> str:
    line = line.split("\x00")[0].rstrip("\r").lstrip(" \t")  # C strings end at NUL
    quoted = False
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "!#" and not quoted:
            line = line[:index]
            break
        index += 1
    return line.rstrip(" \t")


def _split_braces(line: str) -> Iterator[str]:
    while line:
        match = re.match(r'(?:[^{}"]|"[^"]*")*', line) if line[0] not in "{}" else None
        end = match.end() if match else 0
        if end == 0:
            yield line[0]
            line = line[1:].lstrip(" \t")
        elif end < len(line) and line[end] in "{}":
            yield line[:end].rstrip(" \t")
            line = line[end:]
        else:
            yield line
            return


def _words(piece: str) -> tuple[str, ...]:
    words: list[str] = []
    index = 0
    while True:
        while index < len(piece) and piece[index] in WHITE_SPACE:
            index += 1
        if index == len(piece):
            return tuple(words)
        if piece[index] == '"':
            end = piece.find('"', index + 1)
            if end == -1:
                raise AssertionError(f"unmatched quote: {piece!r}")
            words.append(piece[index + 1 : end])
            index = end + 1
        else:
            end = index
            while end < len(piece) and piece[end] not in WHITE_SPACE + '"':
                end += 1
            words.append(piece[index:end])
            index = end


def _shape(statements: tuple[Statement, ...], parent: str = "", values: bool = False) -> tuple[object, ...]:
    """Keyword (or VALUE), word count and nested shape of each statement; order-free, since names
    decide the order and the reference's names differ."""
    shapes = [
        (
            "VALUE" if values else s.words[0],
            len(s.words),
            None if s.block is None else _shape(s.block, s.words[0], (parent, s.words[0]) in VALUE_BLOCKS),
        )
        for s in statements
    ]
    return tuple(sorted(shapes, key=repr))


def _walk(
    statements: tuple[Statement, ...], parent: str = "", values: bool = False
) -> Iterator[tuple[bool, Statement]]:
    """Every statement, with whether it sits in a block of values rather than keywords."""
    for statement in statements:
        yield values, statement
        if statement.block is not None:
            keyword = statement.words[0]
            yield from _walk(statement.block, keyword, (parent, keyword) in VALUE_BLOCKS)


# The one program keepalived may run: Fulcrum's node-health check, tracked under this name.
NODE_HEALTH_SCRIPT = ("vrrp_script", "node_health")
TRACKING = {"track_script", "track_file", "track_interface"}


def _is_script_keyword(word: str) -> bool:
    return word.startswith("notify") or (word.endswith("_script") and word not in TRACKING) or word in {
        "misc_path", "MISC_CHECK", "quorum_up", "quorum_down", "startup_script", "shutdown_script", "vrrp_script",
    }  # fmt: skip


def _assert_node_health_only(statement: Statement) -> None:
    """The vrrp_script runs the settings' program with the settings' URL, nothing else; the only
    value from the snapshot is the peer, an IP address."""
    assert statement.words == NODE_HEALTH_SCRIPT, f"script keyword: {statement}"
    assert statement.block is not None
    scripts = [s.words for s in statement.block if s.words[0] == "script"]
    assert len(scripts) == 1 and len(scripts[0]) == 2, f"one quoted command expected: {statement}"
    program, *args = scripts[0][1].split(" ")
    assert program == NODE_HEALTH.program, f"foreign program: {statement}"
    options = dict(zip(args[::2], args[1::2], strict=True))
    assert options["--url"] == NODE_HEALTH.url and set(options) <= {"--url", "--timeout", "--checker-pidfile", "--peer"}
    assert options.get("--checker-pidfile", NODE_HEALTH.checker_pidfile) == NODE_HEALTH.checker_pidfile
    if "--peer" in options:
        ipaddress.ip_address(options["--peer"])


def assert_keepalived_safe(rendered: str, reference: str) -> None:
    _assert_plain_ascii(rendered)
    statements = read_keepalived(rendered)
    for values, statement in _walk(statements):
        keyword = statement.words[0]
        assert values or keyword in KEYWORDS, f"unknown keyword: {statement}"
        if not values and keyword == "vrrp_script":
            _assert_node_health_only(statement)
        else:
            assert values or not _is_script_keyword(keyword), f"script keyword: {statement}"
        for word in statement.words:
            assert "$" not in word and not word.startswith(("@", "~")), f"substitution: {statement}"
    assert _shape(statements) == _shape(read_keepalived(reference)), "structure differs from the reference"


# ---------------------------------------------------------------------------------------------
# nft's reading of a file
# ---------------------------------------------------------------------------------------------

_NFT_TOKEN = re.compile(r'#.*|"[^"\n]*"|[{};,]|[^\s{};,"#]+|"')


def read_nft(text: str) -> list[tuple[str, ...]]:
    """Statements as nft reads them: '#' comments to the end of the line outside strings,
    statements end at a newline or ';', "..." is one token, braces and commas are tokens."""
    statements: list[tuple[str, ...]] = []
    for line in text.split("\n"):
        tokens: list[str] = []
        for token in _NFT_TOKEN.findall(line):
            if token.startswith("#"):
                break
            if token == ";":
                statements.append(tuple(tokens))
                tokens = []
            else:
                tokens.append(token)
        statements.append(tuple(tokens))
    return [statement for statement in statements if statement]


def _nft_signature(statement: tuple[str, ...]) -> tuple[str, ...]:
    """A statement with its values blanked: keywords and punctuation stay, strings become STR."""
    return tuple(
        "STR" if token.startswith('"') else token if re.fullmatch(r"[a-z_][a-z0-9_-]*|[{},]", token) else "VALUE"
        for token in statement
    )


def assert_nft_safe(rendered: str, reference: str) -> None:
    _assert_plain_ascii(rendered)
    statements = read_nft(rendered)
    for statement in statements:
        for token in statement:
            assert token not in {"include", "define", "redefine", "undefine"}, f"directive: {statement}"
            assert not token.startswith(("$", "@")), f"variable or set reference: {statement}"
            if token.startswith('"'):
                assert re.fullmatch(r'"[A-Za-z0-9_. -]*"', token), f"odd string: {statement}"
        if "table" in statement:
            table = statement.index("table")
            assert statement[table + 1 : table + 3] == ("inet", "fulcrum"), f"foreign table: {statement}"
    assert sorted(map(_nft_signature, statements)) == sorted(map(_nft_signature, read_nft(reference))), (
        "structure differs from the reference"
    )


def _assert_plain_ascii(rendered: str) -> None:
    odd = {char for char in rendered if not (char in "\n\t" or " " <= char <= "~")}
    assert not odd, f"characters outside printable ASCII: {odd!r}"


# ---------------------------------------------------------------------------------------------
# Snapshots with hostile text
# ---------------------------------------------------------------------------------------------

DANGEROUS = [
    " ", "\t", "\n", "\r", "\v", "\f", "\x00", "\x85", "\u2028", "{", "}", '"', "'", "!", "#", "$", "\\",
    "@", "~", ";", "%", "é",
]  # fmt: skip
NASTY = [
    "", "include /etc/shadow", "includea x", "@node x", "@^node x", "$X=1", "${_PWD}", "~SEQ(i, 1, 3) x",
    "x }\n}\ninclude /tmp/x\n", 'a" "b', "a #b", "a !b", "/ok\nMISC_CHECK {", "/ok notify_up /bin/sh",
    'x"; include "/etc/x', "ünïcödé", "\ufeffname", ".", "..", "fe80::1%eth0", "2001:db8::1%x }\n#",
    "2001:db8::%x/64", "10.0.0.1 ", " 10.0.0.0/8",
]  # fmt: skip

# Hypothesis spends about 0.1 ms per draw, so the generator draws little: each free-text field
# takes one integer (which picks the valid value and decides hostility), and the structural
# settings come as precomputed shapes, one draw each. Valid values are lists: boundary lengths,
# and names that read as keepalived keywords or directives, which are valid and must stay harmless.
NAMES = ("a", "0", "web", "Web-2.0_x", "include", "includea", "notify_up", "MISC_CHECK", "global_defs", "x" * 63)
INTERFACES = ("eth0", "eth1", "bond0.100", "br-lan_2", "e", "x" * 15, "include")
PATHS = ("/", "/health", "/a/b?c=d&e=f", "/~user/%20x", "/(x)*;:+,'=", "/include", "/" + "a" * 254)
HOSTS = (".", "example.com", "example.com.", "_dmarc.example.com", "a-b.c_d", "include", ("a" * 62 + ".") * 4)
HEX = ("00", "0a0B", "ff" * 127 + "fe")
NETWORKS = ("10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/24", "2001:db8::/32", "2001:db8:1::/48")
DESCRIPTIONS = st.sampled_from(("", "draining for maintenance", "ünïcödé " * 60, *NASTY))


def _replace(text: str) -> Callable[[str], str]:
    return lambda _valid: text


def _splice(char: str, at: int) -> Callable[[str], str]:
    return lambda valid: valid[:at] + char + valid[at:]


def _zone(zone: str) -> Callable[[str], str]:
    """An IPv6 zone: Python's ipaddress takes any text after the '%'."""
    return lambda valid: f"{valid}%{zone}"


# Ways to turn a valid value hostile.
_HOSTILE = st.one_of(
    st.text(max_size=30).map(_replace),
    st.sampled_from(NASTY).map(_replace),
    st.builds(_splice, st.sampled_from(DANGEROUS), st.integers(0, 70)),
    (st.text(max_size=10) | st.sampled_from((" x", "x }\n#", "eth0\ninclude /x"))).map(_zone),
)
_FREE = st.integers(0, 9999)


def _options(*choices: tuple[str, tuple[Any, ...]]) -> st.SearchStrategy[dict[str, Any]]:
    """Every combination of the given settings, drawn in one go."""
    names = [name for name, _ in choices]
    return st.sampled_from(
        [dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in choices))]
    )


NODE_SHAPES = _options(
    ("transport", ("unicast", "multicast", "lone")),
    ("vip_interface", (False, True)),
    ("track_interfaces", (0, 1, 2)),
    ("family", (4, 6)),
    ("priority", (1, 100, 254)),
    ("unicast_source", (True, False)),
    ("sync", (True, False)),
    ("groups", (0, 1, 2, 3)),
    ("services", (0, 1, 2, 3)),
)
GROUP_SHAPES = _options(
    ("advert_interval", (0.01, 0.1, 0.25, 1, 40.95)), ("preempt", (True, False)), ("addresses", (1, 2, 3))
)
SERVICE_SHAPES = _options(
    (
        "scheduler",
        tuple((name, False, False) for name in ("rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sed", "nq"))
        + tuple((name, False, False) for name in ("fo", "ovf", "twos"))
        + tuple(itertools.product(("sh", "mh"), (False, True), (False, True))),
    ),
    ("protocol", (("tcp", False), ("udp", False), ("udp", True), ("sctp", False))),
    (
        "forwarding",
        (
            ("nat", "ipip", False, False),
            ("nat", "ipip", True, False),
            ("nat", "ipip", True, True),
            ("dr", "ipip", False, False),
            ("tun", "ipip", False, False),
            ("tun", "gue", False, False),
            ("tun", "gre", False, False),
        ),
    ),
    ("ports", ((80,), (53,), (80, 443), (22, 25, 8443))),
    ("persistence", ((None, None), (300, None), (60, "short"), (3600, "long"))),
    ("family", (4, 6)),
    ("enabled", (True, True, True, False)),
    ("sorry_server", (False, True)),
    ("quorum", (1, 2)),
    ("backends", (0, 1, 2, 3)),
)
BACKEND_SHAPES = _options(
    ("weight", (0, 1, 3)),
    ("enabled", (True, True, True, False)),
    ("thresholds", ((0, 0), (100, 0), (100, 50))),
    ("port", (None, 8080)),
    ("health_check", (False, True)),
)
_PREFIXES = {4: {None: None, "short": 24, "long": 32}, 6: {None: None, "short": 64, "long": 128}}
_TIMERS = {"interval": 2.25, "timeout": 0.1234567, "retries": 0, "retry_delay": 59.9}
CHECK_TEMPLATES: tuple[dict[str, Any], ...] = (
    {"type": "tcp"},
    {"type": "tcp", **_TIMERS, "on_failure": "weight_zero", "port": 9000, "http_host": "h", "smtp_helo_name": "h"},
    {"type": "http", "http_status_codes": [204, 200], "http_host": "h", "http_digest": "0123456789abcdef" * 2},
    {"type": "http", **_TIMERS, "udp_payload": "00"},
    {"type": "https", "http_host": "h", "tls_sni": True, "on_failure": "weight_zero"},
    {"type": "https", "port": 9000},
    {"type": "dns", "dns_query_type": "AAAA", "http_host": "h"},
    {"type": "dns", **_TIMERS},
    {"type": "smtp", "smtp_helo_name": "h"},
    {"type": "smtp", "port": 9000},
    {"type": "udp", "udp_payload": "00", "udp_require_reply": True},
    {"type": "udp", **_TIMERS, "on_failure": "weight_zero"},
    {"type": "ping", "port": 9000},
    {"type": "none", "http_host": "h", "smtp_helo_name": "h", "udp_payload": "00"},
)
CHECKS = st.sampled_from(CHECK_TEMPLATES)
UDP_CHECKS = st.sampled_from([c for c in CHECK_TEMPLATES if c["type"] in ("udp", "dns", "ping", "none") or "port" in c])
MANAGEMENT = _options(("ports", ((), (22,), (22, 80, 443, 8443), (8443, 443))), ("allow", (0, 1, 2, 4)))

# Draws a value for a free-text field from a list of valid values, maybe made hostile.
Free = Callable[[tuple[str, ...]], str]


def _health_check(draw: st.DrawFn, free: Free, udp: bool) -> dict[str, Any]:
    check = dict(draw(UDP_CHECKS if udp else CHECKS))
    check["http_path"] = free(PATHS)
    check["dns_query_name"] = free(HOSTS)
    for field, values in (("http_host", HOSTS), ("smtp_helo_name", HOSTS), ("udp_payload", HEX)):
        if field in check:
            check[field] = free(values)
    return check


def _service(draw: st.DrawFn, free: Free, index: int, name: str) -> dict[str, Any]:
    shape = draw(SERVICE_SHAPES)
    family = shape["family"]

    def address(host: int, net: int = 0) -> str:
        return free((f"10.{index}.{net}.{host}" if family == 4 else f"2001:db8:{index}:{net}::{host}",))

    scheduler, fallback, hash_port = shape["scheduler"]
    protocol, ops = shape["protocol"]
    forwarding, tunnel_type, one_arm, snat = shape["forwarding"]
    persistence, prefix = shape["persistence"]
    fwmark = len(shape["ports"]) > 1
    backends = []
    for host in range(1, shape["backends"] + 1):
        backend = draw(BACKEND_SHAPES)
        backends.append(
            {
                "address": address(host, 1),
                "port": backend["port"] if forwarding == "nat" and not fwmark else None,
                "weight": backend["weight"],
                "enabled": backend["enabled"],
                "upper_threshold": backend["thresholds"][0],
                "lower_threshold": backend["thresholds"][1],
                "health_check": _health_check(draw, free, protocol == "udp") if backend["health_check"] else None,
                "description": draw(DESCRIPTIONS),
            }
        )
    enabled = [backend for backend in backends if backend["enabled"]]
    if enabled and not any(backend["weight"] for backend in enabled):
        enabled[0]["weight"] = 1  # the model wants quorum within the enabled weight, and quorum >= 1
    return {
        "name": name,
        "description": draw(DESCRIPTIONS),
        "enabled": shape["enabled"],
        "address": address(10),
        "ports": list(shape["ports"]),
        "fwmark": 100 + index if fwmark else None,
        "protocol": protocol,
        "scheduler": scheduler,
        "scheduler_fallback": fallback,
        "scheduler_port": hash_port,
        "one_packet_scheduling": ops,
        "forwarding": forwarding,
        "tunnel_type": tunnel_type,
        "tunnel_port": 6080 if tunnel_type == "gue" else None,
        "one_arm": one_arm,
        "snat_address": address(2) if snat else None,
        "persistence_timeout": persistence,
        "persistence_prefix": _PREFIXES[family][prefix],
        "quorum": min(shape["quorum"], max(1, sum(backend["weight"] for backend in enabled))),
        "sorry_server": {"address": address(99, 2)} if shape["sorry_server"] else None,
        "health_check": _health_check(draw, free, protocol == "udp"),
        "backends": backends,
    }


@st.composite
def raw_snapshots(draw: st.DrawFn, hostility: bool = True) -> tuple[dict[str, Any], int]:
    """A snapshot as JSON, each free-text field made hostile at a rate drawn per snapshot, and
    how many fields were."""
    rate = draw(st.sampled_from((0, 1, 3, 10, 50))) if hostility else 0
    hostile = 0

    def free(valid: tuple[str, ...]) -> str:
        nonlocal hostile
        roll = draw(_FREE)
        value = valid[roll // 100 % len(valid)]
        if roll % 100 >= rate:
            return value
        hostile += 1
        return draw(_HOSTILE)(value)

    def names(count: int) -> list[str]:
        """Names for `count` items, distinct unless made hostile."""
        chosen: list[str] = []
        for _ in range(count):
            chosen.append(free(tuple(name for name in NAMES if name not in chosen)))
        return chosen

    node = draw(NODE_SHAPES)
    family = node["family"]
    unicast = node["transport"] == "unicast"
    groups = []
    for index, name in enumerate(names(node["groups"])):
        group = draw(GROUP_SHAPES)
        group_family = family if unicast else draw(st.sampled_from((4, 6)))
        addresses = [
            free((f"198.51.{index}.{host}/24" if group_family == 4 else f"2001:db8:5{index}::{host}/64",))
            for host in range(1, group["addresses"] + 1)
        ]
        groups.append(
            {
                "name": name,
                "virtual_router_id": index + 1,
                "addresses": addresses,
                "advert_interval": group["advert_interval"],
                "preempt": group["preempt"],
            }
        )
    source, peer = {4: ("192.0.2.1", "192.0.2.2"), 6: ("2001:db8:ffff::1", "2001:db8:ffff::2")}[family]
    management = draw(MANAGEMENT)
    raw = {
        "node": {
            "name": free(NAMES),
            "vrrp_interface": free(INTERFACES),
            "priority": node["priority"],
            "unicast_source": free((source,)) if unicast and node["unicast_source"] else None,
            "peer_address": free((peer,)) if unicast else None,
            "multicast": node["transport"] == "multicast",
            "sync_interface": free(INTERFACES) if node["sync"] else None,
            # The first group's addresses elsewhere (keyed by its possibly hostile name).
            "vip_interfaces": {groups[0]["name"]: free(INTERFACES)} if groups and node["vip_interface"] else {},
            "track_interfaces": [free(INTERFACES) for _ in range(node["track_interfaces"])],
        },
        "vip_groups": groups,
        "services": [_service(draw, free, index, name) for index, name in enumerate(names(node["services"]))],
        "firewall": {
            "management_ports": list(management["ports"]),
            "management_allow": [free(NETWORKS) for _ in range(management["allow"])],
        },
    }
    return raw, hostile


def with_placeholders(raw: dict[str, Any]) -> dict[str, Any]:
    """The same snapshot with every free-text field replaced by a safe value of the same presence."""
    reference = copy.deepcopy(raw)
    node = reference["node"]
    node["name"] = "node"
    # Interfaces that were equal stay equal: tracking leaves out the VRRP interface.
    placeholders: dict[str, str] = {}

    def interface(name: str) -> str:
        return placeholders.setdefault(name, f"eth{len(placeholders) + 2}")

    placeholders[node["vrrp_interface"]] = "eth0"
    node["vrrp_interface"] = "eth0"
    node["sync_interface"] = node["sync_interface"] and "eth1"
    node["vip_interfaces"] = {"group0": interface(name) for name in node["vip_interfaces"].values()}
    node["track_interfaces"] = [interface(name) for name in node["track_interfaces"]]
    for index, group in enumerate(reference["vip_groups"]):
        group["name"] = f"group{index}"
    for index, service in enumerate(reference["services"]):
        service["name"] = f"service{index}"
        service["description"] = ""
        checks = [service["health_check"]] + [backend["health_check"] for backend in service["backends"]]
        for backend in service["backends"]:
            backend["description"] = ""
        for check in filter(None, checks):
            check["http_path"] = "/"
            check["dns_query_name"] = "example.com"
            for field, placeholder in (
                ("http_host", "www.example.com"),
                ("smtp_helo_name", "lb"),
                ("udp_payload", "00"),
            ):
                if check.get(field) is not None:
                    check[field] = placeholder
    return reference


# ---------------------------------------------------------------------------------------------
# The properties
# ---------------------------------------------------------------------------------------------


@settings(settings.get_profile("fulcrum-render"))
@given(generated=raw_snapshots())
def test_hostile_text_is_rejected_or_harmless(generated: tuple[dict[str, Any], int]) -> None:
    raw, hostile = generated
    try:
        snapshot = ConfigSnapshot.model_validate(raw)
    except ValidationError:
        event("rejected by the model")
        return
    event("rendered, with hostile text the model accepted" if hostile else "rendered")
    reference = ConfigSnapshot.model_validate(with_placeholders(raw))
    assert_keepalived_safe(render_keepalived(snapshot, RUNTIME), render_keepalived(reference, RUNTIME))
    assert_nft_safe(render_nftables(snapshot), render_nftables(reference))


@settings(settings.get_profile("fulcrum-render"), max_examples=50)
@given(generated=raw_snapshots(hostility=False))
def test_generated_configs_pass_the_real_validators(
    generated: tuple[dict[str, Any], int],
    keepalived_accepts: Callable[[str, ConfigSnapshot], None],
    nft_accepts: Callable[[str], None],
) -> None:
    raw, _ = generated
    try:
        snapshot = ConfigSnapshot.model_validate(raw)
    except ValidationError:
        event("rejected by the model")
        return
    keepalived_accepts(render_keepalived(snapshot, RUNTIME), snapshot)
    nft_accepts(render_nftables(snapshot))


def _injected(update: dict[str, Any]) -> ConfigSnapshot:
    """The first service of a valid snapshot with `update` applied, skipping validation."""
    snapshot = ConfigSnapshot.model_validate(
        {
            "services": [
                {
                    "name": "web",
                    "address": "192.0.2.10",
                    "ports": [80, 443],
                    "fwmark": 1,
                    "one_arm": True,
                    "health_check": {"type": "http"},
                    "backends": [{"address": "10.0.0.1"}],
                }
            ],
            "firewall": {"management_allow": ["10.0.0.0/8"]},
        }
    )
    service = snapshot.services[0]
    fields = {key: value for key, value in update.items() if key != "http_path"}
    if "http_path" in update:
        fields["health_check"] = service.health_check.model_copy(update={"http_path": update["http_path"]})
    return snapshot.model_copy(update={"services": [service.model_copy(update=fields)]})


@pytest.mark.parametrize(
    "update",
    [
        {"name": "web\n}\ninclude /etc/keepalived/evil.conf\n#"},
        {"name": "web\nvirtual_server 10.9.9.9 22 {\n}"},
        {"http_path": "/ok MISC_CHECK"},
        {"http_path": "/ok\n}\n}\nvirtual_server fwmark 9 {"},
        {"http_path": "/${_PWD}"},
        {"http_path": "/\n@node router_id x"},
    ],
)
def test_the_keepalived_check_catches_injection(update: dict[str, Any]) -> None:
    """With validation bypassed, the property above fails: it can detect an injection."""
    reference = render_keepalived(_injected({}), RUNTIME)
    with pytest.raises(AssertionError):
        assert_keepalived_safe(render_keepalived(_injected(update), RUNTIME), reference)


@pytest.mark.parametrize(
    "update",
    [
        {"name": 'web" accept\n\t\tip saddr 0.0.0.0/0 accept comment "x'},
        {"name": 'web\n}\ninclude "/tmp/evil.nft"\n#'},
        {"name": 'web"; flush ruleset; #'},
    ],
)
def test_the_nft_check_catches_injection(update: dict[str, Any]) -> None:
    reference = render_nftables(_injected({}))
    with pytest.raises(AssertionError):
        assert_nft_safe(render_nftables(_injected(update)), reference)


# Every field that can hold text, and a valid value for it.
STRING_FIELDS: dict[str, str] = {
    "services.0.name": "web",
    "services.0.health_check.http_path": "/health",
    "services.0.health_check.http_host": "www.example.com",
    "services.0.health_check.dns_query_name": "example.com",
    "services.0.health_check.smtp_helo_name": "lb.example.com",
    "services.0.health_check.udp_payload": "0a0b",
    "services.0.health_check.http_digest": "0123456789abcdef0123456789abcdef",
    "vip_groups.0.name": "public",
    "node.name": "lb-a",
    "node.vrrp_interface": "eth0",
    "node.sync_interface": "eth1",
}
CHARACTER_CLASSES = {
    "space": " ", "tab": "\t", "newline": "\n", "carriage return": "\r", "vertical tab": "\v",
    "form feed": "\f", "NUL": "\x00", "next line": "\x85", "line separator": "\u2028", "open brace": "{",
    "close brace": "}", "double quote": '"', "bang": "!", "hash": "#", "dollar": "$", "backslash": "\\",
    "at": "@", "non-ASCII": "é",
}  # fmt: skip


def _base_snapshot() -> dict[str, Any]:
    return {
        "services": [
            {
                "name": "web",
                "address": "192.0.2.10",
                "ports": [80],
                "health_check": {
                    "type": "http",
                    "http_path": "/health",
                    "http_host": "www.example.com",
                    "dns_query_name": "example.com",
                    "smtp_helo_name": "lb.example.com",
                    "udp_payload": "0a0b",
                    "http_digest": "0123456789abcdef0123456789abcdef",
                },
                "backends": [{"address": "10.0.0.1"}],
            }
        ],
        "vip_groups": [{"name": "public", "virtual_router_id": 1, "addresses": ["192.0.2.10/24"]}],
        "node": {"name": "lb-a", "vrrp_interface": "eth0", "sync_interface": "eth1"},
        "firewall": {"management_allow": ["10.0.0.0/8"]},
    }


def _set(raw: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    *parents, leaf = [int(part) if part.isdigit() else part for part in path.split(".")]
    target: Any = raw
    for part in parents:
        target = target[part]
    target[leaf] = value
    return raw


def test_the_base_snapshot_is_valid() -> None:
    """The base the injection tests vary: valid, with a service and a VIP group to carry the fields."""
    snapshot = ConfigSnapshot.model_validate(_base_snapshot())
    assert snapshot.services and snapshot.vip_groups


@pytest.mark.parametrize("path", sorted(STRING_FIELDS))
@pytest.mark.parametrize("character", sorted(CHARACTER_CLASSES), ids=str)
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_every_string_field_rejects_dangerous_characters(path: str, character: str, where: str) -> None:
    valid = STRING_FIELDS[path]
    char = CHARACTER_CLASSES[character]
    at = {"start": 0, "middle": len(valid) // 2, "end": len(valid)}[where]
    with pytest.raises(ValidationError):
        ConfigSnapshot.model_validate(_set(_base_snapshot(), path, valid[:at] + char + valid[at:]))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("services.0.address", "fe80::1%eth0"),
        ("services.0.backends.0.address", "fe80::2%x }"),
        ("node.peer_address", "fe80::3%eth0"),
        ("firewall.management_allow.0", "2001:db8::%x/64"),
    ],
)
def test_addresses_reject_zones(path: str, value: object) -> None:
    """An IPv6 zone is free text after '%'."""
    with pytest.raises(ValidationError, match="zone"):
        ConfigSnapshot.model_validate(_set(_base_snapshot(), path, value))
