"""Reading the systemd journal for System → Logs.

`journalctl --output=json` with arguments built here from validated values, never a shell: the
units come from a fixed allow-list, times are Unix seconds, a cursor matches the journal's own
syntax, and the text to find is escaped into a literal pattern inside one `--grep=` argument. The
Python binding (`systemd.journal`) would save the process but is not installable into the API's
venv without building libsystemd's C headers; journalctl is on every appliance and reads the
same files with the same matching rules.

Where a node has no journal (no journalctl, no journal files, or none readable by the API's
user) the page says so instead of failing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fulcrum.errors import AppError, ConfigInvalid
from fulcrum.schemas.logs import LogEntry, LogPage, LogSource

SYSTEM_JOURNALS = (Path("/var/log/journal"), Path("/run/log/journal"))
TIMEOUT_SECONDS = 15.0
DEFAULT_PRIORITY = 6  # journald's default for entries that carry none (info)

# Each source is journal field matches, OR'ed: the same field OR's its values, "+" between fields.
UNIT_OF_SOURCE = {
    LogSource.KEEPALIVED: ("fulcrum-keepalived.service",),
    LogSource.API: ("fulcrum-api.service",),
    LogSource.APPLYD: ("fulcrum-applyd.service",),
    LogSource.FIREWALL: ("fulcrum-nftables.service",),
    LogSource.NETWORKING: ("systemd-networkd.service", "systemd-resolved.service"),
}
SOURCE_OF_UNIT = {unit: source for source, units in UNIT_OF_SOURCE.items() for unit in units}

# s=<seqnum id>;i=<seqnum>;b=<boot id>;m=<monotonic>;t=<realtime>;x=<xor hash>, all hexadecimal.
CURSOR = re.compile(r"^[a-z]=[0-9a-f]{1,32}(;[a-z]=[0-9a-f]{1,32}){0,7}$")


class JournalFailed(AppError):
    status_code = 502


@dataclass(frozen=True)
class LogQuery:
    sources: tuple[LogSource, ...] = ()  # none: every source
    max_priority: int = 7  # entries at this priority or more severe (0 is emergency)
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None  # a literal to find, case-insensitive
    before: str | None = None  # a cursor: the page older than that entry (newest first)
    after: str | None = None  # a cursor: entries newer than that one (the live tail)
    limit: int = 200


def journal_files(directory: Path | None) -> list[Path]:
    roots = (directory,) if directory is not None else SYSTEM_JOURNALS
    return [path for root in roots if root.is_dir() for path in root.rglob("*.journal")]


def unavailable_reason(directory: Path | None) -> str | None:
    if shutil.which("journalctl") is None:
        return "no journal on this node: journalctl is not installed"
    if not journal_files(directory):
        where = str(directory) if directory else " or ".join(map(str, SYSTEM_JOURNALS))
        return f"no journal on this node: no journal files in {where}"
    return None


def read(directory: Path | None, query: LogQuery) -> LogPage:
    reason = unavailable_reason(directory)
    if reason is not None:
        return LogPage(available=False, reason=reason, entries=[])
    extra = 0 if query.after else 1  # one more than asked for tells whether an older page exists
    documents = _run(journalctl_arguments(directory, query, query.limit + extra), query)
    if documents is None:
        return LogPage(
            available=False,
            reason="no journal on this node readable by the API: its user needs the systemd-journal group",
            entries=[],
        )
    entries = [parse_entry(document) for document in documents]
    if query.after:
        return LogPage(available=True, entries=entries[::-1])  # journalctl read them oldest first
    older = entries[query.limit - 1].cursor if len(entries) > query.limit else None
    return LogPage(available=True, entries=entries[: query.limit], older_cursor=older)


def journalctl_arguments(directory: Path | None, query: LogQuery, lines: int) -> list[str]:
    arguments = ["journalctl", "--output=json", "--no-pager", "--utc", f"--lines={lines}"]
    if directory is not None:
        arguments.append(f"--directory={directory}")
    if query.max_priority < 7:
        arguments.append(f"--priority=0..{query.max_priority}")
    if query.since is not None:
        arguments.append(f"--since=@{int(query.since.timestamp())}")
    if query.until is not None:
        arguments.append(f"--until=@{int(query.until.timestamp())}")
    if query.text:
        # A literal, not a pattern: every character that is not a letter or digit escaped.
        arguments += [f"--grep={re.escape(query.text)}", "--case-sensitive=false"]
    if query.after:
        arguments.append(f"--after-cursor={query.after}")
    else:
        arguments.append("--reverse")
        if query.before:
            arguments.append(f"--after-cursor={query.before}")  # with --reverse: older than it
    return arguments + source_matches(query.sources)


def source_matches(sources: Iterable[LogSource]) -> list[str]:
    chosen = set(sources) or set(LogSource)
    units = [unit for source in LogSource if source in chosen for unit in UNIT_OF_SOURCE.get(source, ())]
    matches = [f"_SYSTEMD_UNIT={unit}" for unit in units]
    if LogSource.KEEPALIVED in chosen:
        # keepalived started by fulcrum-applyd itself (before its unit exists) logs as Keepalived*.
        matches += [
            "+",
            "SYSLOG_IDENTIFIER=Keepalived",
            "SYSLOG_IDENTIFIER=Keepalived_vrrp",
            "SYSLOG_IDENTIFIER=Keepalived_healthcheckers",
        ]
    if LogSource.KERNEL in chosen:
        matches += (["+"] if matches else []) + ["_TRANSPORT=kernel"]
    return matches


def _run(arguments: list[str], query: LogQuery) -> list[dict[str, Any]] | None:
    try:
        done = subprocess.run(arguments, capture_output=True, timeout=TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired as error:
        raise JournalFailed(f"the journal did not answer within {TIMEOUT_SECONDS:g} s") from error
    stderr = done.stderr.decode(errors="replace").strip()
    # journalctl exits 1, silently, when nothing matched (--grep, a page past the oldest entry).
    if done.returncode != 0 and (stderr or done.stdout.strip()):
        if "cursor" in stderr.lower():
            field = "after" if query.after else "before"
            raise ConfigInvalid(
                [{"loc": ["query", field], "msg": "no such position in the journal", "type": "value_error"}]
            )
        if "insufficient permissions" in stderr or "Permission denied" in stderr:
            return None
        raise JournalFailed(f"journalctl failed: {stderr[:500]}")
    lines = done.stdout.splitlines()
    if not lines and "insufficient permissions" in stderr:
        return None
    return [json.loads(line) for line in lines if line.strip()]


def parse_entry(document: dict[str, Any]) -> LogEntry:
    unit = _text(document.get("_SYSTEMD_UNIT"))
    if document.get("_TRANSPORT") == "kernel":
        source = LogSource.KERNEL.value
    elif unit in SOURCE_OF_UNIT:
        source = SOURCE_OF_UNIT[unit].value
    elif _text(document.get("SYSLOG_IDENTIFIER")).startswith("Keepalived"):
        source = LogSource.KEEPALIVED.value
    else:
        source = unit or _text(document.get("SYSLOG_IDENTIFIER")) or "unknown"
    pid = _text(document.get("_PID"))
    priority = _text(document.get("PRIORITY"))
    return LogEntry(
        time=datetime.fromtimestamp(int(document["__REALTIME_TIMESTAMP"]) / 1_000_000, UTC),
        source=source,
        priority=int(priority) if priority.isdigit() else DEFAULT_PRIORITY,
        message=_text(document.get("MESSAGE")),
        pid=int(pid) if pid.isdigit() else None,
        cursor=document["__CURSOR"],
    )


def _text(value: object) -> str:
    """journalctl gives a field that is not valid UTF-8 as an array of byte values."""
    if isinstance(value, list):
        return bytes(value).decode(errors="replace")
    return "" if value is None else str(value)


def as_text(entries: Iterable[LogEntry]) -> str:
    """The download: one line per entry, like journalctl's short-iso output."""
    return "".join(
        f"{entry.time.isoformat(timespec='microseconds')} {entry.source}"
        f"{f'[{entry.pid}]' if entry.pid else ''} <{entry.priority}> {entry.message}\n"
        for entry in entries
    )
