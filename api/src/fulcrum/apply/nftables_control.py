"""Loading the appliance's own nftables table and reading it back.

`nft -f FILE` applies the whole file as one kernel transaction: either every statement takes
effect or none does. Only `table inet fulcrum` belongs to Fulcrum; other tables are left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from fulcrum.apply.tools import ToolError, run_tool
from fulcrum.apply.validators import nft_message

TABLE_FAMILY = "inet"
TABLE_NAME = "fulcrum"
TABLE = f"{TABLE_FAMILY} {TABLE_NAME}"


def load_ruleset(path: Path, prefix: Sequence[str] = ()) -> None:
    run = run_tool(["nft", "-f", str(path)], prefix)
    if run.returncode != 0:
        raise ToolError(f"nft -f {path} failed: {nft_message(run.output) or f'exit status {run.returncode}'}")


def read_table(prefix: Sequence[str] = ()) -> dict[str, int] | None:
    """Count the chains, rules and sets of `table inet fulcrum`; None when it does not exist."""
    run = run_tool(["nft", "-j", "list", "table", TABLE_FAMILY, TABLE_NAME], prefix)
    if run.returncode != 0:
        if "No such file or directory" in run.output:
            return None
        raise ToolError(f"nft list table {TABLE} failed: {nft_message(run.output)}")
    try:
        objects = json.loads(run.output)["nftables"]
    except (ValueError, KeyError) as error:
        raise ToolError(f"nft -j list table {TABLE} printed no JSON ruleset: {error}") from error
    counts = {"table": 0, "chain": 0, "rule": 0, "set": 0, "map": 0}
    for entry in objects:
        for kind in counts.keys() & entry.keys():
            counts[kind] += 1
    return counts if counts["table"] else None


def verify_loaded(prefix: Sequence[str] = ()) -> str:
    """Confirm the table is in the kernel after a load; returns a one-line summary."""
    counts = read_table(prefix)
    if counts is None:
        raise ToolError(f"nft -f succeeded but table {TABLE} is not in the kernel")
    return (
        f"table {TABLE}: {counts['chain']} chains, {counts['rule']} rules, "
        f"{counts['set'] + counts['map']} sets"
    )


def delete_table(prefix: Sequence[str] = ()) -> bool:
    """Remove `table inet fulcrum` if present (rollback of a first apply). Returns whether it was."""
    if read_table(prefix) is None:
        return False
    run = run_tool(["nft", "delete", "table", TABLE_FAMILY, TABLE_NAME], prefix)
    if run.returncode != 0:
        raise ToolError(f"nft delete table {TABLE} failed: {nft_message(run.output)}")
    return True


def nft_version(prefix: Sequence[str] = ()) -> str | None:
    """'1.0.6' from "nftables v1.0.6 (Lester Gooch #5)"; None when nft is unavailable."""
    try:
        run = run_tool(["nft", "--version"], prefix, timeout=10)
    except ToolError:
        return None
    found = re.search(r"nftables v(\S+)", run.output)
    return found.group(1) if found else None


def enable_ipvs_conntrack(prefix: Sequence[str] = ()) -> None:
    """Set net.ipv4.vs.conntrack=1 (it covers IPv6 too) and TCP conntrack's liberal window tracking.

    The one-arm SNAT rules match IPVS-NAT connections in the postrouting hook, which sees their
    conntrack entries only with this on. Those entries then outlive a node's turn as active: a node
    back from a failure still holds, for the connections it forwarded before, entries whose TCP
    window stopped where it left. Strict tracking calls the client's next packet after a fail-back
    invalid ("ACK is over upper bound"), IPVS forwards it untracked, and the conntrack entry made for
    it on output clashes with the old one, so NAT moves its source port: the backend answers a
    connection it does not know with a reset (found in the VM lab, tests/kernel/test_ha_failback.py).
    Liberal tracking takes the stale entry's window forward instead. Both are per network namespace
    and exist only while IPVS and conntrack are loaded, hence through the command prefix.
    """
    for setting in ("net.ipv4.vs.conntrack=1", "net.netfilter.nf_conntrack_tcp_be_liberal=1"):
        run = run_tool(["sysctl", "-q", "-w", setting], prefix, timeout=10)
        if run.returncode != 0:
            raise ToolError(f"sysctl -w {setting} failed: {run.output.strip()}")
