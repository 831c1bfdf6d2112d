"""The real validators: `keepalived -t -f FILE`, `nft -c -f FILE` and FRR's `vtysh -C -f FILE`.

Each returns the tool's own words, trimmed to the lines that matter. A missing file is an error:
keepalived 2.2.7 prints "Config files missing" and still exits 0 for one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fulcrum.apply.tools import ToolError, run_tool, trim_lines

VALIDATE_TIMEOUT = 30.0

# Banner lines some keepalived builds print around a config test; they never carry the error.
_KEEPALIVED_NOISE = re.compile(
    r"^(Keepalived v\d|Copyright|Built with kernel headers|Running on Linux|Distro:"
    r"|configure options:|Config options:|System options:"
    r"|WARNING - keepalived was buil[dt] for newer Linux)"
)
# The only warnings keepalived -t turns into a failure (exit status 5) for a configuration that is
# nonetheless what the operator meant: every backend of a service drained to weight 0. keepalived
# then runs the service with quorum 0, which is exactly a drain: no new connections, existing
# ones finish. Anything else in the output still fails validation.
_BENIGN_KEEPALIVED_WARNINGS = (
    re.compile(
        r"^Warning - quorum \d+ for \S+ exceeds total weight of real servers 0, reducing quorum to 0$"
    ),
    re.compile(r"^Virtual server \S+: hysteresis 0 >= quorum 0; setting hysteresis to \d+$"),
)
# keepalived reports some errors twice: "(Line 5) Extra '}' found" and "(FILE: Line 5) ...".
_KEEPALIVED_LOCATION = re.compile(r"^\((?:[^()]*: )?Line (\d+)\)")


@dataclass(frozen=True)
class Validation:
    ok: bool
    message: str  # on failure the errors, on success any warnings ("" when the tool was silent)


def validate_keepalived(path: Path, prefix: Sequence[str] = ()) -> Validation:
    if not path.is_file():
        return Validation(False, f"keepalived config {path} does not exist")
    try:
        run = run_tool(["keepalived", "-t", "-f", str(path)], prefix, VALIDATE_TIMEOUT)
    except ToolError as error:
        return Validation(False, str(error))
    message = keepalived_message(run.output)
    if run.returncode != 0 and not _only_benign(message):
        return Validation(False, message or f"keepalived -t exited with status {run.returncode}")
    return Validation(True, message)


def _only_benign(message: str) -> bool:
    lines = message.splitlines()
    return bool(lines) and all(any(p.match(line) for p in _BENIGN_KEEPALIVED_WARNINGS) for line in lines)


def validate_nftables(path: Path, prefix: Sequence[str] = ()) -> Validation:
    if not path.is_file():
        return Validation(False, f"nftables ruleset {path} does not exist")
    try:
        run = run_tool(["nft", "-c", "-f", str(path)], prefix, VALIDATE_TIMEOUT)
    except ToolError as error:
        return Validation(False, str(error))
    message = nft_message(run.output)
    if run.returncode != 0:
        return Validation(False, message or f"nft -c exited with status {run.returncode}")
    return Validation(True, message)


def validate_frr(path: Path, prefix: Sequence[str] = ()) -> Validation:
    """FRR's own check of an integrated frr.conf: vtysh parses every line with the command grammar of
    every daemon (bgpd, bfdd, zebra, ...) and exits non-zero naming the first line it refuses. It
    needs no running daemon. (The daemons' own `--dryrun` exits 0 even for lines they refuse.)"""
    if not path.is_file():
        return Validation(False, f"FRR config {path} does not exist")
    try:
        run = run_tool(["vtysh", "-C", "-f", str(path)], prefix, VALIDATE_TIMEOUT)
    except ToolError as error:
        return Validation(False, str(error))
    message = trim_lines([line.rstrip() for line in run.output.splitlines() if line.strip()])
    if run.returncode != 0:
        return Validation(False, message or f"vtysh -C exited with status {run.returncode}")
    return Validation(True, message)


def keepalived_message(output: str) -> str:
    """keepalived's config-test output without banners, blank lines and repeated errors."""
    by_text: dict[str, str] = {}
    for raw in output.splitlines():
        line = raw.strip()
        if not line or _KEEPALIVED_NOISE.match(line):
            continue
        key = _KEEPALIVED_LOCATION.sub(r"(Line \1)", line)
        # Of two reports of one error, keep the one that names the file.
        if key not in by_text or len(line) > len(by_text[key]):
            by_text[key] = line
    return trim_lines(list(by_text.values()))


def nft_message(output: str) -> str:
    """nft's output without blank lines; indentation is kept because its '^' markers rely on it."""
    return trim_lines([line.rstrip() for line in output.splitlines() if line.strip()])
