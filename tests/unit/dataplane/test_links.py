"""Addresses read over rtnetlink with their prefix length, and which came with a lifetime (DHCP or
SLAAC add them so): in a throw-away namespace, on a veth, as `ip address add` made them."""

from __future__ import annotations

import sys
from pathlib import Path

from fulcrum.dataplane.links import read_interfaces

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
