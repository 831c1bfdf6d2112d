"""Addresses read over rtnetlink with their prefix length, and which came with a lifetime (DHCP or
SLAAC add them so): in a throw-away namespace, on a veth, as `ip address add` made them."""

from __future__ import annotations

import sys
from pathlib import Path

from fulcrum.dataplane.links import Route, read_interfaces, read_routes

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the lab package

from lab.defer import scope  # noqa: E402
from lab.netns import NetNS, run_in  # noqa: E402


def test_prefixes_and_dynamic_addresses_are_read() -> None:
    with scope("links"), NetNS("links") as ns:
        ns.ip("link", "add", "d0", "type", "veth", "peer", "name", "d1")
        ns.ip("link", "set", "d0", "up")
        ns.ip("address", "add", "10.9.0.1/24", "dev", "d0")
        ns.ip("address", "add", "10.9.1.1/28", "dev", "d0", "valid_lft", "300", "preferred_lft", "300")
        ns.ip("address", "add", "fd09::1/64", "dev", "d0", "nodad")
        [dummy] = [i for i in run_in(ns, read_interfaces) if i.name == "d0"]
    assert dummy.addresses >= {"10.9.0.1", "10.9.1.1", "fd09::1"}
    assert dummy.prefixed >= {"10.9.0.1/24", "10.9.1.1/28", "fd09::1/64"}
    assert dummy.dynamic == {"10.9.1.1/28"}


def test_routes_are_read_with_gateway_interface_table_and_who_made_them() -> None:
    with scope("routes"), NetNS("routes") as ns:
        ns.ip("link", "add", "r0", "type", "veth", "peer", "name", "r1")
        ns.ip("link", "set", "r0", "up")
        ns.ip("link", "set", "r1", "up")
        ns.ip("address", "add", "10.9.0.1/24", "dev", "r0")
        ns.ip("address", "add", "fd09::1/64", "dev", "r0", "nodad")
        ns.ip("route", "add", "default", "via", "10.9.0.254")
        ns.ip("-6", "route", "add", "default", "via", "fd09::fe", "metric", "512")
        ns.ip("route", "add", "10.30.0.0/16", "via", "10.9.0.253", "table", "100", "proto", "static")
        ns.ip("route", "add", "10.40.0.0/16", "via", "10.9.0.253", "table", "1000")
        routes = run_in(ns, read_routes)
    assert Route("0.0.0.0/0", "10.9.0.254", "r0", 254, "boot", None) in routes
    assert Route("10.9.0.0/24", None, "r0", 254, "kernel", None) in routes
    assert Route("::/0", "fd09::fe", "r0", 254, "boot", 512) in routes
    assert Route("10.30.0.0/16", "10.9.0.253", "r0", 100, "static", None) in routes
    assert Route("10.40.0.0/16", "10.9.0.253", "r0", 1000, "boot", None) in routes  # past the header's byte
    assert all(route.table != 255 for route in routes)  # the kernel's local table is its own
    assert routes[0].table == 254 and routes[-1].table == 1000  # main table first
